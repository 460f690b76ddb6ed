"""mhaudit train / predict on the synthetic corpus, and their bad input."""

import pandas as pd
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.synthetic.simulate import SimulationConfig, simulate

runner = CliRunner()


def test_train_predict_resume_and_bad_input(tmp_path):
    corpus = tmp_path / "c.parquet"
    simulate(SimulationConfig(n_per_platform=300, auto_platforms=())).write(corpus)
    models = tmp_path / "models"
    args = ["train", "--corpus", str(corpus), "--platform", "synthetic-forum", "--model", "tfidf-lr",
            "--seed", "0", "--seed", "7", "--option", "min_df=1", "--out", str(models)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert sorted(p.name for p in models.iterdir()) == ["seed-0", "seed-7"]
    again = runner.invoke(app, args)
    assert again.output.count("already trained") == 2
    preds = tmp_path / "p.parquet"
    done = runner.invoke(app, ["predict", "--model", str(models), "--corpus", str(corpus), "--out", str(preds)])
    assert done.exit_code == 0, done.output
    table = pd.read_parquet(preds)
    test_rows = (pd.read_parquet(corpus)["split"] == "test").sum()
    assert sorted(table["seed"].unique().tolist()) == [0, 7] and len(table) == 2 * test_rows

    base = ["train", "--corpus", str(corpus), "--seed", "0"]
    bad = runner.invoke(app, [*base, "--platform", "mastodon", "--model", "tfidf-lr", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "no platform or data set 'mastodon'" in bad.stderr
    assert not (tmp_path / "x").exists()
    unknown = runner.invoke(app, [*base, "--platform", "synthetic-forum", "--model", "gpt-9", "--out",
                                  str(tmp_path / "y")])
    assert unknown.exit_code == 2 and "unknown model 'gpt-9'" in unknown.stderr
    missing = runner.invoke(app, ["predict", "--model", str(tmp_path / "nope"), "--corpus", str(corpus),
                                  "--out", str(tmp_path / "q.parquet")])
    assert missing.exit_code == 2 and "holds no trained model" in missing.stderr
