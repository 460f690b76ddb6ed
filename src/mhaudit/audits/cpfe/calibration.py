"""Axis 2, calibration: ECE (plug-in, and debiased with a bias-corrected stratified bootstrap CI),
per-class ECE, MCE, Brier, NLL, reliability data, and temperature scaling (held-out calibration split, and
cross-fitted)."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd

from mhaudit.stats.auc import macro_auc_unchecked
from mhaudit.stats.calibration import (
    brier,
    classwise_ece_unchecked,
    cross_fitted_temperature,
    ece_unchecked,
    fit_temperature,
    mce_unchecked,
    nll,
    reliability_unchecked,
    softmax,
)
from mhaudit.tables.predictions import Group


def calibration_row(group: Group, n_bins: int, boot: dict) -> dict:
    """`boot`: the bias-corrected summary of the group's label-stratified bootstrap ECEs (place_bootstraps).

    `ece` is the plug-in ECE (what papers report); `ece_debiased` = ece - bias, the bias estimated by the
    same bootstrap; `ece_ci_low/high` is the bias-corrected interval, which holds `ece_debiased`."""
    return {
        **group.key(),
        "n": group.n,
        "ece": ece_unchecked(group.probs, group.y, n_bins),
        "ece_debiased": boot["estimate"],
        "ece_ci_low": boot["ci_low"],
        "ece_ci_high": boot["ci_high"],
        "ece_se": boot["se"],
        "n_boot": boot["n_boot"],
        "n_failed": boot["n_failed"],
        "mce": mce_unchecked(group.probs, group.y, n_bins),
        "brier": brier(group.probs, group.y),
        "nll": nll(group.probs, group.y),
        "n_bins": n_bins,
    }


def per_class_calibration_rows(group: Group, classes: list[str], n_bins: int) -> list[dict]:
    per_class = classwise_ece_unchecked(group.probs, group.y, n_bins)
    return [
        {**group.key(), "n": group.n, "class": c, "n_class": int((group.y == i).sum()), "ece_ovr": float(per_class[i])}
        for i, c in enumerate(classes)
    ]


def reliability_rows(group: Group, probs: np.ndarray, y: np.ndarray, stage: str, n_bins: int) -> list[dict]:
    data = reliability_unchecked(probs, y, n_bins)
    return [
        {
            **group.key(),
            "stage": stage,
            "bin": b,
            "lower": float(data["lower"][b]),
            "upper": float(data["upper"][b]),
            "n": int(data["count"][b]),
            "confidence": float(data["confidence"][b]),
            "accuracy": float(data["accuracy"][b]),
        }
        for b in range(n_bins)
    ]


def calibration_rows(group: Group, fraction: float, seed: int) -> tuple[np.ndarray, str]:
    """The calibration rows: the stored calibration split when there is one, else a stratified `fraction`
    drawn with `seed`, in content order (so the fit sums in one order however the files were sorted).

    The draw depends only on the rows' content and the seed, never on how ids are written or the order
    of files and rows: within each class, the rows with the smallest keyed hashes of (platform, label,
    probabilities rounded to 6 decimals, occurrence of that content) are drawn, rint(fraction x size) of them.
    """
    stored = np.flatnonzero(group.split == "calibration")
    if stored.size:  # rows with ids, in id order
        return stored, "stored calibration split"
    keys = content_keys(group, seed)
    by_class = []
    for c in np.unique(group.y):
        members = np.flatnonzero(group.y == c)
        by_class.append(members[np.argsort(keys[members], kind="stable")[: int(np.rint(fraction * members.size))]])
    drawn = np.concatenate(by_class)
    return drawn[
        np.argsort(keys[drawn], kind="stable")
    ], f"drawn: stratified {fraction:.0%} of the evaluation rows by content, seed {seed}"


def content_keys(group: Group, seed: int) -> np.ndarray:
    """A uint64 per row from its content, keyed by the seed (pandas' SipHash-based row hash)."""
    content = pd.DataFrame(np.round(group.probs, 6))
    content.insert(0, "label", group.y)
    content.insert(0, "platform", group.platform)
    content["occurrence"] = content.groupby(list(content.columns), sort=False).cumcount()
    key = hashlib.sha256(f"mhaudit calibration draw {seed}".encode()).hexdigest()[:16]
    return pd.util.hash_pandas_object(content, index=False, hash_key=key).to_numpy()


TEMPERATURE_BOUNDS = (-5.0, 5.0)  # the search interval on log T (fit_temperature's default)
FLAT_MARGIN = 0.10  # top-label probabilities this close to chance for 95% of rows say nothing


def degenerate_temperature(t: float, scaled: np.ndarray) -> str:
    """Why a fitted temperature is no repair, or '': T at its search bound (the NLL kept falling beyond it),
    or scaled probabilities so flat that 95% of rows get a top-label probability within 0.10 of chance, so a
    low ECE only restates the base rate (seen: T = 148.4 put every probability in [0.481, 0.523])."""
    log_t = float(np.log(t))
    if min(abs(log_t - b) for b in TEMPERATURE_BOUNDS) < 1e-6:
        return f"T = {t:.4g} at its search bound"
    top = scaled.max(axis=1)
    chance = 1.0 / scaled.shape[1]
    high = float(np.percentile(top, 95)) if top.size else np.nan
    if high < chance + FLAT_MARGIN:
        return (
            f"near-uniform probabilities after scaling (95% of rows' top-label probability under {high:.3f}, "
            f"chance {chance:.3f})"
        )
    return ""


def temperature_row(
    group: Group, n_classes: int, n_bins: int, fraction: float, folds: int, seed: int
) -> tuple[dict, list[dict]]:
    cal_rows, source = calibration_rows(group, fraction, seed)
    cal = np.zeros(group.n, dtype=bool)
    cal[cal_rows] = True
    rest = ~cal
    if cal.sum() < 2 or rest.sum() < 2 or len(np.unique(group.y[cal])) < 2:
        return {
            **group.key(),
            "calibration_source": source,
            "n_calibration": int(cal.sum()),
            "reason": "calibration split too small or one class: temperature not fitted",
        }, []
    with warnings.catch_warnings(record=True) as caught:  # a fit at the bound is reported, not printed
        warnings.simplefilter("always")
        t = fit_temperature(group.logits[cal_rows], group.y[cal_rows])
        try:
            crossfit_probs, temps = cross_fitted_temperature(group.logits, group.y, k=folds, seed=seed)
        except ValueError as exc:  # too few rows of some class for the folds
            crossfit_probs, temps = None, np.array([np.nan])
            warnings.warn(f"cross-fit skipped: {exc}")
    before, after = group.probs[rest], softmax(group.logits[rest], t)
    y = group.y[rest]
    row = {
        **group.key(),
        "n": group.n,
        "calibration_source": source,
        "n_calibration": int(cal.sum()),
        "n_evaluated": int(rest.sum()),
        "temperature": t,
        "ece_before": ece_unchecked(before, y, n_bins),
        "ece_after": ece_unchecked(after, y, n_bins),
        "auc_before": macro_auc_unchecked(y, before, n_classes),
        "auc_after": macro_auc_unchecked(y, after, n_classes),
        "accuracy_before": float((before.argmax(1) == y).mean()),
        "accuracy_after": float((after.argmax(1) == y).mean()),
        "crossfit_folds": folds,
        "crossfit_temperature_mean": float(np.mean(temps)),
        "crossfit_ece_after": np.nan if crossfit_probs is None else ece_unchecked(crossfit_probs, group.y, n_bins),
        "crossfit_delta_auc": np.nan
        if crossfit_probs is None
        else (
            macro_auc_unchecked(group.y, crossfit_probs, n_classes)
            - macro_auc_unchecked(group.y, group.probs, n_classes)
        ),
        "reason": "",
        "note": "; ".join(dict.fromkeys(str(w.message) for w in caught)),
    }
    row["ece_reduction_pct"] = (
        100 * (row["ece_before"] - row["ece_after"]) / row["ece_before"] if row["ece_before"] > 0 else float("nan")
    )
    row["delta_auc"] = row["auc_after"] - row["auc_before"]  # measured: one-vs-rest AUC can move with T
    row["degenerate"] = degenerate_temperature(t, after)
    curves = reliability_rows(group, before, y, "before", n_bins) + reliability_rows(group, after, y, "after", n_bins)
    return row, curves
