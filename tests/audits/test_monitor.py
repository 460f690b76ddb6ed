"""`mhaudit audit monitor` on SYNTHETIC streams with a planted change (prevalence x2, a vocabulary shift), written into
a real SQLite post store: alerts, incremental and resumable scoring (kill -9), a writer committing posts at the same
time, privacy of every output, scoring on Ray (core.executors) without torch with identical numbers, and the bad
inputs; then `audit_monitor` from Python on the same store, as the CLI calls it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.store import PostStore
from tests.cli_checks import assert_one_sentence_failure
from tests.weak_supervision.collect.pg_server import fixture_pg_server, fixture_pg_url  # noqa: F401  (fixtures)

runner = CliRunner()
CLASSES = ["other", "depression"]


@pytest.fixture(scope="module", name="setup")  # other modules import fixture_setup
def fixture_setup(tmp_path_factory):
    """A binary tfidf-lr model trained on SYNTHETIC tweets (train split), its reference predictions on the labelled
    test split (the validated sample), and the val split's texts, which the streams are drawn from."""
    import mhaudit as mh
    from mhaudit.tables.predictions import predict_corpus

    work = tmp_path_factory.mktemp("monitor")
    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=2400, seed=0))
    frame = corpus.frame.assign(label=np.where(corpus.frame["label"] == "depression", "depression", "other"))
    binary = mh.Corpus.build(frame, CLASSES, meta={"synthetic": True})
    tweets = binary.frame[binary.frame["platform"] == "synthetic-tweets"]
    model = mh.create_model("tfidf-lr").fit(tweets[tweets["split"] == "train"], CLASSES)
    mh.save_model(model, work / "model")
    ref_rows = tweets[tweets["split"] == "test"]
    reference = predict_corpus(
        model,
        mh.Corpus.build(ref_rows, CLASSES, meta={"synthetic": True}),
        model_name="tfidf-lr",
        seed=0,
        splits=("test",),
    )
    reference.to_parquet(work / "reference.parquet")
    pool = tweets[tweets["split"] == "val"]
    texts = {c: pool.loc[pool["label"] == c, "text"].tolist() for c in CLASSES}
    return work, texts


def _store(path: Path, posts: list[dict]) -> Path:
    with PostStore(path) as store:
        for i in range(0, len(posts), 500):
            store.commit_batch(posts[i : i + 500], cursor=i + 500)
    return path


def _monitor(work, store, out, *extra):
    return runner.invoke(
        app,
        [
            "audit",
            "monitor",
            "--store",
            str(store),
            "--model",
            str(work / "model"),
            "--reference",
            str(work / "reference.parquet"),
            "--window",
            "1d",
            "--positive",
            "depression",
            "--n-boot",
            "100",
            "--out",
            str(out),
            *extra,
        ],
    )


def _windows(out: Path) -> pd.DataFrame:
    report = json.loads((out / "report.json").read_text())
    return pd.DataFrame(report["sections"][0]["tables"]["windows"])


def test_doubled_prevalence_alarms_in_its_window_and_suggests_a_sample(setup, tmp_path):
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=12, change_at=8, seed=1))
    store = _store(tmp_path / "posts.sqlite", posts)
    out = tmp_path / "report"
    r = _monitor(work, store, out)
    assert r.exit_code == 0, r.output
    windows = _windows(out)
    assert len(windows) == 12 and (windows["n_posts"] == 1000).all()
    alarms = np.flatnonzero(windows["change_alarm"])
    assert alarms.tolist() == [8]  # within one window of the change, and no false alarm before it
    share = windows["predicted_depression"]
    assert share[8:].mean() > share[:8].mean() * 1.5
    assert (windows["psi_score"][:8] < 0.10).all()
    report = json.loads((out / "report.json").read_text())
    _assert_em_prevalence(windows, posts, report["summary"])
    assert any(v["statistic"] == "change_z" and v["severity"] == "fail" for v in report["verdicts"])
    (folder,) = (out / "alert").iterdir()  # one folder per alerting window
    assert folder.name == windows["window"].iat[-1].replace(" ", "T").replace(":", "-")  # the latest alert
    sample = pd.read_parquet(folder / "sample.parquet")
    assert len(sample) == 200 and "text" not in sample.columns
    assert set(sample["item_id"]) <= set(pd.read_parquet(folder / "predictions.parquet")["id"])
    # the annotation app resolves the ids to text from the store
    from mhaudit.weak_supervision.annotate import load_sample

    items = load_sample(folder / "sample.parquet", posts=store)
    assert len(items) == 200 and all(item.text for item in items)
    _assert_private(out, posts)


