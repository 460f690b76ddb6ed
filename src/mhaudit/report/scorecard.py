"""The scorecard at the top of a report, built from the verdict rows alone: one row per subject x target,
one column per axis, each cell the worst severity of its checks with the headline number (docs/report.md, "The
page, top to bottom", says how seeds fold into one row and what a cell shows).

A seed run's subject is "<model> seed <n>" (the CPFE verdicts). The headline statistic of an axis is its first
verdict row's; the axis's second statistic follows it, and so does any other that did not pass. So a cell has one
severity word that judges the subject, and a word beside a second number only says why the cell is not pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pandas as pd

from mhaudit.report.numbers import P_COLUMNS, format_number

__all__ = [
    "scorecard",
    "scorecard_cells",
    "scorecard_frame",
    "shared_subjects",
    "distinct_checks",
    "short_axis",
    "Cell",
    "model_of",
    "SEVERITY_RANK",
]

SEVERITY_RANK = {"fail": 0, "warn": 1, "undefined": 2, "pass": 3}
_SEED = re.compile(r"^(?P<model>.+) seed (?P<seed>-?\d+)$")
_WINDOW = re.compile(
    r"^window (?P<window>[^:]+ \d\d:\d\d):"
)  # a monitor verdict's reason, e.g. "window 2026-01-10 00:00:"


# Four-letter column headings for a terminal too narrow for the axes' names (the axes of docs/report.md).
SHORT_AXES = {
    "discrimination": "disc",
    "calibration": "cal",
    "significance": "sig",
    "equity": "eq",
    "attribution": "attr",
    "expected on the target, before labels": "exp",
    "drift on the stream": "drft",
    "certified on the target with human labels": "cert",
    "label source": "lsrc",
    "human validation": "hval",
    "weak labels": "weak",
    "human agreement": "hagr",
}


def short_axis(axis: str) -> str:
    """A heading of at most four letters for an axis: its SHORT_AXES entry, else the start of its name."""
    return SHORT_AXES.get(axis) or axis[:4]


def model_of(subject: str) -> str:
    """The model a subject names: "bert seed 42" -> "bert"; any other subject is itself."""
    match = _SEED.match(str(subject))
    return match["model"] if match else str(subject)


@dataclass(frozen=True)
class Cell:
    """One scorecard cell: the worst severity of the axis's checks, its headline statistic, the number and
    what qualifies it (the CI of one run, or the SD and run count over seeds)."""

    severity: str
    statistic: str
    number: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.severity}: {self.statistic} {self.number}" + (f" {self.detail}" if self.detail else "")


def _headline(rows: list[dict], severity: str) -> Cell:
    """The number of a cell: mean +/- SD over runs, or one value with its CI."""
    statistic = rows[0]["statistic"]
    measured = [r for r in rows if pd.notna(r["value"])]
    if not measured:
        return Cell(severity, statistic, "n/a")
    values = pd.Series([r["value"] for r in measured], dtype=float)
    if len(values) > 1 and P_COLUMNS.match(statistic):  # a mean of p values is no p value
        runs = sum(r["severity"] == severity for r in measured)
        return Cell(
            severity,
            statistic,
            f"in {runs} of {len(values)} runs",
            f"(largest p {format_number(float(values.max()), statistic)})",
        )
    if len(values) == 1:
        row = measured[0]
        ci = (
            f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
            if pd.notna(row["ci_low"]) and pd.notna(row["ci_high"])
            else ""
        )
        window = _WINDOW.match(str(row["reason"]))  # a stream monitor's check of one window names it
        ci = " ".join(filter(None, [ci, window and f"in window {window['window']}"]))
        return Cell(severity, statistic, format_number(float(values.iat[0]), statistic), ci)
    return Cell(
        severity,
        statistic,
        format_number(float(values.mean()), statistic),
        f"± {values.std(ddof=1):.3f} (n = {len(values)})",
    )


def _rank(row: dict) -> int:
    return SEVERITY_RANK[row["severity"]]


def _worst(rows: list[dict]) -> str:
    return min((r["severity"] for r in rows), key=SEVERITY_RANK.__getitem__)


def _first_per(rows: list[dict], *keys: str) -> list[dict]:
    """The first row of each distinct value of `keys`, in order (drop_duplicates on plain rows)."""
    return list({tuple(r[k] for k in keys): r for r in reversed(rows)}.values())[::-1]


def scorecard_cells(verdicts: pd.DataFrame) -> list[dict]:
    """Rows of the scorecard: {"subject", "target", axis: Cell or None, ...}; see `scorecard`.

    Built on plain rows: the cells are many small groups of a small table, where pandas' per-group
    filtering (string columns backed by Arrow) cost ~0.8 s for a combined report's 82 verdicts."""
    if verdicts.empty:
        return []
    audits = _audits_per_subject(verdicts)
    first = {subject: i for i, subject in enumerate(audits.index)}
    rows = [r | {"run": r["subject"], "subject": model_of(r["subject"])} for r in verdicts.to_dict("records")]
    axes = list(dict.fromkeys(r["axis"] for r in rows))  # in the verdicts' order
    rows.sort(key=lambda r: (-audits[r["subject"]], first[r["subject"]]))  # stable: verdict order within a subject
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if pd.notna(r["target"]):  # as groupby, which leaves out a missing key
            groups.setdefault((r["subject"], r["target"]), []).append(r)
    cards = []
    for (subject, target), group in groups.items():
        card = {"subject": subject, "target": target}
        for axis in axes:
            checks = [r for r in group if r["axis"] == axis]
            if not checks:
                card[axis] = None
                continue
            statistic = checks[0]["statistic"]
            # per run, its worst row of the headline statistic: the number beside "fail" is a failing one
            ranked = sorted((r for r in checks if r["statistic"] == statistic), key=_rank)
            cell = _headline(_first_per(ranked, "run"), _worst(checks))
            card[axis] = replace(cell, detail="; ".join(filter(None, [cell.detail, *_others(checks, cell.statistic)])))
        cards.append(card)
    return cards


