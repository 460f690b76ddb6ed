"""Annotation sheets: labels that were made elsewhere, in and out of the labels table (docs/annotation.md,
"Annotation sheets: export and import", with a table per format).

Three input formats, each read into rows for `LabelStore.add`: ``mhaudit`` (a CSV, JSONL or Parquet sheet with
the labels-table columns; a row without a value is an item not labelled yet and is skipped), ``label-studio``
(Label Studio's JSON or JSON-MIN export) and ``argilla`` (Argilla 2.x records, nested or flattened). Choices map
to 0/1 through a `ChoiceMap`: the default names, and a project's own with `--positive` / `--negative`; a choice
that maps to neither is an error naming it, never a silent drop (`sheet_options`). Model predictions (Label Studio
`predictions`, Argilla `suggestions`) are never imported as human labels (`annotation_exports` reads those two).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import read_table, write_table
from mhaudit.tables.label_store import COLUMNS, KEY, KINDS, LabelStore, check_label_value, parse_tags
from mhaudit.weak_supervision.annotation_exports import read_argilla, read_label_studio
from mhaudit.weak_supervision.sheet_options import (  # re-exported ("x as x"): callers import them from here
    ChoiceMap as ChoiceMap,
    Options as Options,
    SheetRows as SheetRows,
    is_blank,
    text_or_none,
)

FORMATS = ("mhaudit", "label-studio", "argilla")
SHEET_COLUMNS = (*COLUMNS, "text")


def _check_kind(kind: str, where: str) -> str:
    if kind not in KINDS:
        raise InputError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    return kind


# --- mhaudit sheets ----------------------------------------------------------------------------------
def _read_mhaudit(path: Path, opts: Options) -> SheetRows:
    if path.suffix.lower() == ".json":
        raise InputError(
            "a .json file: pass --format label-studio or --format argilla, or give an "
            "mhaudit sheet as .csv, .jsonl or .parquet",
            path=path,
        )
    frame = read_table(path, what="the sheet")
    for column, option in (("item_id", None), ("value", None), ("task", opts.task), ("labeler", opts.labeler)):
        if column not in frame.columns and option is None:
            flag = f" (or pass --{column})" if column in ("task", "labeler") else ""
            raise InputError(
                f"missing column '{column}'{flag}; a sheet needs item_id, task, labeler and value", path=path
            )
    result = SheetRows([])
    for i, record in enumerate(frame.to_dict("records")):
        where = f"{path} row {i + 1}"  # the n-th data row, header not counted, whatever the file type
        value = record.get("value")
        if is_blank(value) and is_blank(record.get("raw_answer")):
            result.skipped += 1
            continue
        row: dict[str, object] = {
            name: text_or_none(record.get(name))
            for name in ("item_id", "raw_answer", "prompt_hash", "note", "created_at")
        }
        row |= {
            "task": text_or_none(record.get("task")) or opts.task,
            "labeler": text_or_none(record.get("labeler")) or opts.labeler,
            "kind": _check_kind(text_or_none(record.get("kind")) or opts.kind, where),
            "value": check_label_value(value, where),
            "tags": list(parse_tags(record.get("tags"))) or None,
        }
        latency = record.get("latency_ms")
        if not is_blank(latency):
            try:
                row["latency_ms"] = float(latency)
            except (TypeError, ValueError):
                raise InputError(f"{where}: latency_ms {latency!r} is not a number") from None
        for column in ("item_id", "task", "labeler"):
            if row[column] is None:
                raise InputError(f"{where}: column '{column}' is empty")
        result.rows.append(row)
    return result


def read_sheet(path: str | Path, fmt: str = "mhaudit", opts: Options | None = None) -> SheetRows:
    """Rows for `LabelStore.add` from an annotation sheet, validated with the sheet's row numbers."""
    path = Path(path)
    opts = opts or Options()
    if fmt not in FORMATS:
        raise InputError(f"unknown sheet format '{fmt}'; expected one of {', '.join(FORMATS)}")
    if not path.exists():
        raise InputError("no such file", path=path)
    _check_kind(opts.kind, "--kind")
    reader = {"mhaudit": _read_mhaudit, "label-studio": read_label_studio, "argilla": read_argilla}[fmt]
    result = reader(path, opts)
    if fmt != "mhaudit":
        users = {row.pop("_user"): row.pop("_id") for row in result.rows}
        ids = sorted(i for i in users.values() if i is not None)
        no_id = sum(i is None for i in users.values())
        if opts.labeler is not None:
            if len(users) > 1:
                named = ", ".join(ids) + (f"{' and ' if ids else ''}{no_id} without a user id" if no_id else "")
                raise InputError(
                    f"the file holds labels from {len(users)} annotators ({named}); --labeler names "
                    "one: add --user ID to import them one at a time",
                    path=path,
                )
            for row in result.rows:
                row["labeler"] = opts.labeler
        elif no_id:
            raise InputError(
                f"{no_id} annotator(s) in the file have no numeric Label Studio user id (the export "
                "names them by email, which mhaudit never stores); import them one at a time under a "
                "name with --user EMAIL --labeler NAME",
                path=path,
            )
    seen: set[tuple] = set()
    for row in result.rows:
        key = tuple(row[k] for k in KEY)
        if key in seen:
            raise InputError(
                f"item '{row['item_id']}' has two labels from '{row['labeler']}' for task "
                f"'{row['task']}'; one labeler writes one label per item",
                path=path,
            )
        seen.add(key)
    return result


def check_labeler_kinds(store: LabelStore, rows: list[dict], advice: str = "choose another --labeler") -> None:
    """Refuse rows whose labeler already writes another kind of label (they would be overwritten)."""
    wanted = {(row["labeler"], row["kind"]) for row in rows}
    for labeler, kind in sorted(wanted):
        kinds = set(store.frame(labeler=labeler)["kind"]) - {kind}
        if kinds:
            raise InputError(
                f"labeler '{labeler}' already has {sorted(kinds)[0]} labels in the label store, not {kind}; {advice}",
                path=store.path,
            )


def blank_sheet(items: list, store: LabelStore, labeler: str, task: str | None = None) -> pd.DataFrame:
    """A sheet to label elsewhere: one row per sample item (`load_sample`), prefilled with this labeler's labels."""
    known = {(r["task"], r["item_id"]): r for r in store.frame(labeler=labeler).to_dict("records")}
    rows = []
    for item in items:
        if task is not None and item.task != task:
            continue
        label = known.get(item.key, {})
        rows.append(
            {
                "item_id": item.item_id,
                "task": item.task,
                "labeler": labeler,
                "kind": label.get("kind", "human"),
                "value": label.get("value"),
                "tags": label.get("tags"),
                "note": label.get("note"),
                "text": item.text,
            }
        )
    if not rows:
        raise InputError(f"the sample has no items for task '{task}'")
    frame = pd.DataFrame(rows)
    frame["value"] = frame["value"].astype("Int64")
    return frame


def write_sheet(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a labels table or a sheet (with its text column) atomically as .csv, .jsonl or .parquet."""
    return write_table(frame.loc[:, [c for c in SHEET_COLUMNS if c in frame.columns]], path, what="the sheet")
