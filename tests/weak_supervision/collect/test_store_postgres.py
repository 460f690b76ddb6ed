"""The post store on a real, throwaway PostgreSQL server (tests/weak_supervision/collect/pg_server.py): the same
behaviour as the SQLite store (round trip, replay ignored, cursor monotone, Table-4 summary, kill -9 of a committing
client, the collector end to end through the CLI) and one-sentence errors that never echo the password."""

from __future__ import annotations

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.privacy import local_secret, pseudonymise
from mhaudit.weak_supervision.collect.dialects import check_store_path, redact_url
from mhaudit.weak_supervision.collect.store import PostStore
from tests.weak_supervision.collect import test_store as sqlite_tests
from tests.weak_supervision.collect.pg_server import PASSWORD, fixture_pg_server, fixture_pg_url  # noqa: F401  (fixtures)
from tests.weak_supervision.collect.stream_server import StreamServer, jetstream_frames
from tests.weak_supervision.collect.test_collector import _bad, _cli, stored_rkeys, stream
from tests.weak_supervision.collect.test_store import _check_consistent, _run_child

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def _posts(n: int, *, start: int = 0) -> list[dict]:
    return [
        {
            "uri": f"at://did:plc:u{i % 7}/app.bsky.feed.post/{i}",
            "did": f"did:plc:u{i % 7}",
            "cid": f"c{i}",
            "text": f"can’t sleep {i}",
            "created_at": f"2025-01-0{1 + i % 3}T0{i % 10}:00:00Z",
            "langs": ["en"],
            "terms": ["can't sleep"],
            "categories": ["insomnia"] + (["panic"] if i % 4 == 0 else []),
        }
        for i in range(start, start + n)
    ]


def test_round_trip_replay_and_cursor_match_the_sqlite_store(pg_url, tmp_path):
    frames = {}
    for name, target in (("pg", pg_url), ("sqlite", tmp_path / "p.sqlite")):
        with PostStore(target) as store:
            store.start_run("r1", relay_url="wss://jetstream.example", lexicons={"mh": "h1"}, options={"x": 1})
            store.start_run("r1", relay_url="wss://jetstream.example", lexicons={"mh": "h1"})  # ignored
            assert store.cursor() is None and store.cursors() == {}
            assert store.commit_batch(_posts(6), 600) == 6
            assert store.commit_batch(_posts(7, start=3), 500) == 4  # replay from an older position
            assert store.cursor() == 600 and store.count() == 10
            assert store.commit_batch([], 700) == 0 and store.cursor() == 700
            assert store.commit_batch(_posts(10), 800, stream="firehose:relay.example") == 0
            assert store.cursors() == {"jetstream": 700, "firehose:relay.example": 800}
            assert store.run_relays("jetstream") == set() and store.count() == 10
            frames[name] = store.posts().drop(columns="stored_at")
            summaries = store.summary()
        frames[name + "_summary"] = summaries
    pd.testing.assert_frame_equal(frames["pg"], frames["sqlite"])
    for table in ("per_category", "per_day"):
        pd.testing.assert_frame_equal(frames["pg_summary"][table], frames["sqlite_summary"][table])
    with PostStore(pg_url) as store:  # reopened: the same store, cursor and runs
        assert store.count() == 10 and store.cursor() == 700
        assert store._conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_summary_counts_as_in_table_4_on_postgres(pg_url, monkeypatch, tmp_path):
    # The SQLite store's Table-4 test, with its store opened on the server instead of a file.
    monkeypatch.setattr(sqlite_tests, "PostStore", lambda _path: PostStore(pg_url))
    sqlite_tests.test_summary_counts_as_in_table_4(tmp_path)


@pytest.mark.parametrize("keep", [False, True])
def test_authors_are_pseudonymised_and_raw_dids_stay_out_of_the_database(pg_url, keep):
    post = {"uri": f"at://{DID}/app.bsky.feed.post/3kabc", "did": DID, "text": "hello\x00world"}
    with PostStore(pg_url, keep_raw_ids=keep) as store:
        store.commit_batch([post], 1)
        row = store.posts().iloc[0]
        dump = " ".join(
            str(r)
            for r in store._conn.execute(
                "SELECT row_to_json(p)::text FROM posts p UNION ALL SELECT row_to_json(c)::text FROM cursor c"
            )
        )
    pseudonym = pseudonymise([DID], secret=local_secret())[0]
    assert row["author"] == pseudonym and (DID in dump) is keep
    assert row["uri"] == (post["uri"] if keep else f"at://{pseudonym}/app.bsky.feed.post/3kabc")
    assert row["text"] == "hello\ufffdworld"  # PostgreSQL text cannot hold U+0000