def _assert_em_prevalence(windows: pd.DataFrame, posts: list[dict], summary: str) -> None:
    """SYNTHETIC stream, prevalence 0.2 doubled from window 8: the EM prevalence follows the change's size, which
    the mean calibrated probability halves; the summary opens with it. Here the true shares are 0.19-0.23 then
    0.39-0.42; EM reads 0.23-0.26 then 0.43-0.47 (a fixed +0.045 from the calibration fitted on the small reference,
    which the window's bootstrap interval does not hold: it covers the truth in 3 of 12 windows), the mean
    probability 0.26-0.27 then 0.36-0.38."""
    truth = np.array([p["label"] for p in posts], dtype=float).reshape(12, 1000).mean(axis=1)
    em, low, high = (windows[f"{c}_depression"].to_numpy() for c in ("em_prior", "em_ci_low", "em_ci_high"))
    mean = windows["mean_posterior_depression"].to_numpy()
    assert (low <= em).all() and (em <= high).all() and (high - low < 0.1).all()
    assert np.abs(em - truth).max() < 0.07
    jump = {name: v[8:].mean() - v[:8].mean() for name, v in (("truth", truth), ("em", em), ("mean", mean))}
    assert abs(jump["em"] - jump["truth"]) < 0.03 and jump["mean"] < 0.6 * jump["truth"], jump
    first = (
        f"Prevalence of depression (EM estimate, 95% CI): {em[-1]:.3f} [{low[-1]:.3f}, {high[-1]:.3f}] in the "
        f"latest judged window ({windows['window'].iat[-1]}), from {em[:3].mean():.3f} in the first 3 judged "
        "windows (mean)."
    )
    assert summary.startswith(first), summary


def _label_shift_stream(n_windows: int = 10, per_window: int = 1000, change_at: int = 5, seed: int = 3):
    """SYNTHETIC, label shift exactly: x | y ~ N(+-1, 1) on the reference (4,000 rows, prevalence 0.15) and on the
    stream, whose prevalence is 0.15 and 0.30 from window `change_at`; the model's logit is x's log-odds ratio (2x).
    Returns the monitor's inputs and each window's true share of positive posts."""
    import mhaudit as mh
    from mhaudit.tables.prediction_files import predictions_from_arrays

    rng = np.random.default_rng(seed)
    classes = ["other", "depression"]
    y_ref = (rng.random(4000) < 0.15).astype(int)
    x_ref = rng.normal(2.0 * y_ref - 1.0, 1.0)
    reference = predictions_from_arrays(
        np.asarray(classes, dtype=object)[y_ref],
        np.c_[np.zeros(4000), 2 * x_ref],
        "synthetic-home",
        model="gaussian",
        seed=0,
        classes=classes,
        kind="logits",
        ids=[f"ref-{i}" for i in range(4000)],
    )
    prevalence = np.repeat(np.where(np.arange(n_windows) >= change_at, 0.30, 0.15), per_window)
    y = (rng.random(prevalence.size) < prevalence).astype(int)
    x = rng.normal(2.0 * y - 1.0, 1.0)
    n = y.size
    times = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.arange(n) * 86400 // per_window, unit="s")
    posts = pd.DataFrame(
        {
            "uri": [f"at://a-synthetic/app.bsky.feed.post/l{i:06d}" for i in range(n)],
            "created_at": times.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "length": 80,
            "langs": [["en"]] * n,
            "categories": [["synthetic"]] * n,
            "logit_other": 0.0,
            "logit_depression": 2 * x,
        }
    )
    inputs = mh.MonitorInputs(
        posts, mh.PredictionSet(reference.frame, classes), "gaussian", "d" * 64, classes, synthetic=True
    )
    return inputs, y.reshape(n_windows, per_window).mean(axis=1)


