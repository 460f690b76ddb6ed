"""Label Studio (JSON or JSON-MIN) and Argilla 2.x (nested or flattened) exports read into sheet rows, one row per
annotator's answer; model predictions (Label Studio `predictions`, Argilla `suggestions`) are never read as human
labels. `sheets.read_sheet` calls these readers and checks their rows (docs/annotation.md, "Annotation sheets")."""

from __future__ import annotations

import json
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.sheet_options import Options, SheetRows, is_blank, text_or_none


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
    who = "" if is_blank(completed_by) else str(completed_by).strip()
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


def read_label_studio(path: Path, opts: Options) -> SheetRows:
    tasks = _load_json(path)
    result = SheetRows([])
    for n, task in enumerate(tasks, start=1):
        full = "annotations" in task
        data = task.get("data", {}) if full else task
        where = f"{path} task {n}"
        item_id = data.get(opts.id_field)
        if is_blank(item_id) and opts.id_field == "id":
            item_id = task.get("id")
        if is_blank(item_id):
            raise InputError(
                f"{where}: no '{opts.id_field}' in the task data; the sample's item ids must travel "
                "with the tasks (or pass --id-field)"
            )
        task_name = text_or_none(data.get("task")) or opts.task
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
            tags = tags.get("choices", []) if isinstance(tags, dict) else ([] if is_blank(tags) else [tags])
            entries = [
                (
                    *_ls_user(data.get("annotator")),
                    value,
                    tags,
                    text_or_none(data.get(opts.note_field)),
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
                created_at=text_or_none(created),
                latency_ms=float(lead_time) * 1000 if isinstance(lead_time, (int, float)) else None,
            )
    return result


def _add_answer(result: SheetRows, opts: Options, value: object, where: str, **row) -> None:
    """A Label Studio or Argilla answer as a row of `result`, unless --user names another annotator or it has no
    label (counted as skipped)."""
    if opts.user is not None and row["_user"] != opts.user:
        return
    if is_blank(value) if not isinstance(value, list) else not value:
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
        if isinstance(scope, dict) and not is_blank(scope.get(name)):
            return scope[name]
    return record.get(name)


def read_argilla(path: Path, opts: Options) -> SheetRows:
    records = _load_json(path)
    result = SheetRows([])
    for n, record in enumerate(records, start=1):
        where = f"{path} record {n}"
        item_id = _argilla_lookup(record, opts.id_field)
        if is_blank(item_id) and opts.id_field == "item_id":
            item_id = record.get("id")  # Argilla's record id is the id the project gave it
        if is_blank(item_id):
            raise InputError(f"{where}: no '{opts.id_field}' and no record id; pass --id-field")
        task_name = text_or_none(_argilla_lookup(record, "task")) or opts.task
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
                tags=tags if isinstance(tags, list) else ([] if is_blank(tags) else [tags]),
                note=text_or_none(given.get(opts.note_field)),
            )
    return result
