"""Post stores and scores tables from earlier mhaudit versions (tests/fixtures/stores/README.md) opened by this one.

Both have had one schema, version 1, since they were first written: the old files are read as they are (no
migration, no backup) and give back exactly the rows the old code wrote. A store stamped with a newer version
(the current writer with its version bumped) is refused with one sentence and left byte for byte as it was, on
SQLite and on a real PostgreSQL server.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from contextlib import closing
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect import dialects, scores
from mhaudit.weak_supervision.collect.scores import ensure_scores_table, pending_posts, run_predictions, scored_posts
from mhaudit.weak_supervision.collect.store import PostStore
from tests.weak_supervision.collect.pg_server import PASSWORD, fixture_pg_server, fixture_pg_url  # noqa: F401  (fixtures)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "stores"
SECRET = b"SYNTHETIC fixture secret, not a real one"  # as in fixtures/stores/write_store.py
DIGEST = hashlib.sha256(b"SYNTHETIC model folder").hexdigest()
TEXTS = [f"SYNTHETIC post {i}: I could not sleep again and everything feels heavy." for i in range(6)]
NEWER = "was written by a newer mhaudit (schema version 2; this mhaudit reads version 1); upgrade mhaudit"
runner = CliRunner()


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copy(FIXTURES / name, tmp_path / name))


def _raw(path: Path) -> dict[str, list]:
    """Every table's rows as SQLite holds them, read without mhaudit."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:  # `with conn` alone does not close
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {n: conn.execute(f'SELECT * FROM "{n}" ORDER BY 1, 2').fetchall() for n in names}


def _flat(text: str) -> str:
    """Text without whitespace: the console wraps long lines anywhere, paths included."""
    return "".join(text.split())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_post_store_of_46e0db0_is_read_as_it_was(tmp_path):
    path = _copy("posts.46e0db0.sqlite", tmp_path)
    before = _raw(path)
    with PostStore(path, secret=SECRET) as store:
        assert store.count() == 6 and store.dialect.backup is None
        frame = store.posts().sort_values("created_at")
        assert frame["text"].tolist() == TEXTS
        assert frame["categories"].tolist() == [["si", "mh"], ["mh"]] * 3 and frame["langs"].map(len).eq(1).all()
        assert frame["author"].nunique() == 3 and not frame["uri"].str.contains("did:plc").any()
        assert store.cursors() == {"jetstream": 1_700_000_000_000_006}
        assert store.run_relays("jetstream") == {"jetstream.invalid"}
        # and it is still written to as before: a replayed post is no duplicate
        assert (
            store.commit_batch(
                [
                    {
                        "uri": "at://did:plc:synthetic0/app.bsky.feed.post/0000",
                        "did": "did:plc:synthetic0",
                        "text": TEXTS[0],
                    }
                ],
                cursor=1,
            )
            == 0
        )
    after = _raw(path)
    assert after["posts"] == before["posts"] and after["runs"] == before["runs"]
    assert not list(tmp_path.glob("*.bak"))
    result = runner.invoke(app, ["collect", "summary", "--db", str(path)])
    assert result.exit_code == 0 and _flat(f"6 posts in {path}") in _flat(result.output)


def test_scores_of_d8d61a2_are_read_as_they_were(tmp_path):
    path = _copy("posts-scores.d8d61a2.sqlite", tmp_path)
    before = _raw(path)["scores"]
    with PostStore(path, secret=SECRET) as store:
        ensure_scores_table(store)
        assert pending_posts(store, DIGEST).empty  # every post already scored: nothing is scored again
        frame = scored_posts(store, DIGEST, ["low", "high"])
        predicted = run_predictions(store, {"old": DIGEST})
    assert len(frame) == 6 and frame["length"].tolist() == [len(t) for t in TEXTS]
    by_uri = {uri: (logits, predicted) for uri, _, logits, predicted, _ in before}  # as the old code wrote them
    assert len(by_uri) == 6 and all(len(row[1]) == 64 for row in before)
    for uri, low, high in zip(frame["uri"], frame["logit_low"], frame["logit_high"]):
        assert [low, high] == pytest.approx(json.loads(by_uri[uri][0]))
    assert dict(zip(predicted["uri"], predicted["old"])) == {uri: row[1] for uri, row in by_uri.items()}
    assert _raw(path)["scores"] == before and not list(tmp_path.glob("*.bak"))


def _newer_post_store(path, monkeypatch) -> str:
    """A post store as the next schema version would stamp it, then this version back."""
    with monkeypatch.context() as patch:
        patch.setattr(dialects, "SCHEMA_VERSION", 2)
        with PostStore(path, secret=SECRET) as store:
            store.commit_batch(
                [{"uri": "at://did:plc:synthetic0/p/1", "did": "did:plc:synthetic0", "text": TEXTS[0]}], cursor=1
            )
    return str(path)


