"""Certify a model on a target with few human labels: the sample (design, allocation, the annotation app reads it)
and the report (PPI estimates cover the truth), on SYNTHETIC scores, and their bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mhaudit.audits.agreement import read_validation_set
from mhaudit.audits.certify import (
    CertifyInputs,
    CertifyOptions,
    audit_certify,
    certification_sample,
    pool_of,
    read_design,
    write_certification_sample,
)
from mhaudit.core.errors import InputError
from mhaudit.tables.prediction_files import read_predictions
from mhaudit.weak_supervision.annotate import load_sample

CLASSES = ("control", "depression")


def synthetic_target(tmp_path, n=3000, seed=0, name="bert_bluesky.csv"):
    """SYNTHETIC: a model's probabilities on n posts (ids, prob_ columns, as published) and the hidden truth."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    z = rng.normal(size=(n, 2)) + 1.4 * np.eye(2)[y]
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    ids = [f"at://did:plc:synthetic{i % 700}/app.bsky.feed.post/{i}" for i in range(n)]
    pd.DataFrame({"id": ids, "prob_control": p[:, 0], "prob_depression": p[:, 1]}).to_csv(tmp_path / name, index=False)
    items = pd.DataFrame({"id": ids, "text": [f"synthetic post {i}" for i in range(n)]})
    return tmp_path / name, items, pd.Series(y, index=ids)


def human_labels(ids, truth, *, flip_every=7):
    """Two annotators (the second disagrees on every 7th item) and an adjudicator who settles with the truth."""
    rows = []
    for i, item in enumerate(ids):
        value = int(truth[item])
        rows += [
            {"item_id": item, "task": "mh", "labeler": "ann1", "kind": "human", "value": value},
            {
                "item_id": item,
                "task": "mh",
                "labeler": "ann2",
                "kind": "human",
                "value": 1 - value if i % flip_every == 0 else value,
            },
        ]
        if i % flip_every == 0:
            rows.append({"item_id": item, "task": "mh", "labeler": "adj", "kind": "adjudicated", "value": value})
    return pd.DataFrame(rows)


def test_sample_design_allocation_and_the_annotation_app(tmp_path):
    path, items, _ = synthetic_target(tmp_path)
    pool = pool_of(read_predictions([str(path)], labelled=False))
    assert pool.calibration.startswith("the scores' softmax")
    sample, design = certification_sample(pool, items, "mh", 200, seed=1)
    assert len(sample) == 200 and sample["item_id"].is_unique and len(design) == 3000
    assert design["stratum"].nunique() == 8  # 2 predicted classes x 4 confidence bins
    few, few_design = certification_sample(pool, items, "mh", 50, seed=1)
    assert few_design["stratum"].nunique() == 4  # a small budget: 2 bins, so each stratum expects ~10 labels
    per = sample.groupby("stratum").agg(n=("item_id", "size"), pool=("pool_size", "first"), w=("weight", "first"))
    assert (per["n"] >= 2).all() and np.allclose(per["w"], per["pool"] / per["n"])
    assert per["pool"].sum() == 3000
    # Neyman: the confident strata (little residual variance) get fewer labels per pooled item than the unsure
    rate = per["n"] / per["pool"]
    unsure = [s for s in per.index if s.startswith("predicted depression")]
    assert rate[unsure].max() > rate.min() * 1.5
    out = tmp_path / "sample.csv"
    sample_file, design_file = write_certification_sample(sample, design, out)
    assert design_file.name == "sample.design.parquet"
    served = load_sample(sample_file)  # the annotation app's reader: item_id, task, text, nothing else
    assert len(served) == 200 and {item.item_id for item in served} == set(sample["item_id"])
    assert read_validation_set(sample_file)["weight"].sum() == pytest.approx(3000)
    again, _ = certification_sample(pool, items.iloc[::-1], "mh", 200, seed=1)  # input order does not matter
    assert set(again["item_id"]) == set(sample["item_id"])


