"""Annotation sheets: labels that were made elsewhere, in and out of the labels table (docs/annotation.md,
"Annotation sheets: export and import", with a table per format).

Three input formats, each read into rows for `LabelStore.add`: ``mhaudit`` (a CSV, JSONL or Parquet sheet with
the labels-table columns; a row without a value is an item not labelled yet and is skipped), ``label-studio``
(Label Studio's JSON or JSON-MIN export) and ``argilla`` (Argilla 2.x records, nested or flattened). Choices map
to 0/1 through a `ChoiceMap`: the default names, and a project's own with `--positive` / `--negative`; a choice
that maps to neither is an error naming it, never a silent drop. Model predictions (Label Studio `predictions`,
Argilla `suggestions`) are never imported as human labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import is_missing, read_table, write_table
from mhaudit.tables.label_store import COLUMNS, KEY, KINDS, LabelStore, check_label_value, parse_tags

FORMATS = ("mhaudit", "label-studio", "argilla")
DEFAULT_POSITIVE = ("1", "positive", "yes", "true", "pos")
DEFAULT_NEGATIVE = ("0", "negative", "no", "false", "neg")
SHEET_COLUMNS = (*COLUMNS, "text")


@dataclass
class ChoiceMap:
    positive: set[str] = field(default_factory=lambda: set(DEFAULT_POSITIVE))
    negative: set[str] = field(default_factory=lambda: set(DEFAULT_NEGATIVE))

    @classmethod
    def with_extra(cls, positive: Iterable[str] = (), negative: Iterable[str] = ()) -> ChoiceMap:
        choices = cls()
        choices.positive |= {p.strip().lower() for p in positive}
        choices.negative |= {n.strip().lower() for n in negative}
        both = choices.positive & choices.negative
        if both:
            raise InputError(f"choice '{sorted(both)[0]}' is given as both positive and negative")
        return choices

    def value(self, choice: object, where: str) -> int:
        if isinstance(choice, (bool, int, float)) and choice in (0, 1):
            return int(choice)
        if isinstance(choice, list):
            if len(choice) != 1:
                raise InputError(f"{where}: expected one label choice, found {len(choice)} ({choice!r})")
            return self.value(choice[0], where)
        text = str(choice).strip().lower()
        if text in self.positive:
            return 1
        if text in self.negative:
            return 0
        raise InputError(
            f"{where}: label choice {choice!r} is neither positive ({', '.join(sorted(self.positive))}) "
            f"nor negative ({', '.join(sorted(self.negative))}); map it with --positive or --negative"
        )


@dataclass
class Options:
    labeler: str | None = None  # fills a missing labeler; for LS/Argilla: the name of the one annotator imported
    task: str | None = None  # fills a missing task
    kind: str = "human"
    user: str | None = None  # LS/Argilla: import only this annotator (user id / completed_by)
    label_field: str = "label"
    tags_field: str = "tags"
    note_field: str = "note"
    id_field: str = "item_id"
    choices: ChoiceMap = field(default_factory=ChoiceMap)


@dataclass
class SheetRows:
    rows: list[dict]
    skipped: int = 0  # rows / annotations without a label


def _empty(value: object) -> bool:
    return is_missing(value) or (isinstance(value, str) and value.strip() == "")


def _text(value: object) -> str | None:
    return None if _empty(value) else str(value)


def _load_json(path: Path) -> list:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc})", path=path) from None
    try:
        data = json.loads(raw)
    except ValueError:
        try:
            data = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except ValueError as exc:
            raise InputError(f"is neither JSON nor JSON lines ({exc})", path=path) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise InputError("expected a JSON list of objects", path=path)
    return data


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
        if _empty(value) and _empty(record.get("raw_answer")):
            result.skipped += 1
            continue
        row: dict[str, object] = {
            name: _text(record.get(name)) for name in ("item_id", "raw_answer", "prompt_hash", "note", "created_at")
        }
        row |= {
            "task": _text(record.get("task")) or opts.task,
            "labeler": _text(record.get("labeler")) or opts.labeler,
            "kind": _check_kind(_text(record.get("kind")) or opts.kind, where),
            "value": check_label_value(value, where),
            "tags": list(parse_tags(record.get("tags"))) or None,
        }
        latency = record.get("latency_ms")
        if not _empty(latency):
            try:
                row["latency_ms"] = float(latency)
            except (TypeError, ValueError):
                raise InputError(f"{where}: latency_ms {latency!r} is not a number") from None
        for column in ("item_id", "task", "labeler"):
            if row[column] is None:
                raise InputError(f"{where}: column '{column}' is empty")
        result.rows.append(row)
    return result


# --- Label Studio --------------------------------------------------------------------------------------
def _ls_user(completed_by: object) -> tuple[str, str | None]:
    """(who, user id): `who` tells annotators apart and is what --user matches; the id is Label Studio's
    numeric user id, or None where the export names the annotator otherwise (JSON-MIN writes the email
    of a `completed_by` object). Only the id ever becomes part of a labeler name: an email is never
    stored, nor printed."""
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id", completed_by.get("email"))
    if isinstance(completed_by, float) and completed_by.is_integer():
        completed_by = int(completed_by)
    who = "" if _empty(completed_by) else str(completed_by).strip()
    return who, (who if who.isdigit() else None)


def _ls_results(results: list, opts: Options, where: str) -> tuple[object, list[str], str | None]:
    choices = [r for r in results if isinstance(r, dict) and r.get("type") in ("choices", "taxonomy")]
    label = [r for r in choices if r.get("from_name") == opts.label_field]
    if not label:
        others = [r for r in choices if r.get("from_name") != opts.tags_field]
        if len(others) > 1:
            names = sorted({str(r.get("from_name")) for r in others})
            raise InputError(
                f"{where}: several choice fields ({', '.join(names)}) and none named "
                f"'{opts.label_field}'; pass --label-field"
            )
        label = others
    tags = [
        c
        for r in choices
        if r.get("from_name") == opts.tags_field
        for c in (r.get("value") or {}).get("choices", []) or (r.get("value") or {}).get("taxonomy", [])
    ]
    tags = [t if isinstance(t, str) else "/".join(map(str, t)) for t in tags]
    texts = [r for r in results if isinstance(r, dict) and r.get("type") == "textarea"]
    named = [r for r in texts if r.get("from_name") == opts.note_field] or (texts if len(texts) == 1 else [])
    note = "\n".join(t for r in named for t in (r.get("value") or {}).get("text", [])) or None
    value = (label[0].get("value") or {}).get("choices") if label else None
    return value, tags, note


def _read_label_studio(path: Path, opts: Options) -> SheetRows:
    tasks = _load_json(path)
    result = SheetRows([])
    for n, task in enumerate(tasks, start=1):
        full = "annotations" in task
        data = task.get("data", {}) if full else task
        where = f"{path} task {n}"
        item_id = data.get(opts.id_field)
        if _empty(item_id) and opts.id_field == "id":
            item_id = task.get("id")
        if _empty(item_id):
            raise InputError(
                f"{where}: no '{opts.id_field}' in the task data; the sample's item ids must travel "
                "with the tasks (or pass --id-field)"
            )
        task_name = _text(data.get("task")) or opts.task
        if task_name is None:
            raise InputError(f"{where}: no 'task' in the task data; pass --task")
        if full:
            annotations = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
            entries = []
            for a in annotations:
                value, tags, note = _ls_results(a.get("result") or [], opts, where)
                entries.append(
                    (*_ls_user(a.get("completed_by")), value, tags, note, a.get("lead_time"), a.get("created_at"))
                )
        else:  # JSON-MIN: one flat object per annotation
            value = data.get(opts.label_field)
            if isinstance(value, dict):
                value = value.get("choices")
            tags = data.get(opts.tags_field)
            tags = tags.get("choices", []) if isinstance(tags, dict) else ([] if _empty(tags) else [tags])
            entries = [
                (
                    *_ls_user(data.get("annotator")),
                    value,
                    tags,
                    _text(data.get(opts.note_field)),
                    data.get("lead_time"),
                    data.get("created_at"),
                )
            ]
        for user, user_id, value, tags, note, lead_time, created in entries:
            _add_answer(
                result,
                opts,
                value,
                f"{where} (item '{item_id}')",
                item_id=str(item_id),
                task=task_name,
                _user=user,
                _id=user_id,
                labeler=f"label-studio-{user_id}" if user_id is not None else None,
                tags=tags,
                note=note,
                created_at=_text(created),
                latency_ms=float(lead_time) * 1000 if isinstance(lead_time, (int, float)) else None,
            )
    return result


def _add_answer(result: SheetRows, opts: Options, value: object, where: str, **row) -> None:
    """A Label Studio or Argilla answer as a row of `result`, unless --user names another annotator or it has no
    label (counted as skipped)."""
    if opts.user is not None and row["_user"] != opts.user:
        return
    if _empty(value) if not isinstance(value, list) else not value:
        result.skipped += 1
        return
    result.rows.append(
        {
            **row,
            "kind": opts.kind,
            "value": opts.choices.value(value, where),
            "raw_answer": json.dumps(value) if isinstance(value, list) else str(value),
            "tags": [str(t) for t in row["tags"]] or None,
        }
    )


# --- Argilla ------------------------------------------------------------------------------------------
def _argilla_responses(record: dict, where: str) -> dict[str, list[dict]]:
    """question -> [{value, user_id, status}] for both the nested and the flattened export."""
    nested = record.get("responses")
    if isinstance(nested, dict):
        return {
            q: [r for r in answers if isinstance(r, dict)] for q, answers in nested.items() if isinstance(answers, list)
        }
    flat: dict[str, list[dict]] = {}
    for key, values in record.items():
        if key.endswith(".responses") and isinstance(values, list):
            question = key[: -len(".responses")]
            users = record.get(f"{key}.users") or [None] * len(values)
            status = record.get(f"{key}.status") or [None] * len(values)
            if not len(values) == len(users) == len(status):
                raise InputError(
                    f"{where}: '{key}' has {len(values)} responses but {len(users)} users and {len(status)} statuses"
                )
            flat[question] = [
                {"value": v, "user_id": u, "status": s} for v, u, s in zip(values, users, status, strict=True)
            ]
    return flat


def _argilla_lookup(record: dict, name: str) -> object:
    for scope in (record.get("fields"), record.get("metadata")):
        if isinstance(scope, dict) and not _empty(scope.get(name)):
            return scope[name]
    return record.get(name)


def _read_argilla(path: Path, opts: Options) -> SheetRows:
    records = _load_json(path)
    result = SheetRows([])
    for n, record in enumerate(records, start=1):
        where = f"{path} record {n}"
        item_id = _argilla_lookup(record, opts.id_field)
        if _empty(item_id) and opts.id_field == "item_id":
            item_id = record.get("id")  # Argilla's record id is the id the project gave it
        if _empty(item_id):
            raise InputError(f"{where}: no '{opts.id_field}' and no record id; pass --id-field")
        task_name = _text(_argilla_lookup(record, "task")) or opts.task
        if task_name is None:
            raise InputError(f"{where}: no 'task' field or metadata; pass --task")
        responses = _argilla_responses(record, where)
        by_user: dict[str, dict[str, object]] = {}
        for question, answers in responses.items():
            for answer in answers:
                if answer.get("status") not in (None, "submitted"):
                    continue  # drafts and discarded responses are not labels
                by_user.setdefault(str(answer.get("user_id")), {})[question] = answer.get("value")
        for user, given in by_user.items():
            tags = given.get(opts.tags_field)
            _add_answer(
                result,
                opts,
                given.get(opts.label_field),
                f"{where} (item '{item_id}')",
                item_id=str(item_id),
                task=task_name,
                labeler=f"argilla-{user}",
                _user=user,
                _id=user,
                tags=tags if isinstance(tags, list) else ([] if _empty(tags) else [tags]),
                note=_text(given.get(opts.note_field)),
            )
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
    reader = {"mhaudit": _read_mhaudit, "label-studio": _read_label_studio, "argilla": _read_argilla}[fmt]
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
