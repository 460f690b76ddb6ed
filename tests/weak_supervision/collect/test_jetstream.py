"""Stream wires: subscribe-wire JSON, xrpc JSON and firehose CBOR frames into post dicts; subscription URLs; the
wire choice (`auto`); cursor keys; malformed frames; frames built by atproto's own models."""

from __future__ import annotations

import json

import libipld
import pytest

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect.jetstream import (
    DEFAULT_RELAY,
    FIREHOSE,
    JETSTREAM,
    SUBSCRIBE,
    XRPC,
    Event,
    MalformedFrame,
    RelayError,
    choose_wires,
    cursor_stream,
    firehose_url,
    parse_firehose_frame,
    parse_jetstream_frame,
    parse_xrpc_frame,
    subscribe_url,
    xrpc_url,
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
    xrpc_error,
    xrpc_frames,
    xrpc_info,
    xrpc_message,
)

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def test_a_post_create_becomes_the_post_dict_the_store_takes():
    event = parse_jetstream_frame(json.dumps(post_event(T0 + 5, DID, "3kabc", "I can’t sleep", langs=["en-US"])))
    assert event.cursor == T0 + 5
    assert event.posts == (
        {
            "uri": f"at://{DID}/app.bsky.feed.post/3kabc",
            "did": DID,
            "cid": "bafyrei3kabc",
            "text": "I can’t sleep",
            "created_at": "2025-05-20T12:00:00.000Z",
            "langs": ["en-US"],
            "reply": False,
        },
    )
    reply = parse_jetstream_frame(json.dumps(post_event(T0, DID, "3kdef", "hi", reply=True)).encode())
    assert reply.posts[0]["reply"] is True  # bytes frames are read too


def test_a_record_without_langs_or_created_at_still_parses():
    message = post_event(T0, DID, "r1", "hello")
    del message["commit"]["record"]["langs"], message["commit"]["record"]["createdAt"]
    (post,) = parse_jetstream_frame(json.dumps(message)).posts
    assert post["langs"] == [] and post["created_at"] is None


@pytest.mark.parametrize(
    "message",
    [
        identity_event(T0 + 1, DID),
        account_event(T0 + 1, DID),
        like_event(T0 + 1, DID, "l1"),
        delete_event(T0 + 1, DID, "r1"),
        {**post_event(T0 + 1, DID, "r1", "x"), "kind": "future-kind"},
    ],
)
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


@pytest.mark.parametrize(
    "frame",
    [
        "{not json",
        "",
        "[1, 2]",
        "null",
        b"\xff\xfe",
        "42",
        _broken("time_us", KeyError),
        _broken("time_us", "1730000000"),
        _broken("time_us", True),
        _broken("time_us", 1.5),
        _broken("time_us", -1),
        _broken("commit", "create"),
        _broken("did", KeyError),
        _broken("did", 7),
        _broken("commit.rkey", KeyError),
        _broken("commit.rkey", ""),
        _broken("commit.cid", 3),
        _broken("commit.record", KeyError),
        _broken("commit.record", "text"),
        _broken("commit.record.text", KeyError),
        _broken("commit.record.text", 12),
        _broken("commit.record.langs", "en"),
        _broken("commit.record.langs", [1]),
        _broken("commit.record.createdAt", 20250101),
    ],
)
def test_malformed_frames_raise_malformed_frame(frame):
    with pytest.raises(MalformedFrame):
        parse_jetstream_frame(frame)


def test_subscribe_url_asks_for_posts_and_resumes_from_a_cursor():
    assert subscribe_url() == DEFAULT_RELAY + "?wantedCollections=app.bsky.feed.post"
    assert (
        subscribe_url("ws://127.0.0.1:9/subscribe", T0)
        == f"ws://127.0.0.1:9/subscribe?wantedCollections=app.bsky.feed.post&cursor={T0}"
    )
    # The user's own query parameters stay; a cursor or collection in the relay URL is replaced.
    assert (
        subscribe_url("wss://js.example/subscribe?compress=false&cursor=5", 7)
        == "wss://js.example/subscribe?compress=false&wantedCollections=app.bsky.feed.post&cursor=7"
    )


