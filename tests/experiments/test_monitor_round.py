"""One round of the stream monitor from Python (mhaudit.experiments.monitor_round) on a SYNTHETIC stream in a SQLite
post store: the round scores, audits and writes what `audit_monitor` on the scored posts gives; the next round
scores nothing and reads every window from the store; a folder of runs is loaded deployed first and every run
scores; bad input is one sentence before anything is scored or written."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

import mhaudit as mh
from mhaudit.core.errors import InputError
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.store import PostStore
from tests.audits.test_monitor import CLASSES, _store, fixture_setup  # noqa: F401  (fixture)

OPTIONS = mh.MonitorOptions(positive="depression", n_boot=100, figures=False)


def _stream(texts: dict, **config) -> list[dict]:
    return simulate_stream(texts["depression"], texts["other"], StreamConfig(**config))


def _count(store, sql: str) -> int:
    with sqlite3.connect(store) as db:
        return db.execute(sql).fetchone()[0]


def test_a_round_is_the_audit_of_the_scored_posts_and_the_next_round_reuses_every_window(setup, tmp_path):
    from mhaudit.weak_supervision.collect.scores import scored_posts

    work, texts = setup
    store = _store(tmp_path / "posts.sqlite", _stream(texts, n_windows=5, per_window=400, change_at=3, seed=9))
    deployment = mh.load_deployment(work / "model")
    assert [r.name for r in deployment.runs] == ["model"] and deployment.ensemble is None
    assert deployment.classes == CLASSES
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    told = []
    first = mh.monitor_round(
        store,
        deployment,
        reference,
        OPTIONS,
        out_dir=tmp_path / "out",
        notes=lambda: ["warning: a note"],
        progress=mh.Progress(told.append),
    )
    assert first.options["scored_now"] == 2000 and _count(store, "SELECT count(*) FROM scores") == 2000
    assert first.outputs["windows_recomputed"] == 5 and first.outputs["alert_window"] == "2026-01-05 00:00"
    assert "5 of 5 windows computed; 0 read from the store" in [e.name for e in told if e.kind == "note"]

    # the same as the audit of the scored posts, which writes nothing
    with PostStore(store) as posts:
        scored = scored_posts(posts, deployment.deployed.digest, CLASSES)
    audit = mh.audit_monitor(
        mh.MonitorInputs(scored, reference, "tfidf-lr", deployment.deployed.digest, CLASSES, scored_now=2000), OPTIONS
    )
    pd.testing.assert_frame_equal(first.table("windows"), audit.table("windows"), check_exact=True)
    pd.testing.assert_frame_equal(first.verdicts, audit.verdicts, check_exact=True)
    assert first.summary == audit.summary

    # the report, its notes, and the alerting window's sample of 200 post ids with its predictions
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["notes"] == ["warning: a note"] and first.notes == ["warning: a note"]
    assert "alert_window" not in report["options"] and "windows_recomputed" not in report["options"]
    folder = tmp_path / "out" / "alert" / "2026-01-05T00-00"
    assert sorted(p.name for p in folder.iterdir()) == [
        "predictions.parquet",
        "sample.design.parquet",
        "sample.parquet",
    ]
    sample = pd.read_parquet(folder / "sample.parquet")
    pd.testing.assert_frame_equal(sample, first.outputs["suggested_sample"])
    assert len(sample) == 200 and len(pd.read_parquet(folder / "predictions.parquet")) == 400

    # the next round: nothing new to score, every window read from the store, the same table bit for bit
    again = mh.monitor_round(store, deployment, reference, OPTIONS, out_dir=tmp_path / "again", first=False)
    assert again.options["scored_now"] == 0 and again.outputs["windows_recomputed"] == 0
    pd.testing.assert_frame_equal(again.table("windows"), first.table("windows"), check_exact=True)
    assert _count(store, "SELECT count(*) FROM monitor_windows") == 5


def test_a_store_that_keeps_raw_ids_alerts_without_a_sample(setup, tmp_path):
    """Its post ids carry DIDs: the alert names its window, but no sample of them is written."""
    work, texts = setup
    with PostStore(tmp_path / "raw.sqlite", keep_raw_ids=True) as store:
        store.commit_batch(_stream(texts, n_windows=5, per_window=400, change_at=3, seed=9), cursor=1)
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    result = mh.monitor_round(
        tmp_path / "raw.sqlite", mh.load_deployment(work / "model"), reference, OPTIONS, out_dir=tmp_path / "out"
    )
    assert result.outputs["alert_window"] == "2026-01-05 00:00" and "suggested_sample" not in result.outputs
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html", "report.json", "report.md", "tables"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three TF-IDF runs (models.runs.train_runs) on the SYNTHETIC binary tweets, every run's predictions on the
    labelled test split (seeds 0-2), and a stream of 3 days of 120 posts from the val split."""
    from mhaudit.models.runs import train_runs
    from mhaudit.models.seeds import predict_folders

    work = tmp_path_factory.mktemp("runs")
    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=600, seed=0))
    frame = corpus.frame.assign(label=corpus.frame["label"].where(corpus.frame["label"] == "depression", "other"))
    tweets = mh.Corpus.build(frame[frame["platform"] == "synthetic-tweets"], CLASSES, meta={"synthetic": True})
    train_runs(tweets, None, "tfidf-lr", 3, work / "models")
    predict_folders(sorted((work / "models").glob("run-*")), tweets, ("test",)).to_parquet(work / "reference.parquet")
    pool = tweets.frame[tweets.frame["split"] == "val"]
    texts = {c: pool.loc[pool["label"] == c, "text"].tolist() for c in CLASSES}
    return work, _stream(texts, n_windows=3, per_window=120, seed=4)


