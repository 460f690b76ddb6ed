"""Stream wires: Jetstream JSON and firehose CBOR frames into post dicts; subscription URLs; malformed frames."""

from __future__ import annotations

import json

import libipld
import pytest

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect.jetstream import (
    DEFAULT_RELAY,
    FIREHOSE,
    JETSTREAM,
    Event,
    MalformedFrame,
    RelayError,
    cursor_stream,
    firehose_url,
    parse_firehose_frame,
    parse_jetstream_frame,
    subscribe_url,
)
from tests.weak_supervision.collect.stream_server import (
    T0,
    account_event,
    car,
    delete_event,
    firehose_commit,
    firehose_identity,
    identity_event,
    like_event,
    post_event,
    post_record,
)

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def test_a_post_create_becomes_the_post_dict_the_store_takes():
    event = parse_jetstream_frame(json.dumps(post_event(T0 + 5, DID, "3kabc", "I can’t sleep", langs=["en-US"])))
    assert event.cursor == T0 + 5
    assert event.posts == ({"uri": f"at://{DID}/app.bsky.feed.post/3kabc", "did": DID, "cid": "bafyrei3kabc",
                            "text": "I can’t sleep", "created_at": "2025-05-20T12:00:00.000Z",
                            "langs": ["en-US"], "reply": False},)
    reply = parse_jetstream_frame(json.dumps(post_event(T0, DID, "3kdef", "hi", reply=True)).encode())
    assert reply.posts[0]["reply"] is True  # bytes frames are read too


def test_a_record_without_langs_or_created_at_still_parses():
    message = post_event(T0, DID, "r1", "hello")
    del message["commit"]["record"]["langs"], message["commit"]["record"]["createdAt"]
    (post,) = parse_jetstream_frame(json.dumps(message)).posts
    assert post["langs"] == [] and post["created_at"] is None


@pytest.mark.parametrize("message", [identity_event(T0 + 1, DID), account_event(T0 + 1, DID),
                                     like_event(T0 + 1, DID, "l1"), delete_event(T0 + 1, DID, "r1"),
                                     {**post_event(T0 + 1, DID, "r1", "x"), "kind": "future-kind"}])
def test_events_that_are_not_post_creates_advance_the_cursor_and_carry_no_post(message):
    assert parse_jetstream_frame(json.dumps(message)) == Event(T0 + 1, ())


def _broken(path: str, value) -> str:
    message = post_event(T0, DID, "r1", "text")
    target = message
    *parents, last = path.split(".")
    for key in parents:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return json.dumps(message)


@pytest.mark.parametrize("frame", [
    "{not json", "", "[1, 2]", "null", b"\xff\xfe", "42",
    _broken("time_us", KeyError), _broken("time_us", "1730000000"), _broken("time_us", True),
    _broken("time_us", 1.5), _broken("time_us", -1), _broken("commit", "create"), _broken("did", KeyError),
    _broken("did", 7), _broken("commit.rkey", KeyError), _broken("commit.rkey", ""), _broken("commit.cid", 3),
    _broken("commit.record", KeyError), _broken("commit.record", "text"), _broken("commit.record.text", KeyError),
    _broken("commit.record.text", 12), _broken("commit.record.langs", "en"), _broken("commit.record.langs", [1]),
    _broken("commit.record.createdAt", 20250101),
])
def test_malformed_frames_raise_malformed_frame(frame):
    with pytest.raises(MalformedFrame):
        parse_jetstream_frame(frame)


def test_subscribe_url_asks_for_posts_and_resumes_from_a_cursor():
    assert subscribe_url() == DEFAULT_RELAY + "?wantedCollections=app.bsky.feed.post"
    assert subscribe_url("ws://127.0.0.1:9/subscribe", T0) == \
        f"ws://127.0.0.1:9/subscribe?wantedCollections=app.bsky.feed.post&cursor={T0}"
    # The user's own query parameters stay; a cursor or collection in the relay URL is replaced.
    assert subscribe_url("wss://js.example/subscribe?compress=false&cursor=5", 7) == \
        "wss://js.example/subscribe?compress=false&wantedCollections=app.bsky.feed.post&cursor=7"


