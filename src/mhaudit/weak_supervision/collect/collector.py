"""The Bluesky collection loop: connect, stream, filter, commit in batches, reconnect, stop.

Durability rule (with `PostStore.commit_batch`): a batch of kept posts is committed together with the cursor
of the LAST EVENT PROCESSED before the commit (matching or not), in one transaction. So a saved cursor never
runs ahead of a post that has not been committed; a crash loses at most the uncommitted batch, and a restart
subscribes from the saved cursor, receives those events again and stores them (replayed posts that were
already stored are ignored by the store's primary key): no gap, no duplicate.

Resume point: Jetstream's cursor is a time (`time_us`) and replay exactly at the boundary is not guaranteed
gapless, so every Jetstream (re)connect subscribes `rewind_s` (default 5 s) before the last processed cursor,
as Jetstream's documentation advises; the overlap comes again and adds no duplicate (primary key), and the
in-memory and saved cursors never move back. The firehose's `seq` is exact but only valid on the relay that
issued it, so its cursor is saved per relay host (`cursor_stream`): a run against another relay starts at
its live tip and says so (`resume_note`).

Retry policy (`RetryPolicy`): after a failed connect, a dropped connection or a relay error frame the pending
batch is committed, then the collector waits `min(max_s, base_s * 2**(n-1))`, jittered to between half and all
of it, and reconnects from the last processed cursor; `n` counts consecutive failures and is reset only by a
connection that moved the cursor forward (at least one valid event past the point it resumed from; malformed
frames, error or info frames and a replayed overlap do not count). After `max_failures` consecutive failures
it stops with `RelayUnreachable` (an InputError: one sentence, exit 2), everything processed before that
already committed.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect.jetstream import (
    JETSTREAM,
    Event,
    MalformedFrame,
    RelayError,
    Wire,
    check_relay_url,
    cursor_stream,
    relay_host,
)
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon

__all__ = ["CollectOptions", "CollectStats", "Collector", "PostFilter", "RelayUnreachable", "RetryPolicy",
           "parse_duration"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_FRAME_BYTES = 4 * 2**20  # a post record is tiny; firehose commits with many blocks stay far below this


def parse_duration(text: str) -> float:
    """'30s', '10m', '2h', '14d' (or a plain number of seconds) -> seconds."""
    raw = text.strip().lower()
    unit = raw[-1:] if raw[-1:] in _UNITS else "s"
    number = raw[:-1] if raw[-1:] in _UNITS else raw
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise InputError(f"the duration {text!r} is not a number followed by s, m, h or d (e.g. 14d)") from None
    if not seconds > 0 or seconds == float("inf"):
        raise InputError(f"the duration {text!r} must be positive")
    return seconds


class RelayUnreachable(InputError):
    """The relay could not be reached (or kept dropping) for `max_failures` consecutive attempts."""


@dataclass(frozen=True)
class RetryPolicy:
    max_failures: int = 10
    base_s: float = 1.0
    max_s: float = 60.0

    def delay(self, failure: int, rng: random.Random) -> float:
        """Wait before reconnect number `failure` (1-based): exponential, capped, jittered to [d/2, d]."""
        ceiling = min(self.max_s, self.base_s * 2 ** (failure - 1))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)


@dataclass
class CollectOptions:
    langs: Sequence[str] = ("en",)       # primary language subtags to keep; empty = every language
    replies: bool = True
    batch_size: int = 500                # commit when this many posts are pending ...
    flush_every_s: float = 1.0           # ... or this long after the last commit
    duration_s: float | None = None
    max_posts: int | None = None         # stop once this many NEW posts are stored in this run
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    connect_timeout_s: float = 10.0
    rewind_s: float = 5.0                # Jetstream: (re)subscribe this long before the last processed time_us


@dataclass
class CollectStats:
    events: int = 0           # frames received
    malformed: int = 0        # frames counted and skipped
    posts: int = 0            # post creates among them
    matched: int = 0          # posts that passed language, reply and lexicon filters
    stored: int = 0           # new rows in the store
    duplicates: int = 0       # matched posts the store already had (replays after a resume)
    connections: int = 0
    failures: int = 0         # failed connects, dropped connections and relay error frames
    cursor: int | None = None  # the highest cursor processed (never moves back on a replayed overlap)
    elapsed_s: float = 0.0
    stop_reason: str = ""

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "events_per_s": self.events_per_s}


class PostFilter:
    """Keeps posts in the wanted languages (by the record's `langs`), replies by option, that match a lexicon;
    adds the matched `terms` and `categories` (first occurrence order, no repeats)."""

    def __init__(self, lexicons: Sequence[Lexicon], *, langs: Iterable[str] = ("en",), replies: bool = True):
        if not lexicons:
            raise InputError("name at least one lexicon to filter the stream with")
        self.lexicons = tuple(lexicons)
        self.langs = frozenset(lang.strip().lower() for lang in langs if lang.strip())
        self.replies = replies

    def language_ok(self, langs: Iterable[str]) -> bool:
        # 'en-US', 'en-GB' count as 'en': compare primary subtags.
        return not self.langs or any(lang.split("-", 1)[0].lower() in self.langs for lang in langs)

    def __call__(self, post: dict) -> dict | None:
        if not self.language_ok(post["langs"]) or (post["reply"] and not self.replies):
            return None
        terms: dict[str, None] = {}
        categories: dict[str, None] = {}
        for lexicon in self.lexicons:
            for match in lexicon.match(post["text"]):
                terms[match.term] = None
                categories[match.category] = None
        if not terms:
            return None
        return {**post, "terms": list(terms), "categories": list(categories)}


def _connection_errors() -> tuple[tuple[type[BaseException], ...], type[BaseException]]:
    """(errors that mean "this connection failed or is gone", the error that means "the URL is wrong")."""
    from websockets.exceptions import InvalidURI, WebSocketException

    # OSError covers refused connects, DNS failures, resets, TLS errors and timeouts; WebSocketException covers
    # rejected handshakes (HTTP 4xx/5xx) and closed connections. InvalidURI is caught first: a user mistake.
    return (OSError, WebSocketException, RelayError), InvalidURI


class Collector:
    """Streams one wire into a PostStore. `run()` blocks until the duration, max_posts, `stop()` or give-up."""

    def __init__(self, store: PostStore, post_filter: PostFilter, *, wire: Wire = JETSTREAM,
                 relay: str | None = None, options: CollectOptions | None = None,
                 progress: Callable[[CollectStats], None] | None = None, progress_every_s: float = 0.5,
                 seed: int | None = None):
        self.store, self.filter, self.wire = store, post_filter, wire
        self.relay = relay or wire.default_relay
        check_relay_url(self.relay)
        self.options = options or CollectOptions()
        if self.options.batch_size < 1:
            raise InputError(f"the batch size must be at least 1, not {self.options.batch_size}")
        if self.options.max_posts is not None and self.options.max_posts < 1:
            raise InputError(f"--max-posts must be at least 1, not {self.options.max_posts}")
        rewind = self.options.rewind_s
        if not (isinstance(rewind, (int, float)) and math.isfinite(rewind) and rewind >= 0):
            raise InputError(f"the rewind must be a number of seconds, 0 or more, not {rewind!r}")
        self.progress, self.progress_every_s = progress, progress_every_s
        self.stream = cursor_stream(wire, self.relay)  # the store's cursor key: 'jetstream', 'firehose:<host>'
        saved, self.resume_note = store.cursor(self.stream), ""
        if saved is None and wire.relay_specific:
            saved, self.resume_note = _other_relays_cursor(store, wire, self.relay)
        self.stats = CollectStats(cursor=saved)
        self._advanced = 0  # events that moved the cursor forward (what resets the failure count)
        self._pending: list[dict] = []
        self._committed_cursor = self.stats.cursor
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._started = self._last_flush = self._last_progress = time.monotonic()

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
        if event.cursor is not None and (stats.cursor is None or event.cursor > stats.cursor):
            stats.cursor = event.cursor  # a replayed (older) event never moves the cursor back
            self._advanced += 1
        for post in event.posts:
            stats.posts += 1
            kept = self.filter(post)
            if kept is not None:
                self._pending.append(kept)
                stats.matched += 1
        pending = len(self._pending)
        if pending and (pending >= self.options.batch_size or (
                self.options.max_posts is not None and stats.stored + pending >= self.options.max_posts)):
            self.flush()

    def flush(self) -> None:
        """Commit the pending posts with the cursor of the last processed event (one transaction)."""
        self._last_flush = time.monotonic()
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
            now = time.monotonic()
            if now - self._last_flush >= flush_every:
                self.flush()
            if self.progress is not None and now - self._last_progress >= progress_every:
                self._last_progress = now
                self.stats.elapsed_s = now - self._started
                self.progress(self.stats)
            reason = self._stop_reason(now)
            if reason:
                return reason
        return ""

    # -- the connection loop ---------------------------------------------------------------------------------
    def resume_cursor(self) -> int | None:
        """The cursor to subscribe from: the last processed one, minus `rewind_s` on a time-based wire."""
        cursor = self.stats.cursor
        if cursor is None or not self.wire.time_cursor:
            return cursor
        return max(0, cursor - round(self.options.rewind_s * 1_000_000))

    def _frames(self, ws) -> Iterator[str | bytes | None]:
        tick = min(0.25, self.options.flush_every_s)
        while True:
            try:
                yield ws.recv(timeout=tick)
            except TimeoutError:
                yield None

    def _connect(self, url: str):
        from websockets.sync.client import connect

        # No compression negotiation: Jetstream's own zstd mode is not requested, frames arrive as plain JSON.
        return connect(url, open_timeout=self.options.connect_timeout_s, close_timeout=1,
                       max_size=MAX_FRAME_BYTES, compression=None)

    def _wait(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._stop_reason(time.monotonic()) and time.monotonic() < deadline:
            self._stop.wait(min(0.1, max(0.0, deadline - time.monotonic())))

    def run(self) -> CollectStats:
        """Collect until a stop condition. Raises RelayUnreachable after too many consecutive failures and
        InputError when the store cannot be written; what was committed before stays committed."""
        transient, user_error = _connection_errors()
        policy = self.options.retry
        consecutive, reason, last_error = 0, "", ""
        self._started = self._last_flush = self._last_progress = time.monotonic()
        try:
            while not (reason := self._stop_reason(time.monotonic())):
                url = self.wire.url(self.relay, self.resume_cursor())
                advanced = self._advanced
                try:
                    with self._connect(url) as ws:
                        self.stats.connections += 1
                        reason = self.consume(self._frames(ws))
                    if reason:
                        break
                except user_error:
                    raise InputError(f"the relay URL {self.relay!r} is not a valid websocket URL") from None
                except transient as exc:
                    last_error = _describe(exc)
                self.flush()  # what arrived before the drop is committed before we wait
                self.stats.failures += 1
                # Only progress restarts the count: a relay that answers every connect with an error frame,
                # malformed frames or the same replayed overlap is given up on after max_failures.
                consecutive = 1 if self._advanced > advanced else consecutive + 1
                if consecutive >= policy.max_failures:
                    raise RelayUnreachable(
                        f"cannot reach the relay {self.relay} ({consecutive} failed attempts in a row, last: "
                        f"{last_error or 'connection closed'}); the {self.stats.stored} posts stored in this "
                        "run are committed, and a rerun resumes from the saved cursor")
                self._wait(policy.delay(consecutive, self._rng))
        finally:
            self.stats.elapsed_s = time.monotonic() - self._started
            self.stats.stop_reason = reason or "error"
        self.flush()
        return self.stats


def _other_relays_cursor(store: PostStore, wire: Wire, relay: str) -> tuple[int | None, str]:
    """No cursor is saved for this relay: (the cursor to resume from, a note for the user).

    A cursor saved by an older mhaudit under the bare wire name (no host) is adopted when every run of this
    wire recorded in the store used this relay's host; otherwise the run starts at the live tip, with a note
    naming the relays the store's cursors belong to."""
    others = {k: v for k, v in store.cursors().items() if k == wire.name or k.startswith(wire.name + ":")}
    if not others:
        return None, ""
    host = relay_host(relay)
    legacy = others.get(wire.name)
    if legacy is not None and len(others) == 1 and store.run_relays(wire.name) == {host}:
        return legacy, ""
    owners = sorted(k.split(":", 1)[1] if ":" in k else "an unrecorded relay" for k in others)
    return None, (f"starting at the live tip of {host}: the store's saved {wire.name} cursor belongs to "
                  f"{', '.join(owners)}, and a {wire.name} seq is only valid on the relay that issued it "
                  "(posts sent while no collector ran are not fetched)")


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."
