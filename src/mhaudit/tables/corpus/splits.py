"""Deterministic stratified splits: train/val/test, and a calibration split of a target platform."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError

TRAINING_SPLITS = ("train", "val")  # what a model fits on: train, and val for early stopping and its temperature


def judged_rows(frame: pd.DataFrame, trained_on: str | None) -> np.ndarray:
    """Which rows a model trained on `trained_on` (a platform or a data set) is judged on: every row but its
    training rows (the train and val splits there). Unknown (None): every platform's training rows are held back.
    A stored calibration split is judged too; the temperature fitted on it is judged on the other rows."""
    home = (
        np.ones(len(frame), dtype=bool)
        if trained_on is None
        else ((frame["platform"] == trained_on) | (frame["dataset"] == trained_on)).to_numpy()
    )
    return ~(home & frame["split"].isin(TRAINING_SPLITS).to_numpy())


def stratified_assign(labels: pd.Series, fractions: dict[str, float], seed: int | list[int]) -> pd.Series:
    """Assign each row a split name so that every label is divided in the given fractions.

    Within each label the rows are shuffled and cut at rounded cumulative counts; the result is
    deterministic for the seed and the rows.
    """
    rng = np.random.default_rng(seed)
    out = pd.Series(index=labels.index, dtype=object)
    names = list(fractions)
    cum = np.cumsum([fractions[n] for n in names])
    for _, idx in labels.groupby(labels, sort=True).groups.items():
        idx = np.asarray(idx)
        order = idx[rng.permutation(len(idx))]
        cuts = np.rint(cum * len(order)).astype(int)
        start = 0
        for name, stop in zip(names, cuts):
            out.loc[order[start:stop]] = name
            start = stop
    return out


def _check_two_classes(frame: pd.DataFrame, split_col: str, where: str) -> None:
    for (dataset, split), labels in frame.groupby(["dataset", split_col], sort=True)["label"]:
        if labels.nunique() < 2:
            raise InputError(
                f"split '{split}' of data set '{dataset}' {where} would hold only class "
                f"'{labels.iat[0]}' ({len(labels)} rows); each split needs at least two classes "
                "(give more rows or change the fractions)"
            )


def assign_splits(
    frame: pd.DataFrame, *, train: float = 0.70, val: float = 0.15, test: float = 0.15, seed: int = 0
) -> pd.DataFrame:
    """Stratified train/val/test split per data set, deterministic for a seed; rows already in a stored
    calibration split keep it."""
    if not np.isclose(train + val + test, 1.0) or min(train, val, test) < 0:
        raise InputError(f"split fractions {train}/{val}/{test} must be non-negative and sum to 1")
    fractions = {k: v for k, v in {"train": train, "val": val, "test": test}.items() if v > 0}
    out = frame.copy()
    # A stored calibration split stays as drawn: later steps must keep using the same rows.
    kept = out["split"] == "calibration" if "split" in out else pd.Series(False, index=out.index)
    for _, group in out[~kept].groupby("dataset", sort=True):
        out.loc[group.index, "split"] = stratified_assign(group["label"], fractions, seed)
    _check_two_classes(out, "split", "after a stratified split")
    return out


def assign_calibration(
    frame: pd.DataFrame,
    platform: str,
    *,
    fraction: float = 0.10,
    seed: int = 0,
    from_splits: tuple[str, ...] = ("train", "val", "test"),
) -> pd.DataFrame:
    """Move a stratified `fraction` of a target platform's rows (all of them: a target is judged on every row) to
    split 'calibration'.

    Once drawn it is stored in the corpus, so temperature scaling and target fine-tuning use the same rows.
    """
    if not 0 < fraction < 1:
        raise InputError(f"calibration fraction {fraction} must be between 0 and 1")
    out = frame.copy()
    if (out.loc[out["platform"] == platform, "split"] == "calibration").any():
        raise InputError(
            f"platform '{platform}' already has a calibration split; it is kept as drawn "
            "so every later step uses the same rows"
        )
    pool = out[(out["platform"] == platform) & out["split"].isin(from_splits)]
    if pool.empty:
        raise InputError(
            f"platform '{platform}' has no rows in split(s) {', '.join(from_splits)}; "
            f"platforms here: {', '.join(sorted(out['platform'].unique()))}"
        )
    for _, group in pool.groupby("dataset", sort=True):
        # a stream of its own: with the splits' seed it would replay their permutation and take only train rows
        chosen = stratified_assign(group["label"], {"calibration": fraction, "rest": 1 - fraction}, [seed, 1])
        out.loc[chosen.index[chosen == "calibration"], "split"] = "calibration"
    _check_two_classes(out[out["platform"] == platform], "split", f"of platform '{platform}'")
    return out
