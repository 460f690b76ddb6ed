"""A websocket relay on 127.0.0.1 for the collector's tests, speaking any of the collector's three wires.

It replays frames written in the tests, in the recorded wire formats: Jetstream's `/subscribe` JSON (`{"did",
"time_us", "kind", "commit": {...}}`), Jetstream's xrpc wire (`xrpc.v1.json`: `{"$type": "message", "payload":
{"$type": "network.bsky.jetstream.subscribeEvents#commit", "seq", ...}}`, as atproto's `JetstreamClient` reads
it) and subscribeRepos DAG-CBOR frames (header + body, records in a CAR). Like the real services it serves one
path per wire and refuses others (`/subscribe`: HTTP 404; the xrpc method: HTTP 400 with an XRPC error body,
also for a client that does not offer the `xrpc.v1.json` subprotocol), honours `?cursor=` (subscribe: time_us,
inclusive; xrpc: seq, inclusive, or a unix-microseconds time when >= 10^15; firehose: seq, exclusive) and the
collection filters (`wantedCollections`, `collections`), then idles as a live tail would. It can refuse
connections (HTTP 503), drop a connection abruptly mid-stream (TCP shutdown, no close frame), pace frames,
withhold chosen events from one connection (late arrivals that a later replay delivers), and send any bytes the
test gives it (malformed frames, relay error frames). Nothing here reaches the internet.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import serve

POST = "app.bsky.feed.post"
T0 = 1_730_000_000_000_000  # 2024-10-27, microseconds: a plausible Jetstream time_us
XRPC = "network.bsky.jetstream.subscribeEvents"
PATHS = {"subscribe": "/subscribe", "xrpc": f"/xrpc/{XRPC}", "firehose": "/xrpc/com.atproto.sync.subscribeRepos"}
SUBPROTOCOL = "xrpc.v1.json"
TIME_CURSOR_MIN = 10**15  # an xrpc cursor this large is a unix-microseconds time


# ------------------------------------------------------------------------------- Jetstream messages
def post_event(
    time_us: int,
    did: str,
    rkey: str,
    text: str,
    *,
    langs=("en",),
    reply: bool = False,
    created_at: str = "2025-05-20T12:00:00.000Z",
    cid: str | None = None,
) -> dict:
    record = {"$type": POST, "text": text, "createdAt": created_at, "langs": list(langs)}
    if reply:
        ref = {"uri": f"at://did:plc:parent/{POST}/3kparent", "cid": "bafyreiparent"}
        record["reply"] = {"root": ref, "parent": ref}
    return {
        "did": did,
        "time_us": time_us,
        "kind": "commit",
        "commit": {
            "rev": "3l3qo2vutsw2b",
            "operation": "create",
            "collection": POST,
            "rkey": rkey,
            "record": record,
            "cid": cid or f"bafyrei{rkey}",
        },
    }


def like_event(time_us: int, did: str, rkey: str) -> dict:
    return {
        "did": did,
        "time_us": time_us,
        "kind": "commit",
        "commit": {
            "rev": "3l3qo2vutsw2c",
            "operation": "create",
            "collection": "app.bsky.feed.like",
            "rkey": rkey,
            "record": {
                "$type": "app.bsky.feed.like",
                "createdAt": "2025-05-20T12:00:00Z",
                "subject": {"uri": f"at://did:plc:x/{POST}/1", "cid": "bafy"},
            },
            "cid": "bafyreilike",
        },
    }


def delete_event(time_us: int, did: str, rkey: str) -> dict:
    return {
        "did": did,
        "time_us": time_us,
        "kind": "commit",
        "commit": {"rev": "3l3qo2vutsw2d", "operation": "delete", "collection": POST, "rkey": rkey},
    }


def identity_event(time_us: int, did: str) -> dict:
    return {
        "did": did,
        "time_us": time_us,
        "kind": "identity",
        "identity": {"did": did, "handle": "someone.bsky.social", "seq": 1, "time": "2025-05-20T12:00:00Z"},
    }


def account_event(time_us: int, did: str) -> dict:
    return {
        "did": did,
        "time_us": time_us,
        "kind": "account",
        "account": {"active": True, "did": did, "seq": 2, "time": "2025-05-20T12:00:00Z"},
    }


def jetstream_frames(events: list[dict]) -> list[tuple[int, str]]:
    """(cursor, JSON text) pairs as the server sends them."""
    return [(e["time_us"], json.dumps(e)) for e in events]


# ------------------------------------------------------------------------------------- xrpc frames
def iso_time(time_us: int) -> str:
    """A time_us as the xrpc wire writes times: ISO 8601, microsecond precision, UTC."""
    return datetime.fromtimestamp(time_us / 1e6, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def xrpc_payload(event: dict, seq: int) -> dict:
    """A subscribe-wire event on the xrpc wire: the same event with Jetstream's `seq`, a commit's fields in the
    payload itself, identity/account events wrapping the upstream event (atproto 0.0.73's models)."""
    when = iso_time(event["time_us"])
    payload = {"$type": f"{XRPC}#{event['kind']}", "did": event["did"], "seq": seq, "time": when, "witnessedAt": when}
    if event["kind"] == "commit":
        payload.update(event["commit"])
    else:
        payload[event["kind"]] = event[event["kind"]]
    return payload


def xrpc_message(payload: dict) -> str:
    return json.dumps({"$type": "message", "payload": payload})


def xrpc_frames(events: list[dict], first_seq: int = 1) -> list[tuple[int, str]]:
    """(seq, xrpc.v1.json text) pairs: Jetstream numbers every event it witnesses, so seqs are consecutive."""
    return [(seq, xrpc_message(xrpc_payload(e, seq))) for seq, e in enumerate(events, first_seq)]


def xrpc_info(name: str, message: str) -> str:
    return xrpc_message({"$type": f"{XRPC}#info", "name": name, "message": message})


def xrpc_error(error: str, message: str) -> str:
    return json.dumps({"$type": "error", "error": error, "message": message})


def wire_frames(wire: str, events: list[dict]) -> list[tuple[int, str]]:
    """The events as one Jetstream wire's relay sends them, (cursor, frame) in order."""
    return xrpc_frames(events) if wire == "xrpc" else jetstream_frames(events)


# -------------------------------------------------------------------------------- firehose frames
def _cbor():
    import libipld

    return libipld


def _cid(block: bytes) -> bytes:
    """CIDv1, dag-cbor, sha2-256 (the raw bytes; libipld encodes such bytes as a CID link, tag 42)."""
    return bytes([0x01, 0x71, 0x12, 0x20]) + hashlib.sha256(block).digest()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def car(blocks: list[bytes]) -> tuple[bytes, list[bytes]]:
    """A CARv1 holding `blocks` (DAG-CBOR): (car bytes, their CIDs)."""
    cids = [_cid(b) for b in blocks]
    header = _cbor().encode_dag_cbor({"version": 1, "roots": cids[:1]})
    body = b"".join(_varint(len(c) + len(b)) + c + b for c, b in zip(cids, blocks))
    return _varint(len(header)) + header + body, cids


def firehose_commit(seq: int, did: str, posts: list[tuple[str, dict]], *, likes: int = 0) -> bytes:
    """A `#commit` frame creating the given (rkey, record) posts (and `likes` like records)."""
    ipld = _cbor()
    records = [(f"{POST}/{rkey}", rec) for rkey, rec in posts]
    records += [
        (f"app.bsky.feed.like/like{seq}x{i}", {"$type": "app.bsky.feed.like", "createdAt": "2025"})
        for i in range(likes)
    ]
    blocks = [ipld.encode_dag_cbor(rec) for _, rec in records]
    data, cids = car(blocks or [ipld.encode_dag_cbor({})])
    ops = [{"action": "create", "path": path, "cid": cid} for (path, _), cid in zip(records, cids)]
    body = {
        "seq": seq,
        "repo": did,
        "rev": "3l3qo2vutsw2b",
        "since": None,
        "commit": cids[0],
        "blocks": data,
        "ops": ops,
        "blobs": [],
        "time": "2025-05-20T12:00:00.000Z",
        "tooBig": False,
        "rebase": False,
    }
    return ipld.encode_dag_cbor({"op": 1, "t": "#commit"}) + ipld.encode_dag_cbor(body)


def firehose_identity(seq: int, did: str) -> bytes:
    ipld = _cbor()
    return ipld.encode_dag_cbor({"op": 1, "t": "#identity"}) + ipld.encode_dag_cbor(
        {"seq": seq, "did": did, "time": "2025-05-20T12:00:00.000Z"}
    )


def firehose_error(error: str, message: str) -> bytes:
    """An error frame (header op -1), as a relay sends for a cursor it cannot serve (e.g. FutureCursor)."""
    ipld = _cbor()
    return ipld.encode_dag_cbor({"op": -1}) + ipld.encode_dag_cbor({"error": error, "message": message})


def post_record(text: str, *, langs=("en",), reply: bool = False) -> dict:
    record = {"$type": POST, "text": text, "createdAt": "2025-05-20T12:00:00.000Z", "langs": list(langs)}
    if reply:
        record["reply"] = {"root": {"uri": "at://x", "cid": "y"}, "parent": {"uri": "at://x", "cid": "y"}}
    return record


# ----------------------------------------------------------------------------------------- server
def _witnessed_us(payload: str | bytes) -> int | None:
    """The time an xrpc frame's event was witnessed, in microseconds (what a time cursor is compared with)."""
    try:
        when = json.loads(payload)["payload"]["witnessedAt"]
    except (ValueError, KeyError, TypeError):
        return None
    moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1e6)


