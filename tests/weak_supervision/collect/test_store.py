"""The collector's post store: one transaction per batch + cursor (real kill -9), no duplicates, privacy."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.privacy import local_secret, pseudonymise
from mhaudit.weak_supervision.collect.store import PostStore

SRC = Path(__file__).resolve().parents[2] / "src"
STEP = 1000  # cursor of batch i is (i + 1) * STEP
BATCH = 300

CHILD = textwrap.dedent("""
    import sys, time
    from mhaudit.weak_supervision.collect.store import PostStore
    path, batch, step, stall_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

    class Stall:  # stops between the posts' INSERT and the cursor update of batch `stall_at`, inside the transaction
        def __init__(self, conn, store):
            self.conn, self.store = conn, store
        def __getattr__(self, name):
            return getattr(self.conn, name)
        def execute(self, sql, *args):
            if sql.startswith("INSERT INTO cursor") and self.store.batch == stall_at:
                print("stalled", flush=True)
                time.sleep(60)
            return self.conn.execute(sql, *args)

    with PostStore(path) as store:
        store.start_run("run-1", relay_url="ws://127.0.0.1:1", lexicons={"si": "abc123"})
        store._conn = Stall(store._conn, store)
        saved = store.cursor()
        start = 0 if saved is None else max(0, saved // step - 2)  # rewind two batches: an overlapping replay
        print("start", start, flush=True)
        for i in range(start, start + 100000):
            store.batch = i
            posts = [{"uri": f"at://did:plc:user{j % 40}/app.bsky.feed.post/b{i}p{j}", "did": f"did:plc:user{j % 40}",
                      "cid": f"cid{i}-{j}", "text": "I can't sleep again " * 10, "created_at": "2025-01-01T00:00:00Z",
                      "langs": ["en"], "terms": ["can't sleep"], "categories": ["insomnia"]} for j in range(batch)]
            new = store.commit_batch(posts, (i + 1) * step)
            print(i, new, flush=True)
""")


def _run_child(tmp_path: Path, db: Path, *, kill_after: int, stall_at: int = -1) -> tuple[int, int, list[int]]:
    """Run the committing child, kill -9 it after `kill_after` printed commits (or once stalled); return
    (first batch, last printed batch, new-post counts printed)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(db), str(BATCH), str(STEP), str(stall_at)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        start = int(proc.stdout.readline().split()[1])
        last, news = start - 1, []
        while True:
            line = proc.stdout.readline()
            assert line, "the child ended before it was killed"
            if line.startswith("stalled"):
                break
            batch, new = map(int, line.split())
            last = batch
            news.append(new)
            if len(news) >= kill_after:
                break
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=120) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return start, last, news


def _check_consistent(db: Path, at_least: int) -> int:
    """count(posts) = BATCH x committed batches, every committed batch complete, cursor = last one's."""
    with PostStore(db) as store:
        cursor = store.cursor()
        assert cursor is not None and cursor % STEP == 0
        committed = cursor // STEP
        assert committed >= at_least
        assert store.count() == committed * BATCH
        cids = [row[0] for row in store._conn.execute("SELECT cid FROM posts")]
    per_batch = Counter(int(cid[3:].split("-")[0]) for cid in cids)  # cid = cid<batch>-<post>
    assert sorted(per_batch.items()) == [(b, BATCH) for b in range(committed)]
    return committed


def test_kill_9_loses_only_the_batch_in_flight_and_a_replay_adds_no_duplicate(tmp_path):
    db = tmp_path / "posts.sqlite"
    start, last, news = _run_child(tmp_path, db, kill_after=12)
    assert start == 0 and news == [BATCH] * len(news)
    committed = _check_consistent(db, at_least=last + 1)
    # Second run resumes from the cursor, rewinding two batches: those add 0 new posts, the rest BATCH each.
    start, last, news = _run_child(tmp_path, db, kill_after=6)
    assert start == committed - 2
    assert news[:2] == [0, 0] and news[2:] == [BATCH] * (len(news) - 2)
    committed = _check_consistent(db, at_least=last + 1)
    # Third run is killed inside a transaction: its posts are inserted, its cursor not yet written.
    start, last, news = _run_child(tmp_path, db, kill_after=10**6, stall_at=committed + 3)
    assert last == committed + 2
    assert _check_consistent(db, at_least=last + 1) == committed + 3  # the stalled batch left nothing behind


def test_replay_of_overlapping_batches_adds_no_duplicates_and_the_cursor_never_goes_back(tmp_path):
    posts = [{"uri": f"at://did:plc:x/app.bsky.feed.post/{i}", "did": "did:plc:x", "text": f"t{i}"} for i in range(10)]
    with PostStore(tmp_path / "p.sqlite") as store:
        assert store.cursor() is None
        assert store.commit_batch(posts[:6], 600) == 6
        assert store.commit_batch(posts[3:10], 500) == 4  # replay from an older position
        assert store.cursor() == 600 and store.count() == 10
        assert store.commit_batch([], 700) == 0 and store.cursor() == 700
        assert store.commit_batch(posts, 800, stream="firehose") == 0
        assert store.cursor("firehose") == 800 and store.cursor() == 700


def _all_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


