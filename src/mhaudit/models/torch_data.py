"""The rows the torch models train and predict on: the training split, label codes, dynamic padding."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.schema import label_codes


def texts_and_codes(rows: pd.DataFrame, classes: list[str]) -> tuple[list[str], np.ndarray]:
    """The rows' texts and their labels as int64 codes in `classes` order; InputError on unknown labels."""
    for column in ("text", "label"):
        if column not in rows:
            raise InputError(f"the rows have no '{column}' column")
    labels = rows["label"].astype(str)
    unknown = sorted(set(labels[~labels.isin(classes)]))
    if unknown:
        raise InputError(f"label(s) {', '.join(unknown[:5])} are not among the classes {', '.join(classes)}")
    return rows["text"].astype(str).tolist(), label_codes(labels, classes)


def training_split(train: pd.DataFrame, classes: list[str]):
    """The fit protocol shared by the torch models: rows of split 'train' train, rows of split 'val' (if
    any) choose the epoch; without a split column every row trains. Returns ((texts, codes), val or None,
    the model's first notes: how many rows other splits held); InputError when a class has no training example."""
    if len(classes) < 2:
        raise InputError(f"a classifier needs at least two classes, got {classes}")
    split = train["split"].astype(str) if "split" in train else pd.Series("train", index=train.index)
    fit_rows, val_rows = train[split == "train"], train[split == "val"]
    if fit_rows.empty:
        raise InputError("the training frame has no rows with split 'train'")
    texts, codes = texts_and_codes(fit_rows, classes)
    missing = [c for i, c in enumerate(classes) if not (codes == i).any()]
    if missing:
        raise InputError(
            f"the training rows have no example of class(es) {', '.join(missing)}; every class needs training examples"
        )
    val = texts_and_codes(val_rows, classes) if not val_rows.empty else None
    ignored = len(train) - len(fit_rows) - len(val_rows)
    return (texts, codes), val, [f"{ignored} row(s) with a split other than train/val were not used"] if ignored else []


def longest_first(ids: list[list[int]]) -> np.ndarray:
    """Row positions by token count, longest first (stable), so each inference batch pads little."""
    return np.argsort(-np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)), kind="stable")


def pad_batch(ids: list[list[int]], pad_id: int, side: str = "right") -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic padding: input_ids and attention_mask as long tensors as wide as the longest row."""
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    width = int(lengths.max())
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    columns = np.arange(width)
    mask = columns[None, :] >= (width - lengths)[:, None] if side == "left" else columns[None, :] < lengths[:, None]
    input_ids[mask] = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(input_ids), torch.from_numpy(mask.astype(np.int64))