def test_kill_9_of_a_committing_client_leaves_posts_and_cursor_consistent(pg_url, tmp_path):
    # The SQLite kill -9 test's child and checks, with the store on the server: three kills, the last one
    # inside a transaction (posts inserted, cursor not yet written), which the server rolls back.
    start, last, news = _run_child(tmp_path, pg_url, kill_after=8)
    assert start == 0 and news == [300] * len(news)
    committed = _check_consistent(pg_url, at_least=last + 1)
    start, last, news = _run_child(tmp_path, pg_url, kill_after=5)
    assert start == committed - 2 and news[:2] == [0, 0]
    committed = _check_consistent(pg_url, at_least=last + 1)
    start, last, news = _run_child(tmp_path, pg_url, kill_after=10**6, stall_at=committed + 3)
    assert last == committed + 2
    assert _check_consistent(pg_url, at_least=last + 1) == committed + 3


def test_cli_collects_into_postgres_and_resumes(pg_server, pg_url):
    events, expected = stream(20)
    url = pg_url.replace("postgresql://", "postgres://")  # both schemes
    with StreamServer(jetstream_frames(events)) as server:
        command = [
            "bluesky",
            "--db",
            url,
            "--lexicon",
            "mh",
            "--relay",
            server.url,
            "--duration",
            "20s",
            "--no-replies",
            "--batch-size",
            "7",
        ]
        result = _cli(*command, "--max-posts", 25)
        assert result.exit_code == 0, result.output
        assert "25 stored" in result.stdout and "starting at the live tip" in result.stderr
        result = _cli(*command, "--max-posts", 15)
        assert result.exit_code == 0, result.output
        assert "resuming from cursor" in result.stderr and "15 stored" in result.stdout
        assert PASSWORD not in result.output
    with PostStore(pg_url) as store:
        assert sorted(stored_rkeys(store)) == sorted(k for k in expected if not k.startswith("d"))
        assert store.count() == 40
    result = _cli("summary", "--db", pg_url)
    assert result.exit_code == 0 and "40 posts in postgresql://127.0.0.1:" in result.stdout
    assert PASSWORD not in result.output


def test_bad_urls_and_servers_are_one_sentence_without_the_password(pg_server, pg_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    port = pg_server.port
    dead = f"postgresql://mhaudit:{PASSWORD}@127.0.0.1:1/posts"
    wrong_password = pg_server.url("postgres", password="not-the-password")
    missing_db = pg_server.url("no_such_db")
    cases = [
        (dead, "cannot connect to the PostgreSQL post store postgresql://127.0.0.1:1/posts", "refused"),
        (wrong_password, f"postgresql://127.0.0.1:{port}/postgres", "password authentication failed"),
        (missing_db, f"postgresql://127.0.0.1:{port}/no_such_db", 'database "no_such_db" does not exist'),
    ]
    for url, *fragments in cases:
        for command in (
            ["bluesky", "--db", url, "--lexicon", "mh", "--relay", "ws://127.0.0.1:1"],
            ["summary", "--db", url],
        ):
            result = _cli(*command)
            _bad(result, *fragments)
            assert PASSWORD not in result.output and "not-the-password" not in result.output
    for url in ("mysql://u:pw@db.example/posts", "sqlite:///posts.sqlite", "postgresql+psycopg://u:pw@h/db"):
        scheme = url.split(":", 1)[0]
        result = _cli("summary", "--db", url)
        _bad(result, f"{scheme}://… is a database URL of a kind the post store does not support", "postgresql://")
        assert "pw" not in result.output
    assert list(tmp_path.iterdir()) == []
    assert redact_url(f"postgresql://u:{PASSWORD}@[::1]:5/db?sslmode=require") == "postgresql://[::1]:5/db"
    assert check_store_path("postgresql:/u@h/db") == "postgresql://u@h/db"  # a Path collapsed the '//'


def test_a_database_with_foreign_tables_or_another_version_is_refused(pg_server, pg_url):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE posts (id int)")
    with pytest.raises(InputError, match="already has tables named posts that are not an mhaudit post store"):
        PostStore(pg_url)
    other = pg_server.url(pg_server.create_database())
    PostStore(other).close()
    with psycopg.connect(other, autocommit=True) as conn:
        conn.execute("UPDATE mhaudit_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(InputError, match="schema version 99"):
        PostStore(other)


def test_a_reader_of_a_database_without_the_store_names_it_missing_and_creates_no_table(pg_url):
    import psycopg

    for reader in (lambda: PostStore(pg_url, create=False), lambda: _cli("summary", "--db", pg_url)):
        try:
            result = reader()
        except InputError as exc:
            message = str(exc)
        else:
            assert result.exit_code == 2, result.output
            message = " ".join(result.output.split())
        assert f"no such post store: {redact_url(pg_url)} (collect posts first" in message
        assert PASSWORD not in message
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tables = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
        assert tables.fetchall() == []
    PostStore(pg_url).close()  # the collector makes the store
    with PostStore(pg_url, create=False) as store:
        assert store.count() == 0
