"""The rows each model sees: the folds of a protocol, the validation rows inside a fold's training rows
and stratified subsamples. Folds are drawn once, from the training labels and the seed, before any model
is made, so every model sees exactly the same rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split

from mhaudit.audits.model_selection.options import Protocol
from mhaudit.core.errors import InputError


def assign_folds(y: np.ndarray, protocol: Protocol, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row positions for each fold of `protocol`, deterministic for the labels and the seed.

    `y` are the training labels as 0/1; stratified protocols keep each class's share in every fold."""
    y = np.asarray(y)
    n = len(y)
    counts = np.bincount(y, minlength=2)
    names = ("negative", "positive")
    if (counts == 0).any():
        raise InputError(
            f"the training labels hold only one class ({names[int(np.argmax(counts))]}, {n} rows); "
            "a benchmark needs both classes"
        )
    index = np.arange(n)
    if protocol.kind == "holdout":
        n_test = int(np.ceil(protocol.test_size * n))
        if counts.min() < 2 or n_test < 2 or n - n_test < 2:
            raise InputError(
                f"a stratified {protocol.label} holdout needs at least 2 rows of each class on each "
                f"side; the training labels have {counts[0]} negative and {counts[1]} positive rows"
            )
        train, test = train_test_split(index, test_size=protocol.test_size, stratify=y, random_state=seed)
        folds = [(np.sort(train), np.sort(test))]
    elif protocol.kind == "cv":
        if counts.min() < protocol.k:
            cls = names[int(np.argmin(counts))]
            raise InputError(
                f"{protocol.label} needs at least {protocol.k} rows of every class; the {cls} class has "
                f"{counts.min()} (use fewer folds or more data)"
            )
        splitter = StratifiedKFold(n_splits=protocol.k, shuffle=True, random_state=seed)
        folds = [(np.sort(a), np.sort(b)) for a, b in splitter.split(index, y)]
    else:
        if n < protocol.k:
            raise InputError(f"{protocol.label} needs at least {protocol.k} rows; there are {n}")
        splitter = KFold(n_splits=protocol.k, shuffle=True, random_state=seed)
        folds = [(np.sort(a), np.sort(b)) for a, b in splitter.split(index)]
    for i, (train, _) in enumerate(folds, start=1):
        if len(np.unique(y[train])) < 2:
            raise InputError(
                f"fold {i} of {protocol.label} has training rows of one class only; use a stratified "
                "protocol (cv) or fewer folds"
            )
    return folds


def stratified_take(
    y: np.ndarray, fraction: float | None = None, n: int | None = None, *, seed: int, keep_one: bool = True
) -> np.ndarray:
    """Positions of a stratified random share (`fraction`) or count (`n`) of `y`, sorted.

    Each class gives round(share x its size) rows; with `keep_one`, at least one row of each class is
    left out (so the rows not taken still hold both classes)."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    share = min(1.0, n / len(y)) if fraction is None and n is not None else fraction
    assert share is not None, "stratified_take takes a fraction or a count n"
    taken = []
    for cls in np.unique(y):
        rows = np.flatnonzero(y == cls)
        m = int(round(share * len(rows)))
        if keep_one:
            m = min(m, len(rows) - 1)
        m = max(m, 0 if keep_one else min(1, len(rows)))
        taken.append(rng.permutation(rows)[:m])
    return np.sort(np.concatenate(taken)) if taken else np.array([], dtype=int)


@dataclass(frozen=True)
class Fold:
    """One fold of a protocol: its training and test row positions, which training rows are validation rows
    ('train' or 'val' per training row) and its seed (seed x 1000 + fold)."""

    protocol: Protocol
    number: int
    train: np.ndarray
    test: np.ndarray
    split: np.ndarray
    seed: int

    @property
    def where(self) -> str:
        return f"{self.protocol.label}, fold {self.number}"


def make_folds(y: np.ndarray, protocols: list[Protocol], seed: int, val_fraction: float) -> list[Fold]:
    """Every fold of every protocol, in order, each with a stratified `val_fraction` of its training rows
    set aside as validation rows (none for 0)."""
    folds = []
    for protocol in protocols:
        for number, (train_idx, test_idx) in enumerate(assign_folds(y, protocol, seed), start=1):
            fold_seed = seed * 1000 + number
            val_pos = (
                stratified_take(y[train_idx], fraction=val_fraction, seed=fold_seed)
                if val_fraction > 0
                else np.array([], dtype=int)
            )
            split = np.full(len(train_idx), "train", dtype=object)
            split[val_pos] = "val"
            folds.append(Fold(protocol, number, train_idx, test_idx, split, fold_seed))
    return folds


__all__ = ["Fold", "assign_folds", "make_folds", "stratified_take"]
