"""What every command shares: the two consoles, the bad-input guard and the table printer."""

from __future__ import annotations

import atexit
import functools
import gc
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

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
