"""The labels table as weak-label validation reads it: the labelers, the weak labeler, a corpus's labels.

One task's rows come from `tables.reference_labels.task_labels`; `choose_weak_labeler` names the weak labeler;
`labels_from_corpus` turns a data set's own (expert) labels into labels rows so they can serve as the human
reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import COLUMNS, now
from mhaudit.tables.labeler_names import full_labeler_name
from mhaudit.tables.reference_labels import task_labels

__all__ = ["WEAK_KINDS", "describe_labelers", "choose_weak_labeler", "labels_from_corpus"]

WEAK_KINDS = ("llm", "lexicon")


def describe_labelers(rows: pd.DataFrame) -> str:
    """'name (kind), ...' of the labelers in `rows`, for error messages."""
    kinds = rows.groupby("labeler")["kind"].first()
    return ", ".join(f"{name} ({kind})" for name, kind in kinds.items())


def choose_weak_labeler(labels: pd.DataFrame, task: str, weak_labeler: str | None = None) -> str:
    """The weak labeler's full name: as given, or a short name of it (`tables.labeler_names`; it must have labels
    for the task), or the only llm/lexicon labeler."""
    rows = task_labels(labels, task)
    if weak_labeler is not None:
        return full_labeler_name(rows, weak_labeler, task, role="weak labeler")
    weak = sorted(rows.loc[rows["kind"].isin(WEAK_KINDS), "labeler"].unique())
    if len(weak) != 1:
        raise InputError(
            f"{'several' if weak else 'no'} weak labelers (kind llm or lexicon) for task '{task}'"
            f"{': ' + ', '.join(weak) if weak else ''}; name one with --weak "
            f"(labelers: {describe_labelers(rows)})"
        )
    return weak[0]


def labels_from_corpus(
    corpus: pd.DataFrame,
    task: str,
    labeler: str,
    *,
    kind: str = "human",
    positive: str | None = None,
    classes: Sequence[str] | None = None,
) -> pd.DataFrame:
    """A binary corpus's labels as a labels table: value 1 where `label` is the positive class.

    `positive` defaults to the last of `classes` (binary mappings put the positive class last, e.g.
    depression-binary: no_depression, depression). Used to enter a data set's own (expert) labels as a
    human reference.
    """
    for column in ("id", "label"):
        if column not in corpus.columns:
            raise InputError(f"the corpus has no '{column}' column")
    observed = sorted(corpus["label"].dropna().astype(str).unique())
    classes = list(classes) if classes else observed
    if positive is None:
        if len(classes) != 2:
            raise InputError(
                f"the corpus has {len(classes)} classes ({', '.join(classes)}); name the positive class with --positive"
            )
        positive = classes[-1]
    if positive not in classes and positive not in observed:
        raise InputError(f"positive class '{positive}' is not a class of the corpus ({', '.join(classes)})")
    values = (corpus["label"].astype(str) == positive).astype(int)
    frame = pd.DataFrame(
        {
            "item_id": corpus["id"].astype(str),
            "task": task,
            "labeler": labeler,
            "kind": kind,
            "value": values.astype("Int64"),
            "raw_answer": corpus["label"].astype(str),
            "prompt_hash": None,
            "latency_ms": None,
            "tags": None,
            "note": None,
            "created_at": now(),
        }
    )
    return frame.loc[:, list(COLUMNS)]