def test_em_prevalence_and_its_interval_follow_a_label_shift():
    """Under label shift with a well-calibrated reference, the EM prevalence's 95% CI holds each window's true
    share of positive posts in most windows, EM is within 0.03 of it after the change while the mean calibrated
    probability stays ~0.07 below (it is pulled towards the reference's 0.15), and the summary opens with it."""
    import mhaudit as mh

    inputs, truth = _label_shift_stream()
    result = mh.audit_monitor(inputs, mh.MonitorOptions(n_boot=200, figures=False))
    windows = result.table("windows")
    em, low, high = (windows[f"{c}_depression"].to_numpy() for c in ("em_prior", "em_ci_low", "em_ci_high"))
    mean = windows["mean_posterior_depression"].to_numpy()
    covered = (low <= truth) & (truth <= high)
    assert covered.sum() >= 8, (truth, low, high)
    after = slice(5, None)
    em_error, mean_error = np.abs(em - truth)[after].max(), np.abs(mean - truth)[after].min()
    assert em_error < 0.03 and mean_error > 0.05, (em_error, mean_error)
    assert result.summary.startswith(
        f"SYNTHETIC data. Prevalence of depression (EM estimate, 95% CI): {em[-1]:.3f} [{low[-1]:.3f}, "
        f"{high[-1]:.3f}] in the latest judged window (2026-01-10 00:00), from {em[:3].mean():.3f} in the first 3 "
        "judged windows (mean)."
    ), result.summary
    # windows too small to estimate get no interval
    small = mh.audit_monitor(
        mh.MonitorInputs(
            inputs.posts.iloc[:10], inputs.reference, "gaussian", "d" * 64, inputs.classes, synthetic=True
        ),
        mh.MonitorOptions(n_boot=50, figures=False),
    )
    row = small.table("windows").iloc[0]
    assert np.isnan(row["em_ci_low_depression"]) and np.isnan(row["em_ci_high_depression"])
    assert np.isfinite(row["em_prior_depression"])


def test_vocabulary_shift_moves_the_score_distribution(setup, tmp_path):
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=10, shift_at=6, seed=2))
    out = tmp_path / "report"
    r = _monitor(work, _store(tmp_path / "posts.sqlite", posts), out)
    assert r.exit_code == 0, r.output
    windows = _windows(out)
    assert (windows["psi_score"][:6] < 0.10).all() and (windows["psi_score"][6:] >= 0.10).all()
    report = json.loads((out / "report.json").read_text())
    flagged = [v["reason"] for v in report["verdicts"] if v["statistic"] == "psi_score"]
    assert len(flagged) == 4 and all(r.startswith(f"window {w}:") for r, w in zip(flagged, windows["window"][6:]))


