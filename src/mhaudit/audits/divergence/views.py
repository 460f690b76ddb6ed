"""Channel features of the training rows and of each scored data set, under one mask.

All texts of a view are parsed in one call (cached by content, so masks and re-runs never re-parse
the same text). A masked view masks the text first and re-parses the masked text, so channels B and C
see only what the mask left.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mhaudit.audits.divergence.design import Design
from mhaudit.text.masks import apply_mask
from mhaudit.text.parse import Parses, parse_texts

__all__ = ["View", "build_view"]


@dataclass
class View:
    mask: str
    train: dict[str, np.ndarray]  # channel letter -> training features
    evaluation: dict[str, dict[str, np.ndarray]]  # data set -> channel letter -> features
    feature_names: dict[str, list[str]]
    empty_after_mask: dict[str, int]  # data set (or "train") -> texts left empty by the mask


def _channel(letter: str, lexical: str):
    if letter == "A":
        from mhaudit.features.lexical import LexicalChannel
        return LexicalChannel(kind=lexical)
    if letter == "B":
        from mhaudit.features.morphosyntax import MorphosyntaxChannel
        return MorphosyntaxChannel()
    from mhaudit.features.style import StyleChannel
    return StyleChannel()


def _texts_and_parses(parts: dict[str, list[str]], mask: str, seed: int, original: Parses | None):
    names = list(parts)
    texts = [t for n in names for t in parts[n]]
    parses = original if original is not None else parse_texts(texts)
    if mask != "none":
        texts = apply_mask(texts, parses, mask, seed=seed)
        parses = parse_texts(texts)
    out, start = {}, 0
    for n in names:
        stop = start + len(parts[n])
        out[n] = (texts[start:stop], parses.take(np.arange(start, stop)))
        start = stop
    return out


def original_parses(design: Design, datasets: list[str]) -> Parses:
    texts = list(design.train["text"]) + [t for d in datasets for t in design.evaluation[d]["text"]]
    return parse_texts(texts)


def build_view(design: Design, letters: tuple[str, ...], mask: str, datasets: list[str], folds: np.ndarray, *,
               lexical: str = "char", seed: int = 0, original: Parses | None = None) -> View:
    """Fit each channel in `letters` on the training rows (cross-fitted where the channel needs it)
    and transform the rows of `datasets`. `original`: the parse of train + datasets texts, if known."""
    parts = {"train": list(design.train["text"])} | {d: list(design.evaluation[d]["text"]) for d in datasets}
    prepared = _texts_and_parses(parts, mask, seed, original)
    y = design.y_train
    train, evaluation, names = {}, {d: {} for d in datasets}, {}
    for letter in letters:
        channel = _channel(letter, lexical)
        texts, parses = prepared["train"]
        train[letter] = np.asarray(channel.fit_transform(texts, parses, y, folds), dtype=np.float64)
        names[letter] = list(channel.feature_names)
        for d in datasets:
            evaluation[d][letter] = np.asarray(channel.transform(*prepared[d]), dtype=np.float64)
    empty = {n: int(sum(1 for t in prepared[n][0] if not t.strip())) for n in prepared}
    return View(mask, train, evaluation, names, empty)
