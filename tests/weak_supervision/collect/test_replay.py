"""The replay relay (`mhaudit collect replay`): files replayed one after another into one post store are each
stored whole, and a file replayed again adds nothing. Post ids come from each post's content, stream time from
the wall clock and never goes back (weak_supervision/collect/replay.py's docstring)."""

from __future__ import annotations

import json
import threading
import time

import pandas as pd
from typer.testing import CliRunner
from websockets.sync.client import connect

from mhaudit.cli import app
from mhaudit.weak_supervision.collect.collector import CollectOptions, Collector, PostFilter
from mhaudit.weak_supervision.collect.replay import START_US, ReplayRelay, replay_events
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon

runner = CliRunner()
COMMON = """[lexicon]
name = "common"
version = "1.0.0"
description = "Function words: lets every test post through"
language = "en"

[categories.common]
description = "Function words"
terms = ["i", "the", "so", "of", "my"]
"""
# As people have them: a text and a createdAt, no ids. The empty post is not replayed; the repeated row is two
# posts (the same words at the same second, as a bot might post them).
DAYS_1_TO_3 = pd.DataFrame(
    {
        "text": [
            "i cannot sleep again",
            "i feel so alone tonight",
            "the doctor said it is fine",
            "i cannot sleep again",
            "so tired of all this",
            "",
        ],
        "createdAt": [
            "2025-01-01T08:00:00Z",
            "2025-01-01T22:15:00Z",
            "2025-01-02T09:30:00.000Z",
            "2025-01-01T08:00:00Z",
            "2025-01-03T11:00:00+00:00",
            "2025-01-03T12:00:00Z",
        ],
    }
)
DAYS_4_AND_5 = pd.DataFrame(
    {
        "text": ["i cannot sleep again", "my head is so loud", "the week was long", "i made it through"],
        "createdAt": ["2025-01-04T07:00:00Z", "2025-01-04T23:59:00Z", "2025-01-05T10:00:00Z", "2025-01-05T18:30:00Z"],
    }
)


def _ids(events) -> list[tuple[str, str, str]]:
    out = []
    for _, payload in events:
        event = json.loads(payload)
        out.append((event["did"], event["commit"]["rkey"], event["commit"]["cid"]))
    return out


def test_ids_come_from_the_posts_and_times_from_the_clock():
    before = time.time_ns() // 1000
    first = replay_events(DAYS_1_TO_3)
    again = replay_events(DAYS_1_TO_3.sample(frac=1, random_state=0))  # the same posts, rows in another order
    other = replay_events(DAYS_4_AND_5)
    assert len(first) == 5 and len(set(_ids(first))) == 5  # the repeated row: two posts, two ids
    assert _ids(again) == _ids(first)  # the same file replayed again: the same URIs
    assert not set(_ids(other)) & set(_ids(first))  # another file: other URIs
    # A later export that repeats an earlier day, the time spelled another way: the shared post keeps its ids.
    superset = pd.concat([DAYS_1_TO_3.head(2).replace({"2025-01-01T08:00:00Z": "2025-01-01 08:00:00+00:00"})])
    assert _ids(replay_events(superset))[0] == _ids(first)[0]
    for events in (first, again, other):
        times = [t for t, _ in events]
        assert times[0] >= max(START_US, before) and all(b - a == 1000 for a, b in zip(times, times[1:]))
    assert first[0][0] < again[0][0] < other[0][0]  # made one after another: later starts


def test_a_cursor_outside_the_replay_gets_the_whole_file():
    relay = ReplayRelay(replay_events(DAYS_1_TO_3, start_us=START_US))
    times = [t for t, _ in relay.events]
    assert relay.first_sent(None) == 0
    assert relay.first_sent(times[0] - 5_000_000) == 0  # an earlier replay's cursor, less the rewind
    assert relay.first_sent(times[2]) == 2 and relay.first_sent(times[2] + 1) == 3  # inclusive, as Jetstream's
    assert relay.first_sent(times[-1]) == len(times) - 1  # a client that had it all, resuming with no rewind
    assert relay.first_sent(times[-1] + 1) == 0  # no position in this replay: another stream's


def test_no_post_goes_out_before_its_time():
    start = time.time_ns() // 1000 + 300_000  # 0.3 s from now
    with ReplayRelay(replay_events(DAYS_4_AND_5, start_us=start)) as relay, connect(relay.url, open_timeout=120) as ws:
        for _ in range(4):
            sent = json.loads(ws.recv(timeout=120))["time_us"]
            assert time.time_ns() // 1000 >= sent


def _collect(store, relay, lexicon, n_new: int):
    result = runner.invoke(
        app,
        [
            "collect",
            "bluesky",
            "--db",
            str(store),
            "--relay",
            relay.url,
            "--lexicon",
            str(lexicon),
            "--max-posts",
            str(n_new),
            "--duration",
            "120s",  # only stops a hang: --max-posts ends the run
        ],
    )
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_two_files_replayed_one_after_another_are_each_stored_whole(tmp_path):
    lexicon = tmp_path / "common.toml"
    lexicon.write_text(COMMON)
    first_csv, second_csv = tmp_path / "days_1_to_3.csv", tmp_path / "days_4_and_5.csv"
    DAYS_1_TO_3.to_csv(first_csv, index=False)
    DAYS_4_AND_5.to_csv(second_csv, index=False)
    store = tmp_path / "posts.sqlite"

    with ReplayRelay.from_file(first_csv) as relay:
        assert "5 stored (0 already stored)" in _collect(store, relay, lexicon, 5)
    with PostStore(store) as posts:
        assert posts.count() == 5
        saved = posts.cursor()
    with ReplayRelay.from_file(second_csv) as relay:
        assert saved < relay.events[0][0]  # the saved cursor lies before the next replay's first post
        assert "4 stored (0 already stored)" in _collect(store, relay, lexicon, 4)
    with PostStore(store) as posts:
        assert posts.count() == 9
        texts = posts.posts()["text"].tolist()
        assert sorted(texts) == sorted([t for t in DAYS_1_TO_3["text"] if t] + DAYS_4_AND_5["text"].tolist())

    # The first file again, resuming from the second's cursor: every post arrives, none is new.
    with ReplayRelay.from_file(first_csv) as relay, PostStore(store) as posts:
        collector = Collector(
            posts, PostFilter([Lexicon.load(str(lexicon))]), wire="subscribe", relay=relay.url, options=CollectOptions()
        )

        def stop_once_all_arrived():
            deadline = time.monotonic() + 120  # only stops a hang
            while collector.stats.events < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
            collector.stop()

        threading.Thread(target=stop_once_all_arrived, daemon=True).start()
        collector.run()  # here: the store's connection belongs to this thread
        assert collector.stats.events == 5 and collector.stats.matched == 5
        assert collector.stats.stored == 0 and collector.stats.duplicates == 5
        assert posts.count() == 9