@pytest.mark.parametrize("population", ["pool", "platform"])
def test_report_covers_the_truth_and_beats_labels_alone_over_repeated_samples(tmp_path, population):
    path, items, truth = synthetic_target(tmp_path, seed=2)
    preds = read_predictions([str(path)], labelled=False)
    pool = pool_of(preds)
    pred = pool.pred
    y = truth.reindex(pool.ids).to_numpy()
    true_f1 = np.mean([2 * ((y == c) & (pred == c)).sum() / ((y == c).sum() + (pred == c).sum()) for c in (0, 1)])
    hits, widths = [], {"ppi": [], "labels": []}
    for seed in range(25):
        sample, design = certification_sample(pool, items, "mh", 150, seed=seed)
        result = audit_certify(
            CertifyInputs(human_labels(sample["item_id"], truth), sample, design, preds, synthetic=True),
            CertifyOptions("mh", population=population),
        )
        table = result.table("certified").set_index(["estimator", "metric"])
        head = table.loc[("prediction-powered (PPI++, tuned λ)", "macro_f1")]
        hits.append(head["ci_low"] <= true_f1 <= head["ci_high"])
        widths["ppi"].append(head["half_width"])
        widths["labels"].append(table.loc[("labels only (design-weighted)", "macro_f1"), "half_width"])
        assert head["n_labels"] == 150
    assert np.mean(hits) >= 0.84  # 25 draws: a 95% interval misses 4 or more with probability ~3%
    assert np.mean(widths["ppi"]) <= np.mean(widths["labels"]) * 1.02
    assert "SYNTHETIC" in result.summary
    assert result.verdicts["axis"].iat[0] == "certified on the target with human labels"
    assert result.verdicts["statistic"].tolist() == ["certified_macro_f1", "n_human_labels"]


def test_verdict_certifies_once_the_interval_is_narrow_enough(tmp_path):
    path, items, truth = synthetic_target(tmp_path, seed=3)
    preds = read_predictions([str(path)], labelled=False)
    pool = pool_of(preds)
    wide = certification_sample(pool, items, "mh", 60, seed=0)
    narrow = certification_sample(pool, items, "mh", 1500, seed=0)
    results = [
        audit_certify(CertifyInputs(human_labels(s["item_id"], truth), s, d, preds), CertifyOptions("mh"))
        for s, d in (wide, narrow)
    ]
    assert results[0].verdicts["severity"].iat[0] == "warn" and "about" in results[0].verdicts["reason"].iat[0]
    assert results[1].verdicts["severity"].iat[0] == "pass"
    assert results[1].verdicts["reason"].iat[0].startswith("certified on the target with 1500 human labels")


def test_bad_inputs_say_one_thing(tmp_path):
    path, items, truth = synthetic_target(tmp_path)
    preds = read_predictions([str(path)], labelled=False)
    pool = pool_of(preds)
    with pytest.raises(InputError, match="larger than the pool"):
        certification_sample(pool, items, "mh", 3001)
    labelled = set(pool.ids[:2990])
    with pytest.raises(InputError, match="larger than the unlabelled set: 10 of the 3,000"):
        certification_sample(pool, items, "mh", 20, labelled=labelled)
    with pytest.raises(InputError, match="no text"):
        certification_sample(pool, items.iloc[5:], "mh", 50)
    with pytest.raises(InputError, match="cannot give each of the 2 strata 2 labels"):
        certification_sample(pool, items, "mh", 3)
    sample, design = certification_sample(pool, items, "mh", 100)
    outside = human_labels([pool.ids[i] for i in range(3000) if pool.ids[i] not in set(sample["item_id"])][:3], truth)
    with pytest.raises(InputError, match="3 items have human labels .* not in the sample"):
        audit_certify(
            CertifyInputs(pd.concat([human_labels(sample["item_id"], truth), outside]), sample, design, preds),
            CertifyOptions("mh"),
        )
    other_path, _, _ = synthetic_target(tmp_path, seed=9, name="roberta_bluesky.csv")
    with pytest.raises(InputError, match="drawn for other predictions"):
        CertifyInputs(
            human_labels(sample["item_id"], truth), sample, design, read_predictions([str(other_path)], labelled=False)
        )
    with pytest.raises(InputError, match="not a class"):
        audit_certify(
            CertifyInputs(human_labels(sample["item_id"], truth), sample, design, preds),
            CertifyOptions("mh", positive="stress"),
        )
    with pytest.raises(InputError, match="tolerance 0.7 must be strictly between 0 and 0.5"):
        CertifyOptions("mh", tolerance=0.7)
    with pytest.raises(InputError, match="population 'world' must be one of pool, platform"):
        CertifyOptions("mh", population="world")


def test_previously_labelled_items_leave_the_pool_and_are_ignored_by_the_report(tmp_path):
    path, items, truth = synthetic_target(tmp_path, seed=4)
    preds = read_predictions([str(path)], labelled=False)
    pool = pool_of(preds)
    earlier = set(pool.ids[:276])
    sample, design = certification_sample(pool, items, "mh", 120, labelled=earlier)
    assert len(design) == 3000 - 276 and not set(sample["item_id"]) & earlier
    labels = pd.concat([human_labels(sorted(earlier), truth), human_labels(sample["item_id"], truth)])
    result = audit_certify(CertifyInputs(labels, sample, design, preds), CertifyOptions("mh"))
    assert "276 human-labelled items outside the pool were ignored" in result.sections[0].text


