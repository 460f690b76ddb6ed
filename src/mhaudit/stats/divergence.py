"""Degree of Divergence and its regime-permutation diagnostic (TSS paper, section 5, Appendix A).

The audit compares two channels, x (e.g. BC) and a (the lexical channel A), by Macro-F1 on human- and
auto-labelled data sets. Its Degree of Divergence (Appendix A, Eq. 3) is a difference in differences,

    DoD = mean_h [MF1_h(x) - MF1_h(a)] - mean_a [MF1_a(x) - MF1_a(a)],

with an instance-level bootstrap (10,000 resamples, `mhaudit.stats.binary.bootstrap_macro_f1`) for its
uncertainty; the regime permutation reassigns the data sets to the two sides.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mhaudit.stats.binary import bootstrap_macro_f1, bootstrap_p, check_pred, full_macro_f1
from mhaudit.stats.bootstrap import summarise
from mhaudit.stats.delong import check_binary
from mhaudit.stats.undefined import quiet_undefined

__all__ = ["degree_of_divergence", "regime_permutation"]

# regime_permutation enumerates assignments; beyond this many it would be a sampling job.
_MAX_ASSIGNMENTS = 1_000_000


def _check_alternative(alternative: str) -> None:
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")


def _names(label: str, names, pool: Mapping, pool_name: str) -> list:
    """The data sets one side names, as a list: non-empty, distinct, all in `pool`."""
    if isinstance(names, str):
        raise ValueError(f"{label} must be a list of data-set names, got the string {names!r}")
    names = list(names)
    if not names:
        raise ValueError(f"The {label} side is empty: DoD needs at least one data set on each side.")
    if len(set(names)) != len(names):
        raise ValueError(f"The {label} side names a data set more than once: {names}.")
    missing = [n for n in names if n not in pool]
    if missing:
        raise ValueError(f"The {label} side names data sets not in {pool_name}: {missing}.")
    return names


def _check_sides(groups: Mapping, human, auto) -> tuple[list[str], list[str]]:
    human, auto = _names("human", human, groups, "groups"), _names("auto", auto, groups, "groups")
    both = sorted(set(human) & set(auto), key=str)
    if both:
        raise ValueError(f"Data sets {both} are on both the human and the auto side; each belongs to one.")
    return human, auto


def _checked_group(groups: Mapping, name: str) -> tuple[np.ndarray, np.ndarray]:
    """One data set's labels, with both classes, and its two prediction vectors stacked as (x, a)."""
    try:
        y, pred_x, pred_a = groups[name]
    except (TypeError, ValueError):
        raise ValueError(f"groups[{name!r}] must be a triple (y, pred_x, pred_a)") from None
    y = check_binary(y, f"y of {name!r}")
    if y.size == 0 or y.all() or not y.any():
        raise ValueError(
            f"Data set {name!r} has a single class in y (or no instance); its Macro-F1 "
            "difference is not a comparison of two classes, so DoD would be meaningless."
        )
    preds = np.stack(
        [check_pred(pred_x, y.size, f"pred_x of {name!r}"), check_pred(pred_a, y.size, f"pred_a of {name!r}")]
    )
    return y, preds


