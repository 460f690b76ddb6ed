"""Channel A: TF-IDF n-grams with chi2 selection, checked against scikit-learn built independently."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.feature_selection import SelectKBest, chi2

from mhaudit.core.errors import InputError
from mhaudit.features.lexical import LexicalChannel

WORDS_POS = ["anxious", "panic", "never", "sleep", "deadline", "worried", "cannot", "breathe"]
WORDS_NEG = ["garden", "recipe", "sunny", "movie", "weekend", "puppy", "travel", "music"]
WORDS_ANY = ["the", "and", "I", "my", "was", "today", "really", "a", "it"]


def corpus(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    texts = []
    for label in y:
        topical = WORDS_POS if label else WORDS_NEG
        words = [*rng.choice(WORDS_ANY, 6), *rng.choice(topical, 3), *rng.choice(WORDS_POS + WORDS_NEG, 2)]
        rng.shuffle(words)
        texts.append(" ".join(words).capitalize() + ".")
    return texts, y


def reference(texts, y, k, **vectorizer):
    tfidf = TfidfVectorizer(lowercase=True, min_df=2, **vectorizer)
    matrix = tfidf.fit_transform(texts)
    selector = SelectKBest(chi2, k=min(k, matrix.shape[1])).fit(matrix, y)
    return tfidf, selector


@pytest.mark.parametrize(
    "kind, vectorizer",
    [
        ("char", dict(analyzer="char", ngram_range=(3, 5))),
        ("word", dict(analyzer="word", ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b")),
    ],
)
def test_selection_and_values_equal_sklearn(kind, vectorizer):
    texts, y = corpus(60, seed=1)
    channel = LexicalChannel(kind, k=40)
    X = channel.fit_transform(texts, None, y, None)
    tfidf, selector = reference(texts, y, 40, **vectorizer)
    expected_names = tfidf.get_feature_names_out()[selector.get_support()].tolist()
    assert channel.name == {"char": "A", "word": "A_word"}[kind]
    assert channel.feature_names == expected_names
    assert len(expected_names) == 40
    assert X.dtype == np.float64 and X.shape == (60, 40) and isinstance(X, np.ndarray)
    np.testing.assert_allclose(X, selector.transform(tfidf.transform(texts)).toarray(), rtol=1e-12, atol=0)
    # chi2 picks the topical n-grams: the class words (or pieces of them) dominate the selection
    topical = WORDS_POS + WORDS_NEG
    share = np.mean([any(name.strip() in w or w in name for w in topical) for name in expected_names])
    assert share > 0.8


def test_transform_uses_the_training_vocabulary():
    texts, y = corpus(60, seed=2)
    channel = LexicalChannel("char", k=30)
    channel.fit_transform(texts, None, y, None)
    tfidf, selector = reference(texts, y, 30, analyzer="char", ngram_range=(3, 5))
    unseen = ["Zzyzx qwv jjj xxq.", "MUSIC and TRAVEL today", "cannot breathe zzyzx"]
    Xt = channel.transform(unseen, None)
    np.testing.assert_allclose(Xt, selector.transform(tfidf.transform(unseen)).toarray(), rtol=1e-12, atol=0)
    assert Xt.shape == (3, 30)
    assert np.all(Xt[0] == 0)  # no training n-gram at all
    assert Xt[1].sum() > 0 and Xt[2].sum() > 0
    # lower-casing: the upper-case text scores exactly like its lower-case version
    np.testing.assert_array_equal(Xt[1], channel.transform(["music and travel today"], None)[0])
    assert channel.feature_names == tfidf.get_feature_names_out()[selector.get_support()].tolist()


def test_k_larger_than_the_vocabulary_keeps_everything():
    texts, y = corpus(30, seed=3)
    channel = LexicalChannel("word", k=10_000)
    X = channel.fit_transform(texts, None, y, None)
    vocabulary = (
        TfidfVectorizer(analyzer="word", ngram_range=(1, 2), min_df=2, token_pattern=r"(?u)\b\w+\b")
        .fit(texts)
        .get_feature_names_out()
    )
    assert X.shape == (30, vocabulary.size) and vocabulary.size < 10_000
    assert channel.feature_names == vocabulary.tolist()
    assert "i" in channel.feature_names  # one-character words are kept
    assert channel.transform(["I was anxious"], None).shape == (1, vocabulary.size)


def test_char_wb_option_and_bad_arguments():
    texts, y = corpus(40, seed=4)
    channel = LexicalChannel("char", k=25, analyzer="char_wb")
    channel.fit_transform(texts, None, y, None)
    tfidf, selector = reference(texts, y, 25, analyzer="char_wb", ngram_range=(3, 5))
    assert channel.feature_names == tfidf.get_feature_names_out()[selector.get_support()].tolist()
    with pytest.raises(ValueError):
        LexicalChannel("sentence")
    with pytest.raises(ValueError):
        LexicalChannel("word", analyzer="char")
    with pytest.raises(RuntimeError):
        LexicalChannel().transform(["x"], None)
    with pytest.raises(InputError):
        LexicalChannel().fit_transform(texts, None, y[:-1], None)
