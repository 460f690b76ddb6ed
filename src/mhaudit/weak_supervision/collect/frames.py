"""Stream frames parsed into the post dicts the PostStore takes, one parser per wire: Jetstream's subscribe JSON,
its xrpc JSON and the firehose's DAG-CBOR (read with `libipld`). The frame formats: docs/collect.md, "Wires".

A frame that is not a valid event (bad JSON or CBOR, a missing field, a wrong type) raises `MalformedFrame`;
the collector counts and skips it. Events that are not post creates (identity, account, likes, deletes, ...)
parse to an `Event` without a post that still advances the cursor. An error frame raises `RelayError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TypeGuard

POST_COLLECTION = "app.bsky.feed.post"
XRPC_METHOD = "network.bsky.jetstream.subscribeEvents"


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
