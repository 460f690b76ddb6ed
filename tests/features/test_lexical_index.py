"""The n-gram index behind channel A: its count matrices and the channel's tf-idf features equal
scikit-learn's CountVectorizer / TfidfVectorizer + SelectKBest(chi2) bit for bit, also when one index serves
several fits on overlapping subsets of texts in any order (the audit's main fit, then leave-one-domain-out)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.feature_selection import SelectKBest, chi2

from mhaudit.features.lexical import LexicalChannel
from mhaudit.features.lexical_index import WORD_TOKEN_PATTERN, NgramIndex

SETTINGS = {
    "char": dict(analyzer="char", ngram_range=(3, 5)),
    "char_wb": dict(analyzer="char_wb", ngram_range=(3, 5)),
    "word": dict(analyzer="word", ngram_range=(1, 2), token_pattern=WORD_TOKEN_PATTERN),
}
VOCABULARY = (
    "I",
    "i",
    "can't",
    "sleep",
    "anxious",
    "Deadline",
    "!!",
    "...",
    "work",
    "café",
    "naïve",
    "the",
    "a",
    "my",
    "exam",
    "panic",
    "😅",
    "LOL",
    "so",
    "tired",
    "\n",
    "  ",
    "rent",
    "boss",
    "why",
    "?",
)


def texts_and_labels(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Posts of varied length, case, whitespace, emoji and accents; the label shifts the word mix."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    texts = []
    for label in y:
        words = rng.choice(VOCABULARY[: 18 if label else 26], size=int(rng.integers(1, 40)))
        texts.append(" ".join(words))
    texts[3] = "ok"  # shorter than any character 3-gram beyond one
    return texts, y


def dense(matrix) -> np.ndarray:
    return np.asarray(matrix.toarray())


@pytest.mark.parametrize("analyzer", ["char", "char_wb", "word"])
def test_counts_equal_count_vectorizer_in_values_order_and_vocabulary(analyzer):
    texts, _ = texts_and_labels(300, seed=1)
    index = NgramIndex(analyzer)
    index.fit_counts(texts[200:], 1)  # the index already holds other texts, numbered in another order
    for rows, min_df in ((np.arange(150), 2), (np.arange(299, 40, -2), 1), (np.arange(100, 300), 3)):
        train = [texts[i] for i in rows]
        ours, vocabulary = index.fit_counts(train, min_df)
        ref = CountVectorizer(lowercase=True, min_df=min_df, dtype=np.float64, **SETTINGS[analyzer])
        theirs = ref.fit_transform(train)
        assert [index.terms[i] for i in vocabulary] == ref.get_feature_names_out().tolist()
        # stored entries row by row, in the same order (what the l2 norm sums), not only the same matrix
        np.testing.assert_array_equal(ours.indptr, theirs.indptr)
        np.testing.assert_array_equal(ours.indices, theirs.indices)
        np.testing.assert_array_equal(ours.data, theirs.data)
        unseen = texts[::7] + ["zzzz qqqq", ""]
        mine, ref_t = index.transform_counts(unseen, vocabulary), ref.transform(unseen)
        np.testing.assert_array_equal(mine.indices, ref_t.indices)
        np.testing.assert_array_equal(mine.data, ref_t.data)


def test_empty_vocabulary_and_pruning_say_so():
    index = NgramIndex("char")
    with pytest.raises(ValueError, match="empty vocabulary"):
        index.fit_counts(["a", "b"], 1)
    with pytest.raises(ValueError, match="no terms remain"):
        index.fit_counts(["abcd", "wxyz"], 2)
    with pytest.raises(ValueError, match="analyzer"):
        NgramIndex("sentence")


@pytest.mark.parametrize("kind, analyzer", [("char", "char"), ("char", "char_wb"), ("word", "word")])
def test_channel_with_a_shared_index_equals_sklearn_bit_for_bit(kind, analyzer):
    texts, y = texts_and_labels(400, seed=2)
    shared = NgramIndex(analyzer)
    for rows in (np.arange(300), np.flatnonzero(np.arange(400) % 3 != 0), np.arange(399, 99, -1)):
        train, y_train = [texts[i] for i in rows], y[rows]
        channel = LexicalChannel(kind, k=60, analyzer=analyzer, index=shared)
        features = channel.fit_transform(train, None, y_train, None)
        tfidf = TfidfVectorizer(lowercase=True, min_df=2, dtype=np.float64, **SETTINGS[analyzer])
        matrix = tfidf.fit_transform(train)
        selector = SelectKBest(chi2, k=60).fit(matrix, y_train)
        assert channel.feature_names == tfidf.get_feature_names_out()[selector.get_support()].tolist()
        np.testing.assert_array_equal(features, dense(selector.transform(matrix)))
        held = texts[::5] + ["never seen before at all"]
        np.testing.assert_array_equal(channel.transform(held, None), dense(selector.transform(tfidf.transform(held))))


def test_an_index_of_another_analyzer_is_refused():
    with pytest.raises(ValueError, match="index counts 'word'"):
        LexicalChannel("char", index=NgramIndex("word"))