@pytest.mark.parametrize("relay", ["https://jetstream2.us-east.bsky.network/subscribe", "jetstream2", "ws://"])
def test_a_relay_that_is_not_a_websocket_url_is_bad_input(relay):
    with pytest.raises(InputError, match="ws:// or wss://"):
        subscribe_url(relay)


def test_firehose_url():
    assert firehose_url() == "wss://bsky.network/xrpc/com.atproto.sync.subscribeRepos"
    assert firehose_url("ws://127.0.0.1:9/", 42) == "ws://127.0.0.1:9/xrpc/com.atproto.sync.subscribeRepos?cursor=42"
    assert firehose_url("wss://r.example/xrpc/com.atproto.sync.subscribeRepos", 1).endswith("subscribeRepos?cursor=1")


def test_cursor_keys_jetstream_by_wire_and_the_firehose_by_relay_host():
    # time_us is a time, valid on any Jetstream instance; a firehose seq only on the relay that issued it.
    assert cursor_stream(JETSTREAM, DEFAULT_RELAY) == cursor_stream(JETSTREAM, "wss://js.example/subscribe") == \
        "jetstream"
    assert cursor_stream(FIREHOSE, "wss://bsky.network") == "firehose:bsky.network"
    assert cursor_stream(FIREHOSE, "wss://user:pw@Relay.Example:8443/xrpc/x?cursor=1") == \
        "firehose:relay.example:8443"
    assert JETSTREAM.time_cursor and not JETSTREAM.relay_specific
    assert FIREHOSE.relay_specific and not FIREHOSE.time_cursor


def test_a_firehose_commit_yields_its_post_creates_and_skips_other_records():
    frame = firehose_commit(77, DID, [("r1", post_record("panic attack", langs=["en"])),
                                      ("r2", post_record("a reply", reply=True))], likes=2)
    event = parse_firehose_frame(frame)
    assert event.cursor == 77
    assert [p["uri"] for p in event.posts] == [f"at://{DID}/app.bsky.feed.post/r1", f"at://{DID}/app.bsky.feed.post/r2"]
    assert [p["reply"] for p in event.posts] == [False, True]
    assert event.posts[0]["text"] == "panic attack" and event.posts[0]["cid"].startswith("bafyrei")
    assert event.posts[0]["cid"] == libipld.encode_cid(libipld.decode_dag_cbor_multi(frame)[1]["ops"][0]["cid"])
    assert parse_firehose_frame(firehose_commit(78, DID, [], likes=1)) == Event(78, ())
    assert parse_firehose_frame(firehose_identity(79, DID)) == Event(79, ())


def test_firehose_info_error_and_malformed_frames():
    info = libipld.encode_dag_cbor({"op": 1, "t": "#info"}) + libipld.encode_dag_cbor({"name": "OutdatedCursor"})
    assert parse_firehose_frame(info) == Event(None, ())
    error = libipld.encode_dag_cbor({"op": -1}) + libipld.encode_dag_cbor({"error": "FutureCursor", "message": "m"})
    with pytest.raises(RelayError, match="FutureCursor"):
        parse_firehose_frame(error)
    no_seq = libipld.encode_dag_cbor({"op": 1, "t": "#commit"}) + libipld.encode_dag_cbor({"repo": DID})
    body = libipld.decode_dag_cbor_multi(firehose_commit(5, DID, [("r1", post_record("x"))]))[1]
    head = libipld.encode_dag_cbor({"op": 1, "t": "#commit"})
    cut_car = head + libipld.encode_dag_cbor({**body, "blocks": body["blocks"][:20]})
    other_car = head + libipld.encode_dag_cbor({**body, "blocks": car([libipld.encode_dag_cbor({"a": 1})])[0]})
    for frame in (b"\x00garbage", "a text frame", no_seq, cut_car, other_car,
                  libipld.encode_dag_cbor({"op": 1, "t": "#commit"})):
        with pytest.raises(MalformedFrame):
            parse_firehose_frame(frame)
