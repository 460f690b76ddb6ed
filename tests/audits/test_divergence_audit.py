"""The divergence audit end to end on the synthetic corpus, whose planted divergence it must find."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest


REQUIRED = (
    "channel_scores",
    "interference",
    "dod",
    "dod_platform_stratified",
    "masking",
    "mcnemar",
    "lodo",
    "phenotypes",
    "orthogonality",
    "concentration",
)


@pytest.fixture(scope="module")
def demo(trust_demo):
    out = trust_demo[0] / "label-source"  # the demo's label-source audit (run_divergence_demo)
    report = json.loads((out / "report.json").read_text())
    tables = {name: pd.DataFrame(rows) for s in report["sections"] for name, rows in s["tables"].items()}
    return out, report, tables


def test_report_has_every_table_and_is_marked_synthetic(demo):
    out, report, tables = demo
    assert report["synthetic"] is True and "SYNTHETIC DATA" in (out / "report.html").read_text()
    for name in REQUIRED:
        assert name in tables and not tables[name].empty, name
    scores = tables["channel_scores"]
    assert set(scores["channel"]) == {
        "A",
        "B",
        "C",
        "AB",
        "AC",
        "BC",
        "ABC",
        "A_word",
        "baseline:tfidf-lr",
        "baseline:char-tfidf-lr",
    }
    assert (scores["macro_f1"] > scores["majority_macro_f1"]).all()  # every channel learns something
    figures = {s["title"]: [f["file"] for f in s["figures"]] for s in report["sections"] if s["figures"]}
    assert figures == {
        "Channel scores": ["figures/macro-f1-by-channel-and-data-set.png"],
        "Degree of Divergence": ["figures/degree-of-divergence-with-95--cis--overall-and-per-platform.png"],
        "Masking suite": ["figures/masking-effects-against-the-unmasked-run.png"],
    }
    assert all((out / f).stat().st_size > 10_000 for names in figures.values() for f in names)


def test_a_baseline_model_gets_its_dod_against_channel_a(demo):
    """DoD_{model-A} from the channel scores by hand: mean over human data sets of F1(model) - F1(A), minus
    the same over auto data sets; its verdict names the model, so a combined report puts it in its row."""
    _, report, tables = demo
    f1 = tables["channel_scores"].pivot(index="dataset", columns="channel", values="macro_f1")
    human, auto = ["synthetic_forum", "synthetic_tweets_gold"], ["synthetic_tweets_auto", "synthetic_forum_auto"]
    for model in ("tfidf-lr", "char-tfidf-lr"):
        gain = f1[f"baseline:{model}"] - f1["A"]
        row = tables["dod"].set_index("contrast").loc[f"baseline:{model}-A"]
        assert row["estimate"] == pytest.approx(gain[human].mean() - gain[auto].mean(), abs=1e-12)
        assert row["ci_low"] < row["estimate"] < row["ci_high"] and row["alternative"] == "two-sided"
        verdict = [v for v in report["verdicts"] if v["subject"] == model]
        auc = tables["dod_threshold_free"].set_index(["contrast", "metric"]).loc[(f"baseline:{model}-A", "auc")]
        # the second verdict's name says what its number is to the first: the divergence seen on AUC too, or not
        apart = verdict[0]["severity"] == "fail"
        same_side = auc["ci_low"] * row["estimate"] > 0 and auc["ci_high"] * row["estimate"] > 0
        assert [v["statistic"] for v in verdict] == [
            "dod vs A",
            "dod on AUC" if not apart else "also on AUC" if same_side else "not on AUC",
        ]
        assert verdict[0]["value"] == pytest.approx(row["estimate"])
        assert verdict[1]["value"] == pytest.approx(auc["estimate"])


def test_threshold_free_dod_is_the_dod_of_each_metric_by_hand(demo):
    """Each metric's DoD from the per-data-set scores: AUC and balanced accuracy from scikit-learn's, PR-AUC
    gain from average_precision_score, on the same rows the channels were scored on."""
    _, report, tables = demo
    scores = tables["channel_scores"].set_index(["channel", "dataset"])
    free = tables["dod_threshold_free"].set_index(["contrast", "metric"])
    human, auto = ["synthetic_forum", "synthetic_tweets_gold"], ["synthetic_tweets_auto", "synthetic_forum_auto"]
    for x in ("C", "BC", "baseline:tfidf-lr"):
        for metric, column in (("macro_f1", "macro_f1"), ("balanced_accuracy", "balanced_accuracy")):
            gain = {d: scores.loc[(x, d), column] - scores.loc[("A", d), column] for d in human + auto}
            want = np.mean([gain[d] for d in human]) - np.mean([gain[d] for d in auto])
            assert free.loc[(f"{x}-A", metric), "estimate"] == pytest.approx(want, abs=1e-12)
        prev = {d: scores.loc[(x, d), "prevalence"] for d in human + auto}
        gain = {
            d: (scores.loc[(x, d), "pr_auc"] - prev[d]) / (1 - prev[d])
            - (scores.loc[("A", d), "pr_auc"] - prev[d]) / (1 - prev[d])
            for d in human + auto
        }
        want = np.mean([gain[d] for d in human]) - np.mean([gain[d] for d in auto])
        assert free.loc[(f"{x}-A", "pr_auc_gain"), "estimate"] == pytest.approx(want, abs=1e-12)
        row = free.loc[(f"{x}-A", "auc")]
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"] and row["n_boot"] == 2000
    diag = tables["threshold_diagnostic"]
    assert (diag["macro_f1_best"] >= diag["macro_f1_train"] - 1e-12).all()  # the best threshold is chosen on them
    control = tables["random_pos_control"]
    assert set(control["status"]) <= {"works", "inconclusive", "fails"} and len(control) > 0
    checks = [v for v in report["verdicts"] if v["subject"].endswith("random-POS control")]
    assert len(checks) == len(control)


def test_planted_divergence_is_found(demo):
    _, report, tables = demo
    dod = tables["dod"].set_index("contrast")
    for contrast in ("C-A", "BC-A", "B-A"):
        assert dod.loc[contrast, "ci_low"] > 0 and dod.loc[contrast, "q"] < 0.05, contrast
    assert dod.loc["C-A", "human_delta"] > 0 > dod.loc["C-A", "auto_delta"]
    assert dod.loc["C-A", "permutation_min_p"] == pytest.approx(1 / 6)
    summary = report["summary"]
    assert "Human labels reward style over lexicon" in summary
    assert "the label sources reward different evidence" in summary
    by = tables["dod_by_dataset"].query("channel == 'C'").set_index("dataset")
    scores = tables["channel_scores"].set_index(["channel", "dataset"])["macro_f1"]
    for d in by.index:
        assert by.loc[d, "delta"] == pytest.approx(scores[("C", d)] - scores[("A", d)], abs=1e-12)


def test_masks_lodo_phenotypes_and_conflicts(demo):
    out, _, tables = demo
    masking = tables["masking"]
    assert set(masking["mask"]) == {"none", "pos_only", "random_pos"}
    assert set(masking["dataset"]) == {"synthetic_forum", "synthetic_tweets_gold"}  # human data only
    lodo = tables["lodo"]
    assert set(lodo["held_out_domain"]) == {"work", "money", "health", "family", "social"}
    assert lodo.groupby("channel")["ood_macro_f1_mean"].first().between(0.5, 1).all()
    pheno = tables["phenotypes"].iloc[0]
    assert pheno["features"] == 154 and 0 <= pheno["ami_dataset"] <= 1 and pheno["bootstrap_ari_mean"] > 0.5
    counts = tables["conflict_counts"]
    assert counts.groupby("dataset")["count"].sum().gt(0).all()
    sample = pd.read_csv(out / "conflicts.csv")
    assert "text" not in sample.columns  # post text only with --include-text
    assert set(pd.read_excel(out / "conflicts.xlsx", sheet_name=None)) >= {"counts", "synthetic_forum"}
    weights = tables["weights_kept"]
    assert set(weights.query("channel == 'ABC'")["block"]) == {"A", "B", "C"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--human", "synthetic_forum", "--auto", "synthetic_forum"], "named both human and auto"),
        (
            [
                "--human",
                "synthetic_forum",
                "--auto",
                "synthetic_tweets_auto",
                "--train-dataset",
                "synthetic_tweets_auto",
            ],
            "is auto-labelled",
        ),
        (
            [
                "--human",
                "synthetic_forum",
                "--auto",
                "synthetic_tweets_auto",
                "--channels",
                "A,C",
                "--mask-channels",
                "BC",
            ],
            "not among channels",
        ),
        (["--human", "synthetic_forum", "--auto", "synthetic_tweets_auto", "--channels", "A,D"], "letters A, B, C"),
    ],
)
def test_cli_bad_options(demo, tmp_path, args, message):
    out, _, _ = demo
    target = tmp_path / "never"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "audit",
            "divergence",
            "--corpus",
            str(out / "corpus.parquet"),
            *args,
            "--out",
            str(target),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and message in done.stderr.replace("\n", " ")
    assert "Traceback" not in done.stderr and not target.exists()


def test_cli_refuses_a_data_set_on_both_sides(demo, tmp_path):
    out, _, _ = demo
    target = tmp_path / "never"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "audit",
            "divergence",
            "--corpus",
            str(out / "corpus.parquet"),
            "--human",
            "synthetic_forum",
            "--auto",
            "synthetic_forum",
            "--out",
            str(target),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "named both human and auto" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2 and not target.exists()


def test_cli_runs_a_small_audit_with_repeats(demo, tmp_path):
    out, _, _ = demo
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "audit",
            "divergence",
            "--corpus",
            str(out / "corpus.parquet"),
            "--human",
            "synthetic_forum",
            "--human",
            "synthetic_tweets_gold",
            "--auto",
            "synthetic_tweets_auto",
            "--channels",
            "A,C",
            "--masks",
            "none",
            "--lodo-channels",
            "",
            "--n-boot",
            "500",
            "--repeats",
            "2",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    dod = pd.DataFrame(next(s["tables"]["dod"] for s in report["sections"] if "dod" in s["tables"]))
    row = dod.iloc[0]
    assert row["contrast"] == "C-A" and row["repeats"] == 2
    assert row["ci_low"] <= row["estimate"] <= row["ci_high"]  # the headline pools both repeats
    assert row["estimate_repeat_sd"] >= 0 and "estimate_repeat0" in dod.columns
    assert "pool 2 repeated fits" in report["summary"]


def test_cli_compares_a_baseline_model(demo, tmp_path):
    """Any model's predictions enter as a baseline: here the synthetic auto-labeller's own keyword rule."""
    from mhaudit.synthetic.simulate_divergence import mentions_stress_topic
    from mhaudit.tables.corpus.schema import Corpus

    out, _, _ = demo
    corpus = Corpus.read(out / "corpus.parquet").frame
    hit = corpus["text"].map(mentions_stress_topic).to_numpy()
    preds = corpus[["id", "platform", "dataset", "split", "label"]].assign(
        model="keyword-rule", seed=0, prob_no_stress=np.where(hit, 0.1, 0.9), prob_stress=np.where(hit, 0.9, 0.1)
    )
    preds.to_parquet(tmp_path / "baseline.parquet", index=False)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "audit",
            "divergence",
            "--corpus",
            str(out / "corpus.parquet"),
            "--human",
            "synthetic_forum",
            "--human",
            "synthetic_tweets_gold",
            "--auto",
            "synthetic_tweets_auto",
            "--channels",
            "A,C",
            "--masks",
            "none",
            "--lodo-channels",
            "",
            "--n-boot",
            "500",
            "--baseline",
            str(tmp_path / "baseline.parquet"),
            "--out",
            str(tmp_path / "report"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    tables = {name: pd.DataFrame(rows) for s in report["sections"] for name, rows in s["tables"].items()}
    scores = tables["channel_scores"].set_index(["channel", "dataset"])
    auto = scores.loc[("baseline:keyword-rule", "synthetic_tweets_auto")]
    assert auto["macro_f1"] > 0.9  # the auto labels are this rule with 5% flipped
    versus = tables["mcnemar"].query("versus == 'baseline:keyword-rule'")
    assert set(versus["channel"]) == {"A", "C"} and len(versus) == 6  # two channels x three data sets
