"""A replay relay: a table of posts served as Jetstream's `/subscribe` wire on 127.0.0.1 (docs/monitor.md).

For trying the collector and the monitor on a published data set as if it were the live stream. The posts go
out in their createdAt order, and each record keeps its own createdAt, which is what the monitor windows by.

Ids come from the posts themselves, never from their place in the file: a post's rkey, cid and synthetic author
DID (`did:plc:replay…`, one of `n_authors`) are a digest of its text, its createdAt and how many identical posts
came before it in the file. So the same file replayed again sends the same URIs (the post store keeps each once),
a different file sends different ones, and a post that two files share (a later export that repeats earlier days)
is one post.

Stream time is compressed but never goes back: the first post's `time_us` is the wall clock when the relay is
made (never before START_US), the next ones `step_us` apart, and a post goes out only once the wall clock has
reached its `time_us`, as on a live relay (earlier ones at once, as a backlog). So any cursor a collector saved
from an earlier replay lies before the next replay's first post, and a collector resuming from it (its saved
`time_us` less its rewind) receives the next file whole. A client's `?cursor=` (a time_us, inclusive, as
Jetstream's) replays from there; a cursor after the relay's last post is no position in this replay (it comes
from another stream), so it gets the whole file too rather than nothing. Once every post is sent the relay
idles as a live tail would. Only loopback addresses are served.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd

from mhaudit.core.errors import InputError

__all__ = ["ReplayRelay", "replay_events", "START_US"]

START_US = 1_730_000_000_000_000  # 2024-10-27 in microseconds: a plausible Jetstream time_us
PATH = "/subscribe"


def _now_us() -> int:
    return time.time_ns() // 1000


def _post_keys(texts: pd.Series, times: pd.Series) -> list[str]:
    """A hex digest per post from its text, its createdAt (as UTC microseconds, however the file spells it) and
    the number of identical posts before it: what a post's ids are made of."""
    micros = times.astype("int64") // 1000  # ns -> us (tz-aware datetimes)
    frame = pd.DataFrame({"text": texts.to_numpy(), "us": micros.to_numpy()})
    repeat = frame.groupby(["text", "us"], sort=False).cumcount()
    return [
        hashlib.sha256(f"{body}\x1f{us}\x1f{k}".encode()).hexdigest()
        for body, us, k in zip(frame["text"], frame["us"], repeat)
    ]


def replay_events(
    frame: pd.DataFrame,
    *,
    text: str = "text",
    created_at: str = "createdAt",
    step_us: int = 1000,
    n_authors: int = 997,
    lang: str = "en",
    start_us: int | None = None,
) -> list[tuple[int, str]]:
    """(time_us, Jetstream JSON) per post, in createdAt order; `start_us`: the first post's time_us (default: the
    wall clock now, never before START_US)."""
    for column in (text, created_at):
        if column not in frame.columns:
            raise InputError(f"the posts have no '{column}' column (columns: {', '.join(map(str, frame.columns))})")
    times = pd.to_datetime(frame[created_at], utc=True, errors="coerce", format="ISO8601")
    keep = times.notna() & frame[text].notna() & (frame[text].astype(str).str.strip() != "")
    rows = frame[keep].assign(_t=times[keep]).sort_values("_t", kind="stable")
    bodies = rows[text].astype(str)
    first = max(START_US, _now_us()) if start_us is None else start_us
    events = []
    for i, (body, when, key) in enumerate(zip(bodies, rows[created_at].astype(str), _post_keys(bodies, rows["_t"]))):
        time_us = first + step_us * i
        record = {"$type": "app.bsky.feed.post", "text": body, "createdAt": when, "langs": [lang]}
        commit = {
            "rev": "replay",
            "operation": "create",
            "collection": "app.bsky.feed.post",
            "rkey": f"r{key[:15]}",
            "record": record,
            "cid": f"bafyreplay{key[15:39]}",
        }
        did = f"did:plc:replay{int(key[39:47], 16) % n_authors:04d}"
        events.append((time_us, json.dumps({"did": did, "time_us": time_us, "kind": "commit", "commit": commit})))
    return events


@dataclass
class ReplayRelay:
    """Serves `events` (from `replay_events`: time_us ascending) on ws://127.0.0.1:PORT/subscribe in a background
    thread (`start`, `stop`, a context manager); `wait` blocks until it is stopped."""

    events: list[tuple[int, str]]
    port: int = 0
    host: str = "127.0.0.1"

    def __post_init__(self):
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            raise InputError(f"the replay relay serves loopback addresses only, not {self.host}")
        self._stopped = threading.Event()
        self._server = self._thread = None
        self._times = [time_us for time_us, _ in self.events]

    @classmethod
    def from_file(cls, path: str | Path, *, since: str | None = None, port: int = 0, **columns) -> ReplayRelay:
        from mhaudit.tables.io import read_table

        frame = read_table(Path(path), what="the posts to replay")
        if since is not None:
            column = columns.get("created_at", "createdAt")
            if column not in frame.columns:
                raise InputError(f"the posts have no '{column}' column to select --since by", path=path)
            try:
                start = pd.Timestamp(since, tz="UTC")
            except ValueError:
                raise InputError(f"--since '{since}' is not a date (e.g. 2024-09-01)") from None
            frame = frame[pd.to_datetime(frame[column], utc=True, errors="coerce", format="ISO8601") >= start]
        events = replay_events(frame, **columns)
        if not events:
            raise InputError("no post with a text and a readable createdAt to replay", path=path)
        return cls(events, port=port)

    def start(self) -> ReplayRelay:
        from websockets.sync.server import serve

        self._server = serve(
            self._handle, self.host, self.port, process_request=self._check_path, compression=None, max_size=None
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="replay-relay", daemon=True)
        self._thread.start()
        return self

    def wait(self) -> None:
        assert self._thread is not None, "start() first"
        self._thread.join()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() first"
        return f"ws://{self.host}:{self._server.socket.getsockname()[1]}{PATH}"

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)

    def __enter__(self) -> ReplayRelay:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def first_sent(self, cursor: int | None) -> int:
        """The index of the first post a client with this `?cursor=` gets: the first at or after the cursor; the
        first of all without a cursor, or with one after the last post (another stream's, see the docstring)."""
        if cursor is None:
            return 0
        at = bisect.bisect_left(self._times, cursor)
        return 0 if at == len(self._times) else at

    def _check_path(self, connection, request):
        from http import HTTPStatus

        if urlsplit(request.path).path != PATH:
            return connection.respond(HTTPStatus.NOT_FOUND, f"this relay serves {PATH} only\n")
        return None

    def _handle(self, ws) -> None:
        from websockets.exceptions import ConnectionClosed

        query = parse_qs(urlsplit(ws.request.path).query)
        cursor = int(query["cursor"][0]) if "cursor" in query else None
        try:
            for time_us, payload in self.events[self.first_sent(cursor) :]:
                due_s = (time_us - _now_us()) / 1e6  # as a live relay: no post before its time_us
                if due_s > 0 and self._stopped.wait(due_s):
                    return
                ws.send(payload)
            while not self._stopped.wait(0.2):  # a live tail: nothing new arrives
                ws.ping()
        except ConnectionClosed:
            return
