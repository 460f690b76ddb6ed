"""Stream wires of the Bluesky collector: subscription URLs and frame parsing into post dicts.

Two wires, each a `Wire` (URL builder + frame parser) that the collector's one connection loop drives:

* **Jetstream** (default): JSON text frames of the public `/subscribe` endpoint,
  `{"did", "time_us", "kind": "commit", "commit": {"operation": "create", "collection":
  "app.bsky.feed.post", "rkey", "cid", "record": {"text", "createdAt", "langs", "reply"?}}}`;
  the cursor is `time_us` (microseconds of wall-clock time, so comparable across Jetstream instances), and
  `?cursor=<time_us>` replays from it (inclusive). The collector resumes a few seconds before it (`rewind_s`).
* **Firehose** (`--firehose`): the relay's `com.atproto.sync.subscribeRepos`, DAG-CBOR frames whose
  `#commit` bodies carry the records as CAR blocks; the cursor is the relay's `seq`, which means nothing on
  another relay, so its saved cursor is keyed by the relay's host (`cursor_stream`).

Why not the atproto SDK's clients (checked against atproto 0.0.73): its `JetstreamClient` speaks the newer
xrpc wire (`network.bsky.jetstream.subscribeEvents`, `seq` cursors) and states that the `/subscribe` hosts
(jetstream1/2.*) do not work with it; and both it and `FirehoseSubscribeReposClient` run their own
callback loop that reconnects forever and prints-and-swallows exceptions raised in the callback, so a
failed database commit would not stop the stream and there is no hook for a time-based batch commit or
for giving up after N failed connects. The collector therefore owns the connection (`websockets`, which
atproto itself uses) and decodes firehose frames with `libipld`, atproto's own DAG-CBOR/CAR codec.

A frame that is not a valid event (bad JSON or CBOR, a missing field, a wrong type) raises
`MalformedFrame`; the collector counts and skips it. Events that are not post creates (identity,
account, likes, deletes, ...) parse to an `Event` without a post that still advances the cursor.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mhaudit.core.errors import InputError

__all__ = ["DEFAULT_FIREHOSE_RELAY", "DEFAULT_RELAY", "FIREHOSE", "JETSTREAM", "POST_COLLECTION", "Event",
           "MalformedFrame", "RelayError", "Wire", "check_relay_url", "cursor_stream", "firehose_url",
           "parse_firehose_frame", "parse_jetstream_frame", "relay_host", "subscribe_url"]

DEFAULT_RELAY = "wss://jetstream2.us-east.bsky.network/subscribe"
DEFAULT_FIREHOSE_RELAY = "wss://bsky.network"
POST_COLLECTION = "app.bsky.feed.post"
SUBSCRIBE_REPOS = "/xrpc/com.atproto.sync.subscribeRepos"


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

    `name` names the wire (and is the store's cursor stream when the cursor is not relay-specific);
    `time_cursor`: the cursor is a time in microseconds (Jetstream's `time_us`), so a resume can rewind by
    seconds; `relay_specific`: the cursor only means something on the relay that issued it (the firehose's
    `seq`), so the store keeps one cursor per relay host (`cursor_stream`).
    """

    name: str
    default_relay: str
    url: Callable[[str, int | None], str]
    parse: Callable[[str | bytes], Event]
    time_cursor: bool = False
    relay_specific: bool = False


# ---------------------------------------------------------------------------------------------- URLs
def check_relay_url(relay: str) -> None:
    parts = urlsplit(relay)
    if parts.scheme not in ("ws", "wss") or not parts.netloc:
        raise InputError(f"the relay URL {relay!r} must start with ws:// or wss:// and name a host")


def relay_host(relay: str) -> str:
    """The relay's host as it keys a saved cursor: `host` or `host:port`, lower case, without user info."""
    return urlsplit(relay).netloc.rsplit("@", 1)[-1].lower()


def cursor_stream(wire: Wire, relay: str) -> str:
    """The store's cursor key for this wire and relay: `jetstream` (a time, valid on any Jetstream instance);
    `firehose:<host[:port]>` (a relay's `seq` is only valid on that relay)."""
    return f"{wire.name}:{relay_host(relay)}" if wire.relay_specific else wire.name


def _with_query(relay: str, params: Iterable[tuple[str, str]], path: str | None = None) -> str:
    check_relay_url(relay)
    parts = urlsplit(relay)
    drop = {"cursor", "wantedCollections"}
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in drop]
    return urlunsplit((parts.scheme, parts.netloc, path if path is not None else parts.path,
                       urlencode(query + list(params)), ""))


def subscribe_url(relay: str = DEFAULT_RELAY, cursor: int | None = None,
                  collections: Iterable[str] = (POST_COLLECTION,)) -> str:
    """The Jetstream subscription URL: `wantedCollections=app.bsky.feed.post`, and `cursor=<time_us>` to resume."""
    params = [("wantedCollections", c) for c in collections]
    if cursor is not None:
        params.append(("cursor", str(int(cursor))))
    return _with_query(relay, params)


def firehose_url(relay: str = DEFAULT_FIREHOSE_RELAY, cursor: int | None = None) -> str:
    """`<relay>/xrpc/com.atproto.sync.subscribeRepos[?cursor=<seq>]` (a relay URL that already names the path is kept)."""
    path = urlsplit(relay).path
    if not path.endswith(SUBSCRIBE_REPOS):
        path = path.rstrip("/") + SUBSCRIBE_REPOS
    return _with_query(relay, [("cursor", str(int(cursor)))] if cursor is not None else [], path)


# ------------------------------------------------------------------------------------- shared checks
def _is_int(value: object) -> bool:
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
    return {"uri": f"at://{did}/{POST_COLLECTION}/{rkey}", "did": did, "cid": cid, "text": text,
            "created_at": created, "langs": langs, "reply": record.get("reply") is not None}


# ------------------------------------------------------------------------------------------ Jetstream
def parse_jetstream_frame(frame: str | bytes) -> Event:
    """One Jetstream JSON frame as an Event; raises MalformedFrame."""
    try:
        message = json.loads(frame)
    except (ValueError, TypeError):
        raise MalformedFrame("not JSON") from None
    if not isinstance(message, dict):
        raise MalformedFrame("not a JSON object")
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
    creates = [op for op in ops if isinstance(op, dict) and op.get("action") == "create"
               and str(op.get("path", "")).startswith(POST_COLLECTION + "/")]
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
        if not isinstance(record, dict):
            raise MalformedFrame("a post create op whose record is not in the commit's blocks")
        posts.append(_post(did, op["path"].split("/", 1)[1], libipld.encode_cid(cid), record))
    return Event(seq, tuple(posts))


JETSTREAM = Wire("jetstream", DEFAULT_RELAY, subscribe_url, parse_jetstream_frame, time_cursor=True)
FIREHOSE = Wire("firehose", DEFAULT_FIREHOSE_RELAY, firehose_url, parse_firehose_frame, relay_specific=True)
