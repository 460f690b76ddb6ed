"""The collection loop against a real websocket server on 127.0.0.1: filters, batching, reconnects (on both
Jetstream wires), stops, resume, the shortened rewind after overlap-only connections (on a simulated clock and
against the server), the CLI end to end, bad input, and a kill -9 of the collector process on both wires.
No internet."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from bisect import bisect_left
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect.collector import (
    CollectOptions,
    Collector,
    PostFilter,
    RelayUnreachable,
    RetryPolicy,
    parse_duration,
)
from mhaudit.weak_supervision.collect.jetstream import FIREHOSE, SUBSCRIBE
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon
from tests.weak_supervision.collect.stream_server import (
    POST,
    T0,
    StreamServer,
    account_event,
    delete_event,
    firehose_commit,
    firehose_error,
    firehose_identity,
    free_port,
    identity_event,
    jetstream_frames,
    like_event,
    post_event,
    post_record,
    wire_frames,
    xrpc_error,
)

runner = CliRunner()
MH = Lexicon.load("mh")
REWIND_US = 5_000_000  # the default rewind (5 s) in time_us
FAST_RETRY = RetryPolicy(max_failures=4, base_s=0.02, max_s=0.1)
MATCHING = [
    "I can’t sleep again tonight",
    "another panic attack at work",
    "my therapist moved my appointment",
    "so ANXIOUS about tomorrow",
    "Insomnia again, 4am",
]
PLAIN = ["great coffee this morning", "the train is late again", "new album out today!", "diet starts monday"]


def stream(cycles: int) -> tuple[list[dict], dict[str, int]]:
    """Events in the recorded Jetstream format, 8 per cycle, and the rkeys (-> time_us) the default
    options must keep (English or en-GB, replies kept, MH lexicon)."""
    events, expected = [], {}
    for c in range(cycles):
        t, did = T0 + c * 8_000, f"did:plc:user{c % 13:04d}"
        m, p = MATCHING[c % len(MATCHING)], PLAIN[c % len(PLAIN)]
        events += [
            post_event(t, did, f"a{c}", m),  # kept
            post_event(t + 1000, did, f"b{c}", p),  # no lexicon match
            like_event(t + 2000, did, f"l{c}") if c % 2 else identity_event(t + 2000, did),
            post_event(t + 3000, did, f"c{c}", m, langs=["de"]),  # not English
            post_event(t + 4000, did, f"d{c}", m, reply=True),  # a reply: kept by default
            account_event(t + 5000, did) if c % 2 else delete_event(t + 5000, did, f"a{c}"),
            post_event(t + 6000, did, f"e{c}", m, langs=["en-GB", "fr"]),  # kept: en-GB is English
            post_event(t + 7000, did, f"f{c}", m, langs=[]),  # no langs: not kept
        ]
        expected.update({f"a{c}": t, f"d{c}": t + 4000, f"e{c}": t + 6000})
    return events, expected


def on_wire(wire: str, events: list[dict], expected: dict[str, int]) -> tuple[list, dict[str, int]]:
    """The events as `wire`'s relay sends them, and the expected posts' cursors on that wire (the subscribe
    wire's time_us, or the xrpc seq)."""
    frames = wire_frames(wire, events)
    cursors = {
        e["commit"]["rkey"]: cursor
        for e, (cursor, _) in zip(events, frames)
        if e["kind"] == "commit" and e["commit"]["operation"] == "create" and e["commit"]["collection"] == POST
    }
    return frames, {k: cursors[k] for k in expected}


def saved_cursor(store: PostStore) -> int | None:
    """The one cursor the store holds, whichever wire's key it is under."""
    (cursor,) = store.cursors().values() or [None]
    return cursor


def stored_rkeys(store: PostStore) -> list[str]:
    return [uri.rsplit("/", 1)[1] for (uri,) in store._conn.execute("SELECT uri FROM posts")]


def collect(store, server_url, *, lexicons=(MH,), wire=None, **options) -> Collector:
    opts = CollectOptions(**{"retry": FAST_RETRY, "duration_s": 20, **options})
    post_filter = PostFilter(list(lexicons), langs=opts.langs, replies=opts.replies)
    extra = {"wire": wire} if wire is not None else {}
    collector = Collector(store, post_filter, relay=server_url, options=opts, seed=0, **extra)
    collector.run()
    return collector


# ------------------------------------------------------------------------------------------- filter
def test_filter_keeps_wanted_languages_replies_by_option_and_records_terms_and_categories():
    both = PostFilter([Lexicon.load("si"), MH])

    def post(text, langs=("en",), reply=False):
        return {
            "uri": "at://did:plc:x/app.bsky.feed.post/1",
            "did": "did:plc:x",
            "text": text,
            "langs": list(langs),
            "reply": reply,
        }

    kept = both(post("Feeling hopeless and I can’t sleep, I can't sleep at all"))
    assert kept["terms"] == ["hopeless", "can't sleep"] and kept["categories"] == ["hopelessness", "insomnia"]
    assert both(post("great coffee")) is None
    assert both(post("panic attack", langs=["de"])) is None and both(post("panic attack", langs=[])) is None
    assert both(post("panic attack", langs=["EN-us"]))["categories"] == ["panic"]
    assert PostFilter([MH], langs=())(post("panic", langs=[])) is not None  # empty = every language
    assert PostFilter([MH], langs=["de", "fr"])(post("panic", langs=["de-AT"])) is not None
    assert PostFilter([MH], replies=False)(post("panic", reply=True)) is None
    with pytest.raises(InputError, match="at least one lexicon"):
        PostFilter([])


@pytest.mark.parametrize(
    "text, seconds",
    [("30s", 30), ("10m", 600), ("2h", 7200), ("14d", 1_209_600), ("90", 90), ("1.5h", 5400), (" 3D ", 259_200)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["abc", "10w", "-1s", "0s", "", "infh"])
def test_bad_durations_are_bad_input(text):
    with pytest.raises(InputError, match="duration"):
        parse_duration(text)


def test_retry_delays_grow_exponentially_within_the_jitter_band_and_cap():
    policy, rng = RetryPolicy(base_s=1.0, max_s=60.0), __import__("random").Random(1)
    for failure, ceiling in [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (12, 60)]:
        delays = [policy.delay(failure, rng) for _ in range(200)]
        assert ceiling / 2 <= min(delays) and max(delays) <= ceiling
        assert max(delays) - min(delays) > ceiling / 4  # jittered, not constant


# ------------------------------------------------------------------------------- against the server
def test_collects_exactly_the_matching_posts_and_saves_the_last_cursor(tmp_path):
    events, expected = stream(40)
    with StreamServer(jetstream_frames(events)) as server, PostStore(tmp_path / "p.sqlite") as store:
        collector = collect(store, server.url, max_posts=len(expected))
        stats = collector.stats
        assert sorted(stored_rkeys(store)) == sorted(expected) and store.count() == 120
        assert stats.stop_reason == "max_posts" and stats.stored == 120 and stats.duplicates == 0
        # The server honoured wantedCollections: likes were not sent; the rest were, up to the 120th match.
        assert stats.cursor == max(expected.values()) == store.cursor()
        assert stats.events == 40 * 8 - 20 - 1 and stats.posts == 40 * 6 - 1 and stats.matched == 120
        assert server.requests == [{"wantedCollections": ["app.bsky.feed.post"]}]
        posts = store.posts().set_index(store.posts()["uri"].str.rsplit("/", n=1).str[1])
        assert posts.loc["a0", "terms"] == ["can't sleep"] and posts.loc["a0", "categories"] == ["insomnia"]
        assert posts.loc["e0", "langs"] == ["en-GB", "fr"] and posts["author"].str.startswith("a-").all()


def test_no_replies_option_and_both_lexicons(tmp_path):
    events, expected = stream(10)
    events.append(post_event(T0 + 10**7, "did:plc:si", "si1", "some days I want to die"))
    with StreamServer(jetstream_frames(events)) as server, PostStore(tmp_path / "p.sqlite") as store:
        collect(store, server.url, lexicons=(Lexicon.load("si"), MH), replies=False, max_posts=21)
        assert sorted(stored_rkeys(store)) == sorted([k for k in expected if k[0] != "d"] + ["si1"])
        assert store.summary()["per_category"].set_index("category").loc["self_harm_death_wish", "posts"] == 1


@pytest.mark.parametrize("wire", ["subscribe", "xrpc"])
def test_reconnects_after_drops_with_no_gap_and_no_duplicate(tmp_path, wire):
    events, expected = stream(30)
    frames, _ = on_wire(wire, events, expected)
    with StreamServer(frames, drops=[37, 55], wire=wire) as server, PostStore(tmp_path / "p.sqlite") as store:
        # rewind_s=0: resume at the exact boundary, to check it; the default rewind is tested below (the xrpc
        # wire's seq is exact and never rewound).
        stats = collect(store, server.url, max_posts=len(expected), batch_size=7, rewind_s=0).stats
        assert sorted(stored_rkeys(store)) == sorted(expected) and store.count() == 90
        assert stats.connections == 3 and stats.failures == 2 and server.sent[:2] == [37, 55]
        # Each reconnect resumes at the last event received (both wires replay it, inclusive: one repeat).
        selected = [
            c
            for e, (c, _) in zip(events, frames)  # the cursors of what the server sends
            if e.get("commit", {}).get("collection", POST) == POST
        ]
        assert int(server.requests[1]["cursor"][0]) == selected[36]
        assert int(server.requests[2]["cursor"][0]) == selected[36 + 55 - 1]
        assert (
            stats.events
            == selected.index(frames[[e.get("commit", {}).get("rkey") for e in events].index("e29")][0]) + 3
        )
        cursor = "jetstream" if wire == "subscribe" else f"jetstream-xrpc:127.0.0.1:{server.port}"
        assert set(store.cursors()) == {cursor}


def test_malformed_frames_are_counted_and_skipped(tmp_path):
    events, expected = stream(5)
    frames = jetstream_frames(events)
    bad = [
        "{not json",
        "[]",
        '{"time_us": "soon", "kind": "commit"}',
        b"\xff\x00binary",
        '{"did": "did:plc:x", "time_us": 1730000000000001, "kind": "commit", "commit": {"operation": '
        '"create", "collection": "app.bsky.feed.post", "rkey": "zz", "record": {"text": 5}}}',
    ]
    for i, frame in enumerate(bad):
        frames.insert(3 + 6 * i, (frames[2 + 6 * i][0], frame))
    with StreamServer(frames) as server, PostStore(tmp_path / "p.sqlite") as store:
        stats = collect(store, server.url, max_posts=len(expected)).stats
        assert stats.malformed == 5 and sorted(stored_rkeys(store)) == sorted(expected)


def test_stops_after_max_posts_exactly_and_a_second_run_resumes_from_the_saved_cursor(tmp_path):
    events, expected = stream(20)
    order = sorted(expected, key=expected.get)
    with StreamServer(jetstream_frames(events)) as server, PostStore(tmp_path / "p.sqlite") as store:
        stats = collect(store, server.url, max_posts=25, batch_size=4).stats
        assert stats.stored == 25 and stats.stop_reason == "max_posts"
        assert sorted(stored_rkeys(store)) == sorted(order[:25]) and store.cursor() == expected[order[24]]
        stats = collect(store, server.url, max_posts=60 - 25).stats
        # Resumed 5 s before the saved cursor (the whole 0.16 s stream): the 25 stored posts come again and
        # are ignored, none is stored twice, and the saved cursor never went back.
        assert server.requests[1]["cursor"] == [str(expected[order[24]] - REWIND_US)]
        assert stats.stored == 35 and stats.duplicates == 25 and store.count() == 60
        assert sorted(stored_rkeys(store)) == sorted(expected) and store.cursor() == max(expected.values())


def test_stops_after_the_duration_and_keeps_the_cursor_moving_without_matches(tmp_path):
    events = [post_event(T0 + i, "did:plc:x", f"p{i}", "nothing to see") for i in range(50)]
    with StreamServer(jetstream_frames(events)) as server, PostStore(tmp_path / "p.sqlite") as store:
        start = time.monotonic()
        stats = collect(store, server.url, duration_s=0.6).stats
        assert 0.6 <= time.monotonic() - start < 3 and stats.stop_reason == "duration"
        assert store.count() == 0 and store.cursor() == T0 + 49 and stats.events == 50


def test_refused_connections_are_retried_with_backoff(tmp_path):
    events, expected = stream(5)
    with StreamServer(jetstream_frames(events), refuse=3) as server, PostStore(tmp_path / "p.sqlite") as store:
        stats = collect(store, server.url, max_posts=15).stats
        assert stats.failures == 3 and stats.connections == 1 and store.count() == 15


def test_an_unreachable_relay_gives_up_after_the_stated_number_of_failures(tmp_path):
    with PostStore(tmp_path / "p.sqlite") as store:
        start = time.monotonic()
        with pytest.raises(
            RelayUnreachable,
            match=r"cannot reach the relay ws://127\.0\.0\.1:\d+/subscribe "
            r"\(4 failed attempts in a row",
        ):
            collect(store, f"ws://127.0.0.1:{free_port()}/subscribe")
        assert time.monotonic() - start < 2 and store.count() == 0 and store.cursor() is None


def test_a_locked_store_stops_the_run_without_saving_a_cursor(tmp_path):
    db = tmp_path / "p.sqlite"
    events, _ = stream(3)
    with StreamServer(jetstream_frames(events)) as server, PostStore(db, timeout=0.2) as store:
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(InputError, match="cannot write to the post store"):
            collect(store, server.url, max_posts=9)
        blocker.execute("ROLLBACK")
        blocker.close()
        assert store.count() == 0 and store.cursor() is None


def test_firehose_wire_end_to_end_with_a_drop(tmp_path):
    frames, expected = [], set()
    for seq in range(1, 41):
        did = f"did:plc:fh{seq % 5}"
        if seq % 4 == 0:
            frames.append((seq, firehose_identity(seq, did)))
            continue
        posts = [
            (f"p{seq}", post_record(MATCHING[seq % 5] if seq % 2 else PLAIN[seq % 4])),
            (f"q{seq}", post_record("so anxious", langs=["ja"])),
        ]
        frames.append((seq, firehose_commit(seq, did, posts, likes=1)))
        expected |= {f"p{seq}"} if seq % 2 else set()
    with StreamServer(frames, drops=[11], wire="firehose") as server, PostStore(tmp_path / "p.sqlite") as store:
        stats = collect(store, server.base, wire=FIREHOSE, max_posts=len(expected)).stats
        assert sorted(stored_rkeys(store)) == sorted(expected) and stats.duplicates == 0
        assert server.requests[1]["cursor"] == ["11"] and store.cursor() is None
        assert store.cursors() == {f"firehose:127.0.0.1:{server.port}": 39}  # a seq is kept per relay


# ------------------------------------------------------------------------ failures that are not progress
@pytest.mark.parametrize("case", ["error_frame", "xrpc_error_frame", "malformed_frames"])
def test_a_relay_that_answers_every_connect_without_a_valid_event_is_given_up_on(tmp_path, case):
    # A relay that rejects the cursor with an error frame, or sends only malformed frames and drops, on every
    # connect: each connect is a failure, so the run stops after max_failures instead of retrying forever.
    if case == "error_frame":
        server = StreamServer([(1, firehose_error("FutureCursor", "cursor in the future"))], wire="firehose")
        wire, last = FIREHOSE, "the relay sent an error frame: FutureCursor"
    elif case == "xrpc_error_frame":
        server = StreamServer([(1, xrpc_error("ConsumerTooSlow", "the consumer fell behind"))], wire="xrpc")
        wire, last = "xrpc", "the relay sent an error frame: ConsumerTooSlow: the consumer fell behind"
    else:  # two malformed frames, then an abrupt drop
        server = StreamServer([(T0, "{not json"), (T0, b"\xff\x00"), (T0, "[]")], drops=[2] * 20)
        wire, last = None, "no close frame"
    with server, PostStore(tmp_path / "p.sqlite") as store:
        relay = server.base if wire else server.url
        start = time.monotonic()
        with pytest.raises(RelayUnreachable, match=rf"\(4 failed attempts in a row, last: .*{last}"):
            collect(store, relay, wire=wire, duration_s=5)
        assert len(server.requests) == 4 and time.monotonic() - start < 3
        assert store.count() == 0 and store.cursors() == {}


def test_a_relay_that_only_replays_the_overlap_and_drops_is_given_up_on(tmp_path):
    # Events at or before the saved cursor (the rewound overlap) are valid but are not progress: a relay that
    # sends only them and then drops, on every connect, is a run of failures. Each such connection halves the
    # next rewind (5, 2.5, 1.25, 0.625 s), but this relay has nothing past the cursor at all.
    events, expected = stream(3)
    frames = jetstream_frames(events)
    db = tmp_path / "p.sqlite"
    with StreamServer(frames) as server, PostStore(db) as store:
        collect(store, server.url, max_posts=len(expected))
        saved = store.cursor()
    overlap = sum(1 for t, payload in frames if t <= saved and "app.bsky.feed.like" not in payload)
    with StreamServer(frames, drops=[overlap] * 20) as server, PostStore(db) as store:
        with pytest.raises(RelayUnreachable, match=r"4 failed attempts in a row"):
            collect(store, server.url, duration_s=5)
        assert [int(r["cursor"][0]) for r in server.requests] == [saved - REWIND_US // 2**i for i in range(4)]
        assert server.sent == [overlap] * 4 and store.count() == len(expected) and store.cursor() == saved


class SimRelay:
    """A subscribe-wire relay on a simulated clock, for the rewind rule: it serves `times` (one matching post
    each, rkey p<i>) from the cursor a connection asks for, one frame per `spacing_s` of the clock, and drops a
    connection after `per_connection` frames; at the end of the stream it idles like a live tail. Waiting
    (backoff) only moves the clock: nothing really sleeps. `rewinds`: how far before the newest event sent so
    far each resumed subscription started, in seconds."""

    def __init__(self, times: list[int], per_connection: int, spacing_s: float, newest: int | None = None):
        self.times, self.per_connection, self.spacing_s = times, per_connection, spacing_s
        self.now, self.newest, self.connections, self.rewinds = 0.0, newest, 0, []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def connect(self, url: str):
        self.connections += 1
        cursor = parse_qs(urlsplit(url).query).get("cursor")
        start = bisect_left(self.times, int(cursor[0])) if cursor else 0  # inclusive replay from the cursor
        if cursor and self.newest is not None:
            self.rewinds.append((self.newest - int(cursor[0])) / 1e6)
        return _SimConnection(self, range(start, min(start + self.per_connection, len(self.times))))


class _SimConnection:
    def __init__(self, relay: SimRelay, indices: range):
        self.relay, self.indices = relay, iter(indices)
        self.drops = len(indices) == relay.per_connection  # a full share is followed by a drop, else the tip

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def recv(self, timeout: float) -> str:
        from websockets.exceptions import ConnectionClosedError

        i = next(self.indices, None)
        if i is None:
            if self.drops:
                raise ConnectionClosedError(None, None)
            self.relay.now += timeout
            raise TimeoutError
        self.relay.now += self.relay.spacing_s
        self.relay.newest = max(self.relay.newest or 0, self.relay.times[i])
        return jetstream_frames([post_event(self.relay.times[i], "did:plc:sim", f"p{i}", MATCHING[0])])[0][1]


class SimCollector(Collector):
    """The real collector, connected to a SimRelay and run on its clock."""

    def __init__(self, store, relay: SimRelay, **options):
        super().__init__(
            store,
            PostFilter([MH]),
            wire=SUBSCRIBE,
            relay="ws://sim.invalid/subscribe",
            seed=0,
            clock=relay.clock,
            sleep=relay.sleep,
            options=CollectOptions(**options),
        )
        self._relay = relay

    def _connect(self, url: str):
        return self._relay.connect(url)


def test_overlap_only_connections_shorten_the_rewind_so_a_resumed_collector_always_progresses(tmp_path):
    # 100 events/s and a drop every 500: each connection holds exactly the 5 s rewind window, so a resumed
    # collector with a fixed rewind receives only overlap before every drop and gives up (max_failures).
    done, n = 1_000, 6_000
    times = [T0 + i * 10_000 for i in range(n)]
    with PostStore(tmp_path / "p.sqlite") as store:
        SimCollector(store, SimRelay(times[:done], done, 0.01), max_posts=done).run()  # a first run: 0-999
        assert store.count() == done and store.cursor() == times[done - 1]
        relay = SimRelay(times, per_connection=500, spacing_s=0.01, newest=times[done - 1])
        stats = SimCollector(store, relay, max_posts=n - done).run()  # 5,000 more events; no RelayUnreachable
        assert sorted(stored_rkeys(store)) == sorted(f"p{i}" for i in range(n))  # 0 lost
        assert store.count() == n and stats.stored == n - done and stats.duplicates > 0  # 0 stored twice
        assert store.cursor() == times[-1] and stats.stop_reason == "max_posts"
        # 5 s brings only overlap, so the next connect rewinds 2.5 s and progresses; then the full 5 s again.
        assert relay.rewinds[:4] == [5.0, 2.5, 5.0, 2.5] and set(relay.rewinds) == {5.0, 2.5}
        assert stats.failures == relay.connections - 1 and relay.now < 600  # simulated seconds


@pytest.mark.parametrize("wire", ["subscribe", "xrpc"])
def test_a_relay_that_drops_every_rewind_window_is_collected_in_full_on_both_wires(tmp_path, wire):
    # The same rule against the real server: 10 events/s, a drop every 50 events (5 s of them).
    events = [post_event(T0 + i * 100_000, "did:plc:x", f"p{i}", MATCHING[i % 5]) for i in range(400)]
    frames, _ = on_wire(wire, events, {})
    with StreamServer(frames, drops=[50] * 100, wire=wire) as server, PostStore(tmp_path / "p.sqlite") as store:
        stats = collect(store, server.url, max_posts=400).stats
        assert sorted(stored_rkeys(store)) == sorted(f"p{i}" for i in range(400)) and stats.stored == 400
        starts = [int(r["cursor"][0]) for r in server.requests[1:]]
        if wire == "subscribe":  # full rewind after progress, halved after an overlap-only connection
            assert [(frames[49][0] - starts[0]) / 1e6, (frames[49][0] - starts[1]) / 1e6] == [5.0, 2.5]
        else:  # an exact seq: each reconnect resumes at the last event, 49 new events per connection
            assert starts == [50 + 49 * i for i in range(len(starts))]


def test_a_dropped_connection_resumes_5_s_early_so_a_late_event_is_not_lost_and_nothing_is_stored_twice(tmp_path):
    # Connection 0 misses a post whose time_us lies just before the last event it delivered (it reached the
    # relay's replay log late), then drops. Resuming at the exact cursor would skip that post for good.
    events, expected = stream(30)
    selected = [
        e
        for e in events  # what the server sends for wantedCollections=app.bsky.feed.post
        if e.get("commit", {}).get("collection", "app.bsky.feed.post") == "app.bsky.feed.post"
    ]
    late = next(e for e in reversed(selected[30:39]) if e.get("commit", {}).get("rkey", "") in expected)
    late_rkey = late["commit"]["rkey"]
    last = selected[40]["time_us"]  # connection 0 sends 40 frames (the late one skipped), then drops
    for rewind_s, gap in [(5.0, set()), (0.0, {late_rkey})]:
        server = StreamServer(jetstream_frames(events), drops=[40], missing={0: {late["time_us"]}})
        with server, PostStore(tmp_path / f"rewind{rewind_s}.sqlite") as store:
            stats = collect(store, server.url, max_posts=len(expected) - len(gap), rewind_s=rewind_s).stats
            start = last - round(rewind_s * 1e6)
            assert server.requests[1]["cursor"] == [str(start)]
            assert set(stored_rkeys(store)) == set(expected) - gap  # no gap with the rewind
            assert store.count() == len(expected) - len(gap)  # and no post stored twice
            # The overlap's posts that connection 0 had stored came again and were ignored.
            replayed = {k for k, t in expected.items() if start <= t <= last and k != late_rkey}
            assert stats.duplicates == len(replayed) and (len(replayed) > 10 if rewind_s else True)
            assert stats.cursor == store.cursor() == max(expected.values())


def test_a_firehose_cursor_is_kept_per_relay_and_another_relay_starts_fresh_with_a_note(tmp_path):
    db = tmp_path / "posts.sqlite"

    def relay_frames(prefix, n):
        frames, keys = [], []
        for seq in range(1, n + 1):
            frames.append(
                (
                    seq,
                    firehose_commit(
                        seq, f"did:plc:{prefix}{seq % 3}", [(f"{prefix}{seq}", post_record(MATCHING[seq % 5]))]
                    ),
                )
            )
            keys.append(f"{prefix}{seq}")
        return frames, keys

    frames_a, keys_a = relay_frames("a", 12)
    frames_b, keys_b = relay_frames("b", 5)  # relay B's seq 1..5 are not relay A's seq 1..5
    with StreamServer(frames_a, wire="firehose") as a, StreamServer(frames_b, wire="firehose") as b:
        base = ["bluesky", "--db", db, "--lexicon", "mh", "--firehose", "--duration", "20s"]
        result = _cli(*base, "--relay", a.base, "--max-posts", 8)
        assert result.exit_code == 0, result.output
        result = _cli(*base, "--relay", b.base, "--max-posts", 5)
        assert result.exit_code == 0, result.output
        assert "cursor" not in b.requests[0]  # not A's seq 8
        note = (
            f"note: starting at the live tip of 127.0.0.1:{b.port}: the store's saved firehose cursor "
            f"belongs to 127.0.0.1:{a.port}"
        )
        assert note in " ".join(result.stderr.split()), result.stderr
        result = _cli(*base[:-2], "--duration", "0.5s", "--relay", a.base)
        assert result.exit_code == 0 and "note:" not in result.stderr
        assert "resuming from cursor 8;" in " ".join(result.stderr.split())
        assert a.requests[1]["cursor"] == ["8"]  # back on relay A: its own seq, exact (no rewind on seq)
        hosts = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
    with PostStore(db) as store:
        assert sorted(stored_rkeys(store)) == sorted(keys_a + keys_b)
        assert store.cursors() == {f"firehose:{hosts[0]}": 12, f"firehose:{hosts[1]}": 5}


def test_a_firehose_cursor_saved_without_its_relay_is_adopted_only_for_the_relay_every_run_used(tmp_path):
    # Stores written before cursors were keyed by relay hold one 'firehose' row.
    with PostStore(tmp_path / "p.sqlite") as store:
        store.commit_batch([], 500, stream="firehose")
        store.start_run("r1", relay_url="wss://relay-a.example", options={"wire": "firehose"})
        same = Collector(store, PostFilter([MH]), wire=FIREHOSE, relay="wss://relay-a.example/")
        assert same.stats.cursor == 500 and same.resume_note == "" and same.resume_cursor() == 500
        other = Collector(store, PostFilter([MH]), wire=FIREHOSE, relay="wss://relay-b.example")
        assert other.stats.cursor is None and "an unrecorded relay" in other.resume_note
        store.start_run("r2", relay_url="wss://relay-b.example", options={"wire": "firehose"})
        mixed = Collector(store, PostFilter([MH]), wire=FIREHOSE, relay="wss://relay-a.example")
        assert mixed.stats.cursor is None and "relay-a.example" in mixed.resume_note  # ambiguous: fresh


# --------------------------------------------------------------------------------------------- CLI
def _cli(*args):
    return runner.invoke(app, ["collect", *map(str, args)])


def test_cli_collects_prints_the_summary_and_resumes(tmp_path):
    db = tmp_path / "posts.sqlite"
    events, expected = stream(20)
    with StreamServer(jetstream_frames(events)) as server:
        command = ["bluesky", "--db", db, "--lexicon", "mh", "--relay", server.url, "--duration", "20s", "--no-replies"]
        result = _cli(*command, "--max-posts", 25)
        assert result.exit_code == 0, result.output
        assert "25 stored" in result.stdout and "stopped (max_posts)" in result.stdout
        assert "Posts per category" in result.stdout and "insomnia" in result.stdout
        assert "starting at the live tip" in result.stderr
        result = _cli(*command, "--max-posts", 15)
        assert result.exit_code == 0, result.output
        assert "resuming from cursor" in result.stderr and "5 s earlier" in " ".join(result.stderr.split())
        assert "15 stored" in result.stdout
    with PostStore(db) as store:
        no_replies = sorted(k for k in expected if not k.startswith("d"))
        assert sorted(stored_rkeys(store)) == no_replies and store.count() == 40
        runs = store._conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        assert runs == 2
    result = _cli("summary", "--db", db)
    assert result.exit_code == 0 and "40 posts in" in result.stdout and "Posts per day" in result.stdout


def _bad(result, *fragments):
    assert result.exit_code == 2, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in last, last


def test_cli_bad_input_is_one_sentence_exit_2_and_loses_nothing(tmp_path):
    db = tmp_path / "posts.sqlite"
    events, _ = stream(5)
    with StreamServer(jetstream_frames(events)) as server:
        assert (
            _cli(
                "bluesky", "--db", db, "--lexicon", "mh", "--relay", server.url, "--max-posts", 10, "--duration", "20s"
            ).exit_code
            == 0
        )
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[lexicon\nname = ")
    empty = tmp_path / "empty.toml"
    empty.write_text('[lexicon]\nname = "e"\nversion = "1"\n')
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_text("this is not a database\n" * 20)
    dead = f"ws://127.0.0.1:{free_port()}/subscribe"
    base = ["bluesky", "--db", db, "--relay", dead]
    _bad(_cli(*base, "--lexicon", bad_toml), "bad.toml", "not a valid UTF-8 TOML lexicon")
    _bad(_cli(*base, "--lexicon", empty), "empty.toml", "no categories")
    _bad(_cli(*base, "--lexicon", tmp_path / "none.toml"), "none.toml", "cannot read the lexicon")
    _bad(_cli(*base), "at least one lexicon")
    _bad(_cli(*base, "--lexicon", "mh", "--duration", "soon"), "duration 'soon'")
    _bad(_cli("bluesky", "--db", db, "--lexicon", "mh", "--relay", "http://127.0.0.1:1/"), "ws:// or wss://")
    _bad(_cli("bluesky", "--db", corrupt, "--lexicon", "mh", "--relay", dead), "corrupt.sqlite", "not an SQLite")
    _bad(_cli(*base, "--lexicon", "mh", "--max-retries", 2), "cannot reach the relay", "2 failed attempts")
    _bad(_cli(*base, "--lexicon", "mh", "--rewind", -1), "--rewind must be 0 or more seconds")
    _bad(_cli("summary", "--db", tmp_path / "missing.sqlite"), "no such post store")
    with PostStore(db) as store:
        assert store.count() == 10  # every failed run left the stored posts as they were


@pytest.mark.parametrize("url", ["mysql://mhaudit:s3cret@db.example:3306/posts", "sqlite:///posts.sqlite"])
def test_a_database_url_other_than_postgresql_is_refused_with_one_sentence(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    scheme = url.split(":", 1)[0]
    for command in (["bluesky", "--db", url, "--lexicon", "mh"], ["summary", "--db", url]):
        result = _cli(*command)
        _bad(result, f"{scheme}://", "of a kind the post store does not support", "give a file path")
        assert "s3cret" not in result.output  # a password in the URL is never echoed
    with pytest.raises(InputError, match="of a kind the post store does not support"):
        PostStore(url)
    assert list(tmp_path.iterdir()) == []  # nothing was created


# ------------------------------------------------------------------------------------------ kill -9
def _count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM posts").fetchone()[0]
    except sqlite3.Error:
        return 0  # not created yet


def _run_until(command, env, db: Path, at_least: int, sig: int) -> int:
    """Start the collector, send `sig` once `at_least` posts are stored; return its exit status."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120  # the event is the row count; the bound only stops a hang
        while _count(db) < at_least and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        os.kill(proc.pid, sig)
        return proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()


def _stored_up_to_cursor(db: Path, expected: dict[str, int]) -> tuple[int, set[str]]:
    with PostStore(db) as store:
        cursor, stored = saved_cursor(store), set(stored_rkeys(store))
    # Exactly the matching posts up to the saved cursor: nothing after it, nothing before it missing.
    assert stored == {k for k, t in expected.items() if t <= cursor}
    return cursor, stored


@pytest.mark.parametrize("wire", ["subscribe", "xrpc"])
def test_sigterm_then_kill_9_mid_stream_then_restart_stores_exactly_the_expected_posts(tmp_path, wire):
    db = tmp_path / "posts.sqlite"
    events, expected = stream(150)  # 1,200 events, 450 matching posts
    frames, expected = on_wire(wire, events, expected)  # rkey -> time_us, or -> seq on the xrpc wire
    rewind = REWIND_US if wire == "subscribe" else 0  # an xrpc seq is exact: resumed as it is
    env = {**os.environ, "COLUMNS": "200"}
    with StreamServer(frames, delay_s=0.002, wire=wire) as server:
        command = [
            sys.executable,
            "-m",
            "mhaudit",
            "collect",
            "bluesky",
            "--db",
            str(db),
            "--lexicon",
            "mh",
            "--relay",
            server.url,
            "--batch-size",
            "10",
            "--duration",
            "60s",
        ]  # auto: the wire by the path
        # SIGTERM: the pending batch is committed and the run ends normally.
        assert _run_until(command, env, db, 30, signal.SIGTERM) == 0
        cursor, stored = _stored_up_to_cursor(db, expected)
        assert 30 <= len(stored) < 450
        # kill -9 mid-stream: only the batch in flight is lost, with its cursor.
        assert _run_until(command, env, db, len(stored) + 60, signal.SIGKILL) == -signal.SIGKILL
        assert server.requests[1]["cursor"] == [str(cursor - rewind)]
        cursor, stored = _stored_up_to_cursor(db, expected)
        assert 90 <= len(stored) < 450
        done = subprocess.run(
            command + ["--max-posts", str(450 - len(stored))], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert f"{wire} wire at {server.url}" in " ".join(done.stderr.split())
        assert server.requests[2]["cursor"] == [str(cursor - rewind)] and not server.refused
    with PostStore(db) as store:
        assert sorted(stored_rkeys(store)) == sorted(expected) and store.count() == 450
        assert saved_cursor(store) == max(expected.values())