def test_read_design_names_the_missing_file(tmp_path):
    with pytest.raises(InputError, match="no sampling design"):
        read_design(tmp_path / "sample.parquet")


def test_labels_needed_counts_the_finite_population_correction(tmp_path):
    """A pool of 655 posts, 100 labels: the verdict's 'about N labels' solves c·sqrt(1/n − 1/N) = 0.05, well under
    the uncorrected n (h / 0.05)²; the labels_needed table adds what a simple random sample would need."""
    from mhaudit.stats.sample_size import labels_for_tolerance

    path, items, truth = synthetic_target(tmp_path, n=655, seed=5)
    preds = read_predictions([str(path)], labelled=False)
    sample, design = certification_sample(pool_of(preds), items, "mh", 100, seed=0)
    result = audit_certify(
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, preds), CertifyOptions("mh")
    )
    needed = result.table("labels_needed").set_index("design")
    ours = needed.loc["this sample's design"].iloc[0]
    hw = ours["half_width"]
    assert ours["labels_needed"] == labels_for_tolerance(hw, 100, 655, 0.05)
    uncorrected = math.ceil(100 * (hw / 0.05) ** 2)
    assert hw > 0.05 and ours["labels_needed"] <= uncorrected - 20  # here 164 against 185
    assert f"about {ours['labels_needed']:.0f} labels in all for ± 0.05" in result.verdicts["reason"].iat[0]
    srs = needed.loc["simple random sample, labels only"]
    assert 100 < srs["labels_needed"] <= 655 and srs["reason"] == ""
    assert "a simple random sample of the pool, its labels alone, about" in result.sections[0].text
    platform = audit_certify(
        CertifyInputs(human_labels(sample["item_id"], truth), sample, design, preds),
        CertifyOptions("mh", population="platform"),
    ).table("labels_needed")
    assert not platform["fpc"].any()


def test_a_reference_to_calibrate_on_follows_the_one_reference_rule():
    """The pool's reference (tables.sample_design) is checked by tables.pairing's rule, in its words."""
    from mhaudit.synthetic.simulate_scores import simulate_scores
    from mhaudit.tables.predictions import PredictionSet

    reference = simulate_scores(300, [0.5, 0.5], platform="home", seed=0)
    target = simulate_scores(300, [0.5, 0.5], platform="away", seed=1, labelled=False)
    partly = reference.frame.assign(label=reference.frame["label"].where(reference.frame.index != 3))
    with pytest.raises(InputError, match="the reference predictions have 1 of its 300 rows without a label"):
        pool_of(target, PredictionSet(partly, reference.classes))
    with pytest.raises(InputError, match=r"have no row of class\(es\) c1; calibration needs every class"):
        pool_of(target, PredictionSet(reference.frame.assign(label="c0"), reference.classes))


def test_annotators_and_the_reference_may_be_named_by_a_short_name(tmp_path):
    """`ann1` names `human:ann1@sheet`, as in the agreement audit (tables.labeler_names): same numbers, full name."""
    path, items, truth = synthetic_target(tmp_path, n=600, seed=6)
    preds = read_predictions([str(path)], labelled=False)
    sample, design = certification_sample(pool_of(preds), items, "mh", 100, seed=0)
    labels = human_labels(sample["item_id"], truth).replace({"labeler": {"ann1": "human:ann1@sheet"}})
    full, short = (
        audit_certify(CertifyInputs(labels, sample, design, preds), CertifyOptions("mh", **named))
        for named in ({"reference": "human:ann1@sheet"}, {"reference": "ann1"})
    )
    assert short.table("certified").equals(full.table("certified"))
    assert short.options["reference"] == "human:ann1@sheet"
    by_annotators = audit_certify(
        CertifyInputs(labels, sample, design, preds), CertifyOptions("mh", annotators=("ann1", "ann2"))
    )
    assert by_annotators.options["annotators"] == ("human:ann1@sheet", "ann2")
    with pytest.raises(
        InputError,
        match=r"^reference labeler 'ann3' has no labels for task 'mh' "
        r"\(did you mean 'ann2'\?\); labelers: adj \(adjudicated\), ann2 \(human\), "
        r"human:ann1@sheet \(human\)$",
    ):
        audit_certify(CertifyInputs(labels, sample, design, preds), CertifyOptions("mh", reference="ann3"))
