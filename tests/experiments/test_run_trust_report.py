"""mhaudit run with [label_source] and [validation]: three audits of the experiment's model, one trust report.
Every file is written here from mhaudit's SYNTHETIC generators."""

import json

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.experiments.config import load_experiment
from mhaudit.experiments.runner import run_experiment
from mhaudit.synthetic.simulate_divergence import DivergenceConfig, mentions_stress_topic, simulate_divergence
from mhaudit.synthetic.simulate_labels import labels_rows, simulate_annotators
from tests.experiments.test_runner import experiment, noting

WEAK = "lexicon:keyword-rule@0123456789ab"  # named `keyword-rule` in [validation] (tables.labeler_names)
HUMAN, AUTO = ("synthetic_forum", "synthetic_tweets_gold"), ("synthetic_tweets_auto", "synthetic_forum_auto")


def write_label_source_files(folder):
    """The divergence corpus as one CSV per data set (0/1 labels, its splits), and a labels table for 150 of the
    gold tweets: the keyword rule as weak labeler, two annotators (5% and 8% error), an adjudicator."""
    frame = simulate_divergence(
        DivergenceConfig(seed=0, n_forum=600, n_forum_auto=300, n_tweets_gold=300, n_tweets_auto=300)
    ).frame
    specs = []
    for dataset in (*HUMAN, *AUTO):
        rows = frame[frame["dataset"] == dataset]
        pd.DataFrame(
            {
                "id": rows["id"],
                "text": rows["text"],
                "label": (rows["label"] == "stress").astype(int),
                "split": rows["split"],
            }
        ).to_csv(folder / f"{dataset}.csv", index=False)
        side = "human" if dataset in HUMAN else "auto"
        specs.append(
            f'[[label_source.corpus]]\nsource = "generic"\npaths = ["{dataset}.csv"]\n'
            f'platform = "{rows["platform"].iat[0]}"\ndataset = "{dataset}"\nlabel_source = "{side}"\n'
            f'mapping = "stress-binary"\nid_col = "id"\n'
        )
    gold = frame[frame["dataset"] == "synthetic_tweets_gold"].iloc[:150]
    rng = np.random.default_rng(1)
    weak = labels_rows(
        gold["id"].to_numpy(), {WEAK: ("lexicon", gold["text"].map(mentions_stress_topic).to_numpy(int))}, "stress"
    )
    people = simulate_annotators(
        gold["id"].to_numpy(), (gold["label"] == "stress").to_numpy(int), (0.05, 0.08), "stress", rng
    )
    pd.concat([weak, people]).to_csv(folder / "labels.csv", index=False)
    return "\n".join(specs)


@pytest.fixture(scope="module")
def trust_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    path = experiment(folder)
    corpora = write_label_source_files(folder)
    path.write_text(
        path.read_text()
        + f"""
[label_source]
human = {list(HUMAN)}
auto = {list(AUTO)}
binary = {{ positive = ["stress"] }}
channels = ["A", "C", "AC"]
masks = ["none"]
lodo_channels = []
n_boot = 500
{corpora}
[validation]
labels = ["labels.csv"]
task = "stress"
weak_labeler = "keyword-rule"
binary = {{ positive = ["stress"] }}
n_boot = 200
[validation.items]
source = "generic"
paths = ["synthetic_tweets_gold.csv"]
mapping = "stress-binary"
id_col = "id"
dataset = "synthetic_tweets_gold"
platform = "synthetic-tweets"
""".replace("'", '"')
    )
    logs = []
    result = run_experiment(load_experiment(path), folder / "out", progress=noting(logs))
    return folder, result, logs


def test_one_trust_report_of_three_audits(trust_run):
    folder, result, _ = trust_run
    out = folder / "out"
    for name in ("cross-platform", "label-source", "validation", ""):
        assert (out / name / "report.html").exists(), name
    report = json.loads((out / "report.json").read_text())
    assert {v["audit"] for v in report["verdicts"]} == {"cpfe", "divergence", "agreement"}
    assert report["title"] == "tiny: trust report" and report["summary"].startswith("In every audit: tfidf-lr.")
    card = pd.DataFrame(report["scorecard"])
    model = card[card["subject"] == "tfidf-lr"]
    for axis in (
        "discrimination",
        "calibration",
        "significance",
        "equity",
        "attribution",
        "label source",
        "human validation",
    ):
        assert (model[axis] != "").any(), axis
    assert not result.table("discrimination").empty  # the combined result still finds every table by name


def test_the_model_enters_the_label_source_audit_and_the_validation(trust_run):
    folder, result, _ = trust_run
    scores = result.table("channel_scores").pivot(index="dataset", columns="channel", values="macro_f1")
    gain = scores["baseline:tfidf-lr"] - scores["A"]
    dod = result.table("dod").set_index("contrast").loc["baseline:tfidf-lr-A", "estimate"]
    assert dod == pytest.approx(gain[list(HUMAN)].mean() - gain[list(AUTO)].mean(), abs=1e-12)
    # the model's labels on the validation items are its own predictions there (P(stress) > 1/2), scored
    # against the reference: the annotators' label where they agree, else the adjudicator's
    from sklearn.metrics import cohen_kappa_score

    validation = json.loads((folder / "out" / "validation" / "report.json").read_text())
    assert validation["options"]["weak_labeler"] == WEAK and validation["title"].endswith(f"weak labeler {WEAK}")
    model = result.table("models_vs_reference").set_index("metric")
    assert model.loc["kappa", "labeler"] == "tfidf-lr" and model.loc["kappa", "n"] == 150
    labels = pd.read_csv(folder / "labels.csv").pivot(index="item_id", columns="labeler", values="value")
    reference = labels["annotator-1"].where(labels["annotator-1"] == labels["annotator-2"], labels["adjudicator"])
    binary = next((folder / "out" / "models").rglob("binary-*.parquet"))
    scored = pd.read_parquet(binary).set_index("id").loc[reference.index]
    predicted = (scored["logit_stress"] > scored["logit_no_stress"]).astype(int)  # the model's own two classes
    assert model.loc["kappa", "estimate"] == pytest.approx(
        cohen_kappa_score(reference.astype(int), predicted), abs=1e-12
    )


def test_a_rerun_reuses_the_models_scores(trust_run):
    folder, first, _ = trust_run
    logs = []
    again = run_experiment(load_experiment(folder / "exp.toml"), folder / "out", progress=noting(logs))
    assert not any(line.startswith("trained") for line in logs) and any("cached" in line for line in logs)
    pd.testing.assert_frame_equal(again.table("dod"), first.table("dod"))


def test_validation_items_without_binary_is_one_sentence(tmp_path):
    path = experiment(tmp_path)
    path.write_text(
        path.read_text() + '\n[validation]\nlabels = ["l.csv"]\ntask = "t"\n[validation.items]\n'
        'source = "generic"\npaths = ["forum.csv"]\n'
    )
    with pytest.raises(InputError, match="validation.items and validation.binary go together"):
        load_experiment(path)
