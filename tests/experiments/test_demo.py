"""The main job: mhaudit demo on the synthetic corpus, offline, with a report whose numbers are checked."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from mhaudit.tables.corpus.schema import Corpus


MODEL_AXES = (
    "discrimination",
    "calibration",
    "significance",
    "equity",
    "attribution",
    "expected on the target, before labels",
    "label source",
    "human validation",
)


def test_demo_writes_a_synthetic_report_that_finds_the_shift(trust_demo):
    out, results, told = trust_demo
    done = [stage for event, stage, *_ in told if event == "done"]
    assert (
        done[:3]
        == [
            "synthetic corpus, seed 0",
            "train tfidf-lr seed 0 on synthetic-forum",
            "train char-tfidf-lr seed 0 on synthetic-forum",
        ]
        and "figures" in done
    )
    cross = out / "cross-platform"
    report = json.loads((cross / "report.json").read_text())
    assert report["synthetic"] is True
    html = (cross / "report.html").read_text()
    assert "SYNTHETIC DATA" in html and "SYNTHETIC DATA" in (cross / "report.md").read_text()
    tables = {name: pd.DataFrame(rows) for s in report["sections"] for name, rows in s["tables"].items()}
    assert set(tables["discrimination"]["model"]) == {"tfidf-lr", "char-tfidf-lr"}
    assert "mean and SD over seeds" not in tables  # one seed per model: no SD to show
    disc = tables["discrimination"].query("model == 'tfidf-lr'").set_index("dataset")
    assert disc.loc["synthetic_forum", "delta_auc_pct"] == 0
    assert disc.loc["synthetic_forum", "macro_auc"] > 0.95
    for other in ("synthetic_comments", "synthetic_tweets"):
        assert disc.loc[other, "macro_auc"] < disc.loc["synthetic_forum", "macro_auc"] - 0.15
        assert disc.loc[other, "delta_auc_pct"] < -15
    agreement = tables["agreement"].iloc[0]
    assert abs(agreement["agreement"] - 0.80) < 1e-9  # exactly 20% of labels replaced
    corpus = Corpus.read(cross / "corpus.parquet")
    assert corpus.synthetic and len(corpus.frame) == 4 * 2000
    preds = pd.read_parquet(cross / "predictions.parquet")
    assert list(preds.columns[:7]) == ["id", "model", "seed", "platform", "dataset", "split", "label"]
    assert [c for c in preds.columns if c.startswith("logit_")] == [f"logit_{c}" for c in corpus.classes]
    # both models get word attributions, the character model's n-grams shared among the words holding them
    words = pd.read_parquet(cross / "attributions.parquet")
    assert set(words["model"]) == {"tfidf-lr", "char-tfidf-lr"}
    assert words.loc[words["model"] == "char-tfidf-lr", "word"].str.fullmatch(r"[\w']+").mean() > 0.95
    # the attribution verdict of every target: mean over classes of the top-10 Jaccard between home and the
    # target's data set (the auto-labelled tweets are a data set of their own on the tweets platform)
    stability = tables["attribution_stability"].query("k == 10")
    verdicts = pd.DataFrame(report["verdicts"]).query("statistic == 'jaccard_top10'")
    assert verdicts["target"].nunique() == 3
    for _, v in verdicts.drop_duplicates(["subject", "target"]).iterrows():
        model, dataset = v["subject"].removesuffix(" seed 0"), v["target"].split(" (")[1].rstrip(")")
        pair = stability[
            (stability["model"] == model)
            & stability[["dataset_a", "dataset_b"]].isin(["synthetic_forum", dataset]).all(axis=1)
        ]
        assert len(pair) == 4 and v["value"] == pytest.approx(pair["jaccard"].mean(), abs=1e-12)


def test_the_combined_report_checks_every_axis_of_both_models(trust_demo):
    out, results, _ = trust_demo
    combined = json.loads((out / "report.json").read_text())
    assert combined["synthetic"] is True and "SYNTHETIC DATA" in (out / "report.html").read_text()
    card = pd.DataFrame(combined["scorecard"])
    for model in ("tfidf-lr", "char-tfidf-lr"):
        rows = card[card["subject"] == model]
        for axis in MODEL_AXES:
            assert (rows[axis] != "").any(), (model, axis)
    assert combined["summary"].startswith("In every audit: char-tfidf-lr, tfidf-lr.")
    # its verdicts are the four audits' verdicts, each once
    parts = [
        json.loads((out / f / "report.json").read_text())["verdicts"]
        for f in ("cross-platform", "expected", "label-source", "validation")
    ]
    assert len(combined["verdicts"]) == sum(map(len, parts))
    assert {v["audit"] for v in combined["verdicts"]} == {"cpfe", "estimate", "divergence", "agreement"}
    titles = [s["title"] for s in combined["sections"]]
    assert titles[0] == "Cross-platform: Axis 1: discrimination" and "Label source: Degree of Divergence" in titles
    assert "Before labels: Expected on the target, before labels" in titles
    validation = results["validation"].table("models_vs_reference")
    assert set(validation["labeler"]) == {"tfidf-lr", "char-tfidf-lr"}


def test_base_install_needs_no_torch(tmp_path):
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers'):\n"
        "            raise ImportError(name + ' is blocked: the base install has no torch')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from mhaudit.cli import main; sys.argv = ['mhaudit', 'demo', '--out', sys.argv[1], "
        "'--n-per-platform', '400']\nmain()"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report.html").exists()


def test_the_label_free_estimate_says_the_shifted_platforms_are_untrusted(trust_demo):
    out, results, _ = trust_demo
    expected = results["expected"]
    shift = expected.table("shift")
    assert len(shift) == 2 * 3  # two models x the three non-reference data sets
    assert not shift["trusted"].any() and (shift["domain_auc"] > 0.9).all()  # vocabulary shift, not prior shift
    headline = expected.verdicts[expected.verdicts["statistic"] == "estimated_macro_f1"]
    assert headline["severity"].eq("warn").all() and headline["reason"].str.startswith("estimate untrusted").all()
    assert (out / "expected" / "report.html").exists()