def test_rerun_scores_only_new_posts_and_kill_9_loses_nothing(setup, tmp_path):
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=6, per_window=800, seed=3))
    store = _store(tmp_path / "posts.sqlite", posts[:3000])
    env = dict(os.environ, MHAUDIT_MONITOR_BATCH_DELAY="0.05")  # slow batches, so the kill lands mid-run
    cmd = [
        sys.executable,
        "-m",
        "mhaudit",
        "audit",
        "monitor",
        "--store",
        str(store),
        "--model",
        str(work / "model"),
        "--reference",
        str(work / "reference.parquet"),
        "--n-boot",
        "100",
        "--out",
        str(tmp_path / "killed"),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600  # only a guard against a hung process: a loaded machine is slow to start one
    while time.time() < deadline and _scored(store) < 600:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _scored(store)
    assert 0 < partial < 3000 and partial % 256 == 0  # whole batches only
    out = tmp_path / "report"
    r = _monitor(work, store, out)
    assert r.exit_code == 0, r.output
    assert json.loads((out / "report.json").read_text())["options"]["scored_now"] == 3000 - partial
    _store(store, posts[3000:])  # the collector adds posts: the next run scores only those
    r = _monitor(work, store, out)
    assert json.loads((out / "report.json").read_text())["options"]["scored_now"] == len(posts) - 3000
    assert _scored(store) == len(posts)
    # the resumed scores equal a clean run's
    clean = _store(tmp_path / "clean.sqlite", posts)
    assert _monitor(work, clean, tmp_path / "clean").exit_code == 0
    pd.testing.assert_frame_equal(_scores(store, work), _scores(clean, work))


def _writer(store: str, posts: list[dict], tmp_path: Path) -> subprocess.Popen:
    """Another process committing `posts` to the store in batches of 100, as the collector does."""
    (tmp_path / "rest.json").write_text(json.dumps(posts))
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import json, time\n"
                "from mhaudit.weak_supervision.collect.store import PostStore\n"
                f"posts = json.load(open({str(tmp_path / 'rest.json')!r}))\n"
                f"with PostStore({store!r}) as s:\n"
                "    for i in range(0, len(posts), 100):\n"
                "        s.commit_batch(posts[i:i + 100], cursor=10_000 + i); time.sleep(0.02)\n"
            ),
        ]
    )


def _scored(store: Path) -> int:
    import sqlite3

    with sqlite3.connect(store) as conn:
        try:
            return conn.execute("SELECT count(*) FROM scores").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def _scores(store, work: Path) -> pd.DataFrame:
    """Every scored post's logits, by uri (the typed reader of the scores table)."""
    from mhaudit.weak_supervision.collect.scores import scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest

    with PostStore(store) as s:
        frame = scored_posts(s, model_digest(work / "model"), CLASSES)
    return frame.set_index("uri").sort_index()[[f"logit_{c}" for c in CLASSES]]


def test_scores_while_a_writer_commits_to_the_same_store(setup, tmp_path):
    """A second process commits batches as the collector does while the monitor scores (SQLite WAL)."""
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=6, per_window=600, seed=4))
    store = _store(tmp_path / "posts.sqlite", posts[:1800])
    writer = _writer(str(store), posts[1800:], tmp_path)
    out = tmp_path / "report"
    r = _monitor(work, store, out)
    assert writer.wait(timeout=120) == 0
    assert r.exit_code == 0, r.output
    first = json.loads((out / "report.json").read_text())["options"]["scored_now"]
    r = _monitor(work, store, out)
    second = json.loads((out / "report.json").read_text())["options"]["scored_now"]
    assert first + second == len(posts) and _scored(store) == len(posts)


# A stand-in for an environment without torch (the `ray` and `bluesky` extras only): `import torch` fails as it
# does where torch is not installed, and leaves a mark naming the process that tried. Its sitecustomize marks every
# Python process started with it on PYTHONPATH, which shows that the Ray workers inherited it.
_NO_TORCH = """import os, sys
with open(os.path.join(os.environ["NO_TORCH_MARKS"], f"{kind}-{os.getpid()}"), "w") as mark:
    mark.write(" ".join(sys.argv))
"""
_RAY_DRIVER = """import sys, ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
from mhaudit.cli import app
app(sys.argv[1:])
"""


def _no_torch_env(tmp_path: Path) -> tuple[dict, Path]:
    folder, marks = tmp_path / "no-torch", tmp_path / "marks"
    (folder / "torch").mkdir(parents=True)
    marks.mkdir()
    (folder / "torch" / "__init__.py").write_text(
        _NO_TORCH.replace("{kind}", "torch") + "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
    )
    (folder / "sitecustomize.py").write_text(_NO_TORCH.replace("{kind}", "python"))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env |= {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])),
        "NO_TORCH_MARKS": str(marks),
        "RAY_AUTH_MODE": "disabled",
    }
    return env, marks


