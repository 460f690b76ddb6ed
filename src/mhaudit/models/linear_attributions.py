"""Linear attributions of a linear classifier on text features (CPFE axis 5, method 'linear'): per class and word,
the mean over texts of coefficient x feature value. One function for mhaudit's own TF-IDF models
(`models.linear`) and a researcher's linear scikit-learn pipeline (`models.skops_pipeline`); it imports neither, so
both can."""

from __future__ import annotations

import string

import numpy as np
import pandas as pd


def linear_attributions(featurize, vectorizer, coef, class_names: list[str], texts: list[str]) -> pd.DataFrame:
    """Linear attributions of a linear classifier on text features: per class and word, the mean over `texts` of
    coefficient x feature value, for `TfidfLogistic.explain` and a researcher's linear pipeline
    (`models.skops_pipeline`).

    `featurize` turns texts into the features (`transform`, `get_feature_names_out`: a vectorizer, or the pipeline's
    steps before the classifier); `vectorizer` is the text vectorizer among them, whose analyzer says which words a
    feature belongs to; `coef` has one row per class of `class_names` (or one row for the second of two classes: a
    binary model's margin, the first class getting its opposite). An n-gram's contribution is shared equally by its
    words; a character n-gram's (analyzer char_wb) by the words of `texts` that contain it, so character models get
    word attributions too. Columns: class, word, score, count (the document frequency of the word's most frequent
    n-gram), method 'linear'.
    """
    features = featurize.transform(list(texts))
    names = featurize.get_feature_names_out()
    doc_freq = np.asarray((features > 0).sum(axis=0)).ravel()
    mean_value = np.asarray(features.mean(axis=0)).ravel()
    coef = np.asarray(coef)
    if coef.shape[0] == 1:  # binary: one margin for the positive class; the negative gets its opposite
        coef = np.vstack([-coef[0], coef[0]])
    tokens = words_of_features(vectorizer, names, texts)
    rows = []
    for row, class_name in zip(coef, class_names):
        contribution = row * mean_value
        words: dict[str, list[float]] = {}
        for toks, value, df in zip(tokens, contribution, doc_freq):
            if df == 0:
                continue
            for tok in toks:
                entry = words.setdefault(tok, [0.0, 0])
                entry[0] += value / len(toks)
                entry[1] = max(entry[1], int(df))
        rows += [{"class": class_name, "word": w, "score": v[0], "count": v[1]} for w, v in words.items()]
    return pd.DataFrame(rows, columns=["class", "word", "score", "count"]).assign(method="linear")


def words_of_features(vectorizer, names, texts) -> list[list[str]]:
    """The words each feature belongs to, by the vectorizer's own analyzer: a word n-gram's own words; for char_wb,
    every word of `texts` whose padded n-grams include it; for char (n-grams across word boundaries), the n-gram
    itself."""
    analyzer = vectorizer.analyzer
    if analyzer == "char":
        return [[name] for name in names]
    if analyzer != "char_wb":  # word, or a callable analyzer: its features are words or word n-grams
        return [str(name).split() for name in names]
    preprocess, ngrams = vectorizer.build_preprocessor(), vectorizer.build_analyzer()
    index = {name: i for i, name in enumerate(names)}
    words: list[set[str]] = [set() for _ in names]
    for token in sorted({t for text in texts for t in preprocess(text).split()}):
        word = token.strip(string.punctuation)  # "tired," gives its n-grams (comma too) to "tired"
        if not word:
            continue
        for gram in ngrams(token):
            if gram in index:
                words[index[gram]].add(word)
    return [sorted(w) for w in words]
