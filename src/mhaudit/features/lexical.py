"""Channel A of the label-source (TSS) audit: lexical surface form.

`LexicalChannel("char")` (name "A"): TF-IDF of lower-cased character 3-5-grams, then the k = 500 n-grams most
associated with the label (`SelectKBest(chi2)`), both fitted on the training documents only.
`LexicalChannel("word")` (name "A_word"): the same with word unigrams + bigrams, the word-level lexical baseline the
paper lists as missing. The choices (min_df, the token pattern that keeps "i", the released code's differences):
docs/channels_ab.md, "Channel A".
"""

from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.feature_selection import SelectKBest, chi2

from mhaudit.core.errors import InputError
from mhaudit.features.lexical_index import WORD_TOKEN_PATTERN, NgramIndex

__all__ = ["LexicalChannel", "NgramIndex", "WORD_TOKEN_PATTERN"]


class LexicalChannel:
    """TF-IDF n-grams with chi2 selection of `k` features, fitted on training documents.

    kind: "char" (character 3-5-grams, name "A") or "word" (word 1-2-grams, name "A_word").
    analyzer: for kind "char", scikit-learn's "char" (default) or "char_wb" (n-grams inside word
    boundaries only; what the paper's released code passes).
    index: an `NgramIndex` with the same analyzer, shared by channels fitted on overlapping texts so each
    text is analysed once (the values are those of a fresh index: `lexical_index`); default: a private one.
    The matrices equal scikit-learn's TfidfVectorizer + SelectKBest(chi2) on the same texts exactly.
    """

    def __init__(
        self,
        kind: str = "char",
        k: int = 500,
        *,
        min_df: int = 2,
        analyzer: str | None = None,
        index: NgramIndex | None = None,
    ):
        if kind not in ("char", "word"):
            raise ValueError(f"kind must be 'char' or 'word', not {kind!r}")
        if k < 1:
            raise ValueError(f"k must be positive, not {k}")
        analyzer = kind if analyzer is None else analyzer  # the default analyzers are named like the kinds
        if (kind == "char") != (analyzer in ("char", "char_wb")) or analyzer not in ("char", "char_wb", "word"):
            raise ValueError(f"analyzer {analyzer!r} does not fit kind {kind!r}")
        if index is not None and index.analyzer != analyzer:
            raise ValueError(f"the n-gram index counts {index.analyzer!r} n-grams, the channel {analyzer!r}")
        self.kind, self.k, self.min_df, self.analyzer = kind, k, min_df, analyzer
        self.name = "A" if kind == "char" else "A_word"
        self.index = index if index is not None else NgramIndex(analyzer)
        self.vocabulary_: np.ndarray | None = None  # the fitted n-grams, as columns of the index
        self.tfidf_: TfidfTransformer | None = None
        self.selector_: SelectKBest | None = None
        self.feature_names: list[str] = []

    def fit_transform(self, texts, parses=None, y=None, folds=None) -> np.ndarray:
        texts = [str(t) for t in texts]
        if y is None:
            raise InputError(f"channel {self.name} needs labels to select its n-grams")
        y = np.asarray(y).astype(np.int64)
        if y.shape != (len(texts),):
            raise InputError(f"channel {self.name}: {len(texts)} texts but {y.size} labels")
        # min_df above the number of documents would leave nothing: tiny training sets fall back to 1.
        min_df = self.min_df if len(texts) >= self.min_df else 1
        try:
            counts, self.vocabulary_ = self.index.fit_counts(texts, min_df)
        except ValueError as err:  # "empty vocabulary": every text shorter than the n-gram length
            raise InputError(f"channel {self.name}: no n-gram occurs in the training texts ({err})") from None
        # TfidfVectorizer's own steps: idf fitted on the counts, then l2 rows (smooth idf, raw tf).
        self.tfidf_ = TfidfTransformer().fit(counts)
        matrix = self.tfidf_.transform(counts, copy=False)
        self.selector_ = SelectKBest(chi2, k=min(self.k, self.vocabulary_.size)).fit(matrix, y)
        terms = self.index.terms
        self.feature_names = [terms[i] for i in self.vocabulary_[self.selector_.get_support()]]
        return self.selector_.transform(matrix).toarray()  # float64, as the counts

    def transform(self, texts, parses=None) -> np.ndarray:
        if self.vocabulary_ is None or self.tfidf_ is None or self.selector_ is None:
            raise RuntimeError(f"channel {self.name} is not fitted")
        counts = self.index.transform_counts([str(t) for t in texts], self.vocabulary_)
        return self.selector_.transform(self.tfidf_.transform(counts, copy=False)).toarray()