def test_ray_executor_without_torch_gives_the_same_numbers(setup, tmp_path):
    """Scoring on a local Ray (core.executors.run_jobs, one job per batch) where torch cannot be imported, and in
    local processes, equals scoring here: the TF-IDF model's workers never try torch. A model that needs torch is
    one sentence naming the extra, not a traceback."""
    pytest.importorskip("ray", reason="Ray is the optional mhaudit[ray] extra")
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=4, per_window=700, seed=5))
    local, processes, distributed = (_store(tmp_path / f"{n}.sqlite", posts) for n in ("local", "processes", "ray"))
    assert _monitor(work, local, tmp_path / "local").exit_code == 0
    r = _monitor(work, processes, tmp_path / "processes", "--workers", "2")
    assert r.exit_code == 0, r.output
    env, marks = _no_torch_env(tmp_path)
    args = [
        "audit",
        "monitor",
        "--store",
        str(distributed),
        "--reference",
        str(work / "reference.parquet"),
        "--window",
        "1d",
        "--positive",
        "depression",
        "--n-boot",
        "100",
        "--executor",
        "ray",
    ]
    done = subprocess.run(
        [sys.executable, "-c", _RAY_DRIVER, *args, "--model", str(work / "model"), "--out", str(tmp_path / "ray")],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = [p.read_text() for p in marks.iterdir()]
    assert any("default_worker.py" in argv for argv in seen), seen  # the workers ran with the stand-in
    assert not list(marks.glob("torch-*")), [p.read_text() for p in marks.glob("torch-*")]
    for other in (processes, distributed):
        pd.testing.assert_frame_equal(_scores(local, work), _scores(other, work))
    for folder in ("processes", "ray"):
        pd.testing.assert_frame_equal(_windows(tmp_path / "local"), _windows(tmp_path / folder))
    (tmp_path / "transformer").mkdir()
    (tmp_path / "transformer" / "mhaudit-model.json").write_text(
        json.dumps({"name": "transformer", "options": {}, "classes": CLASSES})
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            *args,
            "--model",
            str(tmp_path / "transformer"),
            "--out",
            str(tmp_path / "no"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    message = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in message and "Traceback" not in done.stdout + message, message
    assert message == "error: model 'transformer' needs an optional dependency (torch); install mhaudit[transformers]"
    assert not (tmp_path / "no").exists()


def _assert_private(out: Path, posts: list[dict]) -> None:
    """No output file holds a post's text or a DID: counts, rates and pseudonymous ids only."""
    texts = {p["text"] for p in posts}
    for path in out.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix == ".parquet":
            body = pd.read_parquet(path).to_csv(index=False)
        elif path.suffix == ".png":
            continue
        else:
            body = path.read_text()
        assert "did:" not in body, path
        assert not any(t in body for t in list(texts)[:300]), path


def test_bad_inputs(setup, tmp_path):
    work, texts = setup
    empty = tmp_path / "empty.sqlite"
    PostStore(empty).close()
    assert_one_sentence_failure(_monitor(work, empty, tmp_path / "o1"), "no posts")
    daily = [
        dict(p, created_at=p["created_at"][:10])
        for p in simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=3, per_window=100, seed=6))
    ]
    assert_one_sentence_failure(
        runner.invoke(
            app,
            [
                "audit",
                "monitor",
                "--store",
                str(_store(tmp_path / "daily.sqlite", daily)),
                "--model",
                str(work / "model"),
                "--reference",
                str(work / "reference.parquet"),
                "--window",
                "6h",
                "--out",
                str(tmp_path / "o2"),
            ],
        ),
        "shorter than the posts' time resolution",
    )
    three = pd.read_parquet(work / "reference.parquet").assign(logit_anxiety=0.0)
    three.to_parquet(tmp_path / "three.parquet")
    store = _store(tmp_path / "posts.sqlite", daily)
    assert_one_sentence_failure(
        runner.invoke(
            app,
            [
                "audit",
                "monitor",
                "--store",
                str(store),
                "--model",
                str(work / "model"),
                "--reference",
                str(tmp_path / "three.parquet"),
                "--window",
                "1d",
                "--out",
                str(tmp_path / "o3"),
            ],
        ),
        "differ",
    )
    assert_one_sentence_failure(_monitor(work, store, tmp_path / "o4", "--window", "fortnight"), "window 'fortnight'")
    assert_one_sentence_failure(_monitor(work, store, tmp_path / "o5", "--n-boot", "0"), "n_boot")
    for folder in ("o1", "o2", "o3", "o4", "o5"):
        assert not (tmp_path / folder).exists()


def test_postgres_store_scores_while_a_writer_commits_and_matches_sqlite(setup, tmp_path, pg_url):
    """The same stream in PostgreSQL, a second process committing posts meanwhile: every post scored once, the
    same scores and windows as the SQLite store's."""
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=4, per_window=600, seed=7))
    with PostStore(pg_url) as store:
        store.commit_batch(posts[:1200], cursor=1200)
    writer = _writer(pg_url, posts[1200:], tmp_path)
    out = tmp_path / "pg"
    r = _monitor(work, pg_url, out)
    assert writer.wait(timeout=120) == 0
    assert r.exit_code == 0, r.output
    r = _monitor(work, pg_url, out)
    assert r.exit_code == 0, r.output
    sqlite = _store(tmp_path / "posts.sqlite", posts)
    assert _monitor(work, sqlite, tmp_path / "sqlite").exit_code == 0
    pg_scores = _scores(pg_url, work)
    pd.testing.assert_frame_equal(pg_scores, _scores(sqlite, work))
    assert len(pg_scores) == len(posts)
    pd.testing.assert_frame_equal(_windows(out), _windows(tmp_path / "sqlite"))


