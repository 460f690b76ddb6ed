"""What an LLM labels and what it is shown: the items (a post store or a table) and the k-shot examples
drawn from a labelled pool."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.labelers.prompts import Example


def read_items(path: str | Path, *, id_col: str = "id", text_col: str = "text") -> pd.DataFrame:
    """Items to label as a frame with `id` and `text`: a collector post store (.sqlite/.db: id = post URI)
    or a table (corpus Parquet, CSV, TSV, JSONL) with an id and a text column. Blank texts are dropped."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            "no such file; expected a post store (.sqlite) or a corpus / table with id and text", path=path
        )
    if path.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        from mhaudit.weak_supervision.collect.store import PostStore

        with PostStore(path, create=False) as store:
            posts = store.posts()
        frame = pd.DataFrame({"id": posts["uri"].astype(str), "text": posts["text"]})
    else:
        from mhaudit.tables.io import read_table

        table = read_table(path, what="the items", required=[id_col, text_col])
        frame = pd.DataFrame({"id": table[id_col].astype(str), "text": table[text_col]})
        dup = frame["id"].duplicated()
        if dup.any():
            raise InputError(
                f"id '{frame['id'][dup].iat[0]}' appears twice in column '{id_col}'; item ids must be unique", path=path
            )
    text = frame["text"].where(frame["text"].notna(), "").astype(str)
    return frame.assign(text=text)[text.str.strip() != ""].reset_index(drop=True)


def read_pool(
    path: str | Path,
    *,
    positive: str | None = None,
    id_col: str = "id",
    text_col: str = "text",
    label_col: str = "label",
) -> pd.DataFrame:
    """A labelled pool for k-shot examples: id, text, y (0/1).

    Labels are 0/1 as they stand, or class names: `positive` names the positive class; without it a corpus
    Parquet with two classes uses its last class (the mappings put the positive class last)."""
    import json

    from mhaudit.tables.corpus.schema import METADATA_KEY
    from mhaudit.tables.io import read_table

    path = Path(path)
    table = read_table(path, what="the pool", required=[text_col, label_col])
    labels = table[label_col].astype(str).str.strip()
    if positive is None and set(labels) <= {"0", "1", "0.0", "1.0"}:
        y = labels.isin(["1", "1.0"]).astype(int)
    else:
        if positive is None and path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            meta = json.loads((pq.read_schema(path).metadata or {}).get(METADATA_KEY, b"{}"))
            classes = meta.get("classes") or []
            positive = classes[-1] if len(classes) == 2 else None
        if positive is None:
            found = ", ".join(sorted(set(labels))[:5])
            raise InputError(f"pool labels are {found}, not 0/1; pass --positive with the positive class", path=path)
        if positive not in set(labels):
            raise InputError(f"no pool row has the positive class '{positive}' in column '{label_col}'", path=path)
        y = (labels == positive).astype(int)
    ids = (
        table[id_col].astype(str)
        if id_col in table.columns
        else pd.Series([f"pool-{i}" for i in range(len(table))], index=table.index)
    )
    text = table[text_col].where(table[text_col].notna(), "").astype(str)
    pool = pd.DataFrame({"id": ids, "text": text, "y": y})
    return pool[pool["text"].str.strip() != ""].reset_index(drop=True)


def draw_examples(
    pool: pd.DataFrame,
    k: int,
    *,
    seed: int = 0,
    exclude_ids: frozenset[str] | set[str] = frozenset(),
    exclude_texts: frozenset[str] | set[str] = frozenset(),
) -> list[Example]:
    """k examples from the pool, seeded and stratified: k // 2 per class, an odd k's last one from a class
    drawn at random; pool rows that are items being labelled (same id or same stripped, lower-cased text)
    are never shown. The order is shuffled so the labels do not come in blocks."""
    if k <= 0:
        return []
    rng = np.random.default_rng(seed)
    norm = {t.strip().lower() for t in exclude_texts}
    usable = pool[~pool["id"].isin(exclude_ids) & ~pool["text"].str.strip().str.lower().isin(norm)]
    quota = {0: k // 2, 1: k // 2}
    if k % 2:
        quota[int(rng.integers(2))] += 1
    chosen = []
    for cls in (0, 1):
        rows = usable.index[usable["y"] == cls].to_numpy()
        if len(rows) < quota[cls]:
            raise InputError(
                f"the pool has {len(rows)} usable example(s) with label {cls}; {k}-shot needs "
                f"{quota[cls]} (items being labelled are never used as examples)"
            )
        chosen += list(rng.choice(rows, size=quota[cls], replace=False))
    order = rng.permutation(len(chosen))
    return [(str(usable.at[chosen[i], "text"]), int(usable.at[chosen[i], "y"])) for i in order]


def shot_examples(
    items: pd.DataFrame,
    shots: int | None,
    *,
    default_shots: int,
    pool: str | Path | None,
    positive: str | None = None,
    seed: int = 0,
) -> list[Example]:
    """The k-shot examples of a run: `shots` of them, or the prompt's `default_shots` when `shots` is None,
    drawn from the pool file without the items being labelled; none for zero-shot (no pool needed)."""
    k = default_shots if shots is None else shots
    if k < 0:
        raise InputError("--shots must be >= 0")
    if not k:
        return []
    if pool is None:
        raise InputError(
            f"{k}-shot prompting needs --pool (a labelled corpus with text and label)"
            + ("; the stress prompt is 3-shot by default, pass --shots 0 for zero-shot" if shots is None else "")
        )
    return draw_examples(
        read_pool(pool, positive=positive), k, seed=seed, exclude_ids=set(items["id"]), exclude_texts=set(items["text"])
    )
