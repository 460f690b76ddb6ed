"""The CPFE flags as verdict rows: subject = model and seed, target = the platform (and its data set)."""

from __future__ import annotations

import pandas as pd

from mhaudit.report import verdict, verdict_table

# flag -> (axis, statistic, severity when raised, what a raised flag means)
FLAG_VERDICTS = {
    "auc_drop_beyond_ci": ("discrimination", "macro_auc_drop", "fail",
                           "macro-AUC is lower than at home beyond the multiplicity-corrected bootstrap test"),
    "ece_above_0.10": ("calibration", "ece", "fail", "ECE above 0.10 with its CI above the home platform's ECE"),
    "di_below_0.80": ("equity", "disparate_impact", "warn",
                      "for some class the whole 95% CI of disparate impact lies below four-fifths"),
    "di_below_0.50": ("equity", "disparate_impact", "fail",
                      "for some class the whole 95% CI of disparate impact lies below one half"),
}
HELD = {"auc_drop_beyond_ci": "no significant macro-AUC drop", "ece_above_0.10": "calibration within limits",
        "di_below_0.80": "no class whose DI CI lies below 0.80", "di_below_0.50": "no class whose DI CI lies below 0.50"}


def cpfe_verdicts(flags: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, f in flags.iterrows():
        axis, statistic, severity, meaning = FLAG_VERDICTS[f["flag"]]
        target = f["platform"] if f["dataset"] == f["platform"] else f"{f['platform']} ({f['dataset']})"
        reason = meaning if f["raised"] else HELD[f["flag"]]
        if bool(f.get("non_independent", False)):
            reason += "; not independent of the training data (--non-independent)"
        if pd.isna(f["value"]):
            reason = ("undefined: no class with a disparate impact CI on this platform" if axis == "equity"
                      else f"undefined: {statistic} could not be computed on this platform")
        rows.append(verdict("cpfe", axis, f"{f['model']} seed {f['seed']}", target, statistic, f["value"],
                            f["threshold"], severity if f["raised"] else "pass", reason))
    return verdict_table(rows)
