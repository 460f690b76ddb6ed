"""mhaudit explain: attributions of a trained model on a synthetic corpus, written as the attributions table."""

import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.experiments.explain import explain_corpus
from mhaudit.models import load_model
from mhaudit.synthetic.simulate import SimulationConfig, simulate
from mhaudit.tables.attributions import read_attributions
from mhaudit.tables.corpus.schema import Corpus
from tests.cli_checks import assert_one_sentence_failure

runner = CliRunner()
COLUMNS = ["model", "seed", "platform", "dataset", "class", "word", "score", "count", "method"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A synthetic corpus (3 platforms, 45 test rows each) and tfidf-lr trained on its forum rows."""
    folder = tmp_path_factory.mktemp("explain")
    corpus = folder / "c.parquet"
    simulate(SimulationConfig(n_per_platform=300, auto_platforms=())).write(corpus)
    done = runner.invoke(
        app,
        [
            "train",
            "--corpus",
            str(corpus),
            "--platform",
            "synthetic-forum",
            "--model",
            "tfidf-lr",
            "--seed",
            "42",
            "--option",
            "min_df=1",
            "--out",
            str(folder / "lr"),
        ],
    )
    assert done.exit_code == 0, done.output
    return corpus, folder / "lr"


def explain(corpus, model, out, *extra):
    return runner.invoke(app, ["explain", "--model", str(model), "--corpus", str(corpus), "--out", str(out), *extra])


def test_linear_attributions_of_a_seeded_sample_per_platform(trained, tmp_path):
    corpus, model = trained
    out = tmp_path / "attributions.parquet"
    done = explain(corpus, model, out, "--method", "linear", "--n", "10")
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(out)
    assert list(table.columns) == COLUMNS and set(table["method"]) == {"linear"}
    assert set(table["model"]) == {"tfidf-lr"} and set(table["seed"]) == {42}
    assert set(table["platform"]) == {"synthetic-forum", "synthetic-comments", "synthetic-tweets"}
    said = re.search(
        r"wrote ([\d,]+) attribution rows \(linear; 1 model folder\(s\); (\d+) texts from 3 platform",
        " ".join(done.output.split()),
    )
    assert said and int(said[1].replace(",", "")) == len(table) and int(said[2]) == 3 * 10
    # the numbers are model.explain on the 10 texts pandas draws with the seed, platform by platform
    frame, fitted = Corpus.read(corpus).frame, load_model(model / "seed-42")
    tweets = frame[(frame["platform"] == "synthetic-tweets") & (frame["split"] == "test")]
    by_hand = fitted.explain(tweets.sample(n=10, random_state=0)["text"].tolist())
    got = table[table["platform"] == "synthetic-tweets"].reset_index(drop=True)
    values = ["class", "word", "score", "count"]
    pd.testing.assert_frame_equal(got[values], by_hand[values])
    assert len(got) == len(by_hand) > 0
    # the table is what `audit cpfe --attributions` reads, and what the Python function gives
    assert len(read_attributions(out)) == len(table)
    pd.testing.assert_frame_equal(table, explain_corpus(fitted, Corpus.read(corpus), "linear", n=10, seed=0))
    other = explain(corpus, model, tmp_path / "other.csv", "--method", "linear", "--n", "10", "--seed", "1")
    assert other.exit_code == 0 and not pd.read_csv(tmp_path / "other.csv")["score"].equals(table["score"])


def test_every_text_when_n_exceeds_the_split_and_other_splits(trained, tmp_path):
    corpus, model = trained
    done = explain(corpus, model, tmp_path / "a.parquet", "--method", "linear", "--n", "1000", "--splits", "val,test")
    assert done.exit_code == 0, done.output
    frame = Corpus.read(corpus).frame
    n_rows = int(frame["split"].isin(["val", "test"]).sum())
    assert f"{n_rows} texts from 3 platform(s)" in " ".join(done.output.split())


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--method", "saliency"], ["model 'tfidf-lr' supports only linear, not 'saliency'"]),
        (["--method", "integrated_gradients"], ["supports only linear, not 'integrated_gradients'"]),
        (["--method", "shap"], ["unknown attribution method 'shap'", "linear, saliency, integrated_gradients"]),
        (["--method", "linear", "--n", "0"], ["must be a positive integer, got 0"]),
        (["--method", "linear", "--splits", "holdout"], ["no rows in split(s) holdout"]),
    ],
)
def test_bad_input_is_one_sentence_and_writes_nothing(trained, tmp_path, args, fragments):
    corpus, model = trained
    out = tmp_path / "attributions.parquet"
    assert_one_sentence_failure(explain(corpus, model, out, *args), *fragments)
    assert list(tmp_path.iterdir()) == []


def test_saliency_on_a_tiny_transformer(tmp_path):
    pytest.importorskip("torch")
    from tests.models.tiny_bert import tiny_checkpoint

    full = simulate(SimulationConfig(n_per_platform=60, auto_platforms=()))
    corpus = tmp_path / "c.parquet"
    Corpus.build(full.frame[full.frame["platform"] != "synthetic-comments"], full.classes, meta=full.meta).write(corpus)
    checkpoint = tiny_checkpoint(tmp_path / "tiny", len(full.classes))
    trained = runner.invoke(
        app,
        [
            "train",
            "--corpus",
            str(corpus),
            "--platform",
            "synthetic-forum",
            "--model",
            "transformer",
            "--seed",
            "0",
            "--out",
            str(tmp_path / "tf"),
            "--option",
            f"checkpoint={checkpoint}",
            "--option",
            "epochs=1",
        ],
    )
    assert trained.exit_code == 0, trained.output
    out = tmp_path / "saliency.parquet"
    done = explain(corpus, tmp_path / "tf", out, "--method", "saliency", "--n", "4")
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(out)
    assert list(table.columns) == COLUMNS and set(table["method"]) == {"saliency"}
    assert set(table["platform"]) == {"synthetic-forum", "synthetic-tweets"} and (table["score"] >= 0).all()
    assert "8 texts from 2 platform(s)" in " ".join(done.output.split())
    # each platform's 4 texts (drawn with seed 0) are attributed to their true labels, and only to those
    frame = Corpus.read(corpus).frame
    for platform, rows in frame[frame["split"] == "test"].groupby("platform"):
        drawn = rows.sample(n=4, random_state=0)
        assert set(table.loc[table["platform"] == platform, "class"]) == set(drawn["label"])
