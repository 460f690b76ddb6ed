"""The scorecard at the top of a report, built from the verdict rows alone: one row per subject x target,
one column per axis, each cell the worst severity of its checks with the headline number.

A seed run's subject is "<model> seed <n>" (the CPFE verdicts); its seeds are folded into one row per model,
and the number is the mean +/- SD (ddof 1) of the seeds' values, with the seed count. A single run shows its
value and, when the verdict has one, its CI. The headline statistic of an axis is its first verdict row's.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["scorecard", "severity_of", "SEVERITY_RANK"]

SEVERITY_RANK = {"fail": 0, "warn": 1, "undefined": 2, "pass": 3}
_SEED = re.compile(r"^(?P<model>.+) seed (?P<seed>-?\d+)$")


def _model(subject: str) -> str:
    match = _SEED.match(str(subject))
    return match["model"] if match else str(subject)


def _headline(rows: pd.DataFrame) -> str:
    """The number of a cell: mean +/- SD over runs, or one value with its CI."""
    values = rows["value"].astype(float).dropna()
    statistic = rows["statistic"].iat[0]
    if values.empty:
        return f"{statistic} n/a"
    if len(values) == 1:
        row = rows.loc[values.index[0]]
        ci = f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]" if pd.notna(row["ci_low"]) and pd.notna(row["ci_high"]) \
            else ""
        return f"{statistic} {values.iat[0]:.3f}{ci}"
    return f"{statistic} {values.mean():.3f} ± {values.std(ddof=1):.3f} (n = {len(values)})"


def scorecard(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Rows: subject (a model, its seeds folded) x target; columns: subject, target, then one per axis in the
    order the verdicts give them. A cell is "severity: headline", or '' where the axis has no check."""
    if verdicts.empty:
        return pd.DataFrame()
    frame = verdicts.assign(run=verdicts["subject"], subject=verdicts["subject"].map(_model))
    axes = list(dict.fromkeys(frame["axis"]))
    rows = []
    for (subject, target), group in frame.groupby(["subject", "target"], sort=False):
        row = {"subject": subject, "target": target}
        for axis in axes:
            checks = group[group["axis"] == axis]
            if checks.empty:
                row[axis] = ""
                continue
            worst = min(checks["severity"], key=SEVERITY_RANK.__getitem__)
            headline = checks[checks["statistic"] == checks["statistic"].iat[0]].drop_duplicates("run")
            row[axis] = f"{worst}: {_headline(headline)}"
        rows.append(row)
    return pd.DataFrame(rows)


def severity_of(cell: str) -> str | None:
    """The severity a scorecard cell starts with (None for an empty cell)."""
    head = str(cell).split(":", 1)[0]
    return head if head in SEVERITY_RANK else None

