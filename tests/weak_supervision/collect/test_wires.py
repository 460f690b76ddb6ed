"""Both Jetstream wires against real websocket servers on 127.0.0.1: `auto` on a bare host (xrpc accepted; xrpc
refused with 404 or 400 and subscribe used, once), a relay that refuses both, the xrpc relay's handshake
refusals, atproto's own JetstreamClient reading the test relay, cursor keys across wires (an xrpc run seeded
from the subscribe wire's time; neither wire reads the other's cursor), and `--wire` bad input. No internet."""

from __future__ import annotations

import threading
import time

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from mhaudit.weak_supervision.collect.collector import (
    CollectOptions,
    Collector,
    PostFilter,
    RelayUnreachable,
)
from mhaudit.weak_supervision.collect.store import PostStore
from tests.weak_supervision.collect.stream_server import (
    POST,
    SUBPROTOCOL,
    XRPC,
    StreamServer,
    free_port,
    jetstream_frames,
    xrpc_frames,
)
from tests.weak_supervision.collect.test_collector import (
    FAST_RETRY,
    MH,
    REWIND_US,
    _bad,
    _cli,
    collect,
    stored_rkeys,
    stream,
)

XRPC_PATH = f"/xrpc/{XRPC}"


def _collector(store, relay, wire="auto", **options) -> Collector:
    opts = CollectOptions(**{"retry": FAST_RETRY, "duration_s": 20, **options})
    return Collector(store, PostFilter([MH]), wire=wire, relay=relay, options=opts, seed=0)


# ------------------------------------------------------------------------------------------ auto
def test_auto_on_a_bare_host_takes_the_xrpc_wire_when_the_relay_speaks_it(tmp_path):
    events, expected = stream(10)
    with StreamServer(xrpc_frames(events), wire="xrpc") as server, PostStore(tmp_path / "p.sqlite") as store:
        collector = _collector(store, server.base, max_posts=len(expected))
        assert collector.settle_wire() == "auto: the relay accepted xrpc" and collector.wire.name == "xrpc"
        collector.run()
        assert sorted(stored_rkeys(store)) == sorted(expected) and not server.refused
        assert server.requests == [{"collections": [POST]}] * 2  # the probe, then the run: no cursor yet
        assert store.cursors() == {f"jetstream-xrpc:127.0.0.1:{server.port}": len(events) - 1}


@pytest.mark.parametrize("status, via", [(404, "cli"), (400, "python")])
def test_auto_on_a_bare_host_falls_back_to_the_subscribe_wire_once_when_xrpc_is_refused(tmp_path, status, via):
    # A /subscribe relay answers the xrpc path with 404 (Jetstream's router) or, behind some proxies, 400.
    events, expected = stream(20)
    db = tmp_path / "p.sqlite"
    probes = 1 if via == "cli" else 0  # settle_wire() also opens (and closes) one subscribe connection
    with StreamServer(jetstream_frames(events), drops=[0] * probes + [40], wrong_path=status) as server:
        if via == "cli":  # settle_wire() before the run line, which names the wire it found
            result = _cli(
                "bluesky",
                "--db",
                db,
                "--lexicon",
                "mh",
                "--relay",
                server.base,
                "--duration",
                "20s",
                "--max-posts",
                len(expected),
            )
            assert result.exit_code == 0, result.output
            line = " ".join(result.stderr.split())
            assert f"subscribe wire at {server.base} (auto: the relay refused xrpc: HTTP {status})" in line
        else:  # run() alone falls back on its first refusal; the refusal is not a failure
            with PostStore(db) as store:
                stats = collect(store, server.base, max_posts=len(expected)).stats
                assert stats.failures == 1 and stats.connections == 2  # the drop only
        assert server.refused == [(XRPC_PATH, status)]  # once: the reconnect after the drop did not probe again
        assert [r.get("cursor") is None for r in server.requests] == [True] * (probes + 1) + [False]
    with PostStore(db) as store:
        assert sorted(stored_rkeys(store)) == sorted(expected) and set(store.cursors()) == {"jetstream"}


def test_a_relay_that_refuses_both_wires_stops_at_once_with_one_sentence(tmp_path):
    # A firehose relay serves only subscribeRepos: both Jetstream paths get 404, and retrying cannot help.
    with StreamServer([], wire="firehose") as server:
        start = time.monotonic()
        result = _cli("bluesky", "--db", tmp_path / "p.sqlite", "--lexicon", "mh", "--relay", server.base)
        _bad(
            result,
            f"the relay {server.base} refused both Jetstream wires (xrpc: HTTP 404, subscribe: HTTP 404)",
            "name the wire with --wire",
        )
        # one attempt per wire, so no retry and no backoff; the time bound is generous (a busy machine)
        assert [path for path, _ in server.refused] == [XRPC_PATH, "/subscribe"] and time.monotonic() - start < 60
        assert "run " not in result.stderr  # settled before the run line: no run was started
    with StreamServer([], wire="firehose") as server, PostStore(tmp_path / "q.sqlite") as store:
        with pytest.raises(RelayUnreachable, match=r"refused both Jetstream wires \(xrpc: HTTP 404, subscribe"):
            _collector(store, server.base).run()  # run() alone: the same, on its first two connects
        assert len(server.refused) == 2 and not server.requests


