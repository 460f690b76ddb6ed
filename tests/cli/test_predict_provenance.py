"""Reports name the model behind the predictions: `mhaudit predict` with a researcher's skops pipeline writes each
model's source and sha256 in the Parquet footer, the prediction reader carries them as inputs, and `mhaudit audit
cpfe` on Depression Reddit (home) and Bluesky depression (target) lists them in report.json and report.md, as
`mhaudit audit estimate` does."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.tables.prediction_files import read_predictions
from mhaudit.tables.predictions import MODELS_KEY
from mhaudit.weak_supervision.collect.scoring import model_digest
from tests.conftest import depression_corpora


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """Both corpora in one file, a TF-IDF pipeline fitted on Reddit's train rows with the published 0/1 labels and
    saved with skops, and `mhaudit predict --mapping depression-binary` of it."""
    import skops.io
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from mhaudit.tables.corpus.schema import Corpus

    work = tmp_path_factory.mktemp("provenance")
    reddit, bluesky = depression_corpora()
    frame = pd.concat([reddit.frame, bluesky.frame], ignore_index=True)
    Corpus.build(frame, reddit.classes).write(work / "corpus.parquet")
    train = reddit.frame[reddit.frame["split"] == "train"]
    pipeline = make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(max_iter=1000))
    pipeline.fit(train["text"].tolist(), (train["label"] == "depression").astype(int).to_numpy())
    skops.io.dump(pipeline, work / "depression.skops")
    reddit.write(work / "reddit.parquet")
    bluesky.write(work / "bluesky.parquet")
    args = ["predict", "--model", str(work / "depression.skops"), "--mapping", "depression-binary"]
    for corpus, out in (("corpus", "p"), ("reddit", "reference"), ("bluesky", "target")):
        done = CliRunner().invoke(
            app, [*args, "--corpus", str(work / f"{corpus}.parquet"), "--out", str(work / f"{out}.parquet")]
        )
        assert done.exit_code == 0, done.output
    return work


def test_the_predictions_footer_names_the_pipeline(scored):
    (model,) = json.loads(pq.read_metadata(scored / "p.parquet").metadata[MODELS_KEY.encode()])
    assert model["source"] == "skops" and model["seed"] == 0
    assert model["sha256"] == model_digest(scored / "depression.skops")
    predictions = read_predictions(scored / "p.parquet")
    assert predictions.fingerprints[f"model {model['model']} seed 0, skops"] == model["sha256"]
    assert len(predictions.fingerprints) == 2  # the file and the model


def test_the_cpfe_report_lists_the_models_source_and_sha256(scored):
    out = scored / "audit"
    args = ["audit", "cpfe", "--predictions", str(scored / "p.parquet"), "--reference", "reddit"]
    done = CliRunner().invoke(app, [*args, "--n-boot-significance", "200", "--out", str(out)])
    assert done.exit_code == 0, done.output
    digest = model_digest(scored / "depression.skops")
    inputs = json.loads((out / "report.json").read_text())["provenance"]["inputs"]
    (name,) = [k for k in inputs if k.startswith("model ")]
    assert name.endswith(" seed 0, skops") and inputs[name] == digest
    assert f"- `{name}` sha256 {digest[:12]}" in (out / "report.md").read_text()


def test_the_estimate_report_lists_the_model_of_the_reference_and_of_the_target(scored):
    out = scored / "estimate"
    args = ["audit", "estimate", "--reference", str(scored / "reference.parquet"), "--target"]
    done = CliRunner().invoke(app, [*args, str(scored / "target.parquet"), "--n-boot", "50", "--out", str(out)])
    assert done.exit_code == 0, done.output
    digest = model_digest(scored / "depression.skops")
    inputs = json.loads((out / "report.json").read_text())["provenance"]["inputs"]
    named = {k: v for k, v in inputs.items() if " model " in k}
    assert sorted(named) == [
        "reference model skops-pipeline seed 0, skops",
        "target model skops-pipeline seed 0, skops",
    ]
    assert set(named.values()) == {digest}


def test_a_footer_that_is_not_a_list_of_models_is_one_sentence(scored, tmp_path):
    table = pq.read_table(scored / "p.parquet")
    pq.write_table(table.replace_schema_metadata({MODELS_KEY: "{not json"}), tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="the footer's 'mhaudit.models' is not a list of models"):
        read_predictions(tmp_path / "bad.parquet")
