"""`mhaudit audit monitor --model DIR` where DIR holds an ensemble of runs (`mhaudit train --runs 5`, TF-IDF runs
on the SYNTHETIC corpus's tweets): every run scores the SYNTHETIC stream, and each window big enough gets the
deployed run's accuracy from the agreement line over the runs (ALine-D), with its CI and the line's trust."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.store import PostStore

runner = CliRunner()
CLASSES = ["other", "depression"]
GOLDEN = Path(__file__).parent / "monitor_single_run.json"


def build_ensemble(work: Path) -> list[dict]:
    """SYNTHETIC: a binary corpus of the simulated tweets, 5 TF-IDF runs trained on it (work/models/run-<k>), every
    run's predictions on its labelled test split (work/reference.parquet, seeds 0-4) and, in work/posts.sqlite, a
    stream of 4 days of 300 posts drawn from its val split (a vocabulary shift from day 2) and a fifth day of 15
    posts (too few to judge). Returns the posts."""
    import mhaudit as mh

    corpus = mh.simulate(mh.SimulationConfig(n_per_platform=2400, seed=0))
    frame = corpus.frame.assign(label=np.where(corpus.frame["label"] == "depression", "depression", "other"))
    tweets = frame[frame["platform"] == "synthetic-tweets"]
    mh.Corpus.build(tweets, CLASSES, meta={"synthetic": True}).write(work / "corpus.parquet")
    for args in (
        [
            "train",
            "--corpus",
            str(work / "corpus.parquet"),
            "--model",
            "tfidf-lr",
            "--runs",
            "5",
            "--out",
            str(work / "models"),
        ],
        [
            "predict",
            "--model",
            str(work / "models"),
            "--corpus",
            str(work / "corpus.parquet"),
            "--splits",
            "test",
            "--out",
            str(work / "reference.parquet"),
        ],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    pool = tweets[tweets["split"] == "val"]
    texts = {c: pool.loc[pool["label"] == c, "text"].tolist() for c in CLASSES}
    posts = simulate_stream(
        texts["depression"], texts["other"], StreamConfig(n_windows=4, per_window=300, shift_at=2, seed=11)
    )
    tail = simulate_stream(
        texts["depression"],
        texts["other"],
        StreamConfig(n_windows=1, per_window=15, start="2026-01-05T00:00:00Z", seed=12),
    )
    posts += [dict(p, uri=p["uri"].replace("/s", "/t")) for p in tail]
    with PostStore(work / "posts.sqlite") as store:
        store.commit_batch(posts, cursor=len(posts))
    return posts


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The ensemble's folder and the SYNTHETIC posts (with their true labels, which the store ignores)."""
    work = tmp_path_factory.mktemp("monitor-ensemble")
    return work, build_ensemble(work)


def _store(work: Path, tmp_path: Path) -> Path:
    """A fresh copy of the unscored store."""
    import shutil

    return Path(shutil.copy(work / "posts.sqlite", tmp_path / "posts.sqlite"))


