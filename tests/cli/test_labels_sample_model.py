"""`mhaudit labels sample --strategy estimate --model` (issue 46): the items are scored by the model here, instead of
read from `--predictions`. A scikit-learn pipeline fitted on real Depression Reddit posts with the data set's own 0/1
labels (saved with skops, `--mapping depression-binary`) and the real Bluesky depression posts as the target: the
sample drawn from `mhaudit predict`'s file and the one drawn with `--model` are the same files, byte for byte, as is
the one drawn from an items table of ids and texts. Bad input: one sentence, exit 2, nothing written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import data_dir

runner = CliRunner()
TRAIN_ROWS, BUDGET = 600, 120


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The pipeline file (fitted on Depression Reddit train rows, integer labels as published), the Bluesky
    depression corpus as the target (every row a test row: never trained on) and the same posts as an items table."""
    work = tmp_path_factory.mktemp("sample-model")
    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    reddit = import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus.frame
    train = reddit[reddit["split"] == "train"].sample(TRAIN_ROWS, random_state=0)
    pipeline = make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(max_iter=1000))
    pipeline.fit(train["text"], (train["label"] == "depression").astype(int))
    skops.io.dump(pipeline, work / "depression.skops")
    bluesky = import_source(
        "bluesky_depression",
        [data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"],
        ImportOptions(seed=0, drop_empty=True, split="test"),
    ).corpus
    bluesky.write(work / "bluesky.parquet")
    bluesky.frame[["id", "text"]].to_csv(work / "items.csv", index=False)
    return work, pipeline, bluesky.frame


def sample(work, out, *route):
    return runner.invoke(
        app,
        ["labels", "sample", "--task", "dep", "--strategy", "estimate", "--budget", str(BUDGET), "--out", str(out)]
        + [*route],
    )


MODEL = ["--model", "depression.skops", "--mapping", "depression-binary"]


def with_model(work, *rest):
    return [str(work / a) if a == "depression.skops" else a for a in MODEL] + list(rest)


def test_model_and_predictions_routes_draw_the_same_sample(files, tmp_path):
    work, pipeline, bluesky = files
    predictions = tmp_path / "predictions.parquet"
    r = runner.invoke(
        app,
        ["predict", *with_model(work), "--corpus", str(work / "bluesky.parquet"), "--out", str(predictions)],
    )
    assert r.exit_code == 0, r.output
    routes = {
        "predictions": ["--items", str(work / "bluesky.parquet"), "--predictions", str(predictions)],
        "model": ["--items", str(work / "bluesky.parquet"), *with_model(work)],
        "items": ["--items", str(work / "items.csv"), *with_model(work)],
    }
    for name, route in routes.items():
        r = sample(work, tmp_path / f"{name}.parquet", *route)
        assert r.exit_code == 0, r.output
    read = {name: (tmp_path / f"{name}.parquet").read_bytes() for name in routes}
    designs = {name: (tmp_path / f"{name}.design.parquet").read_bytes() for name in routes}
    assert read["model"] == read["predictions"] == read["items"]
    assert designs["model"] == designs["predictions"] == designs["items"]

    drawn = pd.read_parquet(tmp_path / "model.parquet")
    design = pd.read_parquet(tmp_path / "model.design.parquet")
    assert len(drawn) == BUDGET and drawn["item_id"].is_unique and set(drawn["model"]) == {"skops-pipeline"}
    assert len(design) == len(bluesky) > 4000  # every Bluesky post is pooled: none was trained on
    # the posteriors are the pipeline's own probabilities (no reference: the scores' softmax)
    texts = bluesky.set_index("id").loc[design["item_id"], "text"].tolist()
    np.testing.assert_allclose(
        design[["posterior_no_depression", "posterior_depression"]].to_numpy(),
        pipeline.predict_proba(texts),
        rtol=0,
        atol=1e-12,
    )
    per_stratum = drawn.groupby("stratum")[["pool_size", "sample_size"]].first()
    assert per_stratum["pool_size"].sum() == len(bluesky) and per_stratum["sample_size"].sum() == BUDGET


@pytest.mark.parametrize(
    ("route", "fragments"),
    [
        (["--predictions", "p.parquet", *MODEL], ["exactly one of --predictions", "--model", "not both"]),
        ([], ["exactly one of --predictions", "got neither"]),
        (["--mapping", "depression-binary"], ["--mapping and --trust-pickle load the model of --model"]),
        (["--model", "depression.skops"], ["integer classes", "no label mapping"]),
        (["--model", "nothing.skops", "--mapping", "depression-binary"], ["nothing.skops"]),
    ],
)
def test_a_bad_route_is_one_sentence_and_nothing_is_written(files, tmp_path, route, fragments):
    work, _, _ = files
    route = [str(work / a) if a.endswith((".skops", ".parquet")) else a for a in route]
    r = sample(work, tmp_path / "sample.parquet", "--items", str(work / "bluesky.parquet"), *route)
    assert_one_sentence_failure(r, *fragments)
    assert list(tmp_path.iterdir()) == []


def test_model_is_refused_with_the_weak_strategy(files, tmp_path):
    work, _, _ = files
    r = runner.invoke(
        app,
        ["labels", "sample", "--items", str(work / "items.csv"), "--task", "dep", "--out", str(tmp_path / "s.csv")]
        + with_model(work),
    )
    assert_one_sentence_failure(r, "--model, --mapping and --trust-pickle are for --strategy estimate")
    assert list(tmp_path.iterdir()) == []
