"""The researcher's scripts of examples/outside_models (plain transformers and scikit-learn, no mhaudit) make models
that mhaudit predicts with as they are: a classifier fine-tuned and saved with save_pretrained, its named labels
mapped by the example's mapping file, and a skops pipeline with 0/1 classes, on real Depression Reddit rows."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from tests.conftest import data_dir
from tests.models.tiny_bert import one_thread, tiny_checkpoint  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "outside_models"


@pytest.fixture(scope="module")
def reddit(tmp_path_factory) -> Path:
    """Depression Reddit as `mhaudit data import` writes it (stratified splits, seed 0)."""
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    path = tmp_path_factory.mktemp("reddit") / "reddit.parquet"
    import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus.write(path)
    return path


def script(name: str, *args) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *map(str, args)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def predict(tmp_path, model, corpus, *options) -> pd.DataFrame:
    out = tmp_path / "predictions.parquet"
    args = ["predict", "--model", str(model), "--corpus", str(corpus), "--splits", "test", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, *map(str, options)])
    assert result.exit_code == 0, result.output
    return pd.read_parquet(out)


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def test_a_fine_tuned_folder_is_predicted_through_the_example_mapping(reddit, tmp_path):
    """finetune_hf.py (a tiny BERT as the base, 64 rows) writes id2label 'not depressed'/'depressed'; mhaudit maps
    them with depression-names.toml, and the probabilities are transformers' own softmax of the saved model."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base, folder = tiny_checkpoint(tmp_path / "base", num_labels=None), tmp_path / "fine-tuned"
    said = script(
        "finetune_hf.py",
        *("--corpus", reddit, "--positive", "depression", "--names", "not depressed,depressed"),
        *("--n", 64, "--batch", 32, "--max-length", 32, "--threads", 1, "--base", base, "--out", folder),
    )
    assert "fine-tuned 1 epoch(s) on 64 balanced 'train' rows" in said
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    mapping = EXAMPLES / "depression-names.toml"
    table = predict(tmp_path, folder, reddit, "--mapping", mapping)
    texts = pd.read_parquet(reddit).set_index("id").loc[table["id"], "text"].tolist()[:32]
    network = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    with torch.inference_mode():
        encoded = tokenizer(texts, truncation=True, max_length=128, padding=True, return_tensors="pt")
        own = torch.softmax(network(**encoded).logits, dim=1).numpy()  # columns: not depressed, depressed
    ours = softmax(table[["logit_no_depression", "logit_depression"]].to_numpy()[:32])
    np.testing.assert_allclose(ours, own, atol=1e-5)
    assert len(table) == 1160 and table["model"].iat[0] == "hf:fine-tuned"
    out = tmp_path / "unmapped.parquet"
    args = ["predict", "--model", str(folder), "--corpus", str(reddit), "--out", str(out)]
    result = CliRunner().invoke(app, args)  # named labels that are not the classes, no mapping
    assert result.exit_code == 2 and not out.exists()
    assert "differ from the corpus's ['no_depression', 'depression']; give --mapping" in " ".join(result.output.split())


def test_the_example_pipeline_is_predicted_with_the_shipped_mapping(reddit, tmp_path):
    """fit_skops.py fits TF-IDF + logistic regression on the 5,412 train rows with 0/1 labels; mhaudit names its
    classes with depression-binary and gives the pipeline's own predict_proba."""
    import skops.io

    path = tmp_path / "lr.skops"
    said = script("fit_skops.py", "--corpus", reddit, "--positive", "depression", "--out", path)
    assert said.startswith("fitted on 5,412 'train' rows")
    table = predict(tmp_path, path, reddit, "--mapping", "depression-binary")
    pipeline = skops.io.load(path, trusted=skops.io.get_untrusted_types(file=path))
    texts = pd.read_parquet(reddit).set_index("id").loc[table["id"], "text"].tolist()
    ours = softmax(table[["logit_no_depression", "logit_depression"]].to_numpy())
    np.testing.assert_allclose(ours, pipeline.predict_proba(texts), atol=1e-12)
    accuracy = float(np.mean(ours.argmax(axis=1) == (table["label"] == "depression").to_numpy()))
    assert len(table) == 1160 and accuracy > 0.9