def _collection(payload: str | bytes) -> str | None:
    """The collection of a commit frame on either JSON wire; None for other events and malformed frames."""
    try:
        message = json.loads(payload)
        if "payload" in message:  # xrpc
            body = message["payload"]
            return body["collection"] if str(body.get("$type", "")).endswith("#commit") else None
        return message["commit"]["collection"] if message.get("kind") == "commit" else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass
class StreamServer:
    """Serves `frames` [(cursor, payload)] to every connection from its `cursor` on, in a background thread.

    wire: 'subscribe', 'xrpc' or 'firehose': the path served (others refused: `wrong_path` status, by default
    400 for xrpc as its XRPC router answers, 404 otherwise), the subprotocol required (xrpc), the cursor and
    collection parameters, and whether replay is inclusive (Jetstream) or exclusive (the firehose).
    drops[i]: connection i is cut (TCP shutdown, no close frame) after sending that many frames.
    refuse: the first `refuse` connection attempts get HTTP 503.
    delay_s: pause between frames (pacing, so a test can kill the collector mid-stream).
    missing[i]: connection i does not send the frames at these cursors (events that reached the service's
    replay log only after its live tail had passed their time: the boundary case that Jetstream's advice to
    rewind a few seconds on reconnect is for); later connections replay them.
    """

    frames: list[tuple[int, str | bytes]]
    drops: list[int] = field(default_factory=list)
    refuse: int = 0
    delay_s: float = 0.0
    wire: str = "subscribe"
    wrong_path: int | None = None
    missing: dict[int, set[int]] = field(default_factory=dict)
    requests: list[dict] = field(default_factory=list)  # query of every accepted connection
    sent: list[int] = field(default_factory=list)  # frames sent per accepted connection
    refused: list[tuple[str, int]] = field(default_factory=list)  # (path, status) of every refused handshake

    def __post_init__(self):
        self.inclusive = self.wire != "firehose"
        self.path = PATHS[self.wire]
        self.wrong_path = self.wrong_path or (400 if self.wire == "xrpc" else 404)
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._attempts = 0
        self._server = None
        self._thread = None

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> StreamServer:
        self._server = serve(
            self._handle,
            "127.0.0.1",
            0,
            process_request=self._process_request,
            compression=None,
            max_size=None,
            subprotocols=[SUBPROTOCOL] if self.wire == "xrpc" else None,
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="stream-server", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        return self._server.socket.getsockname()[1]

    @property
    def base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The URL that names this server's wire by its path."""
        return self.base + self.path

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.shutdown()
            self._thread.join(timeout=60)

    def __enter__(self) -> StreamServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- serving ---------------------------------------------------------------------------------------------
    def _refusal(self, request) -> tuple[int, str] | None:
        path = urlsplit(request.path).path
        offered = {p.strip() for value in request.headers.get_all("Sec-WebSocket-Protocol") for p in value.split(",")}
        if path != self.path:
            return self.wrong_path, f"no such method or path: {path}"
        if self.wire == "xrpc" and SUBPROTOCOL not in offered:
            return 400, f"subscriptions here need the {SUBPROTOCOL} subprotocol"
        return None

    def _process_request(self, connection, request):
        with self._lock:
            self._attempts += 1
            busy = self._attempts <= self.refuse
        if busy:
            return connection.respond(HTTPStatus.SERVICE_UNAVAILABLE, "try again later\n")
        refusal = self._refusal(request)
        if refusal is None:
            return None
        status, message = refusal
        self.refused.append((urlsplit(request.path).path, status))
        if self.wire != "xrpc":
            return connection.respond(HTTPStatus(status), f"{message}\n")
        response = connection.respond(HTTPStatus(status), json.dumps({"error": "InvalidRequest", "message": message}))
        del response.headers["Content-Type"]
        response.headers["Content-Type"] = "application/json"
        return response

    def _start(self, query: dict) -> tuple[int | None, bool]:
        """(the cursor to replay from, whether it is a time rather than a position)."""
        cursor = int(query["cursor"][0]) if "cursor" in query else None
        return cursor, self.wire == "xrpc" and cursor is not None and cursor >= TIME_CURSOR_MIN

    def _selected(self, query: dict, number: int) -> list[str | bytes]:
        cursor, by_time = self._start(query)
        wanted = set(query.get("collections" if self.wire == "xrpc" else "wantedCollections", []))
        missing = self.missing.get(number, set())
        out = []
        for position, payload in self.frames:
            at = _witnessed_us(payload) if by_time else position
            if cursor is not None and at is not None and (at < cursor if self.inclusive else at <= cursor):
                continue
            if position in missing:
                continue
            collection = _collection(payload) if wanted and isinstance(payload, str) else None
            if collection is not None and collection not in wanted:
                continue  # malformed frames are sent as they are
            out.append(payload)
        return out

    def _handle(self, ws) -> None:
        query = parse_qs(urlsplit(ws.request.path).query)
        with self._lock:
            number = len(self.requests)
            self.requests.append(query)
            self.sent.append(0)
        drop_after = self.drops[number] if number < len(self.drops) else None
        try:
            for i, payload in enumerate(self._selected(query, number)):
                if self._stopped.is_set():
                    return
                if drop_after is not None and i >= drop_after:
                    ws.socket.shutdown(socket.SHUT_RDWR)  # an abrupt drop: no close frame
                    return
                ws.send(payload)
                self.sent[number] += 1
                if self.delay_s:
                    time.sleep(self.delay_s)
            while not self._stopped.is_set():  # live tail: nothing new, keep the connection open
                try:
                    ws.recv(timeout=0.1)
                except TimeoutError:
                    continue
        except (ConnectionClosed, OSError):
            return


def free_port() -> int:
    """A port with nothing listening on it (for 'unreachable relay' tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
