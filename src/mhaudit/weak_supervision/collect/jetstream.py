"""Stream wires of the Bluesky collector: subscription URLs, frame parsing into post dicts, the wire choice.

Three wires, each a `Wire` (URL builder + frame parser) that the collector's one connection loop drives:
`SUBSCRIBE` (alias `JETSTREAM`: Jetstream's `/subscribe` JSON wire, cursor `time_us`), `XRPC` (the wire of atproto's
`JetstreamClient`, `network.bsky.jetstream.subscribeEvents`, cursor the instance's `seq`) and `FIREHOSE`
(`com.atproto.sync.subscribeRepos`, DAG-CBOR frames read with `libipld`, cursor the relay's `seq`). A `seq` is valid
only on the relay that issued it, so it is saved per host (`cursor_stream`). `choose_wires` picks the wire by the
relay URL's path; a URL that names none gets xrpc first, subscribe if the relay refuses it. The frame formats, the
cursor keys and why the SDK's own clients are not used: docs/collect.md, "Wires" and the sections after it.

A frame that is not a valid event (bad JSON or CBOR, a missing field, a wrong type) raises `MalformedFrame`;
the collector counts and skips it. Events that are not post creates (identity, account, likes, deletes, ...)
parse to an `Event` without a post that still advances the cursor. An error frame raises `RelayError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TypeGuard
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mhaudit.core.errors import InputError

__all__ = [
    "DEFAULT_FIREHOSE_RELAY",
    "DEFAULT_RELAY",
    "DEFAULT_XRPC_RELAY",
    "FIREHOSE",
    "JETSTREAM",
    "POST_COLLECTION",
    "SUBSCRIBE",
    "WIRES",
    "XRPC",
    "XRPC_METHOD",
    "XRPC_SUBPROTOCOL",
    "Event",
    "MalformedFrame",
    "RelayError",
    "Wire",
    "check_relay_url",
    "choose_wires",
    "cursor_stream",
    "describe_failure",
    "firehose_url",
    "handshake_status",
    "parse_firehose_frame",
    "parse_jetstream_frame",
    "parse_xrpc_frame",
    "relay_host",
    "resume_point",
    "subscribe_url",
    "url_wire",
    "xrpc_url",
]

DEFAULT_RELAY = "wss://jetstream2.us-east.bsky.network/subscribe"
DEFAULT_XRPC_RELAY = "wss://jetstream.us-east.bsky.network/xrpc"  # the SDK's default base URI
DEFAULT_FIREHOSE_RELAY = "wss://bsky.network"
POST_COLLECTION = "app.bsky.feed.post"
SUBSCRIBE_PATH = "/subscribe"
SUBSCRIBE_REPOS = "/xrpc/com.atproto.sync.subscribeRepos"
XRPC_METHOD = "network.bsky.jetstream.subscribeEvents"
XRPC_PATH = "/xrpc/" + XRPC_METHOD
XRPC_SUBPROTOCOL = "xrpc.v1.json"
TIME_CURSOR_MIN = 10**15  # an xrpc cursor at or above this is a unix-microseconds time, not a seq (SDK: Params.cursor)


class MalformedFrame(ValueError):
    """A frame that is not a valid stream event; counted and skipped, never fatal."""


class RelayError(Exception):
    """The relay sent an error frame (e.g. a cursor it cannot serve); the connection is treated as failed."""


@dataclass(slots=True)
class Event:
    """One parsed frame: its cursor (None for frames that do not advance it) and the post creates it carries
    (none for identity/account events, other collections, updates and deletes; at most one on Jetstream)."""

    cursor: int | None
    posts: tuple[dict, ...] = ()


@dataclass(frozen=True)
class Wire:
    """How to subscribe to one kind of stream and read its frames.

    `name`: 'subscribe', 'xrpc' or 'firehose'; `stream`: the store's cursor key (its prefix when
    `relay_specific`: the cursor only means something on the relay that issued it, a `seq`, so the store keeps one
    per relay host, see `cursor_stream`); `time_cursor`: the cursor is a time in microseconds (`time_us`), so a
    resume can rewind by seconds; `takes_time`: the relay also reads a unix-microseconds time as a cursor, so a
    saved `jetstream` time can seed a first run; `subprotocols`: offered at the websocket handshake.
    """

    name: str
    stream: str
    default_relay: str
    url: Callable[[str, int | None], str]
    parse: Callable[[str | bytes], Event]
    time_cursor: bool = False
    relay_specific: bool = False
    takes_time: bool = False
    subprotocols: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------- URLs
def check_relay_url(relay: str) -> None:
    parts = urlsplit(relay)
    if parts.scheme not in ("ws", "wss") or not parts.netloc:
        raise InputError(f"the relay URL {relay!r} must start with ws:// or wss:// and name a host")


def relay_host(relay: str) -> str:
    """The relay's host as it keys a saved cursor: `host` or `host:port`, lower case, without user info."""
    return urlsplit(relay).netloc.rsplit("@", 1)[-1].lower()