@pytest.mark.parametrize("relay", ["https://jetstream2.us-east.bsky.network/subscribe", "jetstream2", "ws://"])
def test_a_relay_that_is_not_a_websocket_url_is_bad_input(relay):
    with pytest.raises(InputError, match="ws:// or wss://"):
        subscribe_url(relay)


def test_firehose_url():
    assert firehose_url() == "wss://bsky.network/xrpc/com.atproto.sync.subscribeRepos"
    assert firehose_url("ws://127.0.0.1:9/", 42) == "ws://127.0.0.1:9/xrpc/com.atproto.sync.subscribeRepos?cursor=42"
    assert firehose_url("wss://r.example/xrpc/com.atproto.sync.subscribeRepos", 1).endswith("subscribeRepos?cursor=1")
    assert firehose_url("wss://bsky.network/xrpc/") == "wss://bsky.network/xrpc/com.atproto.sync.subscribeRepos"


def test_cursor_keys_jetstream_by_wire_and_the_seq_wires_by_relay_host():
    # time_us is a time, valid on any Jetstream instance; an xrpc or firehose seq only where it was issued.
    assert (
        cursor_stream(JETSTREAM, DEFAULT_RELAY) == cursor_stream(JETSTREAM, "wss://js.example/subscribe") == "jetstream"
    )
    assert cursor_stream(FIREHOSE, "wss://bsky.network") == "firehose:bsky.network"
    assert cursor_stream(FIREHOSE, "wss://user:pw@Relay.Example:8443/xrpc/x?cursor=1") == "firehose:relay.example:8443"
    assert (
        cursor_stream(XRPC, "wss://jetstream.us-east.bsky.network/xrpc")
        == "jetstream-xrpc:jetstream.us-east.bsky.network"
    )
    assert JETSTREAM is SUBSCRIBE and SUBSCRIBE.time_cursor and not SUBSCRIBE.relay_specific
    assert FIREHOSE.relay_specific and not FIREHOSE.time_cursor
    assert XRPC.relay_specific and not XRPC.time_cursor and XRPC.takes_time and XRPC.subprotocols == ("xrpc.v1.json",)


# ------------------------------------------------------------------------------------------ xrpc wire
def test_an_xrpc_post_create_becomes_the_same_post_dict_as_on_the_subscribe_wire():
    message = post_event(T0 + 5, DID, "3kabc", "I can’t sleep", langs=["en-US"], reply=True)
    ((seq, frame),) = xrpc_frames([message], first_seq=812)
    event = parse_xrpc_frame(frame)
    assert event.cursor == seq == 812 and event.posts == parse_jetstream_frame(json.dumps(message)).posts
    assert parse_xrpc_frame(frame.encode()).posts[0]["reply"] is True


@pytest.mark.parametrize(
    "message", [identity_event(T0, DID), account_event(T0, DID), like_event(T0, DID, "l1"), delete_event(T0, DID, "r1")]
)
def test_xrpc_events_that_are_not_post_creates_advance_the_cursor_only(message):
    assert parse_xrpc_frame(xrpc_frames([message], first_seq=9)[0][1]) == Event(9, ())
    sync = {
        "$type": "network.bsky.jetstream.subscribeEvents#sync",
        "did": DID,
        "seq": 10,
        "time": "2025",
        "sync": {"did": DID, "seq": 3, "blocks": "", "rev": "x", "time": "2025"},
    }
    assert parse_xrpc_frame(xrpc_message(sync)) == Event(10, ())


