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


KEY = ("model", "seed", "platform", "dataset")


def _select(table: pd.DataFrame, row) -> pd.DataFrame:
    """Rows of `table` for one evaluation group (all four key columns match)."""
    if table.empty:
        return table
    mask = np.ones(len(table), dtype=bool)
    for k in KEY:
        mask &= (table[k] == row[k]).to_numpy()
    return table[mask]


def _pair(significance: pd.DataFrame, target, home):
    """The significance row comparing a target group with its reference, and the sign that turns its
    difference into reference minus target."""
    if significance.empty:
        return None
    same = (significance["model"] == target["model"]) & (significance["seed"] == target["seed"])
    for a, b, sign in ((target, home, -1), (home, target, 1)):
        hit = significance[same & (significance["platform_a"] == a["platform"]) & (significance["dataset_a"] == a["dataset"])
                           & (significance["platform_b"] == b["platform"]) & (significance["dataset_b"] == b["dataset"])]
        if not hit.empty:
            return hit.iloc[0], sign
    return None


def flags(discrimination: pd.DataFrame, significance: pd.DataFrame, calibration: pd.DataFrame,
          equity: pd.DataFrame, temperature: pd.DataFrame | None = None,
          attribution: pd.DataFrame | None = None) -> pd.DataFrame:
    """Named flags per model, seed and target platform, each with its value and (where it has one) 95% CI.

    - auc_drop_beyond_ci: the reference's macro-AUC exceeds the target's and the difference is significant
      after the family's multiplicity correction (bootstrap SEs, Z test); CI: the difference's normal CI;
    - significant_difference: the same test's corrected p, raised for a significant drop (the significance axis);
    - ece_above_0.10: the target's debiased ECE is above 0.10 and its bias-corrected CI lies above the
      reference's debiased ECE (`ece_raised`: calibration worse than at home beyond noise, not merely a model
      that is miscalibrated everywhere);
    - ece_after_ts_above_0.10: ECE still above 0.10 after temperature scaling on the target (not repaired);
    - temperature_degenerate: the fitted T sits at its search bound, or leaves near-uniform probabilities
      (`calibration.degenerate_temperature`): its low ECE is no repair;
    - di_below_0.80 / di_below_0.50: for some class, the whole 95% CI of the symmetric disparate impact
      lies below four-fifths / one half. The point estimates alone (the paper's rule) are in the equity
      table; at a few hundred rows per platform they fall under 0.80 by chance for small classes;
    - jaccard_below_0.30 / jaccard_below_0.10: the mean over classes of the top-10 attribution Jaccard
      between the reference and the target platform lies below 0.30 / 0.10 (the paper saw 0 to 0.18).
    """
    rows = []
    jaccards = _mean_jaccards(attribution)
    is_ref = discrimination["is_reference"].astype(bool)
    home_of = {(r["model"], r["seed"]): r for _, r in discrimination[is_ref].iterrows()}
    for _, d in discrimination[~is_ref].iterrows():
        key = {k: d[k] for k in KEY}
        home = home_of[(d["model"], d["seed"])]
        pair = _pair(significance, d, home)
        if pair is not None:
            p, sign = pair
            drop = sign * p["difference"]  # reference minus target
            low, high = sorted((sign * p["ci_low"], sign * p["ci_high"]))
            rows.append({**key, "flag": "auc_drop_beyond_ci", "value": drop, "ci_low": low, "ci_high": high,
                         "threshold": f"reference - target > 0, {p['correction']}-significant",
                         "raised": bool(drop > 0 and p["significant"])})
            rows.append({**key, "flag": "significant_difference", "value": p["p_adjusted"],
                         "threshold": f"{p['correction']}-corrected p < 0.05 (family of {p['family_size']})",
                         "raised": bool(drop > 0 and p["significant"])})
        cal, home_cal = _select(calibration, d), _select(calibration, home)
        if not cal.empty and not home_cal.empty:
            c, home_ece = cal.iloc[0], float(home_cal["ece_debiased"].iat[0])
            rows.append({**key, "flag": "ece_above_0.10", "value": c["ece_debiased"], "ci_low": c["ece_ci_low"],
                         "ci_high": c["ece_ci_high"],
                         "threshold": f"debiased ECE > {ECE_LIMIT} and CI above the reference's {home_ece:.3f}",
                         "raised": ece_raised(c["ece_debiased"], c["ece_ci_low"], home_ece)})
        scaled = _select(temperature, d) if temperature is not None else pd.DataFrame()
        if not scaled.empty:
            after = float(scaled["ece_after"].iat[0])
            rows.append({**key, "flag": "ece_after_ts_above_0.10", "value": after,
                         "threshold": f"ECE after temperature scaling > {ECE_LIMIT}",
                         "raised": bool(after > ECE_LIMIT)})
            why = scaled["degenerate"].fillna("").astype(str).iat[0] if "degenerate" in scaled else ""
            rows.append({**key, "flag": "temperature_degenerate", "value": scaled["temperature"].iat[0],
                         "threshold": "T inside its search bounds and scaled probabilities not flat",
                         "raised": bool(why), "why": why})
        eq = _select(equity, d)
        for name, limit in (("di_below_0.80", DI_FOUR_FIFTHS), ("di_below_0.50", DI_SEVERE)):
            high = eq["di_ci_high"].astype(float) if not eq.empty else pd.Series(dtype=float)
            worst = eq.loc[high.idxmin()] if high.notna().any() else None
            rows.append({**key, "flag": name, "value": float(worst["disparate_impact"]) if worst is not None else np.nan,
                         "ci_low": worst["di_ci_low"] if worst is not None else np.nan,
                         "ci_high": worst["di_ci_high"] if worst is not None else np.nan,
                         "threshold": f"95% CI of DI below {limit}" + (f" (class {worst['class']}, CI upper "
                                                                        f"{worst['di_ci_high']:.3f})" if worst is not None else ""),
                         "raised": bool(worst is not None and worst["di_ci_high"] < limit)})
        jaccard = jaccards.get((d["model"], d["seed"], frozenset((d["platform"], home["platform"]))))
        if jaccard is not None and d["platform"] != home["platform"]:
            for name, limit in (("jaccard_below_0.30", JACCARD_LOW), ("jaccard_below_0.10", JACCARD_NONE)):
                rows.append({**key, "flag": name, "value": jaccard,
                             "threshold": f"mean top-{JACCARD_K} Jaccard over classes < {limit}",
                             "raised": bool(jaccard < limit)})
    return pd.DataFrame(rows)


