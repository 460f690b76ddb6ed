"""The Bluesky collection loop: connect, stream, filter, commit in batches, reconnect, stop.

Durability rule (with `PostStore.commit_batch`): a batch of kept posts is committed together with the cursor
of the LAST EVENT PROCESSED before the commit (matching or not), in one transaction, so a saved cursor never
runs ahead of a post that has not been committed: a restart replays what a crash lost, with no gap and no
duplicate (the store's primary key). The wire (`jetstream.choose_wires`, `settle_wire`), where each (re)connect
resumes (the subscribe wire rewinds `rewind_s`, halved after a connection that brought only overlap) and the
retry policy (`RetryPolicy`, in `collect_options` with the other options and imported from here as well;
`RelayUnreachable` after `max_failures` failures in a row without progress):
docs/collect.md, "Wires", "Durability and resume" and "Retry policy".
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.weak_supervision.collect.collect_options import (
    CollectOptions,
    RetryPolicy,
    check_collect_options,
    parse_duration,
)
from mhaudit.weak_supervision.collect.jetstream import (
    Event,
    MalformedFrame,
    RelayError,
    Wire,
    choose_wires,
    cursor_stream,
    describe_failure,
    handshake_status,
    resume_point,
)
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon

__all__ = [
    "CollectOptions",
    "CollectStats",
    "Collector",
    "PostFilter",
    "RelayUnreachable",
    "RetryPolicy",
    "parse_duration",
]

MAX_FRAME_BYTES = 4 * 2**20  # a post record is tiny; firehose commits with many blocks stay far below this
MIN_REWIND_S = 0.1  # a halved rewind below this becomes 0 (resume at the exact cursor)
FALLBACK_STATUSES = (400, 404)  # how a relay refuses a path or subprotocol it does not serve


class RelayUnreachable(InputError):
    """The relay could not be reached (or kept dropping) for `max_failures` consecutive attempts."""


@dataclass
class CollectStats:
    events: int = 0  # frames received
    malformed: int = 0  # frames counted and skipped
    posts: int = 0  # post creates among them
    matched: int = 0  # posts that passed language, reply and lexicon filters
    stored: int = 0  # new rows in the store
    duplicates: int = 0  # matched posts the store already had (replays after a resume)
    connections: int = 0
    failures: int = 0  # failed connects, dropped connections and relay error frames
    cursor: int | None = None  # the highest cursor processed (never moves back on a replayed overlap)
    elapsed_s: float = 0.0
    stop_reason: str = ""

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def status(self) -> str:  # for a progress display
        return (
            f"{self.events:,} events ({self.events_per_s:,.0f}/s) · posts {self.posts:,} · matched "
            f"{self.matched:,} · stored {self.stored:,} · malformed {self.malformed:,} · reconnects "
            f"{max(0, self.connections - 1)} · {self.elapsed_s:,.0f} s"
        )


class PostFilter:
    """Keeps posts in the wanted languages (by the record's `langs`), replies by option, that match a lexicon;
    adds the matched `terms` and `categories` (first occurrence order, no repeats)."""

    def __init__(self, lexicons: Sequence[Lexicon], *, langs: Iterable[str] = ("en",), replies: bool = True):
        if not lexicons:
            raise InputError("name at least one lexicon to filter the stream with")
        self.lexicons = tuple(lexicons)
        self.langs = frozenset(lang.strip().lower() for lang in langs if lang.strip())
        self.replies = replies

    def __call__(self, post: dict) -> dict | None:
        # 'en-US', 'en-GB' count as 'en': compare primary subtags.
        language_ok = not self.langs or any(lang.split("-", 1)[0].lower() in self.langs for lang in post["langs"])
        if not language_ok or (post["reply"] and not self.replies):
            return None
        matches = [match for lexicon in self.lexicons for match in lexicon.match(post["text"])]
        if not matches:
            return None
        return {
            **post,
            "terms": list(dict.fromkeys(m.term for m in matches)),
            "categories": list(dict.fromkeys(m.category for m in matches)),
        }


def _connection_errors() -> tuple[tuple[type[BaseException], ...], type[BaseException]]:
    """(errors that mean "this connection failed or is gone", the error that means "the URL is wrong")."""
    from websockets.exceptions import InvalidURI, WebSocketException

    # OSError covers refused connects, DNS failures, resets, TLS errors and timeouts; WebSocketException covers
    # rejected handshakes (HTTP 4xx/5xx) and closed connections. InvalidURI is caught first: a user mistake.
    return (OSError, WebSocketException, RelayError), InvalidURI


class Collector:
    """Streams one wire into a PostStore. `run()` blocks until the duration, max_posts, `stop()` or give-up.

    `wire`: a Wire, a name or 'auto' (`jetstream.choose_wires`); `self.wire` is the one in use, `wire_note` says
    how auto chose it. `clock`/`sleep`: the real ones by default; a simulation passes its own (no real waits).
    `run()` advances `progress` (in the caller's stage) by the posts stored, every `progress_every_s`, with `status()`.
    """

    def __init__(
        self,
        store: PostStore,
        post_filter: PostFilter,
        *,
        wire: Wire | str = "auto",
        relay: str | None = None,
        options: CollectOptions | None = None,
        progress: Progress | None = None,
        progress_every_s: float = 0.5,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ):
        wires = choose_wires(relay, wire)
        self.store, self.filter = store, post_filter
        self.relay = relay or wires[0].default_relay
        self.options = options or CollectOptions()
        check_collect_options(self.options)
        self.progress, self.progress_every_s = progress, progress_every_s
        self.stats = CollectStats()
        # auto on a URL that names no wire: the second wire to try, and the first one's refusal once it was tried
        self._fallback, self._refused = (wires[1] if len(wires) > 1 else None), ""
        self.wire_note = f"auto: {wires[0].name}, {wires[1].name} if refused" if self._fallback else ""
        self._use_wire(wires[0])
        self._rewind_s = self.options.rewind_s  # shortened after a connection that brought only overlap
        self._advanced = 0  # events that moved the cursor forward (what resets the failure count)
        self._replayed = 0  # valid events at or before the cursor (the rewound overlap, inclusive repeats)
        self._pending: list[dict] = []
        self._stop = threading.Event()
        self._clock, self._sleep = clock, sleep or self._stop.wait
        self._rng = random.Random(seed)
        self._started = self._last_flush = self._last_progress = clock()
        self._told = 0  # posts stored when `progress` was last told

    def _use_wire(self, wire: Wire) -> None:
        """Adopt `wire` and its saved cursor (at construction, and on an auto fallback before any event)."""
        self.wire, self.stream = wire, cursor_stream(wire, self.relay)
        saved, self._start_time, self.resume_note = resume_point(self.store, wire, self.relay)
        self.stats.cursor = self._committed_cursor = saved

    # -- control ---------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask `run()` to commit what it has and return (safe from a signal handler or another thread)."""
        self._stop.set()

    def _stop_reason(self, now: float) -> str:
        opts = self.options
        if self._stop.is_set():
            return "stopped"
        if opts.max_posts is not None and self.stats.stored >= opts.max_posts:
            return "max_posts"
        if opts.duration_s is not None and now - self._started >= opts.duration_s:
            return "duration"
        return ""

    # -- the pipeline (also fed directly by tests and the benchmark) ------------------------------------------
    def handle(self, frame: str | bytes) -> None:
        """Parse, filter and queue one frame; commit when a batch is full or max_posts is reached."""
        stats = self.stats
        stats.events += 1
        try:
            event: Event = self.wire.parse(frame)
        except MalformedFrame:
            stats.malformed += 1
            return
        if event.cursor is not None:
            if stats.cursor is None or event.cursor > stats.cursor:
                stats.cursor = event.cursor  # a replayed (older) event never moves the cursor back
                self._advanced += 1
            else:
                self._replayed += 1
        for post in event.posts:
            stats.posts += 1
            kept = self.filter(post)
            if kept is not None:
                self._pending.append(kept)
                stats.matched += 1
        pending = len(self._pending)
        if pending and (
            pending >= self.options.batch_size
            or (self.options.max_posts is not None and stats.stored + pending >= self.options.max_posts)
        ):
            self.flush()

    def flush(self) -> None:
        """Commit the pending posts with the cursor of the last processed event (one transaction)."""
        self._last_flush = self._clock()
        cursor = self.stats.cursor
        if cursor is None or (not self._pending and cursor == self._committed_cursor):
            return
        new = self.store.commit_batch(self._pending, cursor, stream=self.stream)
        self.stats.stored += new
        self.stats.duplicates += len(self._pending) - new
        self._pending.clear()
        self._committed_cursor = cursor

    def consume(self, frames: Iterable[str | bytes | None]) -> str:
        """Feed frames (None = no frame this tick) until a stop condition; returns its reason, or '' when the
        frames run out. Commits every `flush_every_s` even when idle, so the cursor keeps up."""
        flush_every, progress_every = self.options.flush_every_s, self.progress_every_s
        for frame in frames:
            if frame is not None:
                self.handle(frame)
            now = self._clock()
            if now - self._last_flush >= flush_every:
                self.flush()
            if self.progress is not None and now - self._last_progress >= progress_every:
                self._last_progress, self.stats.elapsed_s = now, now - self._started
                self.progress.advance(self.stats.stored - self._told, status=self.stats.status())
                self._told = self.stats.stored
            reason = self._stop_reason(now)
            if reason:
                return reason
        return ""

    # -- the connection loop ---------------------------------------------------------------------------------
    def resume_cursor(self) -> int | None:
        """The cursor to subscribe from: the last processed one (or a seeding time), minus the rewind if a time."""
        cursor, rewind_us = self.stats.cursor, round(self._rewind_s * 1_000_000)
        if cursor is None:
            return None if self._start_time is None else max(0, self._start_time - rewind_us)
        return max(0, cursor - rewind_us) if self.wire.time_cursor else cursor

    def _next_rewind(self, progressed: bool, replayed: bool) -> None:
        # Only overlap came before the drop: the relay drops faster than the rewind window refills, so the next
        # connect asks for less of it (halved, down to 0). Progress restores the full rewind for late events.
        if progressed:
            self._rewind_s = self.options.rewind_s
        elif replayed and self.wire.time_cursor:
            self._rewind_s = self._rewind_s / 2 if self._rewind_s / 2 >= MIN_REWIND_S else 0.0

    def _frames(self, ws) -> Iterator[str | bytes | None]:
        tick = min(0.25, self.options.flush_every_s)
        while True:
            try:
                yield ws.recv(timeout=tick)
            except TimeoutError:
                yield None

    def _connect(self, url: str):
        from websockets.sync.client import connect
        from websockets.typing import Subprotocol

        # No compression negotiation: neither Jetstream wire's zstd mode is requested, frames arrive as plain JSON.
        return connect(
            url,
            open_timeout=self.options.connect_timeout_s,
            close_timeout=1,
            max_size=MAX_FRAME_BYTES,
            compression=None,
            subprotocols=[Subprotocol(p) for p in self.wire.subprotocols] or None,
        )

    def _fall_back(self, exc: BaseException) -> bool:
        """Auto wire refused (400/404) before any event: switch to the other, once (True); both refused: give up."""
        status = handshake_status(exc)
        if status not in FALLBACK_STATUSES or not (self._fallback or self._refused):
            return False
        if self._fallback is None:
            raise RelayUnreachable(
                f"the relay {self.relay} refused both Jetstream wires ({self._refused}, "
                f"{self.wire.name}: HTTP {status}); check the URL, or name the wire with --wire"
            )
        self._refused = f"{self.wire.name}: HTTP {status}"
        self.wire_note = f"auto: the relay refused {self._refused}"
        self._use_wire(self._fallback)
        self._fallback = None
        return True

    def settle_wire(self) -> str:
        """Auto wire, URL naming none: handshakes (closed at once) to learn the relay's wire before `run()`, so a
        caller can name it; returns `wire_note`. If the relay is unreachable, `run()` falls back instead."""
        transient, user_error = _connection_errors()
        while self._fallback is not None or self._refused:  # until one wire is accepted (or both refused)
            try:
                with self._connect(self.wire.url(self.relay, self.resume_cursor())):
                    if not self._refused:
                        self.wire_note = f"auto: the relay accepted {self.wire.name}"
                    self._fallback, self._refused = None, ""
            except user_error:
                break  # run() reports it
            except transient as exc:
                if not self._fall_back(exc):
                    break
        return self.wire_note

    def _wait(self, seconds: float) -> None:
        deadline = self._clock() + seconds
        while not self._stop_reason(self._clock()) and self._clock() < deadline:
            self._sleep(min(0.1, max(0.0, deadline - self._clock())))

    def run(self) -> CollectStats:
        """Collect until a stop condition. Raises RelayUnreachable after too many consecutive failures and
        InputError when the store cannot be written; what was committed before stays committed."""
        transient, user_error = _connection_errors()
        policy = self.options.retry
        consecutive, reason, last_error = 0, "", ""
        self._started = self._last_flush = self._last_progress = self._clock()
        try:
            while not (reason := self._stop_reason(self._clock())):
                url = self.wire.url(self.relay, self.resume_cursor())
                advanced, replayed = self._advanced, self._replayed
                try:
                    with self._connect(url) as ws:
                        self._fallback, self._refused = None, ""  # settled: no switching once connected
                        self.stats.connections += 1
                        reason = self.consume(self._frames(ws))
                    if reason:
                        break
                except user_error:
                    raise InputError(f"the relay URL {self.relay!r} is not a valid websocket URL") from None
                except transient as exc:
                    if self._fall_back(exc):
                        continue
                    last_error = describe_failure(exc)
                self.flush()  # what arrived before the drop is committed before we wait
                self.stats.failures += 1
                # Only progress restarts the count: a relay that answers every connect with an error frame,
                # malformed frames or the same replayed overlap is given up on after max_failures.
                progressed = self._advanced > advanced
                consecutive = 1 if progressed else consecutive + 1
                self._next_rewind(progressed, self._replayed > replayed)
                if consecutive >= policy.max_failures:
                    raise RelayUnreachable(
                        f"cannot reach the relay {self.relay} ({consecutive} failed attempts in a row, last: "
                        f"{last_error or 'connection closed'}); the {self.stats.stored} posts stored in this "
                        "run are committed, and a rerun resumes from the saved cursor"
                    )
                self._wait(policy.delay(consecutive, self._rng))
        finally:
            self.stats.elapsed_s = self._clock() - self._started
            self.stats.stop_reason = reason or "error"
        self.flush()
        return self.stats