def _others(checks: list[dict], headline: str) -> list[str]:
    """The axis's second statistic and any other that did not pass: its mean over runs and its worst severity."""
    out = []
    by_statistic: dict[str, list[dict]] = {}
    for r in _first_per(checks, "run", "statistic"):
        if pd.notna(r["statistic"]):
            by_statistic.setdefault(r["statistic"], []).append(r)
    for i, (statistic, rows) in enumerate(by_statistic.items()):
        values = pd.Series([r["value"] for r in rows], dtype=float)
        if statistic != headline and values.notna().any() and (i == 1 or any(r["severity"] != "pass" for r in rows)):
            worst = _worst(rows)  # said where not pass: a "(pass)" beside the cell's "fail" reads as its opposite
            out.append(
                f"{statistic} {format_number(float(values.mean()), statistic)}"
                + ("" if worst == "pass" else f" ({worst})")
            )
    return out


def distinct_checks(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdicts with one row per measured value: where one value is checked against two thresholds (a
    disparate impact under 0.80 and under 0.50) the worst severity stays, the first row of equals. For the
    pages; report.json keeps every row."""
    same = ["audit", "axis", "subject", "target", "statistic", "value", "ci_low", "ci_high"]
    ranked = verdicts.iloc[verdicts["severity"].map(SEVERITY_RANK).argsort(kind="stable")]
    return ranked.drop_duplicates(same).sort_index()


def shared_subjects(verdicts: pd.DataFrame) -> set[str]:
    """The subjects (seeds folded) that more than one audit checks: a combined report's models."""
    if verdicts.empty:
        return set()
    audits = _audits_per_subject(verdicts)
    return set(audits[audits > 1].index)


def _audits_per_subject(verdicts: pd.DataFrame) -> pd.Series:
    """How many audits check each subject (seeds folded), subjects in the order they first appear."""
    return verdicts.assign(subject=verdicts["subject"].map(model_of)).groupby("subject", sort=False)["audit"].nunique()


def scorecard(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Rows: subject (a model, its seeds folded) x target; columns: subject, target, then one per axis in the
    order the verdicts give them. A cell is "severity: headline", or '' where the axis has no check.
    A subject's rows stay together: first the subjects more audits share (a combined report's models), then
    in the order subjects first appear."""
    return scorecard_frame(scorecard_cells(verdicts))


def scorecard_frame(cells: list[dict]) -> pd.DataFrame:
    """`scorecard`'s table from its cells (`scorecard_cells`), for a caller that has them already."""
    return pd.DataFrame([{k: "" if v is None else str(v) for k, v in row.items()} for row in cells])
