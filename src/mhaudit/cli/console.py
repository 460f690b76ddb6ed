"""What every command shares: the two consoles, the bad-input guard, the table printer, many values after one
flag, and the one-line note of a renamed command."""

from __future__ import annotations

import atexit
import functools
import gc
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand

from mhaudit.core.errors import InputError, os_fault
from mhaudit.cli.progress import for_console
from mhaudit.core.progress import Progress

if TYPE_CHECKING:
    import pandas as pd

out = Console()
err = Console(stderr=True)

# At exit, leave the objects of pandas, matplotlib and scipy to the OS instead of a last cyclic collection
# over all of them: ~0.3 s of every command's wall time (measured on 2 cores). Files are closed by then.
atexit.register(gc.freeze)


def guarded(fn):
    """Turn an InputError into one red sentence and exit code 2; so too an OSError the user can fix (a full
    disk, a file-size limit, a read-only folder) that no writer turned into one (docs/faults.md)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (InputError, OSError) as exc:
            fault = exc if isinstance(exc, InputError) else os_fault(exc, writing=False)
            if fault is None:
                raise  # any other OSError is a bug: exit code 1 with its traceback
            err.print(f"[bold red]error:[/] {escape(str(fault))}", highlight=False, soft_wrap=True)
            raise typer.Exit(fault.exit_code) from None

    return wrapper


def print_table(title: str, frame: pd.DataFrame) -> None:
    import pandas as pd  # here, not at the top: `mhaudit --help` loads no pandas

    table = Table(title=escape(title), title_justify="left")
    for col in frame.columns:
        table.add_column(escape(str(col)), overflow="fold",
                         justify="right" if pd.api.types.is_numeric_dtype(frame[col]) else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else escape(str(v)) for v in row])
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
        many = {name for p in self.params if p.param_type_name == "option" and p.multiple and not p.is_flag
                for name in p.opts}
        return super().parse_args(ctx, spread(args, many))


def spread(args: list[str], many: set[str]) -> list[str]:
    """`args` with every value after the first that follows a flag in `many` given its own copy of the flag."""
    out, flag, first = [], None, False
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
    for group in app.registered_groups:
        many_values(group.typer_instance)


def renamed(command, old: str, new: str):
    """`command` under its old name: one line on stderr names the new form, then it runs."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        say_renamed(old, new)
        return command(*args, **kwargs)

    return wrapper


def say_renamed(old: str, new: str) -> None:
    err.print(f"note: `mhaudit {old}` is now `mhaudit {new}`; the old name will be removed.", highlight=False,
              soft_wrap=True)
