"""Degree of Divergence as verdict rows: subject = the channel contrast (e.g. C-A), or the model for a baseline's
DoD against channel A (so a combined report puts it in that model's row), target = the label sources."""

from __future__ import annotations

import pandas as pd

from mhaudit.report import verdict, verdict_table


def divergence_verdicts(dod: pd.DataFrame) -> pd.DataFrame:
    """fail where the 95% CI of DoD excludes 0: the human and automatic labels reward different evidence."""
    rows = []
    for _, d in dod.iterrows():
        low, high = float(d["ci_low"]), float(d["ci_high"])
        apart = low > 0 or high < 0
        model = d["contrast"].removeprefix("baseline:").removesuffix("-A") if d["contrast"].startswith("baseline:") \
            else None
        what = "the model's gain over channel A" if model else "the channel's gain"
        rows.append(verdict(
            "divergence", "label source", model or d["contrast"], "human vs automatic labels",
            "dod vs A" if model else "dod", d["estimate"], "95% CI of DoD excludes 0", "fail" if apart else "pass",
            (f"{what} differs between human and automatic labels: they reward different evidence"
             if apart else "no divergence beyond the bootstrap interval"), ci_low=low, ci_high=high))
    return verdict_table(rows)
