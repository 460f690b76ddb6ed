"""Soft labels (issue 47): TF-IDF + logistic regression trained on weighted rows, the expansion of a combined
labeler's probabilities into two weighted rows per post, and `audit model-selection --train-labeler` on a real
combined labeler of 400 Bluesky depression posts (tests/weak_supervision/combine_sources.py), soft by default and
hard with --no-soft-labels, on the same folds."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import log_loss
from typer.testing import CliRunner

from mhaudit.audits.model_selection.soft import soft_label_rows
from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.models import create
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from mhaudit.tables.label_store import read_labels
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import data_dir
from tests.weak_supervision.combine_sources import build_sources

runner = CliRunner()
CLASSES = ["no_depression", "depression"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return build_sources(tmp_path_factory.mktemp("soft-labels"))


@pytest.fixture(scope="module")
def combined(sources):
    """The sources combined by dawid-skene (mh's 0 read as votes) into the store: kind combined, with probabilities."""
    labelers = ["si", "mh", "wide", "keywords", "tfidf-lr"]
    args = ["labels", "combine", "--labels", *sources.files, "--task", "mh", "--zero-votes", "mh"]
    result = runner.invoke(
        app, [*args, *[f for name in labelers for f in ("--labeler", name)], "--into", str(sources.store)]
    )
    assert result.exit_code == 0, result.output
    return sources


def _posts(sources) -> pd.DataFrame:
    items = sources.items.drop_duplicates("text").reset_index(drop=True)
    return items.assign(split="train")


def _fit(frame: pd.DataFrame):
    return create("tfidf-lr", calibrate=False).fit(frame, CLASSES)


def _coefficients(model) -> np.ndarray:
    logistic = model.pipeline[-1]
    return np.concatenate([logistic.coef_.ravel(), logistic.intercept_])


def test_integer_weights_equal_duplicated_rows_and_weights_of_one_equal_none(sources):
    posts = _posts(sources)
    copies = np.where(np.arange(len(posts)) % 2 == 0, 1, 3)
    weighted = _fit(posts.assign(weight=copies.astype(float)))
    duplicated = _fit(posts.loc[posts.index.repeat(copies)].assign(weight=1.0))
    assert weighted.pipeline[0].vocabulary_ == duplicated.pipeline[0].vocabulary_  # a text is one document
    assert len(_coefficients(weighted)) > 100
    np.testing.assert_allclose(_coefficients(weighted), _coefficients(duplicated), atol=1e-6, rtol=0)
    texts = posts["text"].tolist()
    np.testing.assert_allclose(weighted.predict_logits(texts), duplicated.predict_logits(texts), atol=1e-6, rtol=0)
    # weights all 1 on distinct texts: the same fit as no weight column at all
    np.testing.assert_allclose(_coefficients(_fit(posts.assign(weight=1.0))), _coefficients(_fit(posts)), atol=1e-9)
    # the weights change the fit
    assert np.abs(_coefficients(weighted) - _coefficients(_fit(posts))).max() > 1e-3


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_a_bad_weight_is_one_sentence(sources, bad):
    posts = _posts(sources).assign(weight=1.0)
    posts.loc[3, "weight"] = bad
    with pytest.raises(InputError, match="weight column must hold finite numbers >= 0"):
        _fit(posts)


def test_the_expansion_is_the_cross_entropy_with_the_soft_target(combined):
    labels = read_labels(combined.store)
    mine = labels[labels["labeler"] == "combined-dawid-skene"].set_index("item_id")
    posts = _posts(combined)
    posts = posts[posts["id"].map(mine["value"]).notna()].reset_index(drop=True)
    p = posts["id"].map(mine["probability"]).to_numpy(dtype=float)
    hard = np.where(p > 0.5, "depression", "no_depression")
    split = np.array(["train"] * (len(posts) - 20) + ["val"] * 20, dtype=object)
    rows, label, kinds, weight = soft_label_rows(np.arange(len(posts)), split, p, hard, "depression", "no_depression")
    train = len(posts) - 20
    # every training post twice (minus weight-0 rows), each val post once with its hard label and weight 1
    assert (kinds == "val").sum() == 20 and (weight[kinds == "val"] == 1).all()
    assert (label[kinds == "val"] == hard[train:]).all()
    assert len(rows) == 2 * train + 20 - int((p[:train] == 0).sum() + (p[:train] == 1).sum())
    for post in range(train):
        mine_rows = (rows == post) & (kinds == "train")
        assert weight[mine_rows].sum() == pytest.approx(1.0, abs=1e-12)
        assert weight[mine_rows & (label == "depression")].sum() == pytest.approx(p[post], abs=1e-12)
    model = _fit(pd.DataFrame({"text": posts["text"].iloc[rows].to_numpy(), "label": label, "weight": weight}))
    logits = model.predict_logits(posts["text"].tolist())
    q = np.clip(1 / (1 + np.exp(logits[:, 0] - logits[:, 1])), 1e-12, 1 - 1e-12)
    trained = kinds == "train"
    weighted_loss = log_loss(
        label[trained] == "depression", q[rows[trained]], sample_weight=weight[trained], normalize=False
    )
    cross_entropy = -(p[:train] * np.log(q[:train]) + (1 - p[:train]) * np.log(1 - q[:train])).sum()
    assert weighted_loss == pytest.approx(cross_entropy, rel=1e-9)
    assert 0.5 * train > cross_entropy > 0.01 * train  # a fitted model, neither perfect nor at chance


def _corpus(combined):
    """The 400 posts as a corpus file (the data set's import, cut to the posts the sources label)."""
    path = combined.store.parent / "corpus.parquet"
    if not path.exists():
        raw = data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"
        corpus = import_source("bluesky_depression", [raw], ImportOptions()).corpus
        replace(corpus, frame=corpus.frame.head(len(combined.items))).write(path)
    return path


def _model_selection(combined, out, *extra):
    args = ["audit", "model-selection", "--corpus", str(_corpus(combined)), "--labels", str(combined.store)]
    args += ["--train-labeler", "combined-dawid-skene", "--reference-labeler", "experts", "--protocol", "kfold:3"]
    return runner.invoke(app, [*args, *extra, "--out", str(out), "--no-figures"])


def test_model_selection_trains_soft_by_default_and_hard_with_the_option(combined, tmp_path):
    runs = {}
    for name, extra in (("soft", ()), ("hard", ("--no-soft-labels",))):
        result = _model_selection(combined, tmp_path / name, "--model", "tfidf-lr", *extra)
        assert result.exit_code == 0, result.output
        report = json.loads((tmp_path / name / "report.json").read_text())
        predictions = pd.read_parquet(tmp_path / name / "predictions.parquet")
        runs[name] = (report, predictions.sort_values(["fold", "id"]).reset_index(drop=True))
    (soft_report, soft), (hard_report, hard) = runs["soft"], runs["hard"]
    assert soft_report["options"]["soft_labels"] and not hard_report["options"]["soft_labels"]
    assert "as soft labels" in soft_report["summary"] and "as soft labels" not in hard_report["summary"]
    # the same posts in the same folds, each judged once
    assert len(soft) == len(hard) > 350 and not soft["id"].duplicated().any()
    assert soft[["fold", "id"]].equals(hard[["fold", "id"]])
    scores = [c for c in soft.columns if c.startswith(("logit", "prob", "score"))]
    assert scores, soft.columns
    difference = np.abs(soft[scores].to_numpy(float) - hard[scores].to_numpy(float)).max()
    assert difference > 1e-3
    # a model that takes no sample weights is refused on soft labels, named, before any training
    refused = _model_selection(combined, tmp_path / "refused", "--model", "llm-zero-shot")
    assert_one_sentence_failure(refused, "model 'llm-zero-shot' cannot train on soft labels")
    assert not (tmp_path / "refused" / "report.json").exists()
