"""Binary classification statistics for the label-source divergence audit (TSS paper, section 5, Appendix A).

The audit compares two channels, x (e.g. BC) and a (the lexical channel A), by Macro-F1 on human- and
auto-labelled data sets. Its Degree of Divergence (Appendix A, Eq. 3) is a difference in differences,

    DoD = mean_h [MF1_h(x) - MF1_h(a)] - mean_a [MF1_a(x) - MF1_a(a)],

with an instance-level bootstrap (10,000 resamples) for its uncertainty; section 5 adds paired
bootstrap differences, McNemar tests, Benjamini-Hochberg FDR and a regime-permutation diagnostic.

Macro-F1 of a resample depends on the resample only through four tallies per prediction vector (true
and false positives, false and true negatives). A resample is a row of counts (how many times each
instance is drawn, `resample_counts`), so the tallies of a block of resamples are one matrix product,
counts (rows x n) @ indicators (n x 4k), done by BLAS: no Python loop over resamples. Counts and
tallies are integers; they are multiplied in float32 when a row's total is below 2**24 (every partial
sum is then an exact integer) and in float64 otherwise, so the tallies are exact and each Macro-F1 is
an exact fraction rounded once: it equals sklearn's on the explicitly resampled arrays to rounding.

Macro-F1 here is always the mean of the F1 of class 1 and of class 0, with an undefined F1 (no true,
predicted or drawn instance of the class) counted as 0, i.e. `f1_score(..., average="macro",
labels=[0, 1], zero_division=0)`. sklearn without `labels` averages only over the labels present in
y and the predictions, which differs in a resample that lost a class; the fixed two-label mean keeps
every resample on the scale of the full-data estimate.

Resamples are processed in blocks of about `_BLOCK_CELLS` counts (4 MB of int32 and as much in float),
which bounds the working memory whatever the number of resamples.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import chi2

from mhaudit.stats._delong import auc_only, check_binary, check_scores
from mhaudit.stats.bootstrap import resample_counts, summarise

__all__ = [
    "binary_scores",
    "majority_macro_f1",
    "macro_f1_from_counts",
    "bootstrap_macro_f1",
    "paired_difference",
    "degree_of_divergence",
    "regime_permutation",
    "mcnemar",
    "benjamini_hochberg",
]

# Resamples x instances per block. 2**20 int32 counts (4 MB) drew 10,000 resamples of 8,897 instances
# in 0.7 s against 1.1 s for 2**18-cell blocks (per-call overhead of resample_counts); the matrix
# product is a small share either way.
_BLOCK_CELLS = 1 << 20
# Largest integer below which every float32 partial sum of counts is exact.
_F32_EXACT = 1 << 24
# regime_permutation enumerates assignments; beyond this many it would be a sampling job.
_MAX_ASSIGNMENTS = 1_000_000


def _check_pred(pred, n: int, name: str) -> np.ndarray:
    pred = check_binary(pred, name)
    if pred.size != n:
        raise ValueError(f"{name} must have one prediction per instance ({n}), got {pred.size}")
    return pred


def _check_preds(preds, n: int) -> np.ndarray:
    """`preds` as a (k, n) bool matrix; a single 1-D vector becomes k = 1."""
    preds = np.asarray(preds)
    if preds.ndim == 1:
        preds = preds[None, :]
    if preds.ndim != 2 or preds.shape[1] != n:
        raise ValueError(f"preds must have shape (k, n) with n = {n} instances, got {preds.shape}")
    if preds.dtype != bool:
        if preds.size and not np.isin(preds, (0, 1)).all():
            raise ValueError(f"preds must be binary (0/1 or bool); found values {np.unique(preds)[:5].tolist()}")
        preds = preds == 1
    return preds


def _check_nonempty(y: np.ndarray, what: str = "y") -> None:
    if y.size == 0:
        raise ValueError(f"{what} is empty: the scores need at least one instance")


def _check_alternative(alternative: str) -> None:
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', got {alternative!r}")


def _ratio(num: float, den: float) -> float:
    """num / den, or 0.0 where the denominator is 0 (sklearn's zero_division=0)."""
    return num / den if den else 0.0


def macro_f1_from_counts(tp, fp, fn, tn):
    """Macro-F1 (mean of the F1 of class 1 and of class 0) from confusion tallies; arrays broadcast.

    F1(1) = 2tp / (2tp + fp + fn) and F1(0) = 2tn / (2tn + fn + fp), each 0 where its denominator is
    0 (sklearn's zero_division=0). The class-0 F1 is the class-1 F1 with the roles of tp and tn
    swapped, so four tallies per prediction vector are all a resample needs.

    >>> macro_f1_from_counts([3, 0], [1, 0], [1, 0], [5, 4]).round(4).tolist()
    [0.7917, 0.5]
    """
    tp, fp, fn, tn = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (tp, fp, fn, tn)))
    if any(v.size and v.min() < 0 for v in (tp, fp, fn, tn)):
        raise ValueError("confusion counts must be non-negative")
    wrong = fp + fn
    den_pos, den_neg = 2 * tp + wrong, 2 * tn + wrong
    f_pos = np.divide(2 * tp, den_pos, out=np.zeros(den_pos.shape), where=den_pos > 0)
    f_neg = np.divide(2 * tn, den_neg, out=np.zeros(den_neg.shape), where=den_neg > 0)
    return ((f_pos + f_neg) / 2)[()]  # 0-d results as numpy scalars


