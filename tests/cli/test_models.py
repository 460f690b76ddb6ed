"""mhaudit train / predict on the synthetic corpus, and their bad input."""

import re
import subprocess
import sys

import pandas as pd
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.models.base import BUILTIN
from mhaudit.synthetic.simulate import SimulationConfig, simulate
from mhaudit.tables.corpus.schema import Corpus
from tests.cli_checks import assert_one_sentence_failure

runner = CliRunner()


def flat(text: str) -> str:
    """Console output on one line: rich wraps long lines at the terminal width."""
    return " ".join(text.split())


def test_train_predict_resume_and_bad_input(tmp_path):
    corpus = tmp_path / "c.parquet"
    simulate(SimulationConfig(n_per_platform=300, auto_platforms=())).write(corpus)
    frame = pd.read_parquet(corpus)
    forum = frame[frame["platform"] == "synthetic-forum"]
    n_train, n_val = (forum["split"] == "train").sum(), (forum["split"] == "val").sum()
    models = tmp_path / "models"
    args = [
        "train",
        "--corpus",
        str(corpus),
        "--platform",
        "synthetic-forum",
        "--model",
        "tfidf-lr",
        "--seed",
        "0",
        "--seed",
        "7",
        "--option",
        "min_df=1",
        "--out",
        str(models),
    ]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    # deterministic: one fit stands for both seeds
    assert "tfidf-lr is deterministic: trained once (seed 0), not per seed" in flat(first.output)
    assert sorted(p.name for p in models.iterdir()) == ["seed-0"]
    said = re.search(
        r"seed 0: trained on (\d+) rows of synthetic-forum \((\d+) validation rows for early "
        r"stopping/temperature\) in [\d.]+ s, ([\d,]+) training rows/s",
        flat(first.output),
    )
    assert said and (int(said[1]), int(said[2])) == (n_train, n_val) == (211, 44)
    assert int(said[3].replace(",", "")) > 0
    again = runner.invoke(app, args)
    assert flat(again.output).count("already trained") == 1
    other = runner.invoke(app, [*args[:7], "--seed", "7", "--option", "min_df=1", "--out", str(models)])
    assert other.exit_code == 0 and sorted(p.name for p in models.iterdir()) == ["seed-0", "seed-7"]

    preds = tmp_path / "p.parquet"
    done = runner.invoke(app, ["predict", "--model", str(models), "--corpus", str(corpus), "--out", str(preds)])
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(preds)
    # judged rows: the forum's test rows, every row of the other platforms (the models never trained there)
    judged = ((frame["platform"] != "synthetic-forum") | (frame["split"] == "test")).sum()
    assert judged == len(forum[forum["split"] == "test"]) + (frame["platform"] != "synthetic-forum").sum() == 645
    assert sorted(table["seed"].unique().tolist()) == [0, 7] and len(table) == 2 * judged
    assert not ((table["platform"] == "synthetic-forum") & table["split"].isin(["train", "val"])).any()
    shown = re.search(r"scored ([\d,]+) rows \(2 seed\(s\)\) in [\d.]+ s, ([\d,]+) rows/s", flat(done.output))
    assert shown and int(shown[1].replace(",", "")) == 2 * judged and int(shown[2].replace(",", "")) > 0

    base = ["train", "--corpus", str(corpus), "--seed", "0"]
    bad = runner.invoke(app, [*base, "--platform", "mastodon", "--model", "tfidf-lr", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "platform to train on 'mastodon' is neither a platform nor a data set" in bad.stderr
    assert not (tmp_path / "x").exists()
    unknown = runner.invoke(
        app, [*base, "--platform", "synthetic-forum", "--model", "gpt-9", "--out", str(tmp_path / "y")]
    )
    assert unknown.exit_code == 2 and "unknown model 'gpt-9'" in unknown.stderr
    missing = runner.invoke(
        app,
        ["predict", "--model", str(tmp_path / "nope"), "--corpus", str(corpus), "--out", str(tmp_path / "q.parquet")],
    )
    assert missing.exit_code == 2 and "holds no trained model" in missing.stderr


def test_platform_defaults_to_the_corpus_only_one(tmp_path):
    full = simulate(SimulationConfig(n_per_platform=120, auto_platforms=()))
    several, one = tmp_path / "several.parquet", tmp_path / "one.parquet"
    full.write(several)
    tweets = full.frame[full.frame["platform"] == "synthetic-tweets"]
    Corpus.build(tweets, full.classes, meta=full.meta).write(one)
    done = runner.invoke(
        app,
        ["train", "--corpus", str(one), "--model", "tfidf-lr", "--option", "min_df=1", "--out", str(tmp_path / "m")],
    )
    assert done.exit_code == 0, done.output
    n_train = int((tweets["split"] == "train").sum())
    assert f"seed 42: trained on {n_train} rows of synthetic-tweets" in flat(done.output)
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["seed-42"]

    failed = runner.invoke(
        app, ["train", "--corpus", str(several), "--model", "tfidf-lr", "--out", str(tmp_path / "n")]
    )
    assert_one_sentence_failure(
        failed, "training rows on 3 platforms (synthetic-comments, synthetic-forum, synthetic-tweets)", "--platform"
    )
    assert not (tmp_path / "n").exists()


def test_train_help_lists_every_registered_model_and_help_stays_cheap():
    shown = flat(runner.invoke(app, ["train", "--help"]).output.replace("│", " "))  # without the panel's border
    listed = re.search(r"Model name: ([^.]+), or one you registered\.", shown)[1].split(", ")
    assert listed == sorted(BUILTIN) and len(listed) == 6
    # `mhaudit --help` loads no heavy library: each command imports what it needs when it runs
    code = (
        "import sys, mhaudit.cli; print(sorted(m for m in ('numpy', 'pandas', 'sklearn', 'torch', "
        "'mhaudit.models.base', 'mhaudit.models.linear') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_train_runs_then_predict_one_table(tmp_path):
    corpus = tmp_path / "c.parquet"
    simulate(SimulationConfig(n_per_platform=160, auto_platforms=())).write(corpus)  # synthetic
    models = tmp_path / "ens"
    args = [
        "train",
        "--corpus",
        str(corpus),
        "--platform",
        "synthetic-forum",
        "--model",
        "char-tfidf-lr",
        "--runs",
        "3",
        "--seed",
        "5",
        "--out",
        str(models),
    ]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert sorted(p.name for p in models.iterdir()) == ["run-0", "run-1", "run-2"]
    assert (
        len(
            re.findall(
                r"char-tfidf-lr run \d \(seed \d\): bootstrap resample \d+, C [\d.]+; trained on", flat(first.output)
            )
        )
        == 3
    )
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and flat(again.output).count("already trained") == 3

    preds = tmp_path / "p.parquet"
    done = runner.invoke(
        app, ["predict", "--model", str(models), "--corpus", str(corpus), "--out", str(preds), "--splits", "test"]
    )
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(preds)
    n_test = int((pd.read_parquet(corpus)["split"] == "test").sum())
    assert sorted(table["seed"].unique().tolist()) == [5, 6, 7] and len(table) == 3 * n_test
    assert "3 runs of char-tfidf-lr (seeds 5-7): bootstrap resamples, C " in flat(done.output)
    assert "(3 seed(s))" in flat(done.output)


def test_bad_runs_are_one_sentence(tmp_path):
    corpus = tmp_path / "c.parquet"
    simulate(SimulationConfig(n_per_platform=120, auto_platforms=())).write(corpus)  # synthetic
    base = [
        "train",
        "--corpus",
        str(corpus),
        "--platform",
        "synthetic-forum",
        "--model",
        "tfidf-lr",
        "--out",
        str(tmp_path / "m"),
    ]
    for n in ("0", "-3"):
        assert_one_sentence_failure(
            runner.invoke(app, [*base, "--runs", n]), f"the number of runs must be a positive integer, got {n}"
        )
    assert_one_sentence_failure(
        runner.invoke(app, [*base, "--runs", "2", "--seed", "1", "--seed", "2"]),
        "--runs takes one --seed, the base seed (run k gets base + k), not 2 seeds",
    )
    assert not (tmp_path / "m").exists()
