"""`mhaudit audit estimate` on files shaped as researchers publish them (prob_ columns, integer labels, no ids,
one file per platform), several files after one flag, and its bad inputs: one sentence, exit 2, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from mhaudit.cli import app
from tests.cli_checks import assert_one_sentence_failure

runner = CliRunner()


def _write(path, n, priors, seed, labelled=True, classes=("normal", "stress")):
    rng = np.random.default_rng(seed)
    y = rng.choice(len(classes), n, p=priors)
    z = rng.normal(size=(n, len(classes))) + 1.5 * np.eye(len(classes))[y]
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    frame = pd.DataFrame({f"prob_{c}": p[:, i].round(6) for i, c in enumerate(classes)})
    frame.iloc[:, -1] = 1 - frame.iloc[:, :-1].sum(axis=1)  # rounded probabilities still sum to 1
    if labelled:
        frame.insert(0, "label", y)  # integer labels index the score columns
    frame.to_csv(path, index=False)
    return path


def test_estimate_on_published_style_files(tmp_path):
    _write(tmp_path / "bert_reddit.csv", 1200, [0.6, 0.4], 0)  # the reference, found by the glob below
    twitter = _write(tmp_path / "bert_twitter.csv", 900, [0.3, 0.7], 1)  # has labels: they are ignored
    bluesky = _write(tmp_path / "bert_bluesky.csv", 700, [0.5, 0.5], 2, labelled=False)
    out = tmp_path / "report"
    # a glob after --reference, two files after one --target (as a shell expands "bert_*.csv")
    result = runner.invoke(
        app,
        [
            "audit",
            "estimate",
            "--reference",
            str(tmp_path / "bert_red*.csv"),
            "--target",
            str(twitter),
            str(bluesky),
            "--name-pattern",
            "{model}_{platform}",
            "--n-boot",
            "200",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "note: the 'label' column of bert_twitter.csv is ignored (read as unlabelled)" in result.output
    report = json.loads((out / "report.json").read_text())
    estimates = pd.DataFrame(next(t for s in report["sections"] for n, t in s["tables"].items() if n == "estimates"))
    assert set(estimates["dataset"]) == {"twitter", "bluesky"}
    assert set(estimates["method"]) == {"cbpe", "atc", "doc"}
    cbpe = estimates[(estimates["method"] == "cbpe") & (estimates["metric"] == "macro_f1")].set_index("dataset")
    assert ((cbpe["ci_low"] <= cbpe["estimate"]) & (cbpe["estimate"] <= cbpe["ci_high"])).all()
    assert 0.7 < cbpe.loc["twitter", "estimate"] < 0.9
    assert (out / "report.html").exists() and list((out / "figures").glob("*.svg"))


def test_bad_inputs(tmp_path):
    ref = _write(tmp_path / "ref.csv", 300, [0.5, 0.5], 0)
    target = _write(tmp_path / "t.csv", 300, [0.5, 0.5], 1, labelled=False)
    three = _write(tmp_path / "t3.csv", 300, [0.4, 0.3, 0.3], 1, labelled=False, classes=("normal", "stress", "other"))
    unlabelled_ref = _write(tmp_path / "ref_nolabel.csv", 300, [0.5, 0.5], 0, labelled=False)
    cases = [
        (["--reference", str(ref), "--target", str(three)], ["t3.csv", "score columns", "differ"]),
        (["--reference", str(unlabelled_ref), "--target", str(target)], ["ref_nolabel.csv", "label"]),
        (["--reference", str(ref), "--target", str(tmp_path / "missing.csv")], ["missing.csv"]),
    ]
    for args, fragments in cases:
        out = tmp_path / "out"
        result = runner.invoke(app, ["audit", "estimate", *args, "--out", str(out)])
        assert_one_sentence_failure(result, *fragments)
        assert not out.exists()


def test_an_ensemble_of_runs_in_files_without_ids(tmp_path):
    """Five seeds of one model, one file per seed and platform, no ids (rows pair by position), integer labels:
    `--no-per-run` gives each run's accuracy from the agreement line."""
    from mhaudit.synthetic.simulate_runs import gaussian_runs

    runs = gaussian_runs(n_runs=5, n_ref=1500, n_tgt=1000, shrink=0.8, seed=5)  # SYNTHETIC
    for seed in range(5):
        for platform, margin, y in (
            ("reddit", runs["margin_ref"][seed], runs["y_ref"]),
            ("twitter", runs["margin_tgt"][seed], None),
        ):
            p = 1 / (1 + np.exp(-margin))
            frame = pd.DataFrame({"prob_normal": (1 - p).round(6), "prob_stress": p.round(6)})
            frame["prob_stress"] = 1 - frame["prob_normal"]
            if y is not None:
                frame.insert(0, "label", y)
            frame.to_csv(tmp_path / f"minilm_seed{seed}_{platform}.csv", index=False)
    out = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "audit",
            "estimate",
            "--reference",
            str(tmp_path / "*_reddit.csv"),
            "--target",
            str(tmp_path / "*_twitter.csv"),
            "--name-pattern",
            "{model}_seed{seed}_{platform}",
            "--no-per-run",
            "--n-boot",
            "200",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Ensemble of 5 runs on twitter: accuracy expected" in result.output
    report = json.loads((out / "report.json").read_text())
    tables = {n: pd.DataFrame(t) for s in report["sections"] for n, t in s["tables"].items()}
    aline = tables["ensemble"][tables["ensemble"]["method"] == "aline-d"].sort_values("seed")
    truth = runs["truth"]
    assert np.abs(aline["estimate"].to_numpy() - truth).mean() < 0.03
    assert ((aline["ci_low"] <= truth) & (truth <= aline["ci_high"])).sum() >= 4
    assert (out / "figures").is_dir() and list((out / "figures").glob("*agreement*.svg"))