def test_follow_repeats_and_each_round_scores_only_new_posts(setup, tmp_path):
    work, texts = setup
    posts = simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=3, per_window=300, seed=8))
    store = _store(tmp_path / "posts.sqlite", posts)
    r = _monitor(work, store, tmp_path / "report", "--follow", "0.001", "--rounds", "2")
    assert r.exit_code == 0, r.output
    assert "900 scored in this run" in r.output and "0 scored in this run" in r.output


def test_audit_monitor_from_python_equals_the_command(setup, tmp_path):
    """Score, read, audit: the steps of `mhaudit audit monitor` called from Python give its report; the audit writes
    nothing, and its outputs hold the sample the command writes."""
    import mhaudit as mh
    from mhaudit.audits.monitor import alert_folder
    from mhaudit.models import load_model
    from mhaudit.weak_supervision.collect.scores import scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest, score_posts

    work, texts = setup
    posts = simulate_stream(
        texts["depression"], texts["other"], StreamConfig(n_windows=5, per_window=400, change_at=3, seed=9)
    )
    store = _store(tmp_path / "posts.sqlite", posts)
    digest = model_digest(work / "model")
    assert score_posts(store, load_model, work / "model", digest, batch_size=300) == len(posts)
    with PostStore(store) as s:
        scored = scored_posts(s, digest, CLASSES)
    assert list(scored.columns) == [
        "uri",
        "created_at",
        "length",
        "langs",
        "categories",
        "logit_other",
        "logit_depression",
    ]
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    inputs = mh.MonitorInputs(scored, reference, "tfidf-lr", digest, CLASSES)
    result = mh.audit_monitor(inputs, mh.MonitorOptions(positive="depression", n_boot=100, figures=False))
    assert _monitor(work, store, tmp_path / "cli").exit_code == 0
    pd.testing.assert_frame_equal(
        result.table("windows").reset_index(drop=True), _windows(tmp_path / "cli"), check_dtype=False
    )
    folder = tmp_path / "cli" / alert_folder(result.outputs["alert_window"])
    pd.testing.assert_frame_equal(result.outputs["suggested_sample"], pd.read_parquet(folder / "sample.parquet"))
    assert result.options["seed"] == 0 and result.options["positive"] == "depression"
    assert all(p.name == "cli" or p.name.startswith("posts.sqlite") for p in tmp_path.iterdir())
