"""Researchers' scikit-learn pipelines, fitted here on real shared data with the labels as published (Depression
Reddit's 0/1, dair-ai/emotion's emotion names), saved with skops and loaded as mhaudit models."""

import textwrap

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from mhaudit.core.errors import InputError
from mhaudit.models.base import Model
from mhaudit.models.skops_pipeline import SMALLEST_LOG, is_pipeline_file, load_skops_pipeline
from mhaudit.weak_supervision.collect.scoring import model_digest
from tests.conftest import data_dir

ROWS = 400


def tfidf_lr():
    return make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(max_iter=1000))


@pytest.fixture(scope="module")
def reddit():
    """A few hundred Depression Reddit posts, `is_depressive` as the data set publishes it (integers 0/1)."""
    raw = pd.read_csv(data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv")
    rows = raw.dropna(subset=["text"]).sample(ROWS, random_state=0)
    return rows["text"].astype(str).tolist(), rows["is_depressive"].astype(int).to_numpy()


@pytest.fixture(scope="module")
def emotion():
    """A few hundred dair-ai/emotion sentences with their emotion names (strings)."""
    raw = pd.read_csv(data_dir("dair_emotion") / "train.txt", sep=";", names=["text", "label"])
    rows = raw.groupby("label").head(ROWS // 6)  # every emotion, surprise included
    return rows["text"].tolist(), rows["label"].to_numpy()


@pytest.fixture(scope="module")
def reddit_file(reddit, tmp_path_factory):
    texts, labels = reddit
    pipeline = tfidf_lr().fit(texts, labels)
    path = tmp_path_factory.mktemp("reddit") / "depression.skops"
    skops.io.dump(pipeline, path)
    return path, pipeline


@pytest.fixture(scope="module")
def emotion_file(emotion, tmp_path_factory):
    texts, labels = emotion
    pipeline = tfidf_lr().fit(texts, labels)
    path = tmp_path_factory.mktemp("emotion") / "emotion.skops"
    skops.io.dump(pipeline, path)
    return path, pipeline


def test_integer_classes_with_a_shipped_mapping_give_the_pipelines_own_probabilities(reddit, reddit_file):
    texts, _ = reddit
    path, pipeline = reddit_file
    model: Model = load_skops_pipeline(path, mapping="depression-binary")
    assert model.classes == ["no_depression", "depression"]
    logits = model.predict_logits(texts)
    np.testing.assert_allclose(np.exp(logits), pipeline.predict_proba(texts), rtol=0, atol=1e-12)
    assert model.source == "skops" and model.digest == model_digest(path) and len(model.digest) == 64
    assert model.options == {"path": str(path), "mapping": "depression-binary", "trust_pickle": False}


def test_a_mapping_file_orders_the_classes_as_it_lists_them(reddit, reddit_file, tmp_path):
    texts, _ = reddit
    path, pipeline = reddit_file
    mapping = tmp_path / "mine.toml"
    mapping.write_text('name = "mine"\nclasses = ["depressed", "control"]\n[map]\ndepressed = ["1"]\ncontrol = ["0"]\n')
    model = load_skops_pipeline(path, mapping=str(mapping))
    assert model.classes == ["depressed", "control"]
    np.testing.assert_allclose(np.exp(model.predict_logits(texts)), pipeline.predict_proba(texts)[:, ::-1], atol=1e-12)


def test_string_classes_are_the_classes(emotion, emotion_file):
    texts, _ = emotion
    path, pipeline = emotion_file
    model = load_skops_pipeline(path)
    assert model.classes == ["anger", "fear", "joy", "love", "sadness", "surprise"]
    np.testing.assert_allclose(np.exp(model.predict_logits(texts)), pipeline.predict_proba(texts), atol=1e-12)


def test_classes_mapped_to_one_class_sum_their_probabilities(emotion, emotion_file):
    texts, _ = emotion
    path, pipeline = emotion_file
    model = load_skops_pipeline(path, mapping="dair-cpfe-text")  # joy, love and surprise are all 'normal'
    assert model.classes == ["normal", "depression", "anxiety", "stress"]
    raw = pd.DataFrame(pipeline.predict_proba(texts), columns=pipeline.classes_)
    expected = np.column_stack(
        [raw[["joy", "love", "surprise"]].sum(axis=1), raw["sadness"], raw["fear"], raw["anger"]]
    )
    np.testing.assert_allclose(np.exp(model.predict_logits(texts)), expected, atol=1e-12)


def test_a_zero_probability_is_a_finite_logit(emotion_file):
    model = load_skops_pipeline(emotion_file[0], mapping="dair-cpfe-text")
    model.class_matrix[:, 0] = 0.0  # no raw class reaches 'normal'
    logits = model.predict_logits(["i feel fine"])
    assert np.isfinite(logits).all() and logits[0, 0] == SMALLEST_LOG


def test_integer_classes_without_a_mapping_are_refused(reddit_file):
    with pytest.raises(InputError, match=r"has integer classes \(0, 1\) and no label mapping to name them"):
        load_skops_pipeline(reddit_file[0])


def test_classes_the_mapping_does_not_cover_are_refused(reddit_file, emotion_file, tmp_path):
    partial = tmp_path / "partial.toml"
    partial.write_text('name = "partial"\nclasses = ["depression"]\n[map]\ndepression = ["1"]\n')
    with pytest.raises(InputError, match="classes that mapping 'partial' does not map to a class: 0; it maps 1"):
        load_skops_pipeline(reddit_file[0], mapping=str(partial))
    # the released CPFE code drops surprise: its probability would go nowhere
    with pytest.raises(InputError, match="mapping 'dair-cpfe-code' does not map to a class: surprise"):
        load_skops_pipeline(emotion_file[0], mapping="dair-cpfe-code")


def test_types_outside_sklearn_numpy_and_scipy_are_refused_by_name(reddit, tmp_path):
    texts, labels = reddit
    pipeline = make_pipeline(FunctionTransformer(np.vectorize(textwrap.dedent)), tfidf_lr()).fit(texts, labels)
    path = tmp_path / "custom.skops"
    skops.io.dump(pipeline, path)
    with pytest.raises(InputError, match=r"skops does not trust: textwrap\.dedent; mhaudit loads only"):
        load_skops_pipeline(path, mapping="depression-binary")


def test_a_pickle_is_loaded_only_when_trusted(reddit, reddit_file, tmp_path):
    texts, _ = reddit
    pipeline = reddit_file[1]
    path = tmp_path / "depression.joblib"
    joblib.dump(pipeline, path)
    assert is_pipeline_file(path)
    with pytest.raises(InputError, match=r"is a pickle \(\.joblib\) and loading a pickle runs code"):
        load_skops_pipeline(path, mapping="depression-binary")
    model = load_skops_pipeline(path, mapping="depression-binary", trust_pickle=True)
    assert model.source == "pickle"
    np.testing.assert_allclose(np.exp(model.predict_logits(texts)), pipeline.predict_proba(texts), atol=1e-12)


def test_what_is_not_a_pipeline_file(reddit_file, tmp_path):
    assert is_pipeline_file(reddit_file[0]) and not is_pipeline_file(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    assert not is_pipeline_file(tmp_path / "config.json")
    broken = tmp_path / "broken.skops"
    broken.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="is not a readable skops file"):
        load_skops_pipeline(broken)
    with pytest.raises(InputError, match="no such file"):
        load_skops_pipeline(tmp_path / "missing.skops")


def test_mhaudit_predict_scores_a_corpus_with_a_skops_pipeline(reddit_file, tmp_path):
    """`mhaudit predict --model depression.skops --mapping depression-binary` on the Depression Reddit corpus as
    `mhaudit data import` writes it: the probabilities are the pipeline's own; without the mapping, or a pickle
    without --trust-pickle, one sentence, exit 2, nothing written."""
    from typer.testing import CliRunner

    from mhaudit.cli import app
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    path, pipeline = reddit_file
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus.write(tmp_path / "reddit.parquet")
    run = CliRunner().invoke
    args = ["predict", "--model", str(path), "--corpus", str(tmp_path / "reddit.parquet"), "--splits", "test"]
    r = run(app, [*args, "--out", str(tmp_path / "p.parquet"), "--mapping", "depression-binary"])
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(tmp_path / "p.parquet")
    texts = pd.read_parquet(tmp_path / "reddit.parquet").set_index("id").loc[table["id"], "text"]
    logits = table[["logit_no_depression", "logit_depression"]].to_numpy()
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probs, pipeline.predict_proba(texts.tolist()), rtol=0, atol=1e-9)
    assert set(table["model"]) == {"skops-pipeline"} and len(table) > 1000

    r = run(app, [*args, "--out", str(tmp_path / "q.parquet")])
    assert r.exit_code == 2 and "Traceback" not in r.output and not (tmp_path / "q.parquet").exists()
    joblib.dump(pipeline, tmp_path / "depression.joblib")
    args[2] = str(tmp_path / "depression.joblib")
    r = run(app, [*args, "--out", str(tmp_path / "q.parquet"), "--mapping", "depression-binary"])
    assert r.exit_code == 2 and "loading a pickle runs code" in " ".join(r.output.split())
    r = run(app, [*args, "--out", str(tmp_path / "q.parquet"), "--mapping", "depression-binary", "--trust-pickle"])
    assert r.exit_code == 0, r.output
