"""Agreement-on-the-line: several runs' target accuracy from how often they agree on unlabelled target rows.

Across runs of models trained on one source, probit(target agreement of runs i and j) is close to linear in
probit(reference agreement of i and j), and, when that holds, target accuracy follows the same line
(Baek et al., NeurIPS 2022; Mehra et al. 2024 for fine-tuned foundation models). With slope a and intercept
b fitted on the run pairs' agreements:

- ALine-S: probit(acc_target(i)) = a * probit(acc_reference(i)) + b.
- ALine-D: for every pair, (x_i + x_j) / 2 = probit(agr_target(i, j))
  + a * ((probit(acc_ref(i)) + probit(acc_ref(j))) / 2 - probit(agr_ref(i, j))), solved for x = probit of
  the target accuracies by least squares (full rank from three runs on).

Accuracy only: no extension to macro-F1 or per-class recall has been shown to hold (docs/estimate.md).

Bootstrap draws resample reference rows and target rows jointly across runs (every run sees the same
draw), as counts, in blocks of draws: each block is two matrix products, no Python loop over draws. The
interval adds the line's own misfit, 1.96 residual SDs in probit units, to the bootstrap's in quadrature:
resampling rows measures how well the agreements are known, not how far the accuracies sit off the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from scipy.special import ndtr, ndtri

from mhaudit.core.threads import thread_budget

__all__ = [
    "AgreementLine",
    "agreement_line",
    "distinct_runs",
    "line_trust",
    "MIN_RUNS",
    "MIN_R2",
    "MAX_RESIDUAL_SD",
    "MIN_SPREAD",
    "MAX_AGREEMENT",
    "MAX_METHOD_GAP",
]

Z95 = 1.959963984540054
_CHUNK_CELLS = 1 << 21  # draws x rows per block of resampling counts: 8 MB of float32
_ROW_BLOCK_BYTES = 1 << 25  # of the indicators made float32 at a time: 40k rows at 20 runs (210 columns)


@dataclass
class AgreementLine:
    """One ensemble on one target: the fitted line, each run's estimates and their 95% intervals."""

    slope: float
    intercept: float
    r2: float  # of the probit agreement line over run pairs
    residual_sd: float  # its residual SD in probit units (n_pairs - 2 degrees of freedom)
    spread: float  # SD of the reference agreements over pairs, in probit units: how diverse the runs are
    n_runs: int
    n_pairs: int
    accuracy_reference: np.ndarray  # (runs,)
    agreement_reference: np.ndarray  # (pairs,) in `pairs` order
    agreement_target: np.ndarray  # (pairs,)
    pairs: list[tuple[int, int]]
    estimates: dict[str, np.ndarray] = field(default_factory=dict)  # "aline-s" / "aline-d" -> (runs,)
    ci_low: dict[str, np.ndarray] = field(default_factory=dict)
    ci_high: dict[str, np.ndarray] = field(default_factory=dict)
    note: str = ""  # why the estimates are NaN, when they are

    @property
    def method_gap(self) -> float:
        """The largest gap between ALine-S and ALine-D over the runs (NaN when either is undefined)."""
        gaps = np.abs(self.estimates["aline-s"] - self.estimates["aline-d"])
        return float(gaps.max()) if np.isfinite(gaps).all() else np.nan


def _probit(p: np.ndarray, n: int) -> np.ndarray:
    """probit, with a share of 0 or 1 moved half a row inside so it stays finite."""
    half = 0.5 / n
    return ndtri(np.clip(p, half, 1 - half))


