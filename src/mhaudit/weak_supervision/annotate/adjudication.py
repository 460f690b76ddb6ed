"""Agreement state of a doubly-annotated sample: which items agree, which disagree, what is resolved.

Consensus labels are rows with kind 'adjudicated' and labeler 'consensus'. Their `raw_answer` says
where they came from: 'adjudicated' (the adjudicator decided a disagreement) or 'agreed' (every
annotator gave the same label, recorded with one click in the adjudication view). An 'agreed'
consensus whose annotators later disagree is not a resolution: the item is listed again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

from mhaudit.tables.io import is_missing
from mhaudit.tables.label_store import parse_tags  # the one tag parser of the labels table (re-exported here)
from mhaudit.weak_supervision.annotate.sample import Item

TAGS = (
    "advocacy/awareness",
    "third-person",
    "metaphorical use",
    "sarcasm/humour",
    "indirect ideation",
    "missing context",
    "news",
    "hypothetical",
)
CONSENSUS = "consensus"
ADJUDICATED = "adjudicated"
AGREED = "agreed"


@dataclass(frozen=True)
class Answer:
    value: int | None
    tags: tuple[str, ...] = ()
    note: str | None = None
    raw_answer: str | None = None
    created_at: str | None = None


@dataclass
class Case:
    item: Item
    answers: dict[str, Answer] = field(default_factory=dict)  # annotator -> answer (valid values only)
    consensus: Answer | None = None

    @property
    def values(self) -> set[int]:
        return {a.value for a in self.answers.values() if a.value is not None}

    def complete(self, annotators: Iterable[str]) -> bool:
        return all(name in self.answers for name in annotators)

    @property
    def disagreement(self) -> bool:
        return len(self.values) > 1

    @property
    def resolved(self) -> bool:
        """A disagreement with an adjudicated consensus (an 'agreed' one from before does not count)."""
        return self.consensus is not None and self.consensus.raw_answer != AGREED

    @property
    def union_tags(self) -> tuple[str, ...]:
        tags = {t for a in self.answers.values() for t in a.tags}
        return tuple(t for t in TAGS if t in tags) + tuple(sorted(tags - set(TAGS)))


def answer_from_row(row: dict) -> Answer:
    value = row["value"]
    note = row.get("note")
    return Answer(
        value=None if is_missing(value) else int(value),
        tags=parse_tags(row.get("tags")),
        note=None if is_missing(note) else str(note),
        raw_answer=row.get("raw_answer"),
        created_at=row.get("created_at"),
    )


def build_cases(items: list[Item], human: pd.DataFrame, consensus: pd.DataFrame, annotators: list[str]) -> list[Case]:
    """One case per sample item from the human labels of `annotators` and the consensus rows."""
    cases = {item.key: Case(item) for item in items}
    wanted = set(annotators)
    for row in human.to_dict("records"):
        case = cases.get((row["task"], row["item_id"]))
        if case is not None and row["labeler"] in wanted and row["kind"] == "human" and not pd.isna(row["value"]):
            case.answers[row["labeler"]] = answer_from_row(row)
    for row in consensus.to_dict("records"):
        case = cases.get((row["task"], row["item_id"]))
        if case is not None and row["labeler"] == CONSENSUS and row["kind"] == ADJUDICATED:
            case.consensus = answer_from_row(row)
    return list(cases.values())


def summary(cases: list[Case], annotators: list[str]) -> dict[str, int]:
    complete = [c for c in cases if c.complete(annotators)]
    disagreements = [c for c in cases if c.disagreement]
    agreed = [c for c in complete if not c.disagreement]
    return {
        "items": len(cases),
        "complete": len(complete),
        "agreed": len(agreed),
        "disagreements": len(disagreements),
        "resolved": sum(c.resolved for c in disagreements),
        "agreed_recorded": sum(c.consensus is not None for c in agreed),
    }


def agreed_rows(cases: list[Case], annotators: list[str]) -> list[dict]:
    """Consensus rows for items every annotator labelled alike that lack one (or carry a stale 'agreed')."""
    rows = []
    for case in cases:
        if len(annotators) < 2 or not case.complete(annotators) or case.disagreement:
            continue
        (value,) = case.values
        tags = case.union_tags
        current = case.consensus
        if current is not None and (current.raw_answer != AGREED or (current.value, current.tags) == (value, tags)):
            continue
        rows.append(
            {
                "item_id": case.item.item_id,
                "task": case.item.task,
                "labeler": CONSENSUS,
                "kind": ADJUDICATED,
                "value": value,
                "raw_answer": AGREED,
                "tags": list(tags),
                "note": None,
            }
        )
    return rows
