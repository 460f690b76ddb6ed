"""Who wrote each item, for the agreement bootstraps: posts by one author are not independent draws.

`item_authors` reads an `author` column (already pseudonymised by `mhaudit data import` and the post store)
from the items table or the validation set, or else takes the author from a post-store item id
(`at://<author>/app.bsky.feed.post/<rkey>`, whose author part the store has pseudonymised). Items with no
known author are each their own cluster (`cluster_labels`), as in the item bootstrap.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError

__all__ = ["read_authors", "item_authors", "cluster_labels", "bootstrap_unit"]

AT_URI = "at://"


def read_authors(path: Path) -> pd.DataFrame:
    """Item ids and their pseudonymous authors: from a post store (.sqlite: id = post URI) or a table."""
    from mhaudit.tables.io import read_table

    if not path.is_file():
        raise InputError(
            "no such file; expected a post store (.sqlite) or a corpus / items table with an author column", path=path
        )
    if path.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        from mhaudit.weak_supervision.collect.store import PostStore

        with PostStore(path, create=False) as store:
            posts = store.posts()
        return pd.DataFrame({"item_id": posts["uri"].astype(str), "author": posts["author"]})
    return read_table(path, what="the items")


def _author_column(frame: pd.DataFrame | None) -> pd.Series:
    id_col = next((c for c in ("item_id", "id") if frame is not None and c in frame.columns), None)
    if id_col is None or frame is None or "author" not in frame.columns:
        return pd.Series(dtype=object)
    known = frame[frame["author"].notna() & (frame["author"].astype(str).str.strip() != "")]
    return pd.Series(known["author"].astype(str).to_numpy(), index=known[id_col].astype(str).to_numpy())


def _uri_author(item_id: str) -> str | None:
    return (item_id.removeprefix(AT_URI).split("/", 1)[0] or None) if item_id.startswith(AT_URI) else None


def item_authors(
    item_ids: Iterable, *, items: pd.DataFrame | None = None, validation_set: pd.DataFrame | None = None
) -> pd.Series | None:
    """The author of each of `item_ids` that has one (index: item id as text), or None when none has.

    Sources, first found wins: the `author` column of `items` (a corpus or items table, `id` or `item_id`),
    of `validation_set`, then the author part of an at:// item id."""
    ids = pd.Index(pd.unique(np.asarray([str(i) for i in item_ids], dtype=object)))
    found = pd.Series(index=ids, dtype=object)
    for source in (_author_column(items), _author_column(validation_set)):
        source = source[~source.index.duplicated()]
        found = found.fillna(source.reindex(ids))
    missing = found.isna()
    found[missing] = [_uri_author(i) for i in ids[missing]]
    found = found.dropna()
    return found if len(found) else None


def cluster_labels(item_ids, authors: pd.Series | None) -> np.ndarray | None:
    """One cluster label per item for `resample_clusters`: its author, or the item itself when it has none."""
    if authors is None:
        return None
    ids = pd.Index([str(i) for i in item_ids])
    known = authors.reindex(ids)
    return np.where(known.isna(), "item:" + ids.to_numpy(dtype=object), "author:" + known.astype(str).to_numpy())


def bootstrap_unit(item_ids, authors: pd.Series | None) -> str:
    """How the report's bootstraps resample, in words."""
    labels = cluster_labels(item_ids, authors)
    if labels is None:  # no authors
        return "item-bootstrap"
    by_author = [label for label in labels if label.startswith("author:")]
    alone = len(labels) - len(by_author)
    return f"author-clustered bootstrap ({len(set(by_author))} authors, {len(labels)} items" + (
        f", {alone} without an author drawn alone)" if alone else ")"
    )
