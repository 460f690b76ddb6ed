"""Audits an experiment file runs on files it names: its `[[audits]]` tables (docs/report.md). Each is the audit's
door with its inputs built by their own constructor (`from_files`, or the monitor's `from_store`) and its options
by field name, so a table can hold whatever the audit's command takes, with the same defaults and checks."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import typing
from collections.abc import Callable
from pathlib import Path

from mhaudit.audits import AUDITS, audit_function
from mhaudit.core.errors import InputError
from mhaudit.core.options import described
from mhaudit.core.progress import Progress
from mhaudit.report import AuditResult


def parts(name: str) -> tuple[Callable, Callable, type]:
    """The door of audit `name`, its inputs' constructor from files and its options type."""
    if name not in AUDITS:
        near = difflib.get_close_matches(name, list(AUDITS), n=1)
        raise InputError(
            f"audit '{name}' is not an audit"
            + (f" (did you mean '{near[0]}'?)" if near else "")
            + f"; audits: {', '.join(AUDITS)}"
        )
    door = audit_function(name)
    hints = typing.get_type_hints(door)
    inputs = hints["inputs"]
    return door, getattr(inputs, "from_files", None) or inputs.from_store, hints["options"]


def make_options(options_type: type, values: dict, where: str):
    """`options_type` from a table of its fields (a nested options table for a nested options field)."""
    hints = typing.get_type_hints(options_type)
    fields = [f.name for f in described(options_type)]
    if missing := [
        f.name
        for f in described(options_type)
        if f.name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]:
        raise InputError(f"{where}: '{missing[0]}' is needed (it has no default)")
    for key, value in values.items():
        if key not in fields:
            near = difflib.get_close_matches(key, fields, n=2)
            raise InputError(
                f"{where}: '{key}' is not an option"
                + (f"; did you mean {' or '.join(near)}?" if near else f"; options: {', '.join(fields)}")
            )
    return options_type(
        **{
            key: make_options(hints[key], value, f"{where}.{key}")
            if dataclasses.is_dataclass(hints[key]) and isinstance(value, dict)
            else value
            for key, value in values.items()
        }
    )


def check(spec) -> None:
    """The table names an audit, arguments its constructor takes, and options that make its options."""
    where = f"[[audits]] {spec.audit}"
    _, constructor, options_type = parts(spec.audit)
    known = [p for p in inspect.signature(constructor).parameters if p != "cls"]
    if unknown := [k for k in [*spec.files, *spec.read] if k not in known]:
        raise InputError(
            f"{where}: '{unknown[0]}' is not an input of {constructor.__qualname__}; it takes {', '.join(known)}"
        )
    make_options(options_type, spec.options, f"{where} options")


def run(spec, folder: Path, progress: Progress) -> AuditResult:
    """The audit of one `[[audits]]` table, its file arguments read from `folder` (the experiment file's)."""
    door, constructor, options_type = parts(spec.audit)
    files = {
        key: str(folder / v) if isinstance(v, str) else [str(folder / p) for p in v]  # absolute paths stay
        for key, v in spec.files.items()
    }
    inputs = constructor(**files, **spec.read)
    return door(inputs, make_options(options_type, spec.options, f"[[audits]] {spec.audit} options"), progress=progress)