def cursor_stream(wire: Wire, relay: str) -> str:
    """The store's cursor key for this wire and relay: `jetstream` (a subscribe-wire time, valid on any Jetstream
    instance); `jetstream-xrpc:<host[:port]>`, `firehose:<host[:port]>` (a `seq` is only valid where it was issued).
    The keys never overlap, so a resume never reads another wire's cursor as its own."""
    return f"{wire.stream}:{relay_host(relay)}" if wire.relay_specific else wire.stream


def resume_point(store, wire: Wire, relay: str) -> tuple[int | None, int | None, str]:
    """Where a run of `wire` on `relay` starts: (its saved cursor, a time to start from instead, a note).

    A wire's own saved cursor wins. Without one, an xrpc run starts from the store's subscribe-wire time (the
    relay reads a cursor >= 10^15 as unix microseconds), a seq wire adopts a legacy host-less cursor or starts
    at the live tip with a note, and a subscribe run says when the store holds only other wires' seqs."""
    saved = store.cursor(cursor_stream(wire, relay))
    if saved is not None:
        return saved, None, ""
    host, time_us = relay_host(relay), store.cursor(SUBSCRIBE.stream)
    if wire.takes_time and time_us is not None and time_us >= TIME_CURSOR_MIN:
        return (
            None,
            time_us,
            (
                f"no {wire.name} cursor is saved for {host}: starting from the subscribe wire's "
                f"saved time_us {time_us}, which the relay reads as a time"
            ),
        )
    if wire.relay_specific:
        saved, note = _other_relays_cursor(store, wire, relay)
        return saved, None, note
    seqs = sorted(k for k in store.cursors() if ":" in k)
    return (
        None,
        None,
        (
            f"starting at the live tip: the store's saved cursors ({', '.join(seqs)}) are seqs of "
            "another wire, which the subscribe wire cannot resume from"
            if seqs
            else ""
        ),
    )


def _other_relays_cursor(store, wire: Wire, relay: str) -> tuple[int | None, str]:
    """No cursor is saved for this relay: (the cursor to resume from, a note for the user).

    A cursor saved by an older mhaudit under the bare wire name (no host) is adopted when every run of this
    wire recorded in the store used this relay's host; otherwise the run starts at the live tip, with a note
    naming the relays the store's cursors belong to."""
    key = wire.stream
    others = {k: v for k, v in store.cursors().items() if k == key or k.startswith(key + ":")}
    if not others:
        return None, ""
    host = relay_host(relay)
    legacy = others.get(key)
    if legacy is not None and len(others) == 1 and store.run_relays(wire.name) == {host}:
        return legacy, ""
    owners = sorted(k.split(":", 1)[1] if ":" in k else "an unrecorded relay" for k in others)
    return None, (
        f"starting at the live tip of {host}: the store's saved {wire.name} cursor belongs to "
        f"{', '.join(owners)}, and a {wire.name} seq is only valid on the relay that issued it "
        "(posts sent while no collector ran are not fetched)"
    )


def _with_query(relay: str, params: Iterable[tuple[str, str]], path: str | None = None) -> str:
    check_relay_url(relay)
    parts = urlsplit(relay)
    drop = {"cursor", "wantedCollections", "collections"}
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in drop]
    return urlunsplit(
        (parts.scheme, parts.netloc, path if path is not None else parts.path, urlencode(query + list(params)), "")
    )


