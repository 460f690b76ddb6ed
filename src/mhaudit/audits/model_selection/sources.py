"""Label sources: the models train on one source (the corpus's own labels, or one labeler of a labels
table, e.g. LLM or lexicon weak labels) and are scored against it and against every reference source
given (e.g. human-adjudicated labels for part of the data, or the expert label while training on weak
labels), each on the test rows that source labels. A source is class names indexed by corpus id."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mhaudit.core.errors import InputError

CORPUS_SOURCE = "corpus"  # the label source that is the corpus's own label column


def label_sources(
    corpus_frame: pd.DataFrame,
    classes: list[str],
    labels: pd.DataFrame | None,
    *,
    train_labeler: str = CORPUS_SOURCE,
    reference_labelers: Sequence[str] = (),
    task: str | None = None,
    positive: str | None = None,
) -> tuple[pd.Series, dict[str, pd.Series]]:
    """The training source and the references as class names indexed by corpus id.

    'corpus' is the corpus's own label column; any other name is a labeler of the labels table (values 1 ->
    the positive class, 0 -> the other; null values are left out)."""
    positive, negative = sides(classes, positive)
    names = [train_labeler, *reference_labelers]
    if len(set(names)) < len(names):
        raise InputError(f"a label source is named twice ({', '.join(names)})")
    ids = corpus_frame["id"].astype(str)

    def source(name: str) -> pd.Series:
        if name == CORPUS_SOURCE:
            return pd.Series(corpus_frame["label"].astype(str).to_numpy(), index=ids)
        if labels is None:
            raise InputError(f"label source '{name}' needs a labels table (--labels)")
        mine = labels[labels["labeler"].astype(str) == name]
        if task is not None:
            mine = mine[mine["task"].astype(str) == task]
        if mine.empty:
            known = sorted(set(labels["labeler"].astype(str)))
            raise InputError(
                f"the labels table has no labels from '{name}'"
                f"{' for task ' + repr(task) if task else ''}; labelers: {', '.join(known)}"
            )
        tasks = sorted(set(mine["task"].astype(str)))
        if len(tasks) > 1:
            raise InputError(f"labeler '{name}' labels several tasks ({', '.join(tasks)}); choose one with --task")
        mine = mine[mine["value"].notna()]
        values = mine["value"].astype(int).map({1: positive, 0: negative})
        series = pd.Series(values.to_numpy(), index=mine["item_id"].astype(str).to_numpy())
        unmatched = int((~series.index.isin(ids)).sum())
        if unmatched == len(series):
            raise InputError(f"none of the {len(series)} items labelled by '{name}' is a row id of the corpus")
        return series[series.index.isin(ids)]

    return source(train_labeler), {name: source(name) for name in reference_labelers}


def label_probabilities(labels: pd.DataFrame | None, name: str, task: str | None) -> pd.Series | None:
    """A labeler's probability of class 1 (the positive class) indexed by item id, on the items it gives a
    0/1 label; None for 'corpus' or a labeler without probabilities (only a combined labeler writes them)."""
    if labels is None or name == CORPUS_SOURCE or "probability" not in labels:
        return None
    mine = labels[labels["labeler"].astype(str) == name]
    if task is not None:
        mine = mine[mine["task"].astype(str) == task]
    mine = mine[mine["value"].notna() & mine["probability"].notna()]
    if mine.empty:
        return None
    return pd.Series(mine["probability"].astype(float).to_numpy(), index=mine["item_id"].astype(str).to_numpy())


def sides(classes: list[str], positive: str | None) -> tuple[str, str]:
    """The positive class (the last unless given) and the other one, of a binary corpus."""
    if len(classes) != 2:
        raise InputError(
            f"the benchmark needs a binary corpus (two classes); this one has {len(classes)}: {', '.join(classes)}"
        )
    positive = positive if positive is not None else classes[-1]
    if positive not in classes:
        raise InputError(f"positive class '{positive}' is not one of the classes {', '.join(classes)}")
    return positive, classes[0] if positive == classes[1] else classes[1]


def checked_sources(
    rows: pd.DataFrame,
    classes: list[str],
    train_labels: pd.Series | None,
    train_source: str,
    references: Mapping[str, pd.Series] | None,
) -> dict[str, pd.Series]:
    """Every label source by name, the training source first, each checked against the classes;
    `train_labels` None: the rows' label column."""
    if train_labels is None:
        if "label" not in rows:
            raise InputError("the rows have no 'label' column and no training labels were given")
        train_labels = pd.Series(rows["label"].astype(str).to_numpy(), index=rows["id"])
    sources = {train_source: check_source(train_labels, classes, train_source)}
    for name, series in (references or {}).items():
        if name == train_source:
            raise InputError(f"label source '{name}' is both the training source and a reference")
        sources[name] = check_source(series, classes, name)
    return sources


def check_source(series: pd.Series, classes: list[str], name: str) -> pd.Series:
    """One source as class names indexed by id (both as strings), nulls left out; a value outside the
    classes or an id labelled twice is an InputError."""
    series = pd.Series(series).dropna()
    series = pd.Series(series.astype(str).to_numpy(), index=series.index.astype(str))
    unknown = sorted(set(series) - set(classes))
    if unknown:
        raise InputError(
            f"label source '{name}' has value(s) {', '.join(unknown[:5])}; expected the classes {', '.join(classes)}"
        )
    if series.index.duplicated().any():
        raise InputError(f"label source '{name}' labels item '{series.index[series.index.duplicated()][0]}' twice")
    return series


__all__ = ["CORPUS_SOURCE", "check_source", "checked_sources", "label_probabilities", "label_sources", "sides"]
