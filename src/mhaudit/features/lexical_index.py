"""Each text's n-gram counts, computed once: the index channel A fits and transforms from.

Counting n-grams is most of channel A's cost, and scikit-learn's vectoriser re-analyses every text on every
fit and transform. The label-source audit fits A on overlapping subsets of the same texts (the training
rows, then each leave-one-domain-out split) and scores the same texts again, so an `NgramIndex` analyses
each distinct text once, with scikit-learn's own analyzer, and keeps its counts as one row of a sparse
matrix over every n-gram it has seen.

`fit_counts` and `transform_counts` return exactly the count matrices `CountVectorizer.fit_transform` and
`transform` build for a list of indexed texts: the same vocabulary (min_df pruning, alphabetical columns)
and the same order of entries within each row (fit: the order in which the vectoriser first met each
n-gram; transform: by column), so the tf-idf rows computed from them are equal bit for bit (the l2 norm
sums a row's entries in stored order).
"""

from __future__ import annotations

from array import array
from collections import Counter

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer

__all__ = ["NgramIndex", "ANALYZERS", "WORD_TOKEN_PATTERN"]

WORD_TOKEN_PATTERN = r"(?u)\b\w+\b"
ANALYZERS = ("char", "char_wb", "word")


class NgramIndex:
    """N-gram counts of every text it has been given, one sparse row per distinct text.

    analyzer: "char" or "char_wb" (character 3-5-grams), or "word" (word 1-2-grams).
    """

    def __init__(self, analyzer: str = "char"):
        if analyzer not in ANALYZERS:
            raise ValueError(f"analyzer must be one of {', '.join(ANALYZERS)}, not {analyzer!r}")
        self.analyzer, words = analyzer, analyzer == "word"  # channel A's n-grams: lower-cased, one-letter words kept
        self._analyze = CountVectorizer(
            analyzer=analyzer,
            ngram_range=(1, 2) if words else (3, 5),
            lowercase=True,
            token_pattern=WORD_TOKEN_PATTERN if words else None,
        ).build_analyzer()
        self._row: dict[str, int] = {}  # text -> row
        self._id: dict[str, int] = {}  # n-gram -> column, numbered in the order first seen (dict order)
        self._indptr, self._ids, self._counts = array("q", [0]), array("q"), array("q")
        self._matrix: sparse.csr_matrix | None = None
        self._terms: list[str] = []

    @property
    def n_terms(self) -> int:
        return len(self._id)

    @property
    def terms(self) -> list[str]:
        """Every n-gram seen, by column."""
        if len(self._terms) != len(self._id):
            self._terms = list(self._id)
        return self._terms

    def _rows(self, texts) -> np.ndarray:
        """Row of each text, analysing the texts not seen before."""
        rows = np.empty(len(texts), dtype=np.int64)
        ids = self._id
        for i, text in enumerate(texts):
            row = self._row.get(text)
            if row is None:
                counts = Counter(self._analyze(text))  # keys in the order the n-grams first occur
                self._ids.extend([ids.setdefault(term, len(ids)) for term in counts])
                self._counts.extend(counts.values())
                self._indptr.append(len(self._ids))
                row = self._row[text] = len(self._row)
                self._matrix = None
            rows[i] = row
        return rows

    def _take(self, texts) -> sparse.csr_matrix:
        """Counts of `texts` over every n-gram seen; each row's entries in the order its text first has them."""
        rows = self._rows([str(t) for t in texts])
        if self._matrix is None:
            indptr = np.frombuffer(self._indptr, dtype=np.int64)
            self._matrix = sparse.csr_matrix(
                (
                    np.frombuffer(self._counts, dtype=np.int64).astype(np.float64),
                    np.frombuffer(self._ids, dtype=np.int64),
                    indptr,
                ),
                shape=(indptr.size - 1, max(self.n_terms, 1)),
            )
        return self._matrix[rows]

    def fit_counts(self, texts, min_df: int) -> tuple[sparse.csr_matrix, np.ndarray]:
        """CountVectorizer(min_df=min_df).fit_transform(texts) (float64) and its vocabulary as columns of this
        index, in the matrix's column order (alphabetical). ValueError, with scikit-learn's words, when no
        n-gram occurs or min_df prunes them all."""
        x = self._take(texts)
        ids = x.indices.astype(np.int64)
        if ids.size == 0:
            raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
        seen = pd.unique(ids)  # the n-grams in the order the vectoriser meets them (hashing, no sort)
        df = np.bincount(ids, minlength=self.n_terms)  # a text's row holds each n-gram once
        kept = seen[df[seen] >= min_df]
        if kept.size == 0:
            raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        terms = self.terms
        vocabulary = np.array(sorted(kept.tolist(), key=terms.__getitem__), dtype=np.int64)
        # The vectoriser numbers n-grams as it first meets them in these texts and sorts each row by that
        # number before renaming the columns alphabetically: rows keep first-met order.
        first_met = np.empty(self.n_terms, dtype=np.int64)
        first_met[seen] = np.arange(seen.size)
        row = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        order = np.argsort(row * seen.size + first_met[ids])  # by row, then first met (keys are distinct)
        return self._select(x.data[order], ids[order], row[order], vocabulary, x.shape[0]), vocabulary

    def transform_counts(self, texts, vocabulary: np.ndarray) -> sparse.csr_matrix:
        """CountVectorizer.transform(texts) (float64) for a vectoriser fitted to `vocabulary` (from fit_counts)."""
        x = self._take(texts)
        row = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        matrix = self._select(x.data, x.indices.astype(np.int64), row, vocabulary, x.shape[0])
        matrix.sort_indices()  # as the vectoriser's transform: entries by column
        return matrix

    def _select(self, data, ids, row, vocabulary, n_rows) -> sparse.csr_matrix:
        """Entries (data, index column, row; grouped by row) restricted to `vocabulary`, renumbered by it."""
        column = np.full(self.n_terms, -1, dtype=np.int64)
        column[vocabulary] = np.arange(vocabulary.size)
        col = column[ids]
        keep = col >= 0
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row[keep], minlength=n_rows))])
        return sparse.csr_matrix((data[keep], col[keep], indptr), shape=(n_rows, vocabulary.size))