def _average_precision(y: np.ndarray, score: np.ndarray) -> float:
    """sklearn's `average_precision_score`: sum over distinct thresholds of (recall step) x precision.

    Tied scores form one threshold (one point of the precision-recall curve), as in sklearn. With no
    positive, recall is undefined and sklearn returns 0.0 (with a warning); so does this.
    """
    n_pos = int(y.sum())
    if n_pos == 0:
        return 0.0
    order = np.argsort(-score, kind="stable")
    ranked, hits = score[order], y[order]
    ends = np.r_[np.flatnonzero(np.diff(ranked)), ranked.size - 1]  # last instance of each threshold
    tps = np.cumsum(hits)[ends]
    precision = tps / (ends + 1)
    recall_step = np.diff(np.r_[0, tps]) / n_pos
    return float(np.sum(recall_step * precision))


def binary_scores(y, pred, prob=None) -> dict:
    """The metric dashboard of one binary prediction vector (paper Table 22), as plain floats.

    Returns `n, prevalence, macro_f1, f1_pos, precision, recall, accuracy, balanced_accuracy, mcc`,
    and with `prob` (scores for class 1) also `pr_auc` (average precision) and `roc_auc`. Each equals
    its sklearn namesake: undefined precision, recall, F1 and MCC are 0 (zero_division=0); balanced
    accuracy is the mean recall over the classes present in y; `roc_auc` is NaN when y has one class
    and `pr_auc` is 0 when y has no positive (both as sklearn, which also warns). Macro-F1 averages
    the two classes always (see the module docstring).

    >>> s = binary_scores([1, 1, 0, 0, 0], [1, 0, 0, 0, 1], prob=[.9, .4, .2, .1, .6])
    >>> round(s["macro_f1"], 4), s["precision"], round(s["pr_auc"], 4), round(s["roc_auc"], 4)
    (0.5833, 0.5, 0.8333, 0.8333)
    """
    y = check_binary(y, "y")
    _check_nonempty(y)
    pred = _check_pred(pred, y.size, "pred")
    tp = int(np.count_nonzero(y & pred))
    fp = int(np.count_nonzero(~y & pred))
    fn = int(np.count_nonzero(y & ~pred))
    tn = y.size - tp - fp - fn
    recalls = [tp / (tp + fn)] if tp + fn else []
    recalls += [tn / (tn + fp)] if tn + fp else []
    den = math.sqrt(float(tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    out = {
        "n": int(y.size),
        "prevalence": (tp + fn) / y.size,
        "macro_f1": float(macro_f1_from_counts(tp, fp, fn, tn)),
        "f1_pos": _ratio(2 * tp, 2 * tp + fp + fn),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "accuracy": (tp + tn) / y.size,
        "balanced_accuracy": float(np.mean(recalls)),
        "mcc": _ratio(tp * tn - fp * fn, den),  # integer numerator: exact before the one division
    }
    if prob is not None:
        score = check_scores(prob, y.size, "prob")
        out["pr_auc"] = _average_precision(y, score)
        out["roc_auc"] = auc_only(y, score) if 0 < tp + fn < y.size else float("nan")
    return out


def majority_macro_f1(y) -> float:
    """Macro-F1 of always predicting the majority class of y (ties: class 0; the value is the same).

    With majority share p it is p / (1 + p): the majority class scores 2p / (1 + p), the other 0. The
    paper's Reddit-combi baseline (positive share 0.880) is 0.468.

    >>> round(majority_macro_f1([1] * 88 + [0] * 12), 3)
    0.468
    """
    y = check_binary(y, "y")
    _check_nonempty(y)
    pos = int(y.sum())
    neg = y.size - pos
    if pos > neg:  # predict 1 everywhere: tp = pos, fp = neg
        return float(macro_f1_from_counts(pos, neg, 0, 0))
    return float(macro_f1_from_counts(0, 0, pos, neg))  # predict 0 everywhere: fn = pos, tn = neg


def _sum_dtype(max_row_total: int) -> type:
    """float32 (exact, and half the memory traffic) when no partial sum can reach 2**24."""
    return np.float32 if max_row_total < _F32_EXACT else np.float64


def _indicators(y: np.ndarray, preds: np.ndarray, dtype) -> np.ndarray:
    """(n, 4k) 0/1 matrix: columns 4j..4j+3 flag the tp, fp, fn, tn instances of prediction vector j."""
    k, n = preds.shape
    yk = y[None, :]
    cells = np.stack([yk & preds, ~yk & preds, yk & ~preds, ~yk & ~preds], axis=1)  # (k, 4, n)
    return np.ascontiguousarray(cells.reshape(4 * k, n).T, dtype=dtype)


def _block_macro_f1(indicators: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Macro-F1 of each row of `counts` for each prediction vector: (rows, k)."""
    tallies = counts.astype(indicators.dtype) @ indicators  # (rows, 4k), exact integers
    t = tallies.reshape(counts.shape[0], indicators.shape[1] // 4, 4).astype(np.float64)
    return macro_f1_from_counts(t[..., 0], t[..., 1], t[..., 2], t[..., 3])


def _count_blocks(y: np.ndarray, n_boot: int, rng: np.random.Generator, stratified: bool):
    """Yield (first row, counts block) for `n_boot` resamples of y, about `_BLOCK_CELLS` counts at a time.

    The draws depend on the generator's state and on the block size; bootstrap_macro_f1 consumes
    exactly these blocks, so a caller with the same generator state reproduces its resamples.
    """
    step = max(1, _BLOCK_CELLS // max(y.size, 1))
    for start in range(0, n_boot, step):
        yield start, resample_counts(y, min(n_boot, start + step) - start, rng, stratified)


def _weighted_macro_f1(y, preds, counts) -> np.ndarray:
    """Macro-F1 for given resample counts (rows of `counts`, shape (B, n)): shape (B, k).

    Row c equals `f1_score(np.repeat(y, c), np.repeat(pred, c), average="macro", labels=[0, 1],
    zero_division=0)` for each prediction vector (an all-zero row scores 0).
    """
    y = check_binary(y, "y")
    preds = _check_preds(preds, y.size)
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != y.size or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"counts must be an integer matrix of shape (B, {y.size}), got {counts.dtype} {counts.shape}")
    if counts.size and counts.min() < 0:
        raise ValueError("counts must be non-negative")
    total = int(counts.sum(axis=1, dtype=np.int64).max()) if counts.size else 0
    return _block_macro_f1(_indicators(y, preds, _sum_dtype(total)), counts)


def bootstrap_macro_f1(y, preds, n_boot: int = 2000, rng=None, stratified: bool = False) -> np.ndarray:
    """Macro-F1 of k prediction vectors over the same instances in each of `n_boot` resamples: (n_boot, k).

    `preds` is (k, n) (or one vector of n). All k vectors are scored on the same resamples, so any
    difference of columns is a paired bootstrap. Resamples are drawn as count rows
    (`resample_counts`; stratified keeps the class sizes) in blocks; each block's tp/fp/fn/tn
    tallies are one BLAS product counts @ indicators (n x 4k). `rng`: a Generator or a seed.

    >>> bootstrap_macro_f1([0, 0, 1, 1, 1, 0], [[0, 0, 1, 1, 1, 0], [0, 1, 1, 0, 1, 0]], 3, rng=0).shape
    (3, 2)
    """
    y = check_binary(y, "y")
    _check_nonempty(y)
    preds = _check_preds(preds, y.size)
    if n_boot < 0:
        raise ValueError(f"n_boot must be non-negative, got {n_boot}")
    rng = np.random.default_rng(rng)
    indicators = _indicators(y, preds, _sum_dtype(y.size))  # every drawn row totals n
    out = np.empty((n_boot, preds.shape[0]))
    for start, counts in _count_blocks(y, n_boot, rng, stratified):
        out[start:start + counts.shape[0]] = _block_macro_f1(indicators, counts)
    return out


def _full_macro_f1(y: np.ndarray, preds: np.ndarray) -> np.ndarray:
    """Macro-F1 of each prediction vector on the full data: (k,)."""
    return _block_macro_f1(_indicators(y, preds, _sum_dtype(y.size)), np.ones((1, y.size), dtype=np.int32))[0]


def _bootstrap_p(draws: np.ndarray) -> dict:
    """One-sided bootstrap p-values for an effect > 0 and < 0, with the +1 correction, and two-sided.

    p_greater is the share of resampled effects <= 0, (k + 1) / (B + 1), so it is never 0: the
    resamples themselves are one more draw short of certainty (Davison & Hinkley 1997, ch. 4).
    """
    b = draws.size
    p_greater = (np.count_nonzero(draws <= 0) + 1) / (b + 1)
    p_less = (np.count_nonzero(draws >= 0) + 1) / (b + 1)
    return {"p_greater": float(p_greater), "p_less": float(p_less),
            "p_two_sided": float(min(1.0, 2 * min(p_greater, p_less)))}


def paired_difference(y, pred_x, pred_ref, n_boot: int = 2000, rng=None) -> dict:
    """Macro-F1 of x minus that of ref on the same instances, with a paired instance bootstrap.

    Both vectors are scored on every resample (plain, not stratified), so the shared instance noise
    cancels in the difference. Returns `delta, mf1_x, mf1_ref` on the full data, `se` (SD of the
    resampled deltas), `ci_low, ci_high` (95% percentile), `p_greater` (share of resampled deltas
    <= 0, (k + 1) / (B + 1)), `p_less` and `p_two_sided` (2 x the smaller, capped at 1), `n_boot`.

    >>> r = paired_difference([0, 1] * 20, [0, 1] * 20, [0, 0, 1, 1] * 10, n_boot=200, rng=0)
    >>> r["delta"], r["p_greater"] < 0.01
    (0.5, True)
    """
    y = check_binary(y, "y")
    _check_nonempty(y)
    preds = np.stack([_check_pred(pred_x, y.size, "pred_x"), _check_pred(pred_ref, y.size, "pred_ref")])
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2 for a standard error, got {n_boot}")
    full = _full_macro_f1(y, preds)
    draws = bootstrap_macro_f1(y, preds, n_boot, rng, stratified=False)
    deltas = draws[:, 0] - draws[:, 1]
    s = summarise(deltas)
    return {"delta": float(full[0] - full[1]), "mf1_x": float(full[0]), "mf1_ref": float(full[1]),
            "se": s["se"], "ci_low": s["ci_low"], "ci_high": s["ci_high"], **_bootstrap_p(deltas),
            "n_boot": int(n_boot)}


def _check_sides(groups: Mapping, human, auto) -> tuple[list[str], list[str]]:
    sides = []
    for label, names in (("human", human), ("auto", auto)):
        if isinstance(names, str):
            raise ValueError(f"{label} must be a list of data-set names, got the string {names!r}")
        names = list(names)
        if not names:
            raise ValueError(f"The {label} side is empty: DoD needs at least one data set on each side.")
        if len(set(names)) != len(names):
            raise ValueError(f"The {label} side names a data set more than once: {names}.")
        missing = [n for n in names if n not in groups]
        if missing:
            raise ValueError(f"The {label} side names data sets not in groups: {missing}.")
        sides.append(names)
    both = sorted(set(sides[0]) & set(sides[1]), key=str)
    if both:
        raise ValueError(f"Data sets {both} are on both the human and the auto side; each belongs to one.")
    return sides[0], sides[1]


def degree_of_divergence(groups: Mapping, human: Sequence[str], auto: Sequence[str], n_boot: int = 10000,
                         rng=None, alternative: str = "greater") -> dict:
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
    side, n, mf1_x, mf1_a, delta on the full data) and `draws` (the n_boot resampled DoDs).
    """
    _check_alternative(alternative)
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2 for a standard error, got {n_boot}")
    human, auto = _check_sides(groups, human, auto)
    names = human + auto
    children = np.random.default_rng(rng).spawn(len(names))
    rows, draws = [], np.empty((n_boot, len(names)))
    for j, (name, child) in enumerate(zip(names, children)):
        try:
            y, pred_x, pred_a = groups[name]
        except (TypeError, ValueError):
            raise ValueError(f"groups[{name!r}] must be a triple (y, pred_x, pred_a)") from None
        y = check_binary(y, f"y of {name!r}")
        if y.size == 0 or y.all() or not y.any():
            raise ValueError(f"Data set {name!r} has a single class in y (or no instance); its Macro-F1 "
                             "difference is not a comparison of two classes, so DoD would be meaningless.")
        preds = np.stack([_check_pred(pred_x, y.size, f"pred_x of {name!r}"),
                          _check_pred(pred_a, y.size, f"pred_a of {name!r}")])
        full = _full_macro_f1(y, preds)
        boot = bootstrap_macro_f1(y, preds, n_boot, child, stratified=False)
        draws[:, j] = boot[:, 0] - boot[:, 1]
        rows.append({"dataset": name, "side": "human" if j < len(human) else "auto", "n": int(y.size),
                     "mf1_x": float(full[0]), "mf1_a": float(full[1]), "delta": float(full[0] - full[1])})
    per_dataset = pd.DataFrame(rows)
    h = len(human)
    estimate = float(per_dataset["delta"].iloc[:h].mean() - per_dataset["delta"].iloc[h:].mean())
    dod_draws = draws[:, :h].mean(axis=1) - draws[:, h:].mean(axis=1)
    s = summarise(dod_draws)
    p = _bootstrap_p(dod_draws)
    se = s["se"]
    return {"estimate": estimate, "ci_low": s["ci_low"], "ci_high": s["ci_high"], "se": se,
            "z": estimate / se if se > 0 else float("nan"), "p": p[f"p_{alternative}"],
            "p_two_sided": p["p_two_sided"], "alternative": alternative, "n_boot": int(n_boot),
            "per_dataset": per_dataset, "draws": dod_draws}


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
    if isinstance(human, str):
        raise ValueError(f"human must be a list of data-set names, got the string {human!r}")
    names = list(deltas)
    human = list(human)
    if len(set(human)) != len(human):
        raise ValueError(f"human names a data set more than once: {human}")
    missing = [n for n in human if n not in deltas]
    if missing:
        raise ValueError(f"human names data sets not in deltas: {missing}")
    if not 0 < len(human) < len(names):
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

    chosen = set(human)
    observed_mask = np.array([n in chosen for n in names])
    observed = dod(observed_mask)
    combos = list(itertools.combinations(range(len(names)), h))
    stats = np.empty(len(combos))
    for i, combo in enumerate(combos):  # at most _MAX_ASSIGNMENTS; not a loop over resamples
        mask = np.zeros(len(names), dtype=bool)
        mask[list(combo)] = True
        stats[i] = dod(mask)
    tol = 1e-12 * max(1.0, float(np.abs(values).max()))
    hits = stats >= observed - tol if alternative == "greater" else stats <= observed + tol
    min_p = 1 / n_assign
    note = (f"{n_assign} assignments of {len(names)} data sets to sides of {h} and {len(names) - h}: "
            f"the smallest attainable p is 1/{n_assign} = {min_p:.4f}")
    if min_p > 0.05:
        note += ", above 0.05, so this diagnostic cannot reach the 5% level whatever the data."
    else:
        note += "."
    table = pd.DataFrame({"human": [tuple(names[i] for i in c) for c in combos], "dod": stats})
    return {"observed": observed, "p": float(hits.mean()), "min_p": min_p, "n_assignments": n_assign,
            "alternative": alternative, "note": note, "assignments": table}


def mcnemar(y, pred_a, pred_b) -> dict:
    """Continuity-corrected McNemar test of two classifiers on the same instances.

    b counts instances a gets right and b wrong, c the reverse; the statistic (|b - c| - 1)^2 / (b + c)
    is referred to chi-square with 1 df. It equals statsmodels' `mcnemar(table, exact=False,
    correction=True)` except when b == c: there the correction would overshoot zero and statsmodels
    reports 1 / (b + c); we report 0 and p = 1, as R's `mcnemar.test` does (no evidence either way).
    With no discordant pair (b + c = 0) the statistic is 0 and p = 1. Returns `statistic, p, b, c, n`.

    >>> r = mcnemar([1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0], [0, 0, 0, 1, 0, 1])
    >>> r["b"], r["c"], r["statistic"], round(r["p"], 4)
    (4, 0, 2.25, 0.1336)
    """
    y = check_binary(y, "y")
    ok_a = _check_pred(pred_a, y.size, "pred_a") == y
    ok_b = _check_pred(pred_b, y.size, "pred_b") == y
    b = int(np.count_nonzero(ok_a & ~ok_b))
    c = int(np.count_nonzero(~ok_a & ok_b))
    if b + c == 0:
        stat, p = 0.0, 1.0
    else:
        stat = max(abs(b - c) - 1, 0) ** 2 / (b + c)
        p = float(chi2.sf(stat, 1))
    return {"statistic": float(stat), "p": p, "b": b, "c": c, "n": int(y.size)}


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg (1995) FDR-adjusted p-values, in the input's shape.

    adjusted p_(i) = min over j >= i of m p_(j) / j (sorted ascending), capped at 1; NaNs are passed
    through and not counted in m (a test that was not run is not a hypothesis of the family).

    >>> benjamini_hochberg([0.01, 0.04, float("nan"), 0.03]).round(4).tolist()
    [0.03, 0.04, nan, 0.04]
    """
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    ok = ~np.isnan(flat)
    q = flat[ok]
    if q.size and (q.min() < 0 or q.max() > 1):
        raise ValueError("p-values must lie in [0, 1] (or be NaN)")
    m = q.size
    order = np.argsort(q, kind="stable")
    scaled = q[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    back = np.empty(m)
    back[order] = adjusted
    out = np.full(flat.shape, np.nan)
    out[ok] = back
    return out.reshape(p.shape)