def _line(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope and intercept of y on x along the last axis (x, y: (..., pairs))."""
    xc = x - x.mean(axis=-1, keepdims=True)
    var = (xc * xc).sum(axis=-1)
    slope = np.divide(
        (xc * (y - y.mean(axis=-1, keepdims=True))).sum(axis=-1), var, out=np.full(var.shape, np.nan), where=var > 1e-12
    )  # rounding, not spread
    return slope, y.mean(axis=-1) - slope * x.mean(axis=-1)


def _pair_solver(n_runs: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    """(runs, pairs) least-squares solver of ALine-D's system: row p says (x_i + x_j) / 2 = rhs_p."""
    design = np.zeros((len(pairs), n_runs))
    for p, (i, j) in enumerate(pairs):
        design[p, [i, j]] = 0.5
    return np.linalg.pinv(design)


def aline_estimates(
    acc_ref: np.ndarray, agr_ref: np.ndarray, agr_tgt: np.ndarray, pairs, n_ref: int, n_tgt: int, solver: np.ndarray
) -> dict[str, np.ndarray]:
    """ALine-S and ALine-D target accuracies from reference accuracies (..., runs) and the pairs' reference and
    target agreements (..., pairs); leading axes (bootstrap draws) broadcast. Also the line: slope, intercept."""
    u_acc, u_ref, u_tgt = _probit(acc_ref, n_ref), _probit(agr_ref, n_ref), _probit(agr_tgt, n_tgt)
    slope, intercept = _line(u_ref, u_tgt)
    aline_s = ndtr(slope[..., None] * u_acc + intercept[..., None])
    i, j = np.array(pairs).T
    rhs = u_tgt + slope[..., None] * ((u_acc[..., i] + u_acc[..., j]) / 2 - u_ref)
    aline_d = ndtr(rhs @ solver.T)
    return {"aline-s": aline_s, "aline-d": aline_d, "slope": slope, "intercept": intercept}


def _indicators(pred: np.ndarray, y: np.ndarray | None, pairs) -> np.ndarray:
    """(rows, [runs +] pairs) 0/1 as bool, one byte a cell (float32 took 840 MB at 1M rows x 20 runs): each run
    right (when y is given), then each pair agreeing. Filled a row of the transpose at a time: `pred[i] ==
    pred[j]` over all pairs at once held two (pairs, rows) int64 copies (3 GB at 1M rows x 20 runs)."""
    rights = range(len(pred)) if y is not None else range(0)
    out = np.empty((len(rights) + len(pairs), pred.shape[1]), dtype=bool)
    for k in rights:  # y is given
        out[k] = pred[k] == y
    for k, (i, j) in enumerate(pairs, start=len(rights)):
        np.equal(pred[i], pred[j], out=out[k])
    return out.T


def _resampled_means(indicators: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Means of the indicator columns under `draws` row bootstraps (multinomial counts), float32.

    The product counts @ indicators runs over blocks of rows, each block's indicators made float32 only then.
    Below 2**24 rows every partial sum is an integer below 2**24 (a draw's counts sum to the rows), which
    float32 holds exactly, so the blocks give the same floats as one product; they add in float64."""
    n = len(indicators)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=draws).astype(np.float32)
    total = np.zeros((draws, indicators.shape[1]))
    step = max(1, _ROW_BLOCK_BYTES // (4 * indicators.shape[1]))
    for start in range(0, n, step):
        total += counts[:, start : start + step] @ indicators[start : start + step].astype(np.float32)
    return total.astype(np.float32) / n


def agreement_line(
    pred_ref: np.ndarray,
    y_ref: np.ndarray,
    pred_tgt: np.ndarray,
    *,
    n_boot: int = 1000,
    rng: np.random.Generator | int | None = 0,
) -> AgreementLine:
    """ALine-S and ALine-D estimates of each run's accuracy on the target, with 95% intervals.

    `pred_ref` (runs, n_ref) and `pred_tgt` (runs, n_tgt): each run's predicted class codes on the same
    reference rows and the same target rows, in the same order for every run; `y_ref` the reference labels.
    Needs three runs or more (ALine-D's system is singular with two).
    """
    pred_ref, pred_tgt, y_ref = np.asarray(pred_ref), np.asarray(pred_tgt), np.asarray(y_ref)
    n_runs, n_ref = pred_ref.shape
    n_tgt = pred_tgt.shape[1]
    if n_runs < 3 or pred_tgt.shape[0] != n_runs or y_ref.shape != (n_ref,):
        raise ValueError(
            f"need (runs >= 3, n) predictions on both sides and n reference labels; got "
            f"{pred_ref.shape}, {pred_tgt.shape}, {y_ref.shape}"
        )
    rng = np.random.default_rng(rng)
    pairs = list(combinations(range(n_runs), 2))
    ref_ind, tgt_ind = _indicators(pred_ref, y_ref, pairs), _indicators(pred_tgt, None, pairs)
    acc_ref, agr_ref = np.split(ref_ind.mean(axis=0, dtype=np.float64), [n_runs])
    agr_tgt = tgt_ind.mean(axis=0, dtype=np.float64)
    solver = _pair_solver(n_runs, pairs)
    point = aline_estimates(acc_ref, agr_ref, agr_tgt, pairs, n_ref, n_tgt, solver)

    u_ref, u_tgt = _probit(agr_ref, n_ref), _probit(agr_tgt, n_tgt)
    residuals = u_tgt - (point["slope"] * u_ref + point["intercept"])
    total = ((u_tgt - u_tgt.mean()) ** 2).sum()
    residual_sd = float(np.sqrt((residuals**2).sum() / (len(pairs) - 2))) if len(pairs) > 2 else np.nan
    line = AgreementLine(
        slope=float(point["slope"]),
        intercept=float(point["intercept"]),
        r2=float(1 - (residuals**2).sum() / total) if total > 0 else np.nan,
        residual_sd=residual_sd,
        spread=float(u_ref.std()),
        n_runs=n_runs,
        n_pairs=len(pairs),
        accuracy_reference=acc_ref,
        agreement_reference=agr_ref,
        agreement_target=agr_tgt,
        pairs=pairs,
    )

    if not np.isfinite(line.slope):
        line.note = "the runs agree equally on every reference pair: no line can be fitted, accuracy undefined"
        for m in ("aline-s", "aline-d"):
            line.estimates[m] = line.ci_low[m] = line.ci_high[m] = np.full(n_runs, np.nan)
        return line
    draws = {m: np.empty((n_boot, n_runs)) for m in ("aline-s", "aline-d")}
    step = max(1, _CHUNK_CELLS // max(n_ref, n_tgt))
    # One BLAS thread: as fast idle, and 1.0 s against 1.2 s for 20 runs x 9,000 rows x 1,000 draws with two
    # busy processes on 2 cores (benchmarks/ensemble_estimate_speed.py's case).
    with thread_budget(1):
        for start in range(0, n_boot, step):  # blocks of draws bound the count matrices' memory
            stop = min(n_boot, start + step)
            acc_b, agr_ref_b = np.split(_resampled_means(ref_ind, stop - start, rng), [n_runs], axis=1)
            agr_tgt_b = _resampled_means(tgt_ind, stop - start, rng)
            est = aline_estimates(
                acc_b.astype(float), agr_ref_b.astype(float), agr_tgt_b.astype(float), pairs, n_ref, n_tgt, solver
            )
            for m in draws:
                draws[m][start:stop] = est[m]
    misfit = Z95 * (residual_sd if np.isfinite(residual_sd) else 0.0)
    for m, d in draws.items():
        x = _probit(point[m], n_tgt)
        low, high = (_probit(np.nanquantile(d, q, axis=0), n_tgt) for q in (0.025, 0.975))
        line.estimates[m] = point[m]
        line.ci_low[m] = ndtr(x - np.hypot(np.maximum(x - low, 0), misfit))
        line.ci_high[m] = ndtr(x + np.hypot(np.maximum(high - x, 0), misfit))
    return line


def distinct_runs(pred_ref: np.ndarray, pred_tgt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs with identical predictions on both sides are one point of the line: a copy adds a pair at agreement
    1 that only pulls the fit. Returns the indices of the distinct runs (fit the line on those) and, per run, the
    position of its twin among them (whose estimates it takes)."""
    both = np.hstack([np.asarray(pred_ref), np.asarray(pred_tgt)])
    _, distinct, twin = np.unique(both, axis=0, return_index=True, return_inverse=True)
    return distinct, twin.ravel()


# The trust rule of the agreement line (docs/estimate.md), fixed in the code from SYNTHETIC simulations (Gaussian
# classes, linear runs, 6 shifts x 4 seeds; two of the shifts are tests in tests/stats/test_agreement_line.py) before
# any real transfer was scored. There, lines with R² below 0.93 or residual SD above 0.05 gave mean accuracy errors
# of 0.03-0.05; the others 0.004-0.019.
MIN_RUNS = 4  # fewer runs give too few pairs to see whether the agreements lie on a line
MIN_SPREAD = 0.05  # SD of probit reference agreement over pairs: below it the runs are too alike to fit a slope
MAX_AGREEMENT = 0.99  # mean reference agreement: above it the runs are near copies, and the line, fitted in one
# corner, is extrapolated far to reach the accuracies
MIN_R2 = 0.93  # the agreement line explains the target agreements
MAX_RESIDUAL_SD = 0.05  # probit units: the pairs' scatter about the line
MAX_METHOD_GAP = 0.04  # ALine-S and ALine-D, two uses of one line, agree within this (accuracy, every run)


def line_trust(line: AgreementLine) -> dict:
    """The checks of the line's trust rule that it fails, each with its numbers, from the line alone (no target
    label is used): n_runs (below MIN_RUNS), too_similar ((mean reference agreement, spread): above MAX_AGREEMENT
    or below MIN_SPREAD), r2, residual_sd and method_gap beyond their cut-offs (NaN fails). Empty: trusted;
    report.trust says it in words."""
    agreement, gap = float(np.mean(line.agreement_reference)), line.method_gap
    checks = {
        "n_runs": (line.n_runs, line.n_runs >= MIN_RUNS),  # (the numbers, whether the check holds)
        "too_similar": ((agreement, line.spread), line.spread >= MIN_SPREAD and agreement <= MAX_AGREEMENT),
        "r2": (line.r2, line.r2 >= MIN_R2),
        "residual_sd": (line.residual_sd, line.residual_sd <= MAX_RESIDUAL_SD),
        "method_gap": (gap, gap <= MAX_METHOD_GAP),
    }
    return {name: value for name, (value, holds) in checks.items() if not holds}
