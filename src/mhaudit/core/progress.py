"""One progress interface for every audit: stages are timed and announced to a callback; library code never prints.

An audit takes `progress: Progress | None`. `Progress()` is silent and only records stage timings (they go into
the result's provenance). The CLI passes `Progress(for_stream(sys.stderr))`: a live rich line on a terminal,
plain timestamped lines otherwise, so a redirected log of a long run still says where it is.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TextIO

Announce = Callable[[str, str, float | None], None]  # (event: "start" | "done", stage, seconds or None)


class Progress:
    """Times named stages and tells `announce` when each starts and ends (nothing when it is None)."""

    def __init__(self, announce: Announce | None = None):
        self.announce = announce
        self.seconds: dict[str, float] = {}
        self._open: tuple[str, float] | None = None  # the stage started by step(), if any

    def step(self, name: str) -> None:
        """End the stage step() opened last (if any) and start `name`: for code that runs stage after stage."""
        self.close()
        if self.announce:
            self.announce("start", name, None)
        self._open = (name, time.perf_counter())

    def close(self) -> None:
        if self._open is None:
            return
        name, start = self._open
        self._open = None
        self._record(name, time.perf_counter() - start)

    def _record(self, name: str, took: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + took
        if self.announce:
            self.announce("done", name, took)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.announce:
            self.announce("start", name, None)
        start = time.perf_counter()
        try:
            yield
        finally:
            self._record(name, time.perf_counter() - start)

    def note(self, message: str) -> None:
        """A line inside a stage (e.g. "fold 3 of 10"): announced, not timed."""
        if self.announce:
            self.announce("note", message, None)


def ensure(progress: Progress | None) -> Progress:
    return progress if progress is not None else Progress()


def plain_lines(stream: TextIO) -> Announce:
    """Timestamped lines, one per event: for logs and pipes."""

    def announce(event: str, stage: str, seconds: float | None) -> None:
        stamp = datetime.now().strftime("%H:%M:%S")
        tail = f" ({seconds:.1f} s)" if seconds is not None else ""
        word = {"start": "start", "done": "done ", "note": "     "}[event]
        print(f"[{stamp}] {word} {stage}{tail}", file=stream, flush=True)

    return announce


def rich_status(stream: TextIO) -> Announce:
    """A live status line on a terminal (rich), with each finished stage kept above it."""
    from rich.console import Console

    console = Console(file=stream)
    status = console.status("")

    def announce(event: str, stage: str, seconds: float | None) -> None:
        if event == "start":
            status.update(f"{stage} ...")
            status.start()
        elif event == "done":
            status.stop()
            console.print(f"[green]done[/green] {stage} ({seconds:.1f} s)")
        else:
            status.update(stage)

    return announce


def for_stream(stream: TextIO = sys.stderr) -> Announce:
    """rich on a terminal, plain timestamped lines otherwise."""
    return rich_status(stream) if stream.isatty() else plain_lines(stream)
