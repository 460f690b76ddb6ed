"""Stream wires of the Bluesky collector: subscription URLs, the wire choice, where a run resumes.

Three wires, each a `Wire` (URL builder + frame parser) that the collector's one connection loop drives:
`SUBSCRIBE` (alias `JETSTREAM`: Jetstream's `/subscribe` JSON wire, cursor `time_us`), `XRPC` (the wire of atproto's
`JetstreamClient`, `network.bsky.jetstream.subscribeEvents`, cursor the instance's `seq`) and `FIREHOSE`
(`com.atproto.sync.subscribeRepos`, DAG-CBOR frames read with `libipld`, cursor the relay's `seq`). A `seq` is valid
only on the relay that issued it, so it is saved per host (`cursor_stream`). `choose_wires` picks the wire by the
relay URL's path; a URL that names none gets xrpc first, subscribe if the relay refuses it. The frame formats, the
cursor keys and why the SDK's own clients are not used: docs/collect.md, "Wires" and the sections after it.

Each wire's frame parser, with `Event`, `MalformedFrame` and `RelayError`, lives in `frames` and is imported from
here as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect.frames import (
    POST_COLLECTION,
    XRPC_METHOD,
    Event,
    MalformedFrame,
    RelayError,
    parse_firehose_frame,
    parse_jetstream_frame,
    parse_xrpc_frame,
)

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
SUBSCRIBE_PATH = "/subscribe"
SUBSCRIBE_REPOS = "/xrpc/com.atproto.sync.subscribeRepos"
XRPC_PATH = "/xrpc/" + XRPC_METHOD
XRPC_SUBPROTOCOL = "xrpc.v1.json"
TIME_CURSOR_MIN = 10**15  # an xrpc cursor at or above this is a unix-microseconds time, not a seq (SDK: Params.cursor)


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