JACCARD_K, JACCARD_LOW, JACCARD_NONE = 10, 0.30, 0.10


def ece_raised(ece_debiased: float, ci_low: float, home_ece_debiased: float) -> bool:
    """The ece_above_0.10 rule on one target: debiased ECE above the limit and the low end of its
    bias-corrected CI above home's debiased ECE (benchmarks/ece_false_alarm.py measures its false alarms)."""
    return bool(ece_debiased > ECE_LIMIT and ci_low > home_ece_debiased)


def _mean_jaccards(attribution: pd.DataFrame | None) -> dict[tuple, float]:
    """(model, seed, {platform, platform}) -> mean over classes of the top-K Jaccard, grouped once."""
    if attribution is None or attribution.empty:
        return {}
    top = attribution[attribution["k"] == JACCARD_K].dropna(subset=["jaccard"])
    pair = [frozenset((a, b)) for a, b in zip(top["platform_a"], top["platform_b"])]
    means = top["jaccard"].astype(float).groupby([top["model"], top["seed"], pair]).mean()
    return means.to_dict()


FINDINGS = {  # flag id -> the finding in words, for the summary
    "auc_drop_beyond_ci": "a macro-AUC drop beyond its 95% CI",
    "ece_above_0.10": "ECE above 0.10 beyond the reference's",
    "di_below_0.80": "disparate impact under 0.80 (the four-fifths rule)",
    "di_below_0.50": "disparate impact under 0.50",
    "ece_after_ts_above_0.10": "ECE still above 0.10 after temperature scaling",
    "temperature_degenerate": "a degenerate temperature (at its bound, or flattening every probability)",
    "jaccard_below_0.30": "top-10 attribution overlap with the reference under 0.30 (Jaccard)",
    "jaccard_below_0.10": "top-10 attribution overlap with the reference under 0.10 (Jaccard)",
}
SUMMARISED_APART = {"significant_difference"}  # the AUC-drop finding already says it