def test_xrpc_info_frames_carry_no_cursor_and_error_frames_fail_the_connection():
    assert parse_xrpc_frame(xrpc_info("FutureCursor", "starting at the live tip")) == Event(None, ())
    with pytest.raises(RelayError, match="ConsumerTooSlow: fell behind"):
        parse_xrpc_frame(xrpc_error("ConsumerTooSlow", "fell behind"))


def _xrpc_broken(change) -> str:
    payload = json.loads(xrpc_frames([post_event(T0, DID, "r1", "text")])[0][1])
    change(payload)
    return json.dumps(payload)


@pytest.mark.parametrize(
    "frame",
    [
        "{not json",
        "[]",
        json.dumps({"$type": "message"}),
        json.dumps({"$type": "message", "payload": [1]}),
        json.dumps({"$type": "other", "payload": {}}),
        json.dumps(post_event(T0, DID, "r1", "a subscribe frame")),
        _xrpc_broken(lambda m: m["payload"].pop("seq")),
        _xrpc_broken(lambda m: m["payload"].update(seq="7")),
        _xrpc_broken(lambda m: m["payload"].update(seq=True)),
        _xrpc_broken(lambda m: m["payload"].update(seq=-1)),
        _xrpc_broken(lambda m: m["payload"].pop("$type")),
        _xrpc_broken(lambda m: m["payload"].update({"$type": "app.bsky.feed.post"})),
        _xrpc_broken(lambda m: m["payload"].pop("did")),
        _xrpc_broken(lambda m: m["payload"].update(rkey="")),
        _xrpc_broken(lambda m: m["payload"].pop("record")),
        _xrpc_broken(lambda m: m["payload"]["record"].pop("text")),
        _xrpc_broken(lambda m: m["payload"]["record"].update(langs="en")),
    ],
)
def test_malformed_xrpc_frames_raise_malformed_frame(frame):
    with pytest.raises(MalformedFrame):
        parse_xrpc_frame(frame)


def test_frames_built_by_atprotos_own_models_parse():
    # The SDK's models (atproto 0.0.73), dumped as the server sends them, read by our parser; and our test
    # relay's frames read by the SDK's parser, so both sides agree on the wire.
    from atproto_client import models
    from atproto_jetstream.models import parse_frame, parse_subscribe_events_message

    Events = models.NetworkBskyJetstreamSubscribeEvents
    record = models.AppBskyFeedPost.Record(
        text="panic attack again", created_at="2025-05-20T12:00:00.000Z", langs=["en"]
    )
    commit = Events.Commit(
        collection="app.bsky.feed.post",
        did=DID,
        operation="create",
        rev="3l3qo2vutsw2b",
        rkey="3kxyz",
        seq=77,
        time="2025-05-20T12:00:00.123456Z",
        cid="bafyreicid",
        record=record,
        witnessed_at="2025-05-20T12:00:00.123456Z",
    )
    frame = json.dumps(
        {"$type": "message", "payload": commit.model_dump(mode="json", by_alias=True, exclude_none=True)}
    )
    (post,) = parse_xrpc_frame(frame).posts
    assert parse_xrpc_frame(frame).cursor == 77 and post["text"] == "panic attack again"
    assert post["uri"] == f"at://{DID}/app.bsky.feed.post/3kxyz" and post["langs"] == ["en"]
    events = [post_event(T0, DID, "r1", "x"), identity_event(T0 + 1, DID), account_event(T0 + 2, DID)]
    parsed = [parse_subscribe_events_message(parse_frame(f)) for _, f in xrpc_frames(events)]
    assert [type(m) for m in parsed] == [Events.Commit, Events.Identity, Events.Account]
    assert [m.seq for m in parsed] == [1, 2, 3] and parsed[0].record.text == "x"
    assert isinstance(parse_subscribe_events_message(parse_frame(xrpc_info("OutdatedCursor", "m"))), Events.Info)
    assert parse_frame(xrpc_error("ConsumerTooSlow", "m")).error == "ConsumerTooSlow"


