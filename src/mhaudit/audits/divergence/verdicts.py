"""Degree of Divergence as verdict rows: subject = the channel contrast (e.g. C-A), target = the label sources."""

from __future__ import annotations

import pandas as pd

from mhaudit.report import verdict, verdict_table


def divergence_verdicts(dod: pd.DataFrame) -> pd.DataFrame:
    """fail where the 95% CI of DoD excludes 0: the human and automatic labels reward different evidence."""
    rows = []
    for _, d in dod.iterrows():
        low, high = float(d["ci_low"]), float(d["ci_high"])
        apart = low > 0 or high < 0
        rows.append(verdict(
            "divergence", "label source", d["contrast"], "human vs automatic labels", "dod", d["estimate"],
            "95% CI of DoD excludes 0", "fail" if apart else "pass",
            ("the channel's gain differs between human and automatic labels: they reward different evidence"
             if apart else "no divergence beyond the bootstrap interval"), ci_low=low, ci_high=high))
    return verdict_table(rows)
