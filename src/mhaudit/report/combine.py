"""Several audits of the same models as one report: `combine_results` merges AuditResults (verdict rows, so one
scorecard; summaries; sections, titled by audit), `read_report` reads one back from the folder `write_report`
wrote, so audits run apart can be combined afterwards (`mhaudit report combine`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from mhaudit import __version__
from mhaudit.core.errors import InputError
from mhaudit.report.result import VERDICT_COLUMNS, AuditResult, Section, verdict_table
from mhaudit.report.scorecard import model_of

__all__ = ["read_report", "combine_results", "AUDIT_LABELS"]

# What a section heading calls each audit in a combined report.
AUDIT_LABELS = {
    "cpfe": "Cross-platform",
    "estimate": "Before labels",
    "certify": "Certified with labels",
    "monitor": "Stream monitor",
    "divergence": "Label source",
    "agreement": "Human validation",
    "model_selection": "Model selection",
}


def read_report(folder: str | Path) -> AuditResult:
    """The AuditResult a report folder holds (report.json and its figures/*.svg or *.png)."""
    folder = Path(folder)
    path = folder / "report.json"
    if not path.is_file():
        raise InputError("has no report.json; expected a folder an mhaudit audit wrote with --out", path=folder)
    try:
        doc = json.loads(path.read_text("utf-8"))
        sections = [
            Section(
                s["title"],
                s.get("text", ""),
                {name: pd.DataFrame.from_records(rows) for name, rows in s.get("tables", {}).items()},
                {f["title"]: _figure(folder, f["file"]) for f in s.get("figures", [])},
            )
            for s in doc["sections"]
        ]
        verdicts = verdict_table(pd.DataFrame.from_records(doc["verdicts"], columns=VERDICT_COLUMNS).to_dict("records"))
        return AuditResult(
            doc["title"],
            sections,
            summary=doc.get("summary", ""),
            verdicts=verdicts,
            synthetic=bool(doc.get("synthetic")),
            options=doc.get("options", {}),
            provenance=doc.get("provenance", {}),
            notes=list(doc.get("notes", [])),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"is not a report mhaudit {__version__} can read ({type(exc).__name__}: {exc})", path=path
        ) from None


def _figure(folder: Path, file: str) -> bytes:
    path = folder / file
    if not path.is_file():
        raise InputError(f"names the figure {file}, which is not in the folder", path=folder / "report.json")
    return path.read_bytes()


def _label(result: AuditResult) -> str:
    audits = list(dict.fromkeys(result.verdicts["audit"]))
    return AUDIT_LABELS.get(audits[0], result.title) if len(audits) == 1 else result.title


def _shared_models(results: Sequence[AuditResult]) -> str:
    subjects = [set(r.verdicts["subject"].map(model_of)) for r in results]
    shared = [m for m in dict.fromkeys(m for s in subjects for m in sorted(s)) if sum(m in s for s in subjects) > 1]
    if not shared:
        return (
            "No model or labeler appears in more than one of these audits: their rows sit side by side but "
            "describe different subjects."
        )
    everywhere = [m for m in shared if all(m in s for s in subjects)]
    return (
        f"In every audit: {', '.join(everywhere)}." if everywhere else f"In more than one audit: {', '.join(shared)}."
    )


def combine_results(results: Sequence[AuditResult], title: str | None = None) -> AuditResult:
    """One report of `results`: their verdicts (a verdict in several inputs kept once) under one scorecard,
    each summary as a paragraph, each section headed by its audit ("Cross-platform: Discrimination")."""
    if not results:
        raise InputError("no reports to combine")
    labels = [_label(r) for r in results]
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):  # two reports of one audit: "Cross-platform", "Cross-platform (2)"
        seen[label] = seen.get(label, 0) + 1
        labels[i] = label if seen[label] == 1 else f"{label} ({seen[label]})"
    verdicts = pd.concat([r.verdicts for r in results], ignore_index=True)
    verdicts = verdict_table(
        verdicts.drop_duplicates(subset=[c for c in VERDICT_COLUMNS if c != "reason"]).to_dict("records")
    )
    summary = "\n\n".join(
        [_shared_models(results), *(f"{label}: {r.summary}" for label, r in zip(labels, results) if r.summary)]
    )
    sections = [
        Section(f"{label}: {s.title}", s.text, s.tables, s.figures)
        for label, r in zip(labels, results)
        for s in r.sections
    ]
    inputs = {
        f"{label}: {name}": digest
        for label, r in zip(labels, results)
        for name, digest in r.provenance.get("inputs", {}).items()
    }
    return AuditResult(
        title or "mhaudit trust report: " + ", ".join(labels),
        sections,
        summary=summary,
        verdicts=verdicts,
        synthetic=any(r.synthetic for r in results),
        options={label: r.options for label, r in zip(labels, results)},
        notes=list(dict.fromkeys(note for r in results for note in r.notes)),
        provenance={
            "mhaudit_version": __version__,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "inputs": inputs,
            "combined": [
                {"audit": label, "title": r.title, "created": r.provenance.get("created")}
                for label, r in zip(labels, results)
            ],
        },
    )