def _newer_scores(path, monkeypatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(scores, "SCORES_SCHEMA_VERSION", 2)
        with PostStore(path, secret=SECRET) as store:
            store.commit_batch(
                [
                    {
                        "uri": "at://did:plc:synthetic0/p/1",
                        "did": "did:plc:synthetic0",
                        "text": TEXTS[0],
                        "created_at": "2026-11-10T12:00:00Z",
                    }
                ],
                cursor=1,
            )
            ensure_scores_table(store)


def test_newer_sqlite_post_store_and_scores_are_refused_untouched(tmp_path, monkeypatch):
    newer = tmp_path / "newer.sqlite"
    _newer_post_store(newer, monkeypatch)
    digest = _digest(newer)
    with pytest.raises(InputError, match=re.escape(f"newer.sqlite: this post store {NEWER}")):
        PostStore(newer, secret=SECRET)
    result = runner.invoke(app, ["collect", "summary", "--db", str(newer)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert _flat(f"this post store {NEWER} (pip install -U mhaudit) to open it") in _flat(result.output)
    assert _digest(newer) == digest and not list(tmp_path.glob("*.bak"))

    scored = tmp_path / "scored.sqlite"
    _newer_scores(scored, monkeypatch)
    digest = _digest(scored)
    with PostStore(scored, secret=SECRET) as store:
        with pytest.raises(InputError, match=re.escape(f"scored.sqlite: its scores table {NEWER}")):
            ensure_scores_table(store)
    assert _digest(scored) == digest


def test_newer_scores_table_is_refused_by_the_monitor_command(tmp_path, monkeypatch):
    import mhaudit as mh
    from mhaudit.tables.predictions import predict_corpus

    classes = ["other", "depression"]
    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=150, seed=0))
    frame = corpus.frame.assign(label=np.where(corpus.frame["label"] == "depression", "depression", "other"))
    binary = mh.Corpus.build(frame, classes, meta={"synthetic": True})
    model = mh.create_model("tfidf-lr").fit(binary.frame, classes)
    mh.save_model(model, tmp_path / "model")
    predict_corpus(model, binary, model_name="tfidf-lr", seed=0, splits=("test",)).to_parquet(tmp_path / "ref.parquet")
    store = tmp_path / "scored.sqlite"
    _newer_scores(store, monkeypatch)
    digest = _digest(store)
    result = runner.invoke(
        app,
        [
            "audit",
            "monitor",
            "--store",
            str(store),
            "--model",
            str(tmp_path / "model"),
            "--reference",
            str(tmp_path / "ref.parquet"),
            "--window",
            "1d",
            "--positive",
            "depression",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert _flat(f"its scores table {NEWER}") in _flat(result.output)
    assert _digest(store) == digest and not (tmp_path / "out" / "report.json").exists()


def _pg_rows(url: str) -> dict[str, list]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
            for t in ("posts", "cursor", "runs", "mhaudit_meta", "scores")
        }


def test_postgres_store_and_scores_of_d8d61a2_are_read_as_they_were(pg_url):
    """The pg_dump of a store d8d61a2 wrote on the test server, restored into a fresh database."""
    import psycopg

    dump = (FIXTURES / "posts-scores.d8d61a2.pg.sql").read_text()
    with psycopg.connect(pg_url, autocommit=True) as conn:  # psql's own \ commands left out
        conn.execute("\n".join(line for line in dump.splitlines() if not line.startswith("\\")))
    before = _pg_rows(pg_url)
    assert len(before["posts"]) == len(before["scores"]) == 6 and ("schema_version", "1") in before["mhaudit_meta"]
    with PostStore(pg_url, secret=SECRET) as store:
        ensure_scores_table(store)
        assert sorted(store.posts()["text"]) == TEXTS and store.cursors() == {"jetstream": 1_700_000_000_000_006}
        assert pending_posts(store, DIGEST).empty
        frame = scored_posts(store, DIGEST, ["low", "high"])
    logits = {uri: json.loads(scores) for uri, _, scores, _, _ in before["scores"]}
    assert [[low, high] for low, high in zip(frame["logit_low"], frame["logit_high"])] == [
        logits[uri] for uri in frame["uri"]
    ]
    assert _pg_rows(pg_url) == before


def test_newer_postgres_post_store_and_scores_are_refused_untouched(pg_server, monkeypatch):
    import psycopg

    def meta(url):
        with psycopg.connect(url, autocommit=True) as conn:
            return sorted(conn.execute("SELECT key, value FROM mhaudit_meta").fetchall()), conn.execute(
                "SELECT count(*) FROM posts"
            ).fetchone()[0]

    newer = _newer_post_store(pg_server.url(pg_server.create_database()), monkeypatch)
    before = meta(newer)
    assert ("schema_version", "2") in before[0] and before[1] == 1
    with pytest.raises(InputError, match=re.escape(f"this post store {NEWER}")):
        PostStore(newer, secret=SECRET)
    result = runner.invoke(app, ["collect", "summary", "--db", newer])
    assert result.exit_code == 2 and "Traceback" not in result.output and PASSWORD not in result.output
    assert _flat(f"this post store {NEWER}") in _flat(result.output)
    assert meta(newer) == before

    scored = pg_server.url(pg_server.create_database())
    _newer_scores(scored, monkeypatch)
    before = meta(scored)
    with PostStore(scored, secret=SECRET) as store:
        with pytest.raises(InputError, match=re.escape(f"its scores table {NEWER}")):
            ensure_scores_table(store)
    assert meta(scored) == before and ("scores_schema_version", "2") in before[0]