def _cursor(cursor: int | None) -> list[tuple[str, str]]:
    return [("cursor", str(int(cursor)))] if cursor is not None else []


def subscribe_url(
    relay: str = DEFAULT_RELAY, cursor: int | None = None, collections: Iterable[str] = (POST_COLLECTION,)
) -> str:
    """The Jetstream subscription URL: `wantedCollections=app.bsky.feed.post`, and `cursor=<time_us>` to resume.
    A bare host gets the `/subscribe` path; any other path is kept as given (a proxy may serve it elsewhere)."""
    path = urlsplit(relay).path
    return _with_query(
        relay,
        [("wantedCollections", c) for c in collections] + _cursor(cursor),
        SUBSCRIBE_PATH if path in ("", "/") else path,
    )


def xrpc_url(
    relay: str = DEFAULT_XRPC_RELAY, cursor: int | None = None, collections: Iterable[str] = (POST_COLLECTION,)
) -> str:
    """`<relay>/xrpc/network.bsky.jetstream.subscribeEvents?collections=app.bsky.feed.post[&cursor=<seq>]`; a URL
    ending in `/xrpc` (the SDK's base URI) gets the method, one that already names it is kept."""
    path = urlsplit(relay).path.rstrip("/")
    if not path.endswith(XRPC_PATH):
        path += "/" + XRPC_METHOD if path.endswith("/xrpc") else XRPC_PATH
    return _with_query(relay, [("collections", c) for c in collections] + _cursor(cursor), path)


def firehose_url(relay: str = DEFAULT_FIREHOSE_RELAY, cursor: int | None = None) -> str:
    """`<relay>/xrpc/com.atproto.sync.subscribeRepos[?cursor=<seq>]`; a URL ending in `/xrpc` (the SDK's base URI)
    gets the method, one that already names it is kept."""
    path = urlsplit(relay).path.rstrip("/")
    if not path.endswith(SUBSCRIBE_REPOS):
        path += SUBSCRIBE_REPOS.removeprefix("/xrpc") if path.endswith("/xrpc") else SUBSCRIBE_REPOS
    return _with_query(relay, _cursor(cursor), path)


# ----------------------------------------------------------------------------------------- wire choice
def url_wire(relay: str) -> Wire | None:
    """The wire a relay URL's path names: `/subscribe`; `.../xrpc` or the xrpc method; the firehose's
    subscribeRepos. None when it names none (a bare host, a proxy's own path)."""
    path = urlsplit(relay).path.rstrip("/")
    if path.endswith(SUBSCRIBE_PATH):
        return SUBSCRIBE
    if path.endswith(SUBSCRIBE_REPOS):
        return FIREHOSE
    if path.endswith((XRPC_PATH, "/xrpc")):
        return XRPC
    return None


def choose_wires(relay: str | None, wire: Wire | str = "auto") -> tuple[Wire, ...]:
    """The wires to try on `relay`, in order: one, or for `auto` on a URL whose path names no wire, (XRPC,
    SUBSCRIBE): the collector falls back to the second, once, if the relay refuses the first at the handshake
    (HTTP 400 or 404). `wire`: a Wire or a name in `WIRES`, or 'auto'. InputError for an unknown name, or a
    URL whose path names another wire than the one asked for."""
    if isinstance(wire, str) and wire != "auto" and wire not in WIRES:
        raise InputError(f"unknown wire {wire!r}: use auto, subscribe, xrpc or firehose")
    chosen = WIRES.get(wire) if isinstance(wire, str) else wire  # None: auto
    if relay is None:
        return (chosen or SUBSCRIBE,)
    check_relay_url(relay)
    named = url_wire(relay)
    if chosen is None:
        if named is FIREHOSE:
            raise InputError(
                f"the relay URL {relay!r} names the firehose (com.atproto.sync.subscribeRepos): "
                "add --firehose (wire='firehose'), or give a Jetstream URL"
            )
        return (named,) if named else (XRPC, SUBSCRIBE)
    xrpc_base = urlsplit(relay).path.rstrip("/").endswith("/xrpc")  # the SDK's base URI, for either xrpc method
    if named is not None and named is not chosen and not (chosen is FIREHOSE and xrpc_base):
        raise InputError(
            f"the relay URL {relay!r} names the {named.name} wire's path, not the {chosen.name} "
            "wire's: give the URL without that path, or choose the wire it names"
        )
    return (chosen,)


