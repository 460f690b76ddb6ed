"""What every command shares: the two consoles, the bad-input guard (which also gathers the warnings a command
raises), the table and scorecard printers, the report writer that lists those warnings in the report, and many
values after one flag."""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import re
import signal
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand, TyperOption

from mhaudit.core.errors import InputError, os_fault
from mhaudit.cli.progress import for_console
from mhaudit.core.progress import Progress

if TYPE_CHECKING:
    import pandas as pd

    from mhaudit.report import AuditResult

out = Console()
err = Console(stderr=True)

# At exit, leave the objects of pandas, matplotlib and scipy to the OS instead of a last cyclic collection
# over all of them: ~0.3 s of every command's wall time (measured on 2 cores). Files are closed by then.
atexit.register(gc.freeze)


@contextlib.contextmanager
def ctrl_c_stops():
    """Inside, SIGINT and SIGTERM (a service manager, `kill`) raise KeyboardInterrupt, so a server stops with its
    summary. SIGINT too: a shell that starts a job in the background starts it with SIGINT ignored."""
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_raised: dict | None = None  # kind of warning -> [times, first message, messages differed], while a command runs
_QUIET = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)  # Python's default ignores


@contextlib.contextmanager
def _gathered_warnings():
    """Count the warnings raised inside by kind instead of printing each with its source line, then print each
    kind once as one line on stderr. Python callers of the library keep Python's own warnings."""
    global _raised
    if _raised is not None:  # a command called from a command: the outer one gathers
        yield
        return
    _raised = kinds = dict[str, list]()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # every occurrence, so each kind can say how often it came
            for category in _QUIET:
                warnings.simplefilter("ignore", category)
            warnings.showwarning = lambda message, category, *_, **__: _count(kinds, category, message)
            yield
    finally:
        _raised = None
        for line in warning_lines(kinds):
            err.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)


def _count(kinds: dict, category: type[Warning], message: Warning | str) -> None:
    """One kind per category and first line with its numbers masked: "undefined in 8 of 500 tables" and "in 17
    of 500 tables" are one kind, shown by its first message."""
    text = str(message).strip()
    first = text.splitlines()[0] if text else category.__name__
    seen = kinds.setdefault((category.__name__, re.sub(r"\d[\d,.]*", "#", first)), [0, first, False])
    seen[0] += 1
    seen[2] |= first != seen[1]


def warning_lines(kinds: dict) -> list[str]:
    """One line per kind of warning: its (first) message, and how many times it came when more than once."""
    return [
        first + (f" ({n} times{', the first shown' if differed else ''})" if n > 1 else "")
        for n, first, differed in kinds.values()
    ]


def guarded(fn):
    """Turn an InputError into one red sentence and exit code 2; so too an OSError the user can fix (a full
    disk, a file-size limit, a read-only folder) that no writer turned into one (docs/faults.md). Warnings are
    gathered and printed once per kind at the end (`_gathered_warnings`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            with _gathered_warnings():
                return fn(*args, **kwargs)
        except (InputError, OSError) as exc:
            fault = exc if isinstance(exc, InputError) else os_fault(exc, writing=False)
            if fault is None:
                raise  # any other OSError is a bug: exit code 1 with its traceback
            err.print(f"[bold red]error:[/] {escape(str(fault))}", highlight=False, soft_wrap=True)
            raise typer.Exit(fault.exit_code) from None

    return wrapper


def write_report(result: AuditResult, out_dir: Path) -> list[Path]:
    """`mhaudit.report.write_report`, with the warnings the command has raised so far listed in the report's notes."""
    from dataclasses import replace

    from mhaudit.report import write_report as write

    raised = warning_notes()
    return write(replace(result, notes=[*result.notes, *raised]) if raised else result, out_dir)


def warning_notes() -> list[str]:
    """The warnings the running command has raised so far as report notes, one per kind (`warning_lines`)."""
    return [f"warning: {line}" for line in warning_lines(_raised)] if _raised else []


_PROSE = 24  # a text column with a longer cell (a reason, a path) wraps between words; shorter ones (names) do not