def test_xrpc_url_names_the_method_asks_for_posts_and_resumes_from_a_seq():
    method = "xrpc/network.bsky.jetstream.subscribeEvents"
    assert xrpc_url() == f"wss://jetstream.us-east.bsky.network/{method}?collections=app.bsky.feed.post"
    for relay in ("ws://127.0.0.1:9", "ws://127.0.0.1:9/", "ws://127.0.0.1:9/xrpc", f"ws://127.0.0.1:9/{method}"):
        assert xrpc_url(relay, 42) == f"ws://127.0.0.1:9/{method}?collections=app.bsky.feed.post&cursor=42"
    assert (
        xrpc_url("wss://p.example/js/?compress=false&collections=x&cursor=5")
        == f"wss://p.example/js/{method}?compress=false&collections=app.bsky.feed.post"
    )


def test_a_bare_host_gets_the_subscribe_path():
    assert (
        subscribe_url("ws://127.0.0.1:9", 1)
        == "ws://127.0.0.1:9/subscribe?wantedCollections=app.bsky.feed.post&cursor=1"
    )
    assert subscribe_url("wss://proxy.example/js").startswith("wss://proxy.example/js?")  # a proxy's own path


@pytest.mark.parametrize(
    "relay, wires",
    [
        (None, [SUBSCRIBE]),
        (DEFAULT_RELAY, [SUBSCRIBE]),
        ("ws://h:1/subscribe/", [SUBSCRIBE]),
        ("wss://jetstream.us-east.bsky.network/xrpc", [XRPC]),
        ("ws://h:1/xrpc/network.bsky.jetstream.subscribeEvents?cursor=3", [XRPC]),
        ("ws://h:1", [XRPC, SUBSCRIBE]),
        ("ws://h:1/", [XRPC, SUBSCRIBE]),
        ("wss://proxy.example/js", [XRPC, SUBSCRIBE]),
    ],
)
def test_auto_picks_the_wire_by_the_urls_path_and_tries_both_on_a_bare_host(relay, wires):
    assert list(choose_wires(relay, "auto")) == wires


def test_a_named_wire_is_used_as_named_and_a_contradicting_url_is_bad_input():
    assert choose_wires("ws://h:1", "subscribe") == (SUBSCRIBE,) and choose_wires("ws://h:1", XRPC) == (XRPC,)
    assert choose_wires(None, "xrpc") == (XRPC,) and choose_wires("wss://bsky.network", "firehose") == (FIREHOSE,)
    assert choose_wires("wss://bsky.network/xrpc", FIREHOSE) == (FIREHOSE,)  # the SDK's firehose base URI
    with pytest.raises(InputError, match="unknown wire 'v2': use auto, subscribe, xrpc or firehose"):
        choose_wires("ws://h:1", "v2")
    with pytest.raises(InputError, match="names the subscribe wire's path, not the xrpc wire's"):
        choose_wires("ws://h:1/subscribe", "xrpc")
    with pytest.raises(InputError, match="names the xrpc wire's path, not the subscribe wire's"):
        choose_wires("ws://h:1/xrpc", SUBSCRIBE)
    with pytest.raises(InputError, match="names the firehose"):
        choose_wires("ws://h:1/xrpc/com.atproto.sync.subscribeRepos", "auto")
    with pytest.raises(InputError, match="ws:// or wss://"):
        choose_wires("https://h/subscribe", "auto")


def test_a_firehose_commit_yields_its_post_creates_and_skips_other_records():
    frame = firehose_commit(
        77,
        DID,
        [("r1", post_record("panic attack", langs=["en"])), ("r2", post_record("a reply", reply=True))],
        likes=2,
    )
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
    for frame in (
        b"\x00garbage",
        "a text frame",
        no_seq,
        cut_car,
        other_car,
        libipld.encode_dag_cbor({"op": 1, "t": "#commit"}),
    ):
        with pytest.raises(MalformedFrame):
            parse_firehose_frame(frame)
