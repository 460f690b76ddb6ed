"""Channel features of the training rows and of each scored data set, under one mask.

All texts of a view are parsed in one call (cached by content, so masks and re-runs never re-parse
the same text). A masked view masks the text first and re-parses the masked text, so channels B and C
see only what the mask left. A `FeatureMemo` shared by the views of one audit keeps what is a function of
the text alone (channel A's n-gram counts, channel C's raw features), so leave-one-domain-out, which refits
on subsets of the same texts, featurises nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mhaudit.audits.divergence.design import Design
from mhaudit.features.style import StyleChannel, style_features
from mhaudit.text.masks import apply_mask
from mhaudit.text.parse import Parses, parse_texts

__all__ = ["View", "FeatureMemo", "build_view", "masked_texts"]


@dataclass
class View:
    mask: str
    train: dict[str, np.ndarray]  # channel letter -> training features
    evaluation: dict[str, dict[str, np.ndarray]]  # data set -> channel letter -> features
    feature_names: dict[str, list[str]]
    empty_after_mask: dict[str, int]  # data set (or "train") -> texts left empty by the mask


class FeatureMemo:
    """Per-text featurisations, computed once for all views of an audit: an n-gram index per analyzer
    (channel A) and channel C's raw features by text. Both are functions of the text alone (a parse is a
    function of its text), and C's raw row of a text does not depend on the other texts it is computed
    with, so a remembered row equals a fresh one exactly."""

    def __init__(self):
        self._indexes: dict[str, object] = {}
        self._style: dict[str, np.ndarray] = {}

    def ngram_index(self, analyzer: str):
        from mhaudit.features.lexical import NgramIndex

        return self._indexes.setdefault(analyzer, NgramIndex(analyzer))

    def style(self, texts: list[str], parses: Parses) -> np.ndarray:
        """Raw channel-C features of `texts` (parsed as `parses`), computing only the texts not seen."""
        if not texts:
            return style_features([], parses)
        missing = [i for i, t in enumerate(texts) if t not in self._style]
        if missing:
            rows = style_features([texts[i] for i in missing], parses.take(np.asarray(missing)))
            self._style.update(zip((texts[i] for i in missing), rows))
        return np.vstack([self._style[t] for t in texts])


def _channel(letter: str, lexical: str, memo: FeatureMemo):
    if letter == "A":
        from mhaudit.features.lexical import LexicalChannel

        return LexicalChannel(kind=lexical, index=memo.ngram_index(lexical))
    if letter == "B":
        from mhaudit.features.morphosyntax import MorphosyntaxChannel

        return MorphosyntaxChannel()
    return _RememberedStyle(memo)


class _RememberedStyle(StyleChannel):
    """Channel C with its raw features from the memo; the scaling is fitted per view, as always."""

    def __init__(self, memo: FeatureMemo):
        super().__init__()
        self.memo = memo

    def fit_transform(self, texts, parses, y=None, folds=None) -> np.ndarray:
        raw = self.memo.style(texts, parses)
        return self.fit_raw(raw).squash(raw)

    def transform(self, texts, parses) -> np.ndarray:
        return self.squash(self.memo.style(texts, parses))


def _view_texts(design: Design, datasets: list[str]) -> dict[str, list[str]]:
    return {"train": list(design.train["text"])} | {d: list(design.evaluation[d]["text"]) for d in datasets}


def masked_texts(design: Design, mask: str, datasets: list[str], seed: int, original: Parses) -> list[str]:
    """The texts `build_view` parses for `mask` (train + datasets, masked): to parse several masks in one call."""
    texts = [t for part in _view_texts(design, datasets).values() for t in part]
    return apply_mask(texts, original, mask, seed=seed)


def _texts_and_parses(parts: dict[str, list[str]], mask: str, seed: int, original: Parses | None):
    names = list(parts)
    texts = [t for n in names for t in parts[n]]
    parses = original if original is not None else parse_texts(texts)
    if mask != "none":
        texts = apply_mask(texts, parses, mask, seed=seed)
        parses = parse_texts(texts)
    bounds = np.cumsum([0, *(len(parts[n]) for n in names)]).tolist()
    return {n: (texts[a:b], parses.take(np.arange(a, b))) for n, a, b in zip(names, bounds, bounds[1:])}


def original_parses(design: Design, datasets: list[str]) -> Parses:
    return parse_texts([t for part in _view_texts(design, datasets).values() for t in part])


def build_view(
    design: Design,
    letters: tuple[str, ...],
    mask: str,
    datasets: list[str],
    folds: np.ndarray,
    *,
    lexical: str = "char",
    seed: int = 0,
    original: Parses | None = None,
    memo: FeatureMemo | None = None,
) -> View:
    """Fit each channel in `letters` on the training rows (cross-fitted where the channel needs it)
    and transform the rows of `datasets`. `original`: the parse of train + datasets texts, if known;
    `memo`: featurisations shared with the audit's other views (default: this view's own)."""
    memo = memo if memo is not None else FeatureMemo()
    prepared = _texts_and_parses(_view_texts(design, datasets), mask, seed, original)
    y = design.y_train
    train, evaluation, names = {}, {d: dict[str, np.ndarray]() for d in datasets}, {}
    for letter in letters:
        channel = _channel(letter, lexical, memo)
        texts, parses = prepared["train"]
        train[letter] = np.asarray(channel.fit_transform(texts, parses, y, folds), dtype=np.float64)
        names[letter] = list(channel.feature_names)
        for d in datasets:
            evaluation[d][letter] = np.asarray(channel.transform(*prepared[d]), dtype=np.float64)
    empty = {n: int(sum(1 for t in prepared[n][0] if not t.strip())) for n in prepared}
    return View(mask, train, evaluation, names, empty)
