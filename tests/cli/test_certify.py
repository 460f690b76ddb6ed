"""Certify on real data, as docs/validation.md runs it: a TF-IDF model trained on Depression Reddit, published-style
prediction files for Bluesky (ids, prob_ columns, no labels), `labels sample --strategy estimate`, two
annotators and an adjudicator in the real annotation app over HTTP (labels = the data set's expert labels, one
annotator wrong on every 10th post), then `audit certify`; and the commands' bad inputs."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.tables.label_store import LabelStore
from mhaudit.weak_supervision.annotate import open_session
from tests.cli_checks import assert_one_sentence_failure
from tests.conftest import depression_corpora

runner = CliRunner()


@pytest.fixture(scope="module")
def corpora():
    """The home corpus (Depression Reddit) and the target (Bluesky depression), as imported."""
    return depression_corpora()


@pytest.fixture(scope="module")
def published(tmp_path_factory, corpora):
    """Files as a researcher would have them, and the hidden truth of the target."""
    from mhaudit.models import create
    from mhaudit.tables.predictions import predict_corpus, scores

    work = tmp_path_factory.mktemp("certify")
    reddit, bluesky = corpora
    model = create("tfidf-lr").fit(reddit.frame[reddit.frame["split"].isin(["train", "val"])], reddit.classes)
    classes = reddit.classes
    ref = predict_corpus(model, reddit, model_name="tfidf-lr", seed=0, splits=("test",))
    tgt = predict_corpus(model, bluesky, model_name="tfidf-lr", seed=0, splits=tuple(bluesky.frame["split"].unique()))
    probs = {name: softmax(scores(frame, classes), axis=1) for name, frame in (("ref", ref), ("tgt", tgt))}
    reference = pd.DataFrame(
        {
            "label": pd.Categorical(ref["label"], categories=classes).codes,
            **{f"prob_{c}": probs["ref"][:, i] for i, c in enumerate(classes)},
        }
    )
    reference.to_csv(work / "tfidf_reddit.csv", index=False)  # integer labels, no ids
    target = pd.DataFrame({"id": tgt["id"], **{f"prob_{c}": probs["tgt"][:, i] for i, c in enumerate(classes)}})
    target.to_csv(work / "tfidf_bluesky.csv", index=False)  # ids, no labels
    bluesky.frame[["id", "text"]].to_csv(work / "posts.csv", index=False)
    y, pred = (tgt["label"] == classes[1]).to_numpy(), probs["tgt"].argmax(axis=1) == 1
    f1 = [2 * (a & b).sum() / (a.sum() + b.sum()) for a, b in ((y, pred), (~y, ~pred))]
    truth = {
        "macro_f1": float(np.mean(f1)),
        "accuracy": float((y == pred).mean()),
        "prevalence": float(y.mean()),
        "labels": {i: int(v) for i, v in zip(tgt["id"].astype(str), y)},
    }
    return work, classes, truth


def _label_in_the_app(work, sample_file, truth):
    """ann1 gives the expert label, ann2 flips every 10th item, adj settles the disagreements and records the rest."""
    session = open_session(sample_file, work / "labels.sqlite", ["ann1", "ann2"], "adj", port=0).start_background()
    try:
        urls = {person.name: url for person, url in session.urls().items()}
        token = {name: url.rstrip("/").rsplit("/", 1)[1] for name, url in urls.items()}
        for i, item in enumerate(session.app.items):
            value = truth["labels"][item.item_id]
            for name, given in (("ann1", value), ("ann2", 1 - value if i % 10 == 0 else value)):
                r = httpx.post(
                    urls[name] + "api/label",
                    json={"token": token[name], "item_id": item.item_id, "task": "dep", "value": given},
                )
                assert r.status_code == 200, r.text
            if i % 10 == 0:
                r = httpx.post(
                    urls["adj"] + "api/consensus",
                    json={"token": token["adj"], "item_id": item.item_id, "task": "dep", "value": value},
                )
                assert r.json() == {"ok": True}
        assert httpx.post(urls["adj"] + "api/agreed", json={"token": token["adj"]}).json()["ok"]
    finally:
        session.close()


def test_sample_annotate_report_on_real_data(published):
    work, classes, truth = published
    sample = work / "sample.csv"
    r = runner.invoke(
        app,
        [
            "labels",
            "sample",
            "--strategy",
            "estimate",
            "--predictions",
            str(work / "tfidf_bluesky.csv"),
            "--reference",
            str(work / "tfidf_reddit.csv"),
            "--items",
            str(work / "posts.csv"),
            "--task",
            "dep",
            "--budget",
            "200",
            "--seed",
            "0",
            "--out",
            str(sample),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "Certification sample for task dep" in r.output and (work / "sample.design.parquet").exists()
    drawn = pd.read_csv(sample)
    assert len(drawn) == 200 and drawn["pool_size"].groupby(drawn["stratum"]).first().sum() == 4568
    _label_in_the_app(work, sample, truth)
    with LabelStore(work / "labels.sqlite") as store:
        assert len(store.frame(labeler="ann1")) == 200
    out = work / "report"
    r = runner.invoke(
        app,
        [
            "audit",
            "certify",
            "--labels",
            str(work / "labels.sqlite"),
            "--task",
            "dep",
            "--sample",
            str(sample),
            "--predictions",
            str(work / "tfidf_bluesky.csv"),
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    table = pd.DataFrame(report["sections"][0]["tables"]["certified"]).set_index(["estimator", "metric"])
    assert (table["n_labels"] == 200).all()  # every disagreement adjudicated: all 200 items have a reference
    head = table.loc[("prediction-powered (PPI++, tuned λ)", "macro_f1")]
    assert head["ci_low"] <= truth["macro_f1"] <= head["ci_high"]
    acc = table.loc[("prediction-powered (PPI++, tuned λ)", "accuracy")]
    assert acc["ci_low"] <= truth["accuracy"] <= acc["ci_high"]
    prev = table.loc[("prediction-powered (PPI++, tuned λ)", f"prevalence of {classes[1]}")]
    assert prev["ci_low"] <= truth["prevalence"] <= prev["ci_high"]
    assert report["verdicts"][0]["axis"] == "certified on the target with human labels"
    assert "200 human labels" in report["verdicts"][0]["reason"]
    html = (out / "report.html").read_text()
    for secret in ("at://", "did:plc"):  # post ids and author DIDs stay out of the report
        assert secret not in html
    assert not any(text in html for text in pd.read_csv(work / "posts.csv")["text"].head(50))


def test_bad_inputs(published, tmp_path):
    work, _, _ = published
    pred, items = str(work / "tfidf_bluesky.csv"), str(work / "posts.csv")
    base = [
        "labels",
        "sample",
        "--strategy",
        "estimate",
        "--predictions",
        pred,
        "--items",
        items,
        "--task",
        "dep",
        "--out",
        str(tmp_path / "s.csv"),
    ]
    assert_one_sentence_failure(runner.invoke(app, [*base, "--budget", "5000"]), "larger than the pool")
    assert_one_sentence_failure(runner.invoke(app, [*base]), "--budget")
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "s.design.parquet").exists()
    assert_one_sentence_failure(
        runner.invoke(
            app,
            [
                "labels",
                "sample",
                "--strategy",
                "neyman",
                "--items",
                items,
                "--task",
                "dep",
                "--out",
                str(tmp_path / "s.csv"),
            ],
        ),
        "weak or estimate",
    )
    # a report with a sample drawn for another model's predictions
    r = runner.invoke(app, [*base, "--budget", "60"])
    assert r.exit_code == 0, r.output
    other = pd.read_csv(pred)
    other.iloc[:, 1:] = other.iloc[:, 1:].to_numpy()[:, ::-1]  # another model: the scores swapped
    other.to_csv(tmp_path / "roberta_bluesky.csv", index=False)
    labels = pd.DataFrame(
        {
            "item_id": pd.read_csv(tmp_path / "s.csv")["item_id"],
            "task": "dep",
            "labeler": "ann1",
            "kind": "human",
            "value": 1,
        }
    )
    labels.to_csv(tmp_path / "labels.csv", index=False)
    r = runner.invoke(
        app,
        [
            "audit",
            "certify",
            "--labels",
            str(tmp_path / "labels.csv"),
            "--task",
            "dep",
            "--sample",
            str(tmp_path / "s.csv"),
            "--predictions",
            str(tmp_path / "roberta_bluesky.csv"),
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert_one_sentence_failure(r, "drawn for other predictions")
    assert not (tmp_path / "r").exists()


def test_an_ensemble_through_the_commands(tmp_path):
    """SYNTHETIC: one predictions file with 4 runs; `labels sample --certify MODEL:SEED` certifies one run with
    the others as its ensemble, `audit certify` reads every run and says which was certified."""
    from tests.audits.test_certify_ensemble import runs_on

    target, truth = runs_on(800, 4, seed=6, labelled=False)
    reference, _ = runs_on(300, 4, seed=7, labelled=True)
    target.frame.to_parquet(tmp_path / "runs.parquet")
    reference.frame.to_parquet(tmp_path / "ref_runs.parquet")
    pd.DataFrame({"id": truth.index, "text": [f"synthetic post {i}" for i in range(800)]}).to_csv(
        tmp_path / "posts.csv", index=False
    )
    base = [
        "labels",
        "sample",
        "--strategy",
        "estimate",
        "--predictions",
        str(tmp_path / "runs.parquet"),
        "--reference",
        str(tmp_path / "ref_runs.parquet"),
        "--items",
        str(tmp_path / "posts.csv"),
        "--task",
        "mh",
        "--budget",
        "120",
        "--out",
        str(tmp_path / "sample.csv"),
    ]
    assert_one_sentence_failure(runner.invoke(app, base), "several runs", "MODEL:SEED or by its run-<k> folder")
    assert_one_sentence_failure(runner.invoke(app, [*base, "--certify", "tfidf-lr:x"]), "MODEL:SEED")
    r = runner.invoke(app, [*base, "--certify", "tfidf-lr:1"])
    assert r.exit_code == 0, r.output
    assert "model tfidf-lr seed 1" in r.output and "ensemble of 4 runs" in r.output
    drawn = pd.read_csv(tmp_path / "sample.csv")
    labels = pd.DataFrame(
        {
            "item_id": drawn["item_id"],
            "task": "mh",
            "labeler": "ann1",
            "kind": "human",
            "value": truth.reindex(drawn["item_id"]).to_numpy(),
        }
    )
    labels.to_csv(tmp_path / "labels.csv", index=False)
    r = runner.invoke(
        app,
        [
            "audit",
            "certify",
            "--labels",
            str(tmp_path / "labels.csv"),
            "--task",
            "mh",
            "--sample",
            str(tmp_path / "sample.csv"),
            "--predictions",
            str(tmp_path / "runs.parquet"),
            "--out",
            str(tmp_path / "report"),
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["verdicts"][0]["subject"] == "tfidf-lr seed 1"
    assert "Certified run: tfidf-lr seed 1, one of 4 runs" in report["sections"][0]["text"]


def test_runs_trained_with_train_runs_certified_one_by_one(corpora, tmp_path):
    """Files as `mhaudit train --runs 3` and `mhaudit predict` write them (3 TF-IDF runs trained on Depression
    Reddit, one predictions file scoring Bluesky; the reference re-written with integer labels): `--certify` takes
    the run-<k> folder or its bare name, the strata name the ensemble's probability, and `audit certify --run`
    certifies another run alone with the same sample, its labels-only accuracy the design-weighted mean by hand."""
    reddit, bluesky = corpora
    reddit.write(tmp_path / "reddit.parquet")
    bluesky.write(tmp_path / "bluesky.parquet")
    bluesky.frame[["id", "text"]].to_csv(tmp_path / "posts.csv", index=False)
    r = runner.invoke(
        app,
        [
            "train",
            "--corpus",
            str(tmp_path / "reddit.parquet"),
            "--model",
            "tfidf-lr",
            "--runs",
            "3",
            "--out",
            str(tmp_path / "runs"),
        ],
    )
    assert r.exit_code == 0, r.output
    splits = ",".join(bluesky.frame["split"].unique())
    for corpus, name, what in (("bluesky", "target", splits), ("reddit", "home", "test")):
        r = runner.invoke(
            app,
            [
                "predict",
                "--model",
                str(tmp_path / "runs"),
                "--corpus",
                str(tmp_path / f"{corpus}.parquet"),
                "--splits",
                what,
                "--out",
                str(tmp_path / f"{name}.parquet"),
            ],
        )
        assert r.exit_code == 0, r.output
    home = pd.read_parquet(tmp_path / "home.parquet")
    home.assign(label=pd.Categorical(home["label"], categories=reddit.classes).codes).to_csv(
        tmp_path / "home.csv", index=False
    )  # integer labels, as published files often have them
    draw = [
        "labels",
        "sample",
        "--strategy",
        "estimate",
        "--predictions",
        str(tmp_path / "target.parquet"),
        "--reference",
        str(tmp_path / "home.csv"),
        "--items",
        str(tmp_path / "posts.csv"),
        "--task",
        "dep",
        "--budget",
        "160",
        "--seed",
        "0",
    ]
    for run, out in ((str(tmp_path / "runs" / "run-1"), "by_path.csv"), ("run-1", "by_name.csv")):
        r = runner.invoke(app, [*draw, "--certify", run, "--out", str(tmp_path / out)])
        assert r.exit_code == 0, r.output
        assert "model tfidf-lr seed 1" in r.output and "ensemble of 3 runs" in r.output
    sample = pd.read_csv(tmp_path / "by_path.csv")
    assert sample["item_id"].tolist() == pd.read_csv(tmp_path / "by_name.csv")["item_id"].tolist()
    assert sample["stratum"].str.match(r"predicted \w+, ensemble P\(\w+\) bin \d of 4 \(").all()
    design = pd.read_parquet(tmp_path / "by_path.design.parquet")
    assert (design["certified_seed"] == 1).all() and (design["runs"] == 3).all()
    target = pd.read_parquet(tmp_path / "target.parquet")
    truth = (target[target["seed"] == 0].set_index("id")["label"] == reddit.classes[1]).astype(int)
    pd.DataFrame(
        {
            "item_id": sample["item_id"],
            "task": "dep",
            "labeler": "ann1",
            "kind": "human",
            "value": truth.reindex(sample["item_id"]).to_numpy(),
        }
    ).to_csv(tmp_path / "labels.csv", index=False)
    certify = [
        "audit",
        "certify",
        "--labels",
        str(tmp_path / "labels.csv"),
        "--task",
        "dep",
        "--sample",
        str(tmp_path / "by_path.csv"),
        "--predictions",
        str(tmp_path / "target.parquet"),
    ]
    tables = {}
    for run in ("run-2", "tfidf-lr:2"):
        r = runner.invoke(app, [*certify, "--run", run, "--out", str(tmp_path / run.replace(":", "_"))])
        assert r.exit_code == 0, r.output
        report = json.loads((tmp_path / run.replace(":", "_") / "report.json").read_text())
        assert report["verdicts"][0]["subject"] == "tfidf-lr seed 2"
        assert "The sample was drawn for tfidf-lr seed 1" in report["sections"][0]["text"]
        tables[run] = pd.DataFrame(report["sections"][0]["tables"]["certified"])
    assert tables["run-2"].equals(tables["tfidf-lr:2"])
    run2 = target[target["seed"] == 2].set_index("id").loc[design["item_id"]]
    right = run2.filter(like="logit_").to_numpy().argmax(axis=1) == truth.reindex(design["item_id"]).to_numpy()
    drawn = design["item_id"].isin(sample["item_id"]).to_numpy()
    hand = sum(
        (design["stratum"] == h).mean() * right[drawn & (design["stratum"] == h).to_numpy()].mean()
        for h in design["stratum"].unique()
    )
    table = tables["run-2"].set_index(["estimator", "metric"])
    assert table.loc[("labels only (design-weighted)", "accuracy"), "estimate"] == pytest.approx(hand, abs=1e-12)
    assert_one_sentence_failure(
        runner.invoke(app, [*certify, "--run", "run-7", "--out", str(tmp_path / "r7")]), "no run of any model seed 7"
    )