def test_a_folder_of_runs_is_loaded_deployed_first_and_every_run_scores(runs, tmp_path):
    from mhaudit.weak_supervision.collect.scoring import model_digest

    work, posts = runs
    deployment = mh.load_deployment(work / "models", deployed="run-1")
    assert [r.name for r in deployment.runs] == ["run-1", "run-0", "run-2"]
    ensemble = deployment.ensemble
    assert ensemble.runs == ("run-0", "run-1", "run-2") and ensemble.seeds == (0, 1, 2)
    assert ensemble.deployed == "run-1"
    assert ensemble.digests == tuple(model_digest(work / "models" / f"run-{k}") for k in range(3))
    assert mh.load_deployment(work / "models").deployed.name == "run-0"

    store = _store(tmp_path / "posts.sqlite", posts)
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    result = mh.monitor_round(
        store,
        deployment,
        reference,
        mh.MonitorOptions(n_boot=100, min_posts=50, figures=False),
        out_dir=tmp_path / "out",
    )
    assert result.options["deployed"] == "run-1" and result.options["scored_now"] == 360
    assert result.options["model_digest"] == model_digest(work / "models" / "run-1")
    assert _count(store, "SELECT count(*) FROM scores") == 3 * 360
    windows = result.table("windows")
    assert windows["n_posts"].tolist() == [120] * 3 and windows["ensemble_accuracy"].notna().all()


def test_bad_deployments_are_one_sentence(runs, setup, tmp_path):
    work, _ = runs
    with pytest.raises(InputError) as bad:
        mh.load_deployment(work / "models", deployed="run-9")
    assert str(bad.value) == (
        f"the deployed run run-9 is not one of the 3 runs in {work / 'models'} (run-0, run-1, run-2)"
    )
    one, _ = setup
    with pytest.raises(InputError) as bad:
        mh.load_deployment(one / "model", deployed="run-2")
    assert str(bad.value) == f"the deployed run run-2: {one / 'model'} holds one model, not a folder of runs"
    # a run of other classes: four classes beside the deployed run's two
    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=200, seed=0))
    import shutil

    shutil.copytree(work / "models", tmp_path / "models")
    mh.save_model(mh.create_model("tfidf-lr").fit(corpus.frame, corpus.classes), tmp_path / "models" / "run-3")
    with pytest.raises(
        InputError,
        match=r"^run run-3's classes \(.+\) differ from the deployed run-0's "
        r"\(other, depression\)$",
    ):
        mh.load_deployment(tmp_path / "models")


def test_bad_input_is_said_before_anything_is_scored_or_written(setup, tmp_path):
    work, texts = setup
    store = _store(tmp_path / "posts.sqlite", _stream(texts, n_windows=2, per_window=100, seed=6))
    deployment = mh.load_deployment(work / "model")
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    cases = [
        ({"executor": "spark"}, OPTIONS, "the executor 'spark' must be local or ray"),
        ({"workers": 0}, OPTIONS, "workers must be at least 1, got 0"),
        (
            {},
            mh.MonitorOptions(positive="anxiety"),
            "the positive class 'anxiety' is not a class of the model (other, depression)",
        ),
    ]
    for keywords, options, message in cases:
        with pytest.raises(InputError) as bad:
            mh.monitor_round(store, deployment, reference, options, out_dir=tmp_path / "out", **keywords)
        assert str(bad.value) == message
    empty = tmp_path / "empty.sqlite"
    PostStore(empty).close()
    with pytest.raises(InputError, match="the post store has no posts"):
        mh.monitor_round(empty, deployment, reference, OPTIONS, out_dir=tmp_path / "out")
    assert _count(store, "SELECT count(*) FROM sqlite_master WHERE name = 'scores'") == 0
    assert not (tmp_path / "out").exists()


