"""`AuditResult`: what every audit returns. A plain-words summary, the verdict rows, the tidy tables (in
titled sections, with the figures drawn from them) and the provenance. One renderer writes any of them.

Verdicts: one row per finding, the same columns for every audit (what `subject` and `target` mean for each
audit is tabled in docs/architecture.md). `severity` is pass, warn, fail, or undefined when the statistic
could not be computed (`reason` says why).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from mhaudit import __version__

VERDICT_COLUMNS = [
    "audit",
    "axis",
    "subject",
    "target",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "threshold",
    "severity",
    "reason",
]
SEVERITIES = ("pass", "warn", "fail", "undefined")


@dataclass
class Section:
    title: str
    text: str = ""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, bytes] = field(default_factory=dict)  # name -> SVG or PNG bytes, drawn from its tables


@dataclass(frozen=True)
class AuditResult:
    """What an audit returns; frozen, so nothing edits it after the door returns: a caller that adds to it makes a
    new one (`dataclasses.replace`). `table(name)` is the one accessor of its tables, `outputs` holds what is not
    a report table (row-level outputs, what a caller acts on)."""

    title: str
    sections: list[Section]
    summary: str = ""
    verdicts: pd.DataFrame = field(default_factory=lambda: verdict_table([]))
    synthetic: bool = False
    options: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)  # input digests, mhaudit version, created, stage seconds
    # Row-level outputs that are not report tables (out-of-fold predictions, conflict examples with their text) and
    # what a caller acts on (the monitor's alerting window): the caller decides whether to write them; the renderer
    # never does.
    outputs: dict[str, pd.DataFrame | str | int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # said once at the foot of the report (e.g. the run's warnings)

    def table(self, name: str) -> pd.DataFrame:
        """The table of that name from whichever section holds it ("verdicts" for the verdict rows)."""
        if name == "verdicts":
            return self.verdicts
        for section in self.sections:
            if name in section.tables:
                return section.tables[name]
        raise KeyError(f"no table '{name}'; this result has {', '.join(['verdicts', *self.tables])}")

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: t for s in self.sections for name, t in s.tables.items()}

    @property
    def figures(self) -> dict[str, bytes]:
        return {name: png for s in self.sections for name, png in s.figures.items()}


def verdict_table(rows: list[dict]) -> pd.DataFrame:
    """The verdict rows as a table with exactly VERDICT_COLUMNS; a severity outside SEVERITIES is a bug."""
    table = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    for column in ("value", "ci_low", "ci_high"):
        table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)
    bad = set(table["severity"]) - set(SEVERITIES)
    if bad:
        raise ValueError(f"verdict severities {sorted(bad)} are not among {SEVERITIES}")
    undefined = table["value"].isna() & (table["severity"] != "undefined")
    if undefined.any():
        raise ValueError(f"{int(undefined.sum())} verdict rows have no value but a severity other than undefined")
    return table.reset_index(drop=True)


def verdict(
    audit: str,
    axis: str,
    subject: str,
    target: str,
    statistic: str,
    value,
    threshold: str,
    severity: str,
    reason: str,
    ci_low=np.nan,
    ci_high=np.nan,
) -> dict:
    """One verdict row; a missing or NaN value makes it undefined (the reason says why)."""
    value = np.nan if value is None else float(value)
    return {
        "audit": audit,
        "axis": axis,
        "subject": subject,
        "target": target,
        "statistic": statistic,
        "value": value,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "threshold": threshold,
        "severity": "undefined" if np.isnan(value) else severity,
        "reason": reason,
    }


def provenance(inputs: dict[str, str], stage_seconds: dict[str, float]) -> dict:
    """The provenance block: input digests, mhaudit version, when, and how long each stage took."""
    return {
        "mhaudit_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": inputs,
        "stage_seconds": {k: round(v, 3) for k, v in stage_seconds.items()},
    }
