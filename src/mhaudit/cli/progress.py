"""How the CLI shows a `mhaudit.core.progress.Progress`: a live bar on a terminal, timestamped lines otherwise.

The library only announces events; these are the two renderers. In a log every start, done and note is a line,
but a stage's steps are a line only at each tenth of a known total or after `every_s` seconds, so a long run
says where it is without filling the log.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import IO, TYPE_CHECKING

from mhaudit.core.progress import Announce, Event

if TYPE_CHECKING:
    from rich.console import Console


class PlainLines:
    """Timestamped lines for logs and pipes (`steps=False`: no lines for steps); `clock` (seconds) decides when
    a step line is due."""

    def __init__(self, stream: IO[str], every_s: float = 60.0, *, steps: bool = True, clock=time.monotonic):
        self.stream, self.every_s, self.steps, self.clock = stream, every_s, steps, clock
        self._shown: dict[str, tuple[int, float]] = {}  # stage -> (tenths of its total shown, time of its last line)
        self._status: dict[str, str] = {}

    def __call__(self, event: Event) -> None:
        if event.kind == "start":
            self._shown[event.name] = (0, self.clock())
            self._status.pop(event.name, None)
            self._line("start", event.name)
        elif event.kind == "advance":
            if event.status is not None:
                self._status[event.name] = event.status
            if self.steps and self._due(event):
                status = self._status.get(event.name)
                self._line("     ", f"{event.name}: {counted(event)}" + (f" · {status}" if status else ""))
        elif event.kind == "done":
            self._shown.pop(event.name, None)
            self._line("done ", f"{event.name} ({event.seconds:.1f} s)")
        else:
            self._line("     ", event.name)

    def _due(self, event: Event) -> bool:
        tenths = event.done * 10 // event.total if event.total else 0
        shown, last = self._shown.get(event.name, (0, self.clock()))
        now = self.clock()
        if tenths > shown or now - last >= self.every_s:
            self._shown[event.name] = (max(tenths, shown), now)
            return True
        return False

    def _line(self, word: str, text: str) -> None:
        print(f"[{datetime.now():%H:%M:%S}] {word} {text}", file=self.stream, flush=True)


def counted(event: Event) -> str:
    """'30/100 (30%)' with a known total, else the count."""
    if not event.total:
        return f"{event.done:,}"
    return f"{event.done:,}/{event.total:,} ({event.done / event.total:.0%})"


class LiveBar:
    """A live display on a terminal (rich): one bar per open stage (a pulse when its total is not known) with
    its status; finished stages and notes are printed above it; the bars vanish when the last stage ends."""

    def __init__(self, console: Console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.tasks: list[tuple[str, object]] = []  # the open stages, innermost last

    def __call__(self, event: Event) -> None:
        from rich.markup import escape

        console = self.bars.console
        if event.kind == "start":
            if not self.tasks:
                self.bars.start()
            self.tasks.append((event.name, self.bars.add_task(escape(event.name), total=event.total, status="")))
        elif event.kind == "advance" and (task := self._task(event.name)) is not None:
            status: dict = {} if event.status is None else {"status": escape(event.status)}
            self.bars.update(task, completed=event.done, total=event.total, **status)
        elif event.kind == "done" and (task := self._task(event.name)) is not None:
            self.tasks = [(name, t) for name, t in self.tasks if t != task]
            self.bars.remove_task(task)
            console.print(f"[green]done[/green] {escape(event.name)} ({event.seconds:.1f} s)", highlight=False)
            if not self.tasks:
                self.bars.stop()
        elif event.kind == "note":
            console.print(f"  {escape(event.name)}", highlight=False, soft_wrap=True)

    def _task(self, name: str):
        """The innermost open stage of that name."""
        return next((task for stage, task in reversed(self.tasks) if stage == name), None)


def for_console(console: Console, every_s: float = 60.0, steps: bool = True) -> Announce:
    """A live bar when `console` is a terminal and steps are shown, timestamped lines (to its file) otherwise."""
    return LiveBar(console) if console.is_terminal and steps else PlainLines(console.file, every_s, steps=steps)
