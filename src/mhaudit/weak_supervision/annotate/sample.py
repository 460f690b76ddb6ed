"""The validation sample as the annotation app sees it: item_id, task and text, nothing else.

`mhaudit labels sample` writes more columns (the weak label as `stratum`, the platform, ...). They
are dropped here, on reading, so no page or API answer can ever show them to an annotator.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.tables.io import is_missing, read_table, table_format

REQUIRED = ("item_id", "task", "text")


@dataclass(frozen=True)
class Item:
    position: int  # 1-based place in the annotation order
    item_id: str
    task: str
    text: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.task, self.item_id)


def load_sample(path: str | Path, *, keep_order: bool = False, posts: str | Path | None = None) -> list[Item]:
    """Read a validation sample; keep only item_id, task and text; check them row by row.

    Items are put in a fixed pseudo-random order (a hash of task and item id) unless `keep_order`:
    a sample file sorted by stratum would otherwise tell annotators the weak label by position.
    `posts`: a post store whose texts fill a sample of post ids without a text column (the monitor's).
    """
    path = Path(path)
    frame = read_table(path, what="the sample")
    if "text" not in frame.columns and posts is not None and "item_id" in frame.columns:
        frame["text"] = frame["item_id"].astype(str).map(_store_texts(posts, set(frame["item_id"].astype(str))))
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(
            f"missing column '{missing[0]}'; a validation sample needs the columns "
            f"{', '.join(REQUIRED)} (as `mhaudit labels sample` writes them)",
            path=path,
        )
    if frame.empty:
        raise InputError("the sample has no rows", path=path)
    frame = frame.loc[:, list(REQUIRED)]
    rows: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    offset = 2 if table_format(path) in ("csv", "tsv") else 1
    for i, (item_id, task, text) in enumerate(frame.itertuples(index=False, name=None)):
        where = f"row {i + offset}"
        for column, value in (("item_id", item_id), ("task", task)):
            if is_missing(value) or str(value).strip() == "":
                raise InputError(f"{where}: column '{column}' is empty", path=path)
        if not isinstance(text, str) or not text.strip():
            found = "; the post store has no such post" if posts is not None and is_missing(text) else ""
            raise InputError(f"{where}: column 'text' is empty or not text{found}", path=path)
        key = (str(task), str(item_id))
        if key in seen:
            raise InputError(f"{where}: item '{item_id}' appears twice for task '{task}'", path=path)
        seen.add(key)
        rows.append((str(item_id), str(task), text))
    if not keep_order:
        rows.sort(key=lambda r: hashlib.sha256(f"{r[1]}\x1f{r[0]}".encode()).hexdigest())
    return [Item(position=i + 1, item_id=item_id, task=task, text=text) for i, (item_id, task, text) in enumerate(rows)]


def _store_texts(posts: str | Path, ids: set[str]) -> dict[str, str]:
    from mhaudit.weak_supervision.collect.store import PostStore

    with PostStore(posts, create=False) as store:  # a mistyped --store: one sentence, and no new file
        return store.texts(ids)