def handshake_status(exc: BaseException) -> int | None:
    """The HTTP status of a refused websocket handshake (websockets' InvalidStatus), else None."""
    return getattr(getattr(exc, "response", None), "status_code", None)


def describe_failure(exc: BaseException) -> str:
    """A failed connection in a short line; an xrpc relay's JSON refusal body adds its error name."""
    text = str(exc) or type(exc).__name__
    try:  # e.g. HTTP 400 with {"error": "CursorTooOld", "message": ...}
        body = json.loads(getattr(getattr(exc, "response", None), "body", None) or b"")
        text += f" ({body['error']}: {body.get('message')})"
    except (ValueError, TypeError, KeyError):
        pass
    return text if len(text) <= 160 else text[:157] + "..."


# ------------------------------------------------------------------------------------- shared checks
def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _post(did: object, rkey: object, cid: object, record: object) -> dict:
    """The post dict the PostStore takes, from a post record; MalformedFrame if a field has the wrong type."""
    if not isinstance(did, str) or not did.startswith("did:"):
        raise MalformedFrame("the event has no author DID")
    if not isinstance(rkey, str) or not rkey or "/" in rkey:
        raise MalformedFrame("the post has no valid record key")
    if cid is not None and not isinstance(cid, str):
        raise MalformedFrame("the post's CID is not a string")
    if not isinstance(record, dict):
        raise MalformedFrame("the post has no record object")
    text, created, langs = record.get("text"), record.get("createdAt"), record.get("langs")
    if not isinstance(text, str):
        raise MalformedFrame("the post record has no text string")
    if created is not None and not isinstance(created, str):
        raise MalformedFrame("the post's createdAt is not a string")
    if langs is None:
        langs = []
    elif not isinstance(langs, list) or not all(isinstance(lang, str) for lang in langs):
        raise MalformedFrame("the post's langs is not a list of strings")
    return {
        "uri": f"at://{did}/{POST_COLLECTION}/{rkey}",
        "did": did,
        "cid": cid,
        "text": text,
        "created_at": created,
        "langs": langs,
        "reply": record.get("reply") is not None,
    }


# ------------------------------------------------------------------------------------------ Jetstream
def _json_object(frame: str | bytes) -> dict:
    try:
        message = json.loads(frame)
    except (ValueError, TypeError):
        raise MalformedFrame("not JSON") from None
    if not isinstance(message, dict):
        raise MalformedFrame("not a JSON object")
    return message


def parse_jetstream_frame(frame: str | bytes) -> Event:
    """One subscribe-wire JSON frame as an Event; raises MalformedFrame."""
    message = _json_object(frame)
    time_us = message.get("time_us")
    if not _is_int(time_us) or time_us < 0:
        raise MalformedFrame("no integer time_us")
    if message.get("kind") != "commit":
        return Event(time_us)  # identity / account events
    commit = message.get("commit")
    if not isinstance(commit, dict):
        raise MalformedFrame("a commit event without a commit object")
    if commit.get("operation") != "create" or commit.get("collection") != POST_COLLECTION:
        return Event(time_us)
    return Event(time_us, (_post(message.get("did"), commit.get("rkey"), commit.get("cid"), commit.get("record")),))