def print_table(title: str, frame: pd.DataFrame) -> None:
    """A table as wide as the terminal (80 columns in a log or pipe): numbers and names on one line, prose
    wrapped between words, no column narrower than its header. A table that cannot fit so prints as one line
    of "column: value" pairs per row."""
    import pandas as pd  # here, not at the top: `mhaudit --help` loads no pandas

    from mhaudit.report.numbers import format_number

    headers = [str(col) for col in frame.columns]
    numeric = [
        pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col])
        for col in frame.columns
    ]
    rows = [
        [
            ("n/a" if pd.isna(v) else format_number(float(v), name)) if isinstance(v, float) else str(v)
            for v, name in zip(row, headers)
        ]
        for row in frame.itertuples(index=False)
    ]
    longest = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    wraps = [not number and width > _PROSE for number, width in zip(numeric, longest)]
    least = [max(len(h), _PROSE // 2) if wrap else width for h, wrap, width in zip(headers, wraps, longest)]
    out.print(f"[bold]{escape(title)}[/]", highlight=False)
    if sum(least) + 2 * (len(headers) - 1) > out.width:
        for row in rows:
            out.print(escape(" · ".join(f"{h}: {v}" for h, v in zip(headers, row))), highlight=False)
        return
    table = _plain_table(gap=2)
    for header, number, wrap, width in zip(headers, numeric, wraps, least):
        table.add_column(
            escape(header), justify="right" if number else "left", no_wrap=not wrap, min_width=width, overflow="fold"
        )
    for row in rows:
        table.add_row(*map(escape, row))
    out.print(table)


def stage_progress(every_s: float = 60.0, steps: bool = True) -> Progress:
    """Progress shown on stderr: a live bar on a terminal, timestamped lines in a log or pipe (steps at each
    tenth of a stage or every `every_s` seconds); `steps=False`: stages and notes only, as lines."""
    return Progress(for_console(err, every_s, steps))


class ManyValues(TyperCommand):
    """A command whose repeatable flags also take several values after one flag: `--target a.parquet b.parquet`
    reads as `--target a.parquet --target b.parquet` (a shell glob expands to just that). The values run to the
    next token that starts with '-', so positional arguments go before such a flag."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        many = {
            name for p in self.params if isinstance(p, TyperOption) and p.multiple and not p.is_flag for name in p.opts
        }
        return super().parse_args(ctx, spread(args, many))


def spread(args: list[str], many: set[str]) -> list[str]:
    """`args` with every value after the first that follows a flag in `many` given its own copy of the flag."""
    out, flag, first = list[str](), None, False
    for i, token in enumerate(args):
        if token == "--":
            return out + args[i:]
        if token.startswith("-") and token != "-":
            flag, first = (token, True) if token in many else (None, False)
            out.append(token)
        elif flag is not None and not first:
            out += [flag, token]
        else:
            out.append(token)
            first = False
    return out


def many_values(app: typer.Typer) -> None:
    """Make every command of `app` and its groups a ManyValues command (the one rule for repeatable flags)."""
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = ManyValues
    for sub in (group.typer_instance for group in app.registered_groups if group.typer_instance):
        many_values(sub)


def _plain_table(gap: int) -> Table:
    """No borders: `gap` spaces between columns and a rule under the bold header."""
    from rich import box

    return Table(box=box.SIMPLE_HEAD, padding=(0, gap - 1, 0, 0), pad_edge=False, show_edge=False, header_style="bold")


_SEVERITY_CELL = {
    "fail": "[red]fail[/]",
    "warn": "[yellow]warn[/]",
    "pass": "[green]pass[/]",
    "undefined": "[dim]n/a[/]",
}


def print_summary(result: AuditResult) -> None:
    """The result's summary, then each of its notes (what the report's footer lists, e.g. an uncalibrated home)."""
    out.print(result.summary)
    for note in result.notes:
        out.print(f"note: {note}", highlight=False)


def print_scorecard(title: str, verdicts: pd.DataFrame) -> None:
    """The scorecard as wide as the terminal: under each subject, a line per target with the worst verdict of
    each axis (numbers, CIs and every check stay in the report). As in the report, the subjects several audits
    share come first and the rest follow as other checks."""
    from mhaudit.report.scorecard import scorecard_cells, shared_subjects

    rows = scorecard_cells(verdicts)
    shared = shared_subjects(verdicts)
    parts = [(title, [r for r in rows if r["subject"] in shared] or rows)]
    if shared and any(r["subject"] not in shared for r in rows):
        parts.append(("Other checks (subjects only one audit checks)", [r for r in rows if r["subject"] not in shared]))
    for heading, part in parts:
        if part:
            _print_card(heading, part)


def _print_card(title: str, rows: list[dict]) -> None:
    """One scorecard table: a line per subject and target where that fits the width, else each subject on a
    line of its own above its targets; the axes' names as headings where they fit, else SHORT_AXES and a key."""
    import textwrap

    from mhaudit.report.scorecard import short_axis

    axes = [axis for axis in rows[0] if axis not in ("subject", "target") and any(r[axis] for r in rows)]
    subject_width, target_width = (max(len(str(r[key])) for r in rows) for key in ("subject", "target"))
    layouts = [(names, True) for names in ({a: a for a in axes}, {a: short_axis(a) for a in axes})]
    widths = lambda names: [max(4, len(names[axis])) for axis in axes]  # noqa: E731
    names, side_by_side = next(
        (
            (names, flat)
            for names, flat in layouts
            if subject_width + 1 + target_width + sum(w + 1 for w in widths(names)) <= out.width
        ),
        (layouts[1][0], False),
    )
    table = _plain_table(gap=1)
    for header in ("subject", "target") if side_by_side else ("",):
        table.add_column(header, no_wrap=True)
    for axis, width in zip(axes, widths(names)):
        table.add_column(escape(names[axis]), no_wrap=True, min_width=width)
    label_width = out.width - sum(w + 1 for w in widths(names))
    subject = None
    for row in rows:
        cells = [_SEVERITY_CELL[row[axis].severity] if row[axis] else "[dim]-[/]" for axis in axes]
        if side_by_side:
            table.add_row(
                escape(str(row["subject"])) if row["subject"] != subject else "", escape(str(row["target"])), *cells
            )
        else:
            if row["subject"] != subject:
                table.add_row(f"[bold]{escape(str(row['subject']))}[/]", *[""] * len(axes))
            lines = textwrap.wrap(str(row["target"]), label_width - 1, subsequent_indent="  ", break_on_hyphens=False)
            for i, line in enumerate(lines):  # the cells on the target's first line
                table.add_row(" " + escape(line), *(cells if i == 0 else [""] * len(axes)))
        subject = row["subject"]
    out.print(f"[bold]{escape(title)}[/]", highlight=False)
    out.print(table)
    key, line = [f"{names[axis]} = {axis}" for axis in axes if names[axis] != axis], ""
    for entry in key:  # whole entries to a line: "attr = attribution" is not split
        if line and len(line) + 2 + len(entry) > out.width:
            out.print(escape(line + ";"), highlight=False, style="dim")
            line = ""
        line = f"{line}; {entry}" if line else entry
    if line:
        out.print(escape(line), highlight=False, style="dim")