@pytest.mark.parametrize("keep", [False, True])
def test_authors_are_pseudonymised_and_raw_dids_stay_out_of_the_file(tmp_path, keep):
    did = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
    db = tmp_path / "p.sqlite"
    post = {
        "uri": f"at://{did}/app.bsky.feed.post/3kabc",
        "did": did,
        "cid": "bafyrei",
        "text": "hello",
        "created_at": "2025-01-01T10:00:00Z",
        "langs": ["en"],
        "terms": ["panic"],
        "categories": ["anxiety"],
    }
    with PostStore(db, keep_raw_ids=keep) as store:
        store.start_run("r1", relay_url="wss://jetstream.example", lexicons={"mh": "h1"}, options={"replies": True})
        store.commit_batch([post], 1)
        row = store.posts().iloc[0]
        assert (did.encode() in _all_bytes(db)) is keep  # while open: the WAL holds the commit
    pseudonym = pseudonymise([did], secret=local_secret())[0]
    assert row["author"] == pseudonym
    assert row["uri"] == (post["uri"] if keep else f"at://{pseudonym}/app.bsky.feed.post/3kabc")
    assert row["raw_did"] == (did if keep else None)
    assert row["categories"] == ["anxiety"] and row["langs"] == ["en"] and row["terms"] == ["panic"]
    assert row["run_id"] == "r1" and row["lexicon_hash"] == "h1"
    assert (did.encode() in _all_bytes(db)) is keep  # after close (checkpointed into the main file)
    assert pseudonym.encode() in _all_bytes(db)


def test_summary_counts_as_in_table_4(tmp_path):
    def post(n, author, cats, created):
        return {"uri": f"at://{author}/p/{n}", "did": author, "text": "x", "created_at": created, "categories": cats}

    posts = [
        post(1, "did:a", ["si"], "2025-01-01T08:00:00Z"),
        post(2, "did:a", ["si", "mh"], "2025-01-01T09:00:00Z"),
        post(3, "did:a", ["mh"], "2025-01-02T10:00:00Z"),
        post(4, "did:b", ["si"], "2025-01-02T11:00:00.123Z"),
        post(5, "did:c", ["mh"], "2025-01-03T23:30:00-02:00"),
        post(6, "did:c", [], "not a date"),
    ]
    with PostStore(tmp_path / "p.sqlite") as store:
        store.commit_batch(posts, 6)
        summary = store.summary()
    cat = summary["per_category"].set_index("category")
    assert list(cat.index) == ["all", "mh", "si"]
    assert cat.loc["all"].to_dict() == {
        "posts": 6,
        "unique_authors": 3,
        "posts_per_author_mean": 2.0,
        "posts_per_author_median": 2.0,
        "posts_per_author_max": 3,
    }
    for name in ("si", "mh"):
        assert cat.loc[name].to_dict() == {
            "posts": 3,
            "unique_authors": 2,
            "posts_per_author_mean": 1.5,
            "posts_per_author_median": 1.5,
            "posts_per_author_max": 2,
        }
    day = summary["per_day"]
    assert [str(d) for d in day["day"]] == ["2025-01-01", "2025-01-02", "2025-01-04"]  # UTC day; bad date left out
    assert day["posts"].tolist() == [2, 2, 1] and day["unique_authors"].tolist() == [1, 2, 1]


def test_bad_files_give_one_clear_input_error(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("this is not a database\n" * 10)
    with pytest.raises(InputError, match="notes.sqlite.*not an SQLite database"):
        PostStore(text)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError, match="foreign.db.*not an mhaudit post store"):
        PostStore(foreign)
    old = tmp_path / "old.sqlite"
    PostStore(old).close()
    with sqlite3.connect(old) as conn:
        conn.execute("PRAGMA user_version=99")
    with pytest.raises(InputError, match="old.sqlite.*schema version 99"):
        PostStore(old)
    with pytest.raises(InputError, match="folder"):
        PostStore(tmp_path)


@pytest.mark.parametrize("url", ["mysql+pymysql://u:pw@db.example/posts", "sqlite:///posts.sqlite"])
def test_a_database_url_other_than_postgresql_is_refused(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    for given in (url, Path(url)):  # a Path collapses '//' to '/': still recognised
        with pytest.raises(
            InputError,
            match=r"is a database URL of a kind the post store does not support; "
            r"give a file path",
        ) as info:
            PostStore(given)
        assert "pw@" not in str(info.value)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "C:").mkdir()
    PostStore("C:/posts.sqlite").close()  # a one-letter "scheme" is a drive letter or a folder: a file path
    assert (tmp_path / "C:" / "posts.sqlite").exists()


def test_a_locked_store_or_a_post_without_did_is_an_input_error_and_stores_nothing(tmp_path):
    db = tmp_path / "p.sqlite"
    with PostStore(db, timeout=0.1) as store:
        with pytest.raises(InputError, match="no 'uri' or no 'did'"):
            store.commit_batch([{"uri": "at://x/p/1", "did": "did:x"}, {"uri": "at://y/p/2"}], 5)
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(InputError, match="p.sqlite.*locked"):
            store.commit_batch([{"uri": "at://x/p/1", "did": "did:x"}], 5)
        other.execute("ROLLBACK")
        other.close()
        assert store.count() == 0 and store.cursor() is None
        assert store.commit_batch([{"uri": "at://x/p/1", "did": "did:x"}], 5) == 1


def test_a_short_secret_stops_before_anything_is_opened(tmp_path, monkeypatch):
    """The secret is checked when the store is opened, before the collector reaches a relay (it used to be
    when the first post arrived); no store file is created."""
    monkeypatch.setenv("MHAUDIT_SECRET", "short")
    with pytest.raises(InputError, match="MHAUDIT_SECRET holds 5 bytes"):
        PostStore(tmp_path / "posts.sqlite")
    assert not list(tmp_path.iterdir())
