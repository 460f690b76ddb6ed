"""Soft labels: a model learns a labeler's probability instead of its hard label. Each training post enters twice,
as the positive class weighted p and as the negative class weighted 1 - p, so a weighted logistic loss on the two
rows is p·(−log q) + (1 − p)·(−log(1 − q)): the cross-entropy with the soft target p (the expected loss over the
labels the labeler's probability describes). The folds are drawn from the hard labels before any expansion, so they
hold the same posts either way; validation rows keep their hard label (weight 1) and the test rows are untouched."""

from __future__ import annotations

import numpy as np

from mhaudit.core.errors import InputError


def soft_label_rows(
    rows: np.ndarray, split: np.ndarray, probability: np.ndarray, labels: np.ndarray, positive: str, negative: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(row positions, labels, split, weights) of a fold's training rows with soft labels: every 'train' row twice
    (`positive` weighted p, `negative` weighted 1 − p; a row of weight 0 is left out), every 'val' row once with its
    hard label from `labels` and weight 1. `probability` and `labels` are indexed by row position."""
    p = np.asarray(probability, dtype=float)[rows]
    if not np.isfinite(p).all() or ((p < 0) | (p > 1)).any():
        raise InputError("the training labeler's probabilities must lie in [0, 1] on every training post")
    train = split == "train"
    parts = [
        (rows[train], np.full(train.sum(), positive, dtype=object), p[train]),
        (rows[train], np.full(train.sum(), negative, dtype=object), 1 - p[train]),
        (rows[~train], np.asarray(labels, dtype=object)[rows[~train]], np.ones((~train).sum())),
    ]
    idx = np.concatenate([part[0] for part in parts])
    label = np.concatenate([part[1] for part in parts])
    weight = np.concatenate([part[2] for part in parts])
    kinds = np.concatenate([np.full(len(parts[0][0]) * 2, "train", dtype=object), split[~train]])
    kept = weight > 0
    return idx[kept], label[kept], kinds[kept], weight[kept]


__all__ = ["soft_label_rows"]
