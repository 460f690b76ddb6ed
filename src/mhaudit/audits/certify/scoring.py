"""The target items scored by a model, for the certification sample (`mhaudit labels sample --strategy estimate
--model`): the same predictions `mhaudit predict` writes, read as `--predictions` reads them, so both routes draw
the same sample (docs/validation.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.predictions import PredictionSet, logit_column

__all__ = ["score_items"]


def score_items(
    model: str | Path,
    items: pd.DataFrame,
    *,
    mapping=None,
    trust_pickle: bool = False,
    name: str | None = None,
) -> PredictionSet:
    """The scores of `model` on `items` (a corpus, or an items table with `id` or `item_id` and `text`), unlabelled.

    `model`: a model folder (or a parent of seed-* and run-* folders: every run scores the items, an ensemble), a
    Hugging Face folder or a skops pipeline file; `mapping` and `trust_pickle` as `load_model` takes them. The rows
    scored are those `mhaudit predict` scores: in a corpus (a `split` column), every row the model is judged on
    (`judged_rows`: not its training platform's train and val rows); in an items table, every item. Items without
    text are left out (people cannot label them). `name`: the model's name in the table (default: its own)."""
    from mhaudit.models.base import load_model
    from mhaudit.models.seeds import model_folders
    from mhaudit.tables.prediction_files import read_predictions
    from mhaudit.tables.validation_set import item_texts

    id_col = "id" if "id" in items.columns else "item_id"
    if id_col not in items.columns or "text" not in items.columns:
        raise InputError("the items need an 'id' (or 'item_id') and a 'text' column")
    with_text = items[items[id_col].astype(str).isin(item_texts(items, id_col).index)]
    tables, runs = list[pd.DataFrame](), set[tuple[str, int]]()
    for folder in model_folders(Path(model)):
        loaded = load_model(folder, mapping=mapping, trust_pickle=trust_pickle)
        key = (name or loaded.name, int(loaded.options.get("seed", 0)))
        if key in runs:
            raise InputError(f"two runs hold {key[0]} seed {key[1]}; their scores would be one run", path=folder)
        runs.add(key)
        if tables and list(loaded.classes) != tables[0].attrs["classes"]:
            raise InputError(
                f"the run's classes ({', '.join(loaded.classes)}) differ from the first run's "
                f"({', '.join(tables[0].attrs['classes'])})",
                path=folder,
            )
        tables.append(_scored(loaded, _judged(with_text, loaded), id_col, key))
    if not len(tables[0]):
        raise InputError("the model scores none of the items (none has text, or all are its training rows)")
    scored = pd.concat(tables, ignore_index=True)
    return read_predictions(scored, classes=tables[0].attrs["classes"], platform="items", labelled=False)


def _judged(items: pd.DataFrame, model) -> pd.DataFrame:
    """The rows `mhaudit predict` would score: a corpus's judged rows, an items table's every row."""
    from mhaudit.tables.corpus.splits import judged_rows

    if not {"split", "platform", "dataset"} <= set(items.columns):
        return items
    return items[judged_rows(items, getattr(model, "trained_on", None))]


def _scored(model, rows: pd.DataFrame, id_col: str, key: tuple[str, int]) -> pd.DataFrame:
    """A predictions table (ids, model, seed, place and split where the items have them, one logit column per
    class), as `predict_corpus` makes it."""
    logits = np.asarray(model.predict_logits(rows["text"].astype(str).tolist()), dtype=float)
    # the place and split a file would give; an items table's come from read_predictions' defaults
    found = {c: rows[c].to_numpy() for c in ("platform", "dataset", "split") if c in rows.columns}
    table = pd.DataFrame(
        {"id": rows[id_col].astype(str).to_numpy(), "model": key[0], "seed": np.int64(key[1]), **found}
    )
    scores = pd.DataFrame(logits, columns=[logit_column(c) for c in model.classes])
    table = pd.concat([table, scores], axis=1)
    table.attrs["classes"] = list(model.classes)
    return table