# ------------------------------------------------------------------------------- xrpc handshakes
def test_the_xrpc_relay_refuses_a_client_without_its_subprotocol_or_on_another_path(tmp_path):
    with StreamServer(xrpc_frames(stream(2)[0]), wire="xrpc") as server:
        for url, subprotocols in [(server.url, None), (server.base + "/subscribe", [SUBPROTOCOL])]:
            with pytest.raises(InvalidStatus) as refused:
                connect(url, subprotocols=subprotocols, open_timeout=120).close()
            assert refused.value.response.status_code == 400 and b"InvalidRequest" in refused.value.response.body
        with connect(server.url, subprotocols=[SUBPROTOCOL], open_timeout=120) as ws:
            assert ws.subprotocol == SUBPROTOCOL
        # The /subscribe wire named explicitly is refused like that on every attempt, and says why.
        with (
            PostStore(tmp_path / "p.sqlite") as store,
            pytest.raises(
                RelayUnreachable,
                match=r"4 failed attempts in a row, last: server rejected WebSocket connection: "
                r"HTTP 400 \(InvalidRequest: no such method or path: /subscribe\)",
            ),
        ):
            _collector(store, server.base, wire="subscribe").run()


def test_atprotos_jetstream_client_reads_the_test_relays_frames():
    # atproto's own client, pointed at the test relay (no compression: no dictionary fetch over HTTP).
    from atproto_client import models
    from atproto_jetstream import JetstreamClient

    events, expected = stream(3)
    with StreamServer(xrpc_frames(events), wire="xrpc") as server:
        client = JetstreamClient(
            params={"collections": [POST], "cursor": 1},
            base_uri=server.base + "/xrpc",
            compress=False,
            recv_timeout=120,
        )
        received = []

        def on_message(message):
            received.append(message)
            if len(received) == len(events) - 1:  # every event but the one like
                client.stop()

        thread = threading.Thread(target=client.start, args=(on_message,), daemon=True)
        thread.start()
        thread.join(timeout=120)  # it ends once the last event is read; the bound only stops a hang
        assert not thread.is_alive() and not server.refused
    Events = models.NetworkBskyJetstreamSubscribeEvents
    kinds = {type(m).__name__ for m in received}
    assert kinds == {"Commit", "Identity", "Account"} and client.cursor == len(events)
    posts = [m for m in received if isinstance(m, Events.Commit) and m.operation == "create"]
    assert {m.rkey for m in posts} >= set(expected) and all(
        isinstance(m.record, models.AppBskyFeedPost.Record) for m in posts
    )


# ---------------------------------------------------------------------------------------- cursors
def test_an_xrpc_run_starts_from_the_subscribe_wires_time_and_neither_wire_reads_the_others_seq(tmp_path):
    events, expected = stream(20)
    order = sorted(expected, key=expected.get)
    db = tmp_path / "p.sqlite"
    with (
        StreamServer(jetstream_frames(events)) as js,
        StreamServer(xrpc_frames(events), wire="xrpc") as xr,
        PostStore(db) as store,
    ):
        collect(store, js.url, max_posts=25)
        time_us = store.cursor("jetstream")
        assert time_us == expected[order[24]]
        # No xrpc cursor yet: the first xrpc subscription is that time, rewound, which the relay reads as a time.
        collector = _collector(store, xr.url, max_posts=20)
        assert collector.stats.cursor is None and collector.resume_cursor() == time_us - REWIND_US
        assert f"starting from the subscribe wire's saved time_us {time_us}" in collector.resume_note
        stats = collector.run()
        assert xr.requests[0]["cursor"] == [str(time_us - REWIND_US)] and stats.stored == 20
        seq = store.cursor(f"jetstream-xrpc:127.0.0.1:{xr.port}")
        assert sorted(stored_rkeys(store)) == sorted(order[:45]) and store.cursor("jetstream") == time_us
        # Each wire resumes from its own cursor: xrpc from its exact seq, subscribe from its time.
        stats = _collector(store, xr.url, max_posts=15).run()
        assert xr.requests[1]["cursor"] == [str(seq)] and stats.stored == 15 and store.count() == 60
        assert _collector(store, js.url).resume_cursor() == time_us - REWIND_US
    with PostStore(tmp_path / "fresh.sqlite") as fresh:  # only an xrpc seq saved: subscribe starts at the tip
        fresh.commit_batch([], 42, stream="jetstream-xrpc:js.example")
        subscribe = _collector(fresh, "wss://js.example/subscribe")
        assert subscribe.resume_cursor() is None and "jetstream-xrpc:js.example" in subscribe.resume_note


# ------------------------------------------------------------------------------------- bad input
def test_cli_wire_bad_input_is_one_sentence_exit_2(tmp_path):
    dead = f"ws://127.0.0.1:{free_port()}"
    base = ["bluesky", "--db", tmp_path / "p.sqlite", "--lexicon", "mh"]
    _bad(_cli(*base, "--wire", "xrpc", "--firehose"), "--wire xrpc and --firehose exclude each other")
    _bad(_cli(*base, "--wire", "jetstream2"), "unknown --wire 'jetstream2': use auto, subscribe or xrpc")
    _bad(
        _cli(*base, "--wire", "xrpc", "--relay", dead + "/subscribe"),
        "names the subscribe wire's path, not the xrpc wire's",
    )
    _bad(_cli(*base, "--relay", dead + "/xrpc/com.atproto.sync.subscribeRepos"), "names the firehose", "--firehose")
    _bad(
        _cli(*base, "--wire", "xrpc", "--relay", dead, "--max-retries", 2),
        "cannot reach the relay",
        "2 failed attempts",
    )
    with PostStore(tmp_path / "p.sqlite") as store:  # created by the last run only, which stored nothing
        assert store.count() == 0 and store.cursors() == {}
