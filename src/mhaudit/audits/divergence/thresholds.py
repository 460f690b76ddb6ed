"""Is a Macro-F1 divergence about evidence, or about the threshold and prevalence? And does the control work?

* `dod_threshold_free`: DoD of each channel against A on Macro-F1, balanced accuracy, ROC AUC and PR-AUC gain
  over prevalence, all on the first `Scored.n_boot_scores` resamples (the same draws for every metric), and
  whether the Macro-F1 divergence survives the two threshold-free ones.
* `threshold_diagnostic`: per channel and data set, recall and precision at the threshold tuned on the
  training rows against those at the data set's own best threshold. Reported, never used for the headline:
  the best threshold is chosen on the labels it is scored on.
* `random_pos_control`: the random-POS mask (content words replaced by random POS tags) should cost a
  channel more than the POS-only mask (their own tags) if the channel reads syntax; when it does not,
  the masks' drop says nothing about syntax, and the check says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.audits.divergence.fitting import _best_threshold
from mhaudit.audits.divergence.tables import Scored, alternative_for
from mhaudit.stats.binary import binary_scores, bootstrap_p
from mhaudit.stats.bootstrap import summarise
from mhaudit.stats.threshold_free import PANEL

__all__ = ["dod_threshold_free", "dod_by_metric", "threshold_diagnostic", "random_pos_control", "THRESHOLD_FREE"]

THRESHOLD_FREE = ("auc", "pr_auc_gain")  # the metrics a threshold or prevalence effect cannot move alone


def _metric(s: Scored, d: str, key: str, metric: str) -> tuple[float, np.ndarray]:
    """Point and first-m draws of one metric for one vector on data set d."""
    panel, m = s.panel[d], s.n_boot_scores
    if metric == "macro_f1":
        return float(s.point[d][s.col(key)]), s.draws[d][:m, s.col(key)]
    j = s.scored.index(key)
    return float(panel[f"point_{metric}"][j]), panel[metric][:, j]


def _dod(s: Scored, x: str, metric: str) -> tuple[float, np.ndarray]:
    sides = []
    for side in ("human", "auto"):
        parts = [(_metric(s, d, x, metric), _metric(s, d, "A", metric)) for d in s.on(side)]
        sides.append(
            (np.mean([px - pa for (px, _), (pa, _) in parts]), np.mean([dx - da for (_, dx), (_, da) in parts], axis=0))
        )
    return float(sides[0][0] - sides[1][0]), sides[0][1] - sides[1][1]


def holds(rows, sign: float) -> bool:
    """Both threshold-free DoDs (rows with `metric`, `apart`, `estimate`) exclude 0 with the given sign."""
    kept = [r for r in rows if r["metric"] in THRESHOLD_FREE and r["apart"] and (r["estimate"] > 0) == (sign > 0)]
    return len(kept) == len(THRESHOLD_FREE)


def dod_threshold_free(s: Scored, channels: list[str]) -> pd.DataFrame:
    """One row per contrast X-A and metric; `apart`: its 95% CI excludes 0; `survives` (on the Macro-F1 row, when
    that DoD is apart): both threshold-free DoDs are apart with its sign (`holds`)."""
    rows = []
    for x in s.against_a(channels):
        alt = alternative_for(x)
        block = []
        for metric in PANEL:
            est, draws = _dod(s, x, metric)
            summary, ps = summarise(draws), bootstrap_p(draws)
            block.append(
                {
                    "contrast": f"{x}-A",
                    "metric": metric,
                    "estimate": est,
                    "ci_low": summary["ci_low"],
                    "ci_high": summary["ci_high"],
                    "se": summary["se"],
                    "alternative": alt,
                    "p": ps["p_two_sided" if alt == "two-sided" else f"p_{alt}"],
                    "apart": bool(summary["ci_low"] > 0 or summary["ci_high"] < 0),
                    "n_boot": s.n_boot_scores,
                    "survives": None,
                }
            )
        if block[0]["apart"]:  # the Macro-F1 row
            block[0]["survives"] = holds(block, block[0]["estimate"])
        rows += block
    return pd.DataFrame(rows)


def dod_by_metric(table: pd.DataFrame) -> pd.DataFrame:
    """`dod_threshold_free` as one row per contrast: each metric's DoD with its CI, and `survives`."""
    if table.empty:
        return pd.DataFrame()
    rows = []
    for contrast, part in table.groupby("contrast", sort=False):
        row = {"contrast": contrast}
        for r in part.itertuples():
            row[r.metric] = f"{r.estimate:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
        survives = part["survives"].dropna()
        row["survives"] = bool(survives.iat[0]) if len(survives) else "no Macro-F1 divergence"
        rows.append(row)
    return pd.DataFrame(rows)


def threshold_diagnostic(s: Scored, keys: list[str], thresholds: dict[str, float]) -> pd.DataFrame:
    """Recall, precision and Macro-F1 at the training threshold and at the data set's own best one."""
    rows = []
    for d in s.datasets:
        y = s.y[d]
        for key in [k for k in keys if k in s.scored]:
            j = s.col(key)
            prob = s.probs[d][j]
            at_oof = binary_scores(y, s.preds[d][j], zero_division=s.zero_division)
            best, _ = _best_threshold(y, prob)
            at_best = binary_scores(y, (prob >= best).astype(np.int8), zero_division=s.zero_division)
            rows.append(
                {
                    "channel": key,
                    "dataset": d,
                    "side": s.side[d],
                    "prevalence": at_oof["prevalence"],
                    "threshold_train": thresholds.get(key, np.nan),
                    "recall_train": at_oof["recall"],
                    "precision_train": at_oof["precision"],
                    "macro_f1_train": at_oof["macro_f1"],
                    "threshold_best": best,
                    "recall_best": at_best["recall"],
                    "precision_best": at_best["precision"],
                    "macro_f1_best": at_best["macro_f1"],
                    "macro_f1_gap": at_best["macro_f1"] - at_oof["macro_f1"],
                }
            )
    return pd.DataFrame(rows)


def random_pos_control(s: Scored, channels: list[str], datasets: list[str]) -> pd.DataFrame:
    """Per masked channel and data set: MF1(random_pos) - MF1(pos_only) on the same resamples. `status`:
    works (CI below 0: random tags cost more), inconclusive (CI holds 0), fails (CI above 0)."""
    rows = []
    for x in channels:
        rand, pos = f"{x}/random_pos", f"{x}/pos_only"
        if not (s.has(rand) and s.has(pos) and s.has(x)):
            continue
        for d in datasets:
            jr, jp, jx = s.col(rand), s.col(pos), s.col(x)
            draws = s.draws[d][:, jr] - s.draws[d][:, jp]
            summary = summarise(draws)
            status = "works" if summary["ci_high"] < 0 else "fails" if summary["ci_low"] > 0 else "inconclusive"
            rows.append(
                {
                    "channel": x,
                    "dataset": d,
                    "delta_pos_only": s.point[d][jp] - s.point[d][jx],
                    "delta_random_pos": s.point[d][jr] - s.point[d][jx],
                    "random_minus_pos_only": s.point[d][jr] - s.point[d][jp],
                    "ci_low": summary["ci_low"],
                    "ci_high": summary["ci_high"],
                    "status": status,
                    "n_boot": s.n_boot,
                }
            )
    return pd.DataFrame(rows)
