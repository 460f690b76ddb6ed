"""One progress interface for everything long: stages are timed, counted and announced; library code never prints.

`Progress()` alone is silent and only records stage timings (they go into an audit result's provenance); only
the CLI renders the `Event`s its `announce` callback is told (docs/architecture.md says who takes a Progress).
Nesting: leaving a stage ends every stage opened inside it first; `step` ends the stage the last `step` opened
(if it is the innermost) and opens the next.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple


class Event(NamedTuple):
    """What `announce` is told: a stage starts, advances or is done, or a note within it."""

    kind: str  # "start" | "advance" | "note" | "done"
    name: str  # the stage's name (a note's text)
    done: int = 0  # steps done so far in the stage
    total: int | None = None  # the stage's steps, when known
    seconds: float | None = None  # how long the stage took ("done")
    status: str | None = None  # a short state of the stage ("advance"; None: unchanged), e.g. "loss 0.41"


Announce = Callable[[Event], None]


@dataclass(eq=False)  # compared by identity: two stages may share a name
class _Open:
    name: str
    start: float
    total: int | None
    by_step: bool
    done: int = 0


class Progress:
    """Times named stages, counts their steps and tells `announce` (nothing when it is None)."""

    def __init__(self, announce: Announce | None = None):
        self.announce = announce
        self.seconds: dict[str, float] = {}  # each stage's seconds (summed when a name repeats)
        self._open: list[_Open] = []

    @contextmanager
    def stage(self, name: str, total: int | None = None) -> Iterator[None]:
        """Time the `with` block as stage `name` of `total` steps (None: not known)."""
        opened = self._start(name, total, by_step=False)
        try:
            yield
        finally:
            while opened in self._open:  # and every stage opened inside it
                self._finish(self._open.pop())

    def step(self, name: str, total: int | None = None) -> None:
        """End the stage the last step() opened (if any) and start `name`: for code that runs stage after stage."""
        self.close()
        self._start(name, total, by_step=True)

    def close(self) -> None:
        """End the stage step() opened, if it is the innermost."""
        if self._open and self._open[-1].by_step:
            self._finish(self._open.pop())

    def advance(self, n: int = 1, status: str | None = None) -> None:
        """Count `n` more steps done in the innermost open stage (`status`: its state in a few words)."""
        if not self._open:
            raise RuntimeError("Progress.advance() outside a stage")
        current = self._open[-1]
        current.done += n
        self._tell(Event("advance", current.name, current.done, current.total, status=status))

    def note(self, message: str) -> None:
        """A line inside a stage (e.g. "fold 3 of 10: trained in 2.1 s"): announced, not timed."""
        self._tell(Event("note", message))

    def _start(self, name: str, total: int | None, *, by_step: bool) -> _Open:
        if total is not None and total < 0:
            raise ValueError(f"a stage's total must be 0 or more, not {total}")
        opened = _Open(name, time.perf_counter(), total, by_step)
        self._open.append(opened)
        self._tell(Event("start", name, total=total))
        return opened

    def _finish(self, stage: _Open) -> None:
        took = time.perf_counter() - stage.start
        self.seconds[stage.name] = self.seconds.get(stage.name, 0.0) + took
        self._tell(Event("done", stage.name, stage.done, stage.total, seconds=took))

    def _tell(self, event: Event) -> None:
        if self.announce is not None:
            self.announce(event)


def ensure(progress: Progress | None) -> Progress:
    return progress if progress is not None else Progress()