def _span(values: pd.Series, fmt: str, joiner: str = " to ") -> str:
    """'a to b', or one value when they print the same (one model, one run)."""
    low, high = format(values.min(), fmt), format(values.max(), fmt)
    return low if low == high else f"{low}{joiner}{high}"


def plain_words(discrimination: pd.DataFrame, flag_table: pd.DataFrame, temperature: pd.DataFrame,
                reference: str) -> str:
    """Two to four sentences saying what failed and how badly; non-independent rows are left out."""
    if discrimination.empty:
        return "No predictions to summarise."
    independent = discrimination[~discrimination.get("non_independent", False)]
    targets = independent[~independent["is_reference"].astype(bool)]
    if targets.empty:
        return f"Only the reference platform ({reference}) was scored; nothing to compare."
    ref = independent[independent["is_reference"].astype(bool)]["macro_auc"].dropna()
    drop = targets["delta_auc_pct"].dropna()
    home = f"macro-AUC {_span(ref, '.3f', '-')}" if len(ref) else "macro-AUC undefined"
    change = (f"changes by {_span(drop, '+.1f')}% on the other platforms" if len(drop) else
              "cannot be compared (undefined: see the reason column of the discrimination table)")
    owner, models = ("their", "the models'") if independent["model"].nunique() > 1 else ("its", "the model's")
    parts = [f"Off {owner} home platform ({reference}, {home}), {models} macro-AUC {change}."]
    if not flag_table.empty and "non_independent" in flag_table:
        flag_table = flag_table[~flag_table["non_independent"].astype(bool)]
    raised = flag_table[flag_table["raised"]] if not flag_table.empty else flag_table
    if raised.empty:
        parts.append("No finding: no significant AUC drop, no ECE above 0.10 beyond the reference's, "
                     "no disparate impact under 0.80.")
    else:
        raised = raised[~raised["flag"].isin(SUMMARISED_APART)]
        counts = raised.groupby("flag").size()
        total = flag_table.groupby("flag").size()
        parts.append("Found: " + "; ".join(f"{FINDINGS.get(f, f)} in {counts[f]} of {total[f]} target runs"
                                           for f in counts.index) + ".")
    if not temperature.empty and "ece_reduction_pct" in temperature:
        home = set(zip(independent.loc[independent["is_reference"].astype(bool), "platform"],
                       independent.loc[independent["is_reference"].astype(bool), "dataset"]))
        off = temperature[[(p, d) not in home for p, d in zip(temperature["platform"], temperature["dataset"])]]
        if "non_independent" in off:
            off = off[~off["non_independent"].astype(bool)]
        flat = off["degenerate"].fillna("").astype(str) != "" if "degenerate" in off else \
            pd.Series(False, index=off.index)
        if flat.any():
            rest = "are left out of what follows" if (~flat).any() else "repaired nothing"
            parts.append(f"{int(flat.sum())} of {len(off)} temperature fits off the reference platform were "
                         f"degenerate (at the search bound, or flattening every probability) and {rest}.")
        off = off[~flat]  # a degenerate temperature repairs nothing: it is a verdict of its own
        red, dauc = off["ece_reduction_pct"].dropna(), off["delta_auc"].dropna()
        ranged = f"range {_span(red, '.0f', '% to ')}%" if len(red) > 1 else ""
        if len(red) and red.mean() > 0:
            parts.append(f"On the other platforms temperature scaling cut ECE by {red.mean():.0f}%"
                         + (f" on average ({ranged})" if ranged else "") + f" while macro-AUC moved by "
                         f"{_span(dauc, '+.3f')}: calibration can be repaired, discrimination cannot.")
        elif len(red):  # calibrated already, or too few calibration rows to fit a temperature on
            parts.append(f"On the other platforms temperature scaling did not lower ECE on average (reduction "
                         f"{red.mean():.0f}%" + (f", {ranged}" if ranged else "") + ").")
    return " ".join(parts)
