"""The validation sample (issue 7): a stratified random sample of items by their weak label, and its file.

`sample_for_validation` draws the sample (both classes present, sizes or shares configurable, seeded)
and returns the *validation set*: one row per sampled item with `sample_id, item_id, task, text,
stratum` and the design columns `weak_labeler, pool_size, sample_size, weight, seed`. `stratum` is the
weak label the item was drawn under: it stays in the file because the agreement report needs it for
design weights, but it must never be shown to annotators (they label blind to the weak label). Rows are
in random order, so position reveals nothing either.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.audits.agreement.labels import choose_weak_labeler
from mhaudit.core.errors import InputError
from mhaudit.tables.io import write_table
from mhaudit.tables.reference_labels import task_labels
from mhaudit.tables.validation_set import SAMPLE_COLUMNS, item_texts, read_validation_set

__all__ = ["sample_for_validation", "write_validation_set", "read_validation_set"]


def _allocate(
    n: int | None, pool: Mapping[int, int], positive_share: float | None, sizes: Mapping[int, int] | None
) -> dict[int, int]:
    """Items to draw per weak label, {0: n0, 1: n1}, checked against the options and the pool."""
    total = pool[0] + pool[1]
    if positive_share is not None and sizes is not None:
        raise InputError("give either a positive share or stratum sizes, not both")
    if sizes is not None:
        sizes = {int(k): int(v) for k, v in sizes.items()}
        if set(sizes) != {0, 1}:
            raise InputError(f"stratum sizes must name the weak labels 0 and 1, got {sorted(sizes)}")
        if n is not None and n != sum(sizes.values()):
            raise InputError(f"the stratum sizes add up to {sum(sizes.values())}, not n = {n}")
        n = sum(sizes.values())
    if n is None:
        raise InputError("give the sample size n (or stratum sizes)")
    if n > total:
        raise InputError(
            f"a sample of {n} is larger than the pool: {total} items have a valid weak label and a text "
            f"({pool[1]} weak positive, {pool[0]} weak negative)"
        )
    if n < 2:
        raise InputError(f"a sample of {n} cannot hold both classes; n must be at least 2")
    if sizes is None:
        if positive_share is not None:
            if not 0 < positive_share < 1:
                raise InputError(f"the positive share {positive_share} must lie strictly between 0 and 1")
            n1 = int(round(n * positive_share))
        else:  # proportional (the pool's weak positive rate), one item per stratum at least, within what it holds
            n1 = min(max(int(round(n * pool[1] / total)), 1), n - 1, pool[1])
        sizes = {0: n - n1, 1: n1}
    for value, word in ((0, "negative"), (1, "positive")):
        if sizes[value] < 1:
            raise InputError(
                f"the sample has no weak {word} item; both classes must be present "
                f"(sizes {sizes[0]} negative / {sizes[1]} positive)"
            )
        if sizes[value] > pool[value]:
            raise InputError(
                f"the sample asks for {sizes[value]} weak {word} items but the pool has only {pool[value]}"
            )
    return sizes


def sample_for_validation(
    labels: pd.DataFrame,
    items: pd.DataFrame,
    task: str,
    n: int | None = None,
    *,
    weak_labeler: str | None = None,
    positive_share: float | None = None,
    sizes: Mapping[int, int] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """A stratified random sample of items by weak label: the validation set for human annotation.

    The pool is every item with a valid (0/1) label from the weak labeler for `task` and a text in
    `items` (columns `id` or `item_id`, and `text`). Allocation: `sizes` {0: n0, 1: n1}; or
    `positive_share` of n drawn from the weak positives; by default proportional to the pool (the
    sample keeps the pool's weak positive rate; at least one item per class). Within each stratum a
    simple random sample without replacement (numpy Generator seeded with `seed`, items sorted by id
    first, so the input order does not matter); the rows are then shuffled.

    `weight` = pool_size / sample_size of the item's stratum: the design weight that turns sample
    counts into estimates for the pool. `audit_agreement(validation_set=...)` spreads each stratum's
    pool over the stratum's items it could score (pool_size / n_scored), so items that drop out of
    scoring (unresolved, no valid weak label) do not bias the pool estimates. An `author` column in `items`
    is kept (after `text`): the report's bootstraps then resample authors.
    """
    weak = choose_weak_labeler(labels, task, weak_labeler)
    rows = task_labels(labels, task)
    rows = rows[(rows["labeler"] == weak) & rows["value"].notna()]
    id_col = "id" if "id" in items.columns else "item_id" if "item_id" in items.columns else None
    if id_col is None or "text" not in items.columns:
        raise InputError(
            f"the items need an 'id' (or 'item_id') and a 'text' column; got {', '.join(map(str, items.columns))}"
        )
    texts = item_texts(items, id_col)
    rows = rows[rows["item_id"].isin(texts.index)]
    if rows.empty:
        raise InputError(
            f"none of the items labelled by '{weak}' for task '{task}' has a text in the items table; "
            "are the ids the same?"
        )
    values = rows["value"].astype(int)
    pool = {v: int((values == v).sum()) for v in (0, 1)}
    for value, word in ((0, "negative"), (1, "positive")):
        if pool[value] == 0:
            raise InputError(
                f"the pool has no weak {word} item ({pool[1 - value]} items, all labelled {1 - value} "
                f"by '{weak}'); a stratified sample needs both classes"
            )
    alloc = _allocate(n, pool, positive_share, sizes)
    rng = np.random.default_rng(seed)
    chosen = []
    for value in (0, 1):
        ids = np.sort(rows.loc[values == value, "item_id"].to_numpy(dtype=str))
        picked = rng.choice(ids, size=alloc[value], replace=False)
        chosen.append(
            pd.DataFrame({"item_id": picked, "stratum": value, "pool_size": pool[value], "sample_size": alloc[value]})
        )
    frame = pd.concat(chosen, ignore_index=True)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    width = max(4, len(str(len(frame))))
    frame["sample_id"] = [f"{task}-{seed}-{i + 1:0{width}d}" for i in range(len(frame))]
    frame["task"] = task
    frame["text"] = texts.reindex(frame["item_id"]).to_numpy()
    columns = list(SAMPLE_COLUMNS)
    if "author" in items.columns:  # pseudonymous; kept so the agreement report can resample authors
        authors = items.assign(_id=items[id_col].astype(str)).drop_duplicates("_id").set_index("_id")["author"]
        frame["author"] = authors.reindex(frame["item_id"]).to_numpy()
        columns.insert(columns.index("text") + 1, "author")
    frame["weak_labeler"] = weak
    frame["weight"] = frame["pool_size"] / frame["sample_size"]
    frame["seed"] = seed
    return frame.loc[:, columns]


def write_validation_set(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write the validation set atomically as Parquet, CSV or JSONL (by suffix)."""
    return write_table(frame, path, what="the validation set")