def _monitor(store: Path, model: Path, reference: Path, out: Path, *extra):
    return runner.invoke(
        app,
        [
            "audit",
            "monitor",
            "--store",
            str(store),
            "--model",
            str(model),
            "--reference",
            str(reference),
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


def _report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def _windows(report: dict) -> pd.DataFrame:
    return pd.DataFrame(report["sections"][0]["tables"]["windows"])


@pytest.fixture(scope="module")
def single_run(runs, tmp_path_factory):
    """The monitor's report on run-2's folder alone, with run-2's reference predictions (seed 2)."""
    work, _ = runs
    tmp = tmp_path_factory.mktemp("single-run")
    reference = pd.read_parquet(work / "reference.parquet")
    reference[reference["seed"] == 2].to_parquet(tmp / "reference-run-2.parquet")
    r = _monitor(_store(work, tmp), work / "models" / "run-2", tmp / "reference-run-2.parquet", tmp / "out")
    assert r.exit_code == 0, r.output
    assert "deployed:" not in r.output  # one model folder: no ensemble, no note
    return _report(tmp / "out")


def test_a_single_run_folder_gives_the_numbers_it_gave_before(single_run):
    """GOLDEN holds the report of run-2's folder alone made by the monitor before it knew ensembles (commit
    dceeada): the same columns, numbers, verdicts and summary, but for the EM interval's two columns and the summary's
    first sentence, added since, and the estimate's interval, drawn anew since (relative 1e-6 allows another BLAS's
    last digits; here they are equal bit for bit)."""
    golden = json.loads(GOLDEN.read_text())
    windows = _windows(single_run)
    added = ["em_ci_low_depression", "em_ci_high_depression"]  # since: the EM prevalence's 95% CI (issue 33)
    columns = list(golden["windows"][0])
    at = columns.index("em_prior_depression") + 1
    assert list(windows.columns) == columns[:at] + added + columns[at:]  # no ensemble column
    # since issue 31 the estimate's draws split at the reference (stats.estimate_draws): its interval is drawn
    # anew, so it moves by Monte Carlo noise (100 draws here) and nothing else; every other number is as it was
    redrawn = ["expected_ci_low", "expected_ci_high"]
    before = pd.DataFrame(golden["windows"])
    pd.testing.assert_frame_equal(windows.drop(columns=added + redrawn), before.drop(columns=redrawn), rtol=1e-6)
    width = (before["expected_ci_high"] - before["expected_ci_low"]).to_numpy()
    for column in redrawn:
        np.testing.assert_allclose(windows[column], before[column], rtol=0, atol=0.2 * np.nanmax(width))
    em, low, high = (windows[c].to_numpy() for c in ("em_prior_depression", *added))
    big = windows["n_posts"].to_numpy() >= 20  # a window under 20 posts gets no interval
    assert ((low <= em) & (em <= high))[big].all() and np.isnan(low[~big]).all() and np.isnan(high[~big]).all()
    verdicts, expected = pd.DataFrame(single_run["verdicts"]), pd.DataFrame(golden["verdicts"])
    bounds = ["ci_low", "ci_high"]  # the estimate verdict's interval, drawn anew as above
    pd.testing.assert_frame_equal(verdicts.drop(columns=bounds), expected.drop(columns=bounds), rtol=1e-6)
    for column in bounds:
        np.testing.assert_allclose(verdicts[column], expected[column], rtol=0, atol=0.2 * np.nanmax(width))
    # since: the summary opens with the EM prevalence sentence; the rest is as it was, character for character
    first, rest = single_run["summary"].split(". ", 1)
    interval = re.compile(r"\[\d\.\d+, \d\.\d+\]")  # the estimate's, drawn anew (above)
    assert first.startswith("Prevalence of depression (EM estimate, 95% CI): ")
    assert interval.sub("[CI]", rest) == interval.sub("[CI]", golden["summary"])
    assert [s["title"] for s in single_run["sections"]] == ["Windows", "Alerts", "Suggested validation sample"]


def _true_accuracy(posts: list[dict], store: Path, model: Path, windows: pd.Series) -> np.ndarray:
    """The deployed run's accuracy per window on the posts' true labels (SYNTHETIC: known)."""
    from mhaudit.weak_supervision.collect.scores import run_predictions
    from mhaudit.weak_supervision.collect.scoring import model_digest

    with PostStore(store) as s:
        predicted = run_predictions(s, {"run": model_digest(model)})
    # the store keeps pseudonymous uris: pair posts by their record key
    predicted = predicted.set_index(predicted["uri"].str.rsplit("/", n=1).str[-1])["run"]
    frame = pd.DataFrame(posts)
    keys = frame["uri"].str.rsplit("/", n=1).str[-1]
    frame["right"] = predicted.reindex(keys).to_numpy() == frame["label"].to_numpy()
    frame["window"] = pd.to_datetime(frame["created_at"]).dt.floor("1D").dt.strftime("%Y-%m-%d %H:%M")
    return frame.groupby("window")["right"].mean().reindex(windows).to_numpy()


def test_every_run_scores_and_each_big_window_gets_the_deployed_runs_accuracy(runs, single_run, tmp_path):
    from mhaudit.weak_supervision.collect.scoring import model_digest

    work, posts = runs
    store, out = _store(work, tmp_path), tmp_path / "out"
    r = _monitor(store, work / "models", work / "reference.parquet", out, "--deployed", "run-2")
    assert r.exit_code == 0, r.output
    assert "deployed: run-2, one of 5 runs" in r.output
    report = _report(out)
    assert report["options"]["deployed"] == "run-2" and report["options"]["runs"] == [f"run-{k}" for k in range(5)]
    assert report["options"]["model_digest"] == model_digest(work / "models" / "run-2")
    assert report["title"].startswith("Monitoring tfidf-lr run-2 on the stream")
    import sqlite3

    with sqlite3.connect(store) as conn:  # every run scored every post, under its own digest
        counts = conn.execute("SELECT model_digest, count(*) FROM scores GROUP BY model_digest").fetchall()
    assert sorted(n for _, n in counts) == [len(posts)] * 5
    assert {d for d, _ in counts} == {model_digest(work / "models" / f"run-{k}") for k in range(5)}

    windows = _windows(report)
    big = (windows["n_posts"] >= 100).to_numpy()
    assert big.tolist() == [True] * 4 + [False]
    est, low, high = (windows[c].to_numpy(float) for c in ("ensemble_accuracy", "ensemble_ci_low", "ensemble_ci_high"))
    assert np.isfinite(est[big]).all() and ((low <= est) & (est <= high))[big].all()
    assert np.isnan(est[~big]).all()
    assert (windows.loc[~big, "ensemble_untrusted_because"] == "fewer than 100 posts").all()
    truth = _true_accuracy(posts, store, work / "models" / "run-2", windows["window"])
    # five TF-IDF runs on 300 posts: the pairs scatter about the line, and the monitor says so rather than trust
    # estimates off by up to 0.13 (here 0.808, 0.954, 0.929, 0.858 against 0.837, 0.840, 0.797, 0.843)
    assert not windows["ensemble_trusted"].any()
    assert windows.loc[big, "ensemble_untrusted_because"].str.contains("the agreement line explains R²").all()
    assert np.abs(est - truth)[big].max() < 0.2 and np.abs(est - truth)[big].min() < 0.05
    # the deployed run's own columns are those of run-2's folder alone, bit for bit
    alone = _windows(single_run)
    pd.testing.assert_frame_equal(windows[alone.columns], alone)

    # a rerun reads every window, the ensemble's columns included, from the store: the same table
    r = _monitor(store, work / "models", work / "reference.parquet", tmp_path / "again", "--deployed", "run-2")
    assert r.exit_code == 0, r.output
    assert "0 of 5 windows computed; 5 read from the store" in r.output
    pd.testing.assert_frame_equal(_windows(_report(tmp_path / "again")), windows, check_exact=True)

    runs_table = pd.DataFrame(report["sections"][1]["tables"]["runs"])
    reference = pd.read_parquet(work / "reference.parquet")
    right = reference.assign(
        right=reference[["logit_other", "logit_depression"]].to_numpy().argmax(axis=1)
        == (reference["label"] == "depression").to_numpy()
    )
    np.testing.assert_allclose(runs_table["accuracy_reference"], right.groupby("seed")["right"].mean().to_numpy())
    assert runs_table["deployed"].tolist() == [False, False, True, False, False]

    row = next(v for v in report["verdicts"] if v["statistic"] == "ensemble_accuracy_latest")
    last = windows[big].iloc[-1]
    assert row["value"] == pytest.approx(last["ensemble_accuracy"]) and row["subject"] == "tfidf-lr run-2"
    assert row["severity"] == ("pass" if last["ensemble_trusted"] else "warn")
    assert "Ensemble of 5 runs (deployed: run-2" in report["summary"]
    _assert_private(out, posts)


def _assert_private(out: Path, posts: list[dict]) -> None:
    """No output file holds a post's text or a DID."""
    texts = {p["text"] for p in posts}
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            body = pd.read_parquet(path).to_csv(index=False) if path.suffix == ".parquet" else path.read_text()
            assert "did:" not in body and not any(t in body for t in list(texts)[:300]), path


def test_a_reference_missing_a_run_is_one_sentence(runs, tmp_path):
    from tests.cli_checks import assert_one_sentence_failure

    work, _ = runs
    reference = pd.read_parquet(work / "reference.parquet")
    reference[reference["seed"] != 3].to_parquet(tmp_path / "four.parquet")
    store = _store(work, tmp_path)
    message = assert_one_sentence_failure(
        _monitor(store, work / "models", tmp_path / "four.parquet", tmp_path / "o1"), "hold no rows of run-3 (seed 3)"
    )
    assert "run-0" not in message
    assert_one_sentence_failure(
        _monitor(store, work / "models", work / "reference.parquet", tmp_path / "o2", "--deployed", "run-9"),
        "the deployed run run-9 is not one of the 5 runs",
    )
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    import sqlite3

    with sqlite3.connect(store) as conn:  # said before anything was scored
        assert not conn.execute("SELECT name FROM sqlite_master WHERE name = 'scores'").fetchall()


def test_the_first_run_is_deployed_unless_named(runs, tmp_path):
    """A store of 15 posts (one window, too small for any estimate): the note names run-0 and the report is its."""
    from mhaudit.weak_supervision.collect.scoring import model_digest

    work, posts = runs
    with PostStore(tmp_path / "few.sqlite") as store:
        store.commit_batch(posts[-15:], cursor=15)
    r = _monitor(tmp_path / "few.sqlite", work / "models", work / "reference.parquet", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "deployed: run-0, the first of 5 runs (--deployed names another)" in r.output
    report = _report(tmp_path / "out")
    assert report["options"]["deployed"] == "run-0"
    assert report["options"]["model_digest"] == model_digest(work / "models" / "run-0")
    windows = _windows(report)
    assert len(windows) == 1 and pd.isna(windows["ensemble_accuracy"].iat[0])  # NaN, null in the JSON
    assert windows["ensemble_untrusted_because"].iat[0] == "fewer than 100 posts"
    # one model folder on the same store: the report is written too (its figure once failed with no judged window)
    r = _monitor(tmp_path / "few.sqlite", work / "models" / "run-0", work / "reference.parquet", tmp_path / "one")
    assert r.exit_code == 0, r.output
    assert "ensemble_accuracy" not in _windows(_report(tmp_path / "one")).columns


def _gaussian_stream(deployed: int = 1, n_windows: int = 2, per_window: int = 1000):
    """SYNTHETIC: 6 linear runs of two Gaussian classes (synthetic.simulate_runs.gaussian_runs; on the target the
    class means shrink, and the truth lies on the agreement line) as the monitor's inputs: the scored posts (the
    deployed run's logits 0 and its margin), every run's reference predictions (seeds 0-5) and the ensemble.
    Also each window's true accuracy of the deployed run."""
    import mhaudit as mh
    from mhaudit.synthetic.simulate_runs import gaussian_runs
    from mhaudit.tables.prediction_files import predictions_from_arrays

    arrays = gaussian_runs(n_runs=6, n_ref=2000, n_tgt=n_windows * per_window, shrink=0.8, seed=1)
    classes, y_ref = ["c0", "c1"], arrays["y_ref"]
    reference = pd.concat(
        [
            predictions_from_arrays(
                np.asarray(classes, dtype=object)[y_ref],
                np.c_[np.zeros_like(m), m],
                "synthetic-home",
                model="linear",
                seed=r,
                classes=classes,
                kind="logits",
                ids=[f"ref-{i}" for i in range(len(y_ref))],
            ).frame
            for r, m in enumerate(arrays["margin_ref"])
        ],
        ignore_index=True,
    )
    n = n_windows * per_window
    times = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(np.arange(n) * 86400 // per_window, unit="s")
    uris = [f"at://a-synthetic/app.bsky.feed.post/g{i:06d}" for i in range(n)]
    margin = arrays["margin_tgt"][deployed]
    posts = pd.DataFrame(
        {
            "uri": uris,
            "created_at": times.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "length": 80,
            "langs": [["en"]] * n,
            "categories": [["synthetic"]] * n,
            "logit_c0": 0.0,
            "logit_c1": margin,
        }
    )
    runs = tuple(f"run-{k}" for k in range(6))
    predicted = pd.DataFrame({"uri": uris, **{r: (m > 0).astype(np.int64) for r, m in zip(runs, arrays["margin_tgt"])}})
    ensemble = mh.MonitorEnsemble(runs, range(6), runs[deployed], predicted)
    right = (margin > 0) == arrays["y_tgt"]
    truth = right.reshape(n_windows, per_window).mean(axis=1)
    return posts, mh.PredictionSet(reference, classes), ensemble, truth


def test_on_the_line_the_deployed_runs_accuracy_is_close_and_trusted():
    import mhaudit as mh

    posts, reference, ensemble, truth = _gaussian_stream()
    inputs = mh.MonitorInputs(posts, reference, "linear", "d" * 64, ["c0", "c1"], synthetic=True, ensemble=ensemble)
    result = mh.audit_monitor(inputs, mh.MonitorOptions(n_boot=200, figures=False))
    windows = result.table("windows")
    assert windows["ensemble_trusted"].all()
    est = windows["ensemble_accuracy"].to_numpy()
    # here 0.767 and 0.772 against a truth of 0.750 and 0.764; the deployed run scores 0.809 on the reference
    assert np.abs(est - truth).max() < 0.03
    assert ((windows["ensemble_ci_low"] < truth) & (truth < windows["ensemble_ci_high"])).all()
    runs = result.table("runs")
    assert runs["deployed"].tolist() == [False, True, False, False, False, False]
    row = result.verdicts[result.verdicts["statistic"] == "ensemble_accuracy_latest"].iloc[0]
    assert row["severity"] == "pass" and row["value"] == est[-1] and row["subject"] == "linear run-1"
    assert (
        f"accuracy {est[-1]:.3f} [{windows['ensemble_ci_low'].iat[-1]:.3f}, "
        f"{windows['ensemble_ci_high'].iat[-1]:.3f}] in 2026-01-02 00:00, "
        "the latest judged window"
    ) in result.summary


def test_the_ensemble_is_checked_when_the_inputs_are_built():
    import dataclasses

    import mhaudit as mh
    from mhaudit.core.errors import InputError

    posts, reference, ensemble, _ = _gaussian_stream(n_windows=1, per_window=200)

    def build(**kw):
        return mh.MonitorInputs(
            posts,
            kw.get("reference", reference),
            "linear",
            "d" * 64,
            ["c0", "c1"],
            ensemble=kw.get("ensemble", ensemble),
        )

    missing = reference.frame[reference.frame["seed"] != 4].reset_index(drop=True)
    cases = [
        (
            dict(reference=mh.PredictionSet(missing, ["c0", "c1"])),
            "the reference predictions hold no rows of run-4 (seed 4)",
        ),
        (
            dict(ensemble=dataclasses.replace(ensemble, predicted=ensemble.predicted.iloc[5:])),
            "miss 5 of the 200 scored posts",
        ),
        (
            dict(ensemble=dataclasses.replace(ensemble, deployed="run-2")),
            "predictions of the deployed run run-2 differ from the scored posts'",
        ),
        (
            dict(reference=mh.PredictionSet(reference.frame.drop(index=[0]).reset_index(drop=True), ["c0", "c1"])),
            "cover other rows than those of run-0 (seed 0)",
        ),
    ]
    for kwargs, fragment in cases:
        with pytest.raises(InputError, match=re.escape(fragment)):
            build(**kwargs)
    with pytest.raises(InputError, match="runs run-0 and run-3 have the same seed"):
        dataclasses.replace(ensemble, seeds=(0, 1, 2, 0, 4, 5))
    with pytest.raises(InputError, match="the deployed run 'run-9' is not one of the runs"):
        dataclasses.replace(ensemble, deployed="run-9")
    with pytest.raises(InputError, match="no column of run run-5"):
        dataclasses.replace(ensemble, predicted=ensemble.predicted.drop(columns="run-5"))
