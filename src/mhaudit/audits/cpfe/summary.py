"""Seed aggregation (mean and SD), the named flags, and the plain-words summary at the top of the report."""

from __future__ import annotations

import numpy as np
import pandas as pd

ECE_LIMIT = 0.10
DI_FOUR_FIFTHS, DI_SEVERE = 0.80, 0.50


def mean_sd(table: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """Long table: one row per group and metric with mean, SD (ddof 1; NaN for one seed) and n_seeds."""
    if table.empty:
        return pd.DataFrame()
    present = [m for m in metrics if m in table.columns]
    long = table.melt(id_vars=by, value_vars=present, var_name="metric").dropna(subset=["value"])
    long["value"] = long["value"].astype(float)
    out = long.groupby([*by, "metric"], sort=False)["value"].agg(mean="mean", sd="std", n_seeds="count")
    return out.reset_index()


def flags(discrimination: pd.DataFrame, significance: pd.DataFrame, calibration: pd.DataFrame,
          equity: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Named flags per model, seed and target platform.

    - auc_drop_beyond_ci: the reference's macro-AUC exceeds the target's and the difference is significant
      after the family's multiplicity correction (bootstrap SEs, Z test);
    - ece_above_0.10: the target's ECE is above 0.10 and its bootstrap CI lies above the reference's ECE
      (calibration worse than at home beyond noise, not merely a model that is miscalibrated everywhere);
    - di_below_0.80 / di_below_0.50: for some class, the whole 95% CI of the symmetric disparate impact
      lies below four-fifths / one half. The point estimates alone (the paper's rule) are in the equity
      table; at a few hundred rows per platform they fall under 0.80 by chance for small classes.
    """
    rows = []
    ref_ece = calibration[(calibration["platform"] == reference) | (calibration["dataset"] == reference)]
    ref_ece = ref_ece.set_index(["model", "seed"])["ece"]
    is_ref = discrimination["is_reference"].astype(bool)
    for _, d in discrimination[~is_ref].iterrows():
        key = {k: d[k] for k in ("model", "seed", "platform", "dataset")}
        sig = significance[(significance["model"] == d["model"]) & (significance["seed"] == d["seed"])]
        pair = sig[((sig["dataset_a"] == d["dataset"]) | (sig["dataset_b"] == d["dataset"])) &
                   ((sig["platform_a"] == reference) | (sig["dataset_a"] == reference) |
                    (sig["platform_b"] == reference) | (sig["dataset_b"] == reference))]
        if not pair.empty:
            p = pair.iloc[0]
            sign = 1 if p["dataset_a"] != d["dataset"] else -1  # difference as reference minus target
            drop = sign * p["difference"]
            rows.append({**key, "flag": "auc_drop_beyond_ci", "value": drop,
                         "threshold": f"reference - target > 0, {p['correction']}-significant",
                         "raised": bool(drop > 0 and p["significant"])})
        cal = calibration[(calibration["model"] == d["model"]) & (calibration["seed"] == d["seed"]) &
                          (calibration["dataset"] == d["dataset"])]
        if not cal.empty:
            c = cal.iloc[0]
            home = ref_ece.get((d["model"], d["seed"]), np.nan)
            rows.append({**key, "flag": "ece_above_0.10", "value": c["ece"],
                         "threshold": f"ECE > {ECE_LIMIT} and CI above the reference's {home:.3f}",
                         "raised": bool(c["ece"] > ECE_LIMIT and c["ece_ci_low"] > home)})
        eq = equity[(equity["model"] == d["model"]) & (equity["seed"] == d["seed"]) &
                    (equity["dataset"] == d["dataset"])]
        for name, limit in (("di_below_0.80", DI_FOUR_FIFTHS), ("di_below_0.50", DI_SEVERE)):
            high = eq["di_ci_high"].astype(float)
            worst = eq.loc[high.idxmin()] if high.notna().any() else None
            rows.append({**key, "flag": name, "value": float(worst["disparate_impact"]) if worst is not None else np.nan,
                         "threshold": f"95% CI of DI below {limit}" + (f" (class {worst['class']}, CI upper "
                                                                        f"{worst['di_ci_high']:.3f})" if worst is not None else ""),
                         "raised": bool(worst is not None and worst["di_ci_high"] < limit)})
    return pd.DataFrame(rows)


def plain_words(discrimination: pd.DataFrame, flag_table: pd.DataFrame, temperature: pd.DataFrame,
                reference: str) -> str:
    """Two to four sentences saying what failed and how badly; non-independent rows are left out."""
    if discrimination.empty:
        return "No predictions to summarise."
    independent = discrimination[~discrimination.get("non_independent", False)]
    targets = independent[~independent["is_reference"].astype(bool)]
    if targets.empty:
        return f"Only the reference platform ({reference}) was scored; nothing to compare."
    ref = independent[independent["is_reference"].astype(bool)]["macro_auc"]
    drop = targets["delta_auc_pct"]
    parts = [f"Off their home platform ({reference}, macro-AUC {ref.min():.3f}-{ref.max():.3f}), the models' "
             f"macro-AUC changes by {drop.min():+.1f}% to {drop.max():+.1f}% on the other platforms."]
    raised = flag_table[flag_table["raised"]] if not flag_table.empty else flag_table
    if raised.empty:
        parts.append("No flag was raised: no significant AUC drop, no ECE above 0.10 beyond the reference's, "
                     "no disparate impact under 0.80.")
    else:
        counts = raised.groupby("flag").size()
        total = flag_table.groupby("flag").size()
        parts.append("Flags raised: " + "; ".join(f"{f} in {counts[f]} of {total[f]} target runs" for f in counts.index)
                     + ".")
    if not temperature.empty and "ece_reduction_pct" in temperature:
        home = set(independent.loc[independent["is_reference"].astype(bool), "dataset"])
        off = temperature[~temperature["dataset"].isin(home)]
        red, dauc = off["ece_reduction_pct"].dropna(), off["delta_auc"].dropna()
        if len(red):
            parts.append(f"On the other platforms temperature scaling cut ECE by {red.mean():.0f}% on average (range {red.min():.0f}% to "
                         f"{red.max():.0f}%) while macro-AUC moved by {dauc.min():+.3f} to {dauc.max():+.3f}: "
                         "calibration can be repaired, discrimination cannot.")
    return " ".join(parts)