def test_an_acknowledged_lasting_shift_stops_alerting_and_draws_no_new_sample(setup, tmp_path):
    """A shift from window 3 that lasts: each new window's drift is a new alert until a person acknowledges one;
    after that, windows that go on drifting are `continuing` (recorded, never delivered, no new sample)."""
    from typer.testing import CliRunner

    from mhaudit.cli import app
    from mhaudit.weak_supervision.collect import alert_log

    work, texts = setup
    posts = _stream(texts, n_windows=6, per_window=400, change_at=2, factor=3.0, shift_at=2, seed=4)
    day = lambda p: int(p["created_at"][8:10])  # noqa: E731 - the stream's windows are its days
    store = _store(tmp_path / "posts.sqlite", [p for p in posts if day(p) <= 4])
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    deployment = mh.load_deployment(work / "model")
    first = mh.monitor_round(store, deployment, reference, OPTIONS, out_dir=tmp_path / "out")
    alerts = first.outputs["alerts"]
    assert set(alerts["status"]) == {"new"} and len(alerts) >= 2, alerts
    latest = alerts["window"].iat[-1]

    ack = ["audit", "monitor-ack", "--store", str(store), "--model", str(work / "model")]
    r = CliRunner().invoke(app, [*ack, "--window", "2026-01-09 00:00"])
    assert r.exit_code == 2 and "no alert of" in r.output and latest in r.output
    r = CliRunner().invoke(app, [*ack, "--window", latest, "--note", "certified: out/certify"])
    assert r.exit_code == 0 and r.output.strip() == f"acknowledged {(alerts['window'] == latest).sum()} alert(s)"

    with PostStore(store) as db:
        db.commit_batch([p for p in posts if day(p) > 4], cursor=len(posts))
    second = mh.monitor_round(store, deployment, reference, OPTIONS, out_dir=tmp_path / "out")
    later = second.outputs["alerts"].set_index(["window", "kind"])["status"]
    drifted = [w for (w, k) in later.index if w > latest and k == "drift"]
    assert drifted and all(later[(w, "drift")] == "continuing" for w in drifted[: _unbroken(later, latest)])
    assert second.outputs["alert_window"] is None or second.outputs["alert_window"] not in drifted
    with PostStore(store) as db:
        suppressed = alert_log.recorded_alerts(db, deployment.deployed.digest).query("suppressed")
    assert len(suppressed) == (later == "continuing").sum() > 0


def _unbroken(status: pd.Series, after: str) -> int:
    """How many drift windows after `after` follow it without a quiet window between."""
    windows = sorted({w for w, _ in status.index})
    count = 0
    for w in windows[windows.index(after) + 1 :]:
        if (w, "drift") not in status.index:
            break
        count += 1
    return count


def test_the_service_serves_the_page_and_metrics_and_they_follow_the_rounds(setup, tmp_path):
    """`run_monitor` (what `--follow` runs) on a SYNTHETIC stream that grows between two rounds: after each round
    /metrics holds that round's windows and the live page's round counter moves (no sleeping: the wait between
    rounds is the test's own)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    work, texts = setup
    posts = _stream(texts, n_windows=4, per_window=300, seed=2)
    store = _store(tmp_path / "posts.sqlite", posts[:600])
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    seen, urls = [], {}

    def fetch(url: str) -> str:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.read().decode()

    def after(result, number: int) -> None:
        metrics = text_string_to_metric_families(fetch(urls["metrics"]))
        windows = {s.labels["window"] for f in metrics if f.name == "mhaudit_monitor_window_posts" for s in f.samples}
        seen.append((number, json.loads(fetch(urls["page"] + "round"))["round"], sorted(windows)))
        assert sorted(windows) == result.table("windows")["window"].tolist()

    def between_rounds(seconds: float) -> None:
        assert seconds == 60.0
        with PostStore(store) as db:
            db.commit_batch(posts[600:], cursor=len(posts))

    last = mh.run_monitor(
        store,
        mh.load_deployment(work / "model"),
        reference,
        OPTIONS,
        out_dir=tmp_path / "out",
        service=mh.MonitorService(metrics_port=0, serve_port=0, metrics_file=tmp_path / "monitor.prom"),
        every_minutes=1,
        rounds=2,
        on_start=urls.update,
        on_round=after,
        sleep=between_rounds,
    )
    assert [(n, r, len(w)) for n, r, w in seen] == [(1, 1, 2), (2, 2, 4)]
    assert last.options["scored_now"] == 600 and (tmp_path / "monitor.prom").read_text().count("window=") > 4
    with pytest.raises(InputError, match="cannot write the metrics file .*: the folder .* does not exist"):
        mh.MonitorService(metrics_file=tmp_path / "no" / "such.prom")
