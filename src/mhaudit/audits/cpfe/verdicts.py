"""The CPFE flags as verdict rows: subject = model and seed, target = the platform (and its data set)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.report import verdict, verdict_table

# flag -> (axis, statistic, severity when raised, what a raised flag means); a flag row's own `reason` (the
# significance flags: the test and correction that decided it) and `statistic` take precedence
FLAG_VERDICTS = {
    "home_auc_at_chance": (
        "discrimination",
        "home_macro_auc",
        "fail",
        "the model is no better than chance at home: a drop from there means nothing",
    ),
    "home_ece_above_0.10": (
        "calibration",
        "home_ece_debiased",
        "warn",
        "not calibrated at home (was a temperature "
        "fitted there?): this target's ECE verdict compares it with a miscalibrated reference",
    ),
    "auc_drop_beyond_ci": ("discrimination", "macro_auc_drop", "fail", ""),
    "ece_above_0.10": (
        "calibration",
        "ece_debiased",
        "fail",
        "debiased ECE above 0.10 with its CI above the home platform's",
    ),
    "di_below_0.80": (
        "equity",
        "disparate_impact",
        "warn",
        "for some class the whole 95% CI of disparate impact lies below four-fifths",
    ),
    "di_below_0.50": (
        "equity",
        "disparate_impact",
        "fail",
        "for some class the whole 95% CI of disparate impact lies below one half",
    ),
    "temperature_degenerate": (
        "calibration",
        "temperature",
        "warn",
        "the fitted temperature is degenerate, so its ECE is no repair",
    ),
    "significant_difference": ("significance", "p_adjusted", "fail", ""),
    "ece_after_ts_above_0.10": (
        "calibration",
        "ece_after_ts",
        "warn",
        "temperature scaling on the target leaves ECE above 0.10: not repaired",
    ),
    "jaccard_below_0.30": (
        "attribution",
        "jaccard_top10",
        "warn",
        "the words the model relies on mostly differ from those at home",
    ),
    "jaccard_below_0.10": (
        "attribution",
        "jaccard_top10",
        "fail",
        "the words the model relies on hardly overlap with those at home",
    ),
}
HELD = {
    "home_auc_at_chance": "the reference's macro-AUC, from which this target's drop is measured",
    "home_ece_above_0.10": "the reference's ECE, the baseline of this target's ECE verdict",
    "ece_above_0.10": "calibration within limits",
    "di_below_0.80": "no class whose DI CI lies below 0.80",
    "di_below_0.50": "no class whose DI CI lies below 0.50",
    "temperature_degenerate": "temperature inside its bounds, probabilities not flattened",
    "ece_after_ts_above_0.10": "temperature scaling brings ECE to 0.10 or under",
    "jaccard_below_0.30": "top-10 attribution overlap 0.30 or more",
    "jaccard_below_0.10": "top-10 attribution overlap 0.10 or more",
}


def cpfe_verdicts(flags: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, f in flags.iterrows():
        axis, statistic, severity, meaning = FLAG_VERDICTS[f["flag"]]
        target = f["platform"] if f["dataset"] == f["platform"] else f"{f['platform']} ({f['dataset']})"
        statistic = f.get("statistic") if isinstance(f.get("statistic"), str) else statistic
        reason = f["reason"] if isinstance(f.get("reason"), str) else meaning if f["raised"] else HELD[f["flag"]]
        if f["raised"] and isinstance(f.get("why"), str) and f["why"]:
            reason += f": {f['why']}"
        if bool(f.get("non_independent", False)):
            reason += "; not independent of the training data (--non-independent)"
        if pd.isna(f["value"]):
            reason = (
                "undefined: no class with a disparate impact CI on this platform"
                if axis == "equity"
                else f"undefined: {f['why']}"
                if isinstance(f.get("why"), str) and f["why"]
                else f"undefined: {statistic} could not be computed on this platform"
            )
        rows.append(
            verdict(
                "cpfe",
                axis,
                f"{f['model']} seed {f['seed']}",
                target,
                statistic,
                f["value"],
                f["threshold"],
                severity if f["raised"] else "pass",
                reason,
                ci_low=f.get("ci_low", np.nan),
                ci_high=f.get("ci_high", np.nan),
            )
        )
    order = {axis: i for i, axis in enumerate(AXES)}  # the paper's axis order, whatever the flags' order
    return verdict_table(sorted(rows, key=lambda r: order[r["axis"]]))


AXES = ("discrimination", "calibration", "significance", "equity", "attribution")