def degree_of_divergence(
    groups: Mapping,
    human: Sequence[str],
    auto: Sequence[str],
    n_boot: int = 10000,
    rng=None,
    alternative: str = "greater",
    zero_division: float = math.nan,
) -> dict:
    """Degree of Divergence (paper Eq. 3) of channel x against channel a, with an instance bootstrap.

    `groups` maps a data-set name to (y, pred_x, pred_a), binary arrays over that data set's
    instances; `human` and `auto` list the names on each side (groups not listed are ignored).
    DoD = mean over human data sets of [MF1(x) - MF1(a)] - the same mean over auto data sets.

    Each data set is resampled independently (plain instance bootstrap; data set i in human + auto
    order draws from the i-th child of `np.random.default_rng(rng).spawn(...)`), and x and a share
    each resample, so every within-data-set difference is paired. The resampled DoDs give `se`,
    the 95% percentile `ci_low, ci_high`, `z` = estimate / se (a z-score, not an effect size), and
    `p`: the one-sided bootstrap p in the direction of `alternative` ("greater": share of resampled
    DoD <= 0; "less": share >= 0; both (k + 1) / (B + 1)), with `p_two_sided` = 2 x the smaller one-
    sided p, capped at 1. Also returns `n_boot`, `alternative`, `per_dataset` (DataFrame: dataset,
    side, n, mf1_x, mf1_a, delta on the full data), `draws` (the n_boot resampled DoDs) and
    `n_failed`: resamples in which a Macro-F1 is undefined (a drawn set lost a class that a vector
    never predicts), left out of the interval, or scored with `zero_division` when that is a number.
    """
    _check_alternative(alternative)
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2 for a standard error, got {n_boot}")
    human, auto = _check_sides(groups, human, auto)
    names = human + auto
    children = np.random.default_rng(rng).spawn(len(names))
    rows, draws = [], np.empty((n_boot, len(names)))
    for j, (name, child) in enumerate(zip(names, children)):
        y, preds = _checked_group(groups, name)
        with quiet_undefined():  # n_failed counts them
            full = full_macro_f1(y, preds, zero_division)  # y has both classes: always defined
            boot = bootstrap_macro_f1(y, preds, n_boot, child, stratified=False, zero_division=zero_division)
        draws[:, j] = boot[:, 0] - boot[:, 1]
        rows.append(
            {
                "dataset": name,
                "side": "human" if j < len(human) else "auto",
                "n": int(y.size),
                "mf1_x": float(full[0]),
                "mf1_a": float(full[1]),
                "delta": float(full[0] - full[1]),
            }
        )
    per_dataset = pd.DataFrame(rows)
    h = len(human)
    estimate = float(per_dataset["delta"].iloc[:h].mean() - per_dataset["delta"].iloc[h:].mean())
    dod_draws = draws[:, :h].mean(axis=1) - draws[:, h:].mean(axis=1)
    s = summarise(dod_draws)
    p = bootstrap_p(dod_draws)
    se = s["se"]
    return {
        "estimate": estimate,
        "ci_low": s["ci_low"],
        "ci_high": s["ci_high"],
        "se": se,
        "z": estimate / se if se > 0 else float("nan"),
        "p": p[f"p_{alternative}"],
        "p_two_sided": p["p_two_sided"],
        "alternative": alternative,
        "n_boot": int(n_boot),
        "n_failed": s["n_failed"],
        "per_dataset": per_dataset,
        "draws": dod_draws,
    }


def regime_permutation(deltas: Mapping[str, float], human: Sequence[str], alternative: str = "greater") -> dict:
    """Permutation diagnostic for DoD: every reassignment of the data sets to the two sides.

    `deltas` maps every data set to its MF1(x) - MF1(a); `human` names the observed human side (the
    rest is auto). DoD is recomputed for each choice of len(human) data sets as human (the observed
    one included), and `p` is the share of choices with DoD at least as extreme as observed: >= for
    "greater", <= for "less" (1e-12 relative tolerance for ties in floating point). With so few
    data sets the p-value is coarse: 2 + 2 data sets allow only 6 assignments, so p >= 1/6 whatever
    the data. Returns `observed, p, min_p` (1 / number of assignments), `n_assignments`,
    `alternative`, `note` (the smallest attainable p, in words) and `assignments` (DataFrame: human
    side as a tuple, dod).

    >>> r = regime_permutation({"h1": .10, "h2": .06, "a1": -.02, "a2": 0.}, ["h1", "h2"])
    >>> round(r["observed"], 4), r["p"], r["n_assignments"]
    (0.09, 0.16666666666666666, 6)
    """
    _check_alternative(alternative)
    human, names = _names("human", human, deltas, "deltas"), list(deltas)
    if len(human) == len(names):
        raise ValueError("Both sides need at least one data set: human must be a non-empty proper subset of deltas.")
    values = np.array([float(deltas[n]) for n in names])
    if not np.isfinite(values).all():
        raise ValueError("deltas must be finite")
    h = len(human)
    n_assign = math.comb(len(names), h)
    if n_assign > _MAX_ASSIGNMENTS:
        raise ValueError(f"{n_assign} assignments are too many to enumerate (limit {_MAX_ASSIGNMENTS})")

    def dod(mask: np.ndarray) -> float:
        return float(values[mask].mean() - values[~mask].mean())

    observed = dod(np.array([n in human for n in names]))
    combos = list(itertools.combinations(range(len(names)), h))
    # at most _MAX_ASSIGNMENTS; not a loop over resamples
    stats = np.array([dod(np.isin(np.arange(len(names)), combo)) for combo in combos])
    tol = 1e-12 * max(1.0, float(np.abs(values).max()))
    hits = stats >= observed - tol if alternative == "greater" else stats <= observed + tol
    min_p = 1 / n_assign
    note = (
        f"{n_assign} assignments of {len(names)} data sets to sides of {h} and {len(names) - h}: "
        f"the smallest attainable p is 1/{n_assign} = {min_p:.4f}"
    )
    note += ", above 0.05, so this diagnostic cannot reach the 5% level whatever the data." if min_p > 0.05 else "."
    table = pd.DataFrame({"human": [tuple(names[i] for i in c) for c in combos], "dod": stats})
    return {
        "observed": observed,
        "p": float(hits.mean()),
        "min_p": min_p,
        "n_assignments": n_assign,
        "alternative": alternative,
        "note": note,
        "assignments": table,
    }
