"""A replay relay: a table of posts served as Jetstream's `/subscribe` wire on 127.0.0.1 (docs/monitor.md).

For trying the collector and the monitor on a published data set as if it were the live stream. The posts go
out in their createdAt order; the stream's `time_us` is compressed (consecutive posts `step_us` apart from a
fixed start) while each record keeps its own createdAt, which is what the monitor windows by. Each post gets
a synthetic author DID (`did:plc:replay…`, a fixed number of authors in turn) and an rkey from its row. A
client's `?cursor=` (a time_us, inclusive, as Jetstream's) replays from there; once every post is sent the
relay idles as a live tail would. Only loopback addresses are served.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pandas as pd

from mhaudit.core.errors import InputError

__all__ = ["ReplayRelay", "replay_events", "START_US"]

START_US = 1_730_000_000_000_000  # 2024-10-27 in microseconds: a plausible Jetstream time_us
PATH = "/subscribe"


def replay_events(
    frame: pd.DataFrame,
    *,
    text: str = "text",
    created_at: str = "createdAt",
    step_us: int = 1000,
    n_authors: int = 997,
    lang: str = "en",
) -> list[tuple[int, str]]:
    """(time_us, Jetstream JSON) per post, in createdAt order."""
    for column in (text, created_at):
        if column not in frame.columns:
            raise InputError(f"the posts have no '{column}' column (columns: {', '.join(map(str, frame.columns))})")
    times = pd.to_datetime(frame[created_at], utc=True, errors="coerce", format="ISO8601")
    keep = times.notna() & frame[text].notna() & (frame[text].astype(str).str.strip() != "")
    rows = frame[keep].assign(_t=times[keep]).sort_values("_t", kind="stable")
    events = []
    for i, (body, when) in enumerate(zip(rows[text].astype(str), rows[created_at].astype(str))):
        time_us = START_US + step_us * i
        record = {"$type": "app.bsky.feed.post", "text": body, "createdAt": when, "langs": [lang]}
        events.append(
            (
                time_us,
                json.dumps(
                    {
                        "did": f"did:plc:replay{i % n_authors:04d}",
                        "time_us": time_us,
                        "kind": "commit",
                        "commit": {
                            "rev": "replay",
                            "operation": "create",
                            "collection": "app.bsky.feed.post",
                            "rkey": f"r{i:07d}",
                            "record": record,
                            "cid": f"bafyreplay{i:07d}",
                        },
                    }
                ),
            )
        )
    return events


@dataclass
class ReplayRelay:
    """Serves `events` on ws://127.0.0.1:PORT/subscribe in a background thread (`start`, `stop`, a context
    manager); `wait` blocks until it is stopped."""

    events: list[tuple[int, str]]
    port: int = 0
    host: str = "127.0.0.1"

    def __post_init__(self):
        if self.host not in ("127.0.0.1", "localhost", "::1"):
            raise InputError(f"the replay relay serves loopback addresses only, not {self.host}")
        self._stopped = threading.Event()
        self._server = self._thread = None

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
            for time_us, payload in self.events:
                if cursor is None or time_us >= cursor:
                    ws.send(payload)
            while not self._stopped.wait(0.2):  # a live tail: nothing new arrives
                ws.ping()
        except ConnectionClosed:
            return