# ------------------------------------------------------------------------------------------------ xrpc
def parse_xrpc_frame(frame: str | bytes) -> Event:
    """One `xrpc.v1.json` frame as an Event: `#commit` creates of posts carry the post (the commit's fields sit
    in the payload itself), other kinds only their `seq`, `#info` nothing; raises MalformedFrame, and RelayError
    for an error frame (e.g. ConsumerTooSlow)."""
    message = _json_object(frame)
    if message.get("$type") == "error":
        raise RelayError(f"the relay sent an error frame: {message.get('error')}: {message.get('message')}")
    payload = message.get("payload")
    if message.get("$type") != "message" or not isinstance(payload, dict):
        raise MalformedFrame("neither a message nor an error frame")
    kind = payload.get("$type")
    if not isinstance(kind, str) or not kind.startswith(XRPC_METHOD + "#"):
        raise MalformedFrame("a message without a subscribeEvents $type")
    if kind.endswith("#info"):
        return Event(None)  # OutdatedCursor / FutureCursor notices carry no seq
    seq = payload.get("seq")
    if not _is_int(seq) or seq < 0:
        raise MalformedFrame("no integer seq")
    if (
        kind.endswith("#commit")
        and payload.get("operation") == "create"
        and payload.get("collection") == POST_COLLECTION
    ):
        return Event(seq, (_post(payload.get("did"), payload.get("rkey"), payload.get("cid"), payload.get("record")),))
    return Event(seq)  # identity, account, sync, other collections, updates, deletes


# ------------------------------------------------------------------------------------------- firehose
def parse_firehose_frame(frame: str | bytes) -> Event:
    """One subscribeRepos DAG-CBOR frame as an Event (post creates from `#commit` ops); raises MalformedFrame."""
    import libipld  # atproto's CBOR/CAR codec; imported here so the Jetstream path does not need it

    if not isinstance(frame, (bytes, bytearray)):
        raise MalformedFrame("a firehose frame must be binary")
    try:
        parts = libipld.decode_dag_cbor_multi(bytes(frame))
    except Exception:  # noqa: BLE001 - libipld raises several types for bad bytes
        raise MalformedFrame("not DAG-CBOR") from None
    if len(parts) != 2 or not isinstance(parts[0], dict) or not isinstance(parts[1], dict):
        raise MalformedFrame("expected a header and a body")
    header, body = parts
    if header.get("op") == -1:
        raise RelayError(f"the relay sent an error frame: {body.get('error')}: {body.get('message')}")
    kind, seq = header.get("t"), body.get("seq")
    if kind == "#info" or header.get("op") != 1:
        return Event(None)  # advisory frames carry no seq
    if not _is_int(seq) or seq < 0:
        raise MalformedFrame("no integer seq")
    if kind != "#commit":
        return Event(seq)  # #identity, #account, #sync
    ops, blocks, did = body.get("ops"), body.get("blocks"), body.get("repo")
    if not isinstance(ops, list) or not isinstance(blocks, (bytes, bytearray)):
        raise MalformedFrame("a #commit without ops or blocks")
    creates = [
        op
        for op in ops
        if isinstance(op, dict)
        and op.get("action") == "create"
        and str(op.get("path", "")).startswith(POST_COLLECTION + "/")
    ]
    if not creates:
        return Event(seq)
    try:
        _, records = libipld.decode_car(bytes(blocks))
    except Exception:  # noqa: BLE001
        raise MalformedFrame("the #commit's blocks are not a CAR file") from None
    posts = []
    for op in creates:
        cid = op.get("cid")  # a CID link decodes to the CID's bytes, which key the CAR's blocks
        record = records.get(cid) if isinstance(cid, bytes) else None
        if not isinstance(record, dict) or not isinstance(cid, bytes):  # a record is found by its cid's bytes
            raise MalformedFrame("a post create op whose record is not in the commit's blocks")
        posts.append(_post(did, op["path"].split("/", 1)[1], libipld.encode_cid(cid), record))
    return Event(seq, tuple(posts))


SUBSCRIBE = Wire("subscribe", "jetstream", DEFAULT_RELAY, subscribe_url, parse_jetstream_frame, time_cursor=True)
JETSTREAM = SUBSCRIBE  # the name before there were two Jetstream wires
XRPC = Wire(
    "xrpc",
    "jetstream-xrpc",
    DEFAULT_XRPC_RELAY,
    xrpc_url,
    parse_xrpc_frame,
    relay_specific=True,
    takes_time=True,
    subprotocols=(XRPC_SUBPROTOCOL,),
)
FIREHOSE = Wire("firehose", "firehose", DEFAULT_FIREHOSE_RELAY, firehose_url, parse_firehose_frame, relay_specific=True)
WIRES = {wire.name: wire for wire in (SUBSCRIBE, XRPC, FIREHOSE)}
