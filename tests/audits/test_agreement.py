"""Weak-label validation: the stratified sample, the agreement report (incl. the Bluesky paper's Table 1),
the lexicon labeler, bad input, the `mhaudit labels` and `mhaudit audit agreement` commands end to end, and the
real-data check."""

import doctest
import json
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from mhaudit.audits.agreement import (
    AgreementInputs,
    AgreementOptions,
    audit_agreement,
    labels_from_corpus,
    read_validation_set,
    sample_for_validation,
    write_validation_set,
)
from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import COLUMNS, read_labels, write_labels
from mhaudit.weak_supervision.labelers.lexicon import lexicon_labels
from mhaudit.weak_supervision.lexicons import Lexicon
from tests.conftest import data_dir

runner = CliRunner()


def frame(rows):
    out = pd.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], columns=list(COLUMNS))
    out["value"] = out["value"].astype("Int64")
    return out


def lab(item, labeler, kind, value, task="si", tags=None):
    return {
        "item_id": str(item),
        "task": task,
        "labeler": labeler,
        "kind": kind,
        "value": value,
        "tags": json.dumps(tags) if tags else None,
        "created_at": "2026-01-01T00:00:00Z",
    }


def from_counts(tn, tp, fn, fp, task):
    """Label tables with these weak-vs-adjudicated counts (cells: reference, weak)."""
    cells = [(0, 0)] * tn + [(1, 1)] * tp + [(1, 0)] * fn + [(0, 1)] * fp
    rows = []
    for i, (ref, weak) in enumerate(cells):
        rows.append(lab(f"{task}{i}", "llm-weak", "llm", weak, task))
        rows.append(lab(f"{task}{i}", "consensus", "adjudicated", ref, task))
    return frame(rows)


# ------------------------------------------------------------------------- the paper's Table 1
@pytest.mark.parametrize(
    "task, counts, expected",
    [
        # counts from ../shared/papers/README.md (tn, tp, fn, fp); the paper's kappa, precision, recall
        ("si", (209, 36, 29, 2), {"kappa": 0.636, "precision": 0.947, "recall": 0.554}),
        ("mh", (97, 42, 1, 110), {"kappa": 0.222, "precision": 0.276, "recall": 0.977}),
    ],
)
def test_reproduces_bluesky_table_1(task, counts, expected):
    result = audit_agreement(
        AgreementInputs(from_counts(*counts, task)), AgreementOptions(task, weak_labeler="llm-weak", n_boot=500)
    )
    m = result.table("weak_vs_reference").set_index("metric")
    for metric, value in expected.items():
        assert round(m.loc[metric, "estimate"], 3) == value, metric
        assert m.loc[metric, "ci_low"] < m.loc[metric, "estimate"] < m.loc[metric, "ci_high"]
    tn, tp, fn, fp = counts
    confusion = result.table("confusion_matrix")
    assert confusion[["weak_0", "weak_1"]].to_numpy()[:2].tolist() == [[tn, fp], [fn, tp]]
    assert (m["n"] == sum(counts)).all()
    human = result.table("human_agreement")
    assert human["status"].tolist() == ["unavailable"]  # only adjudicated labels: no independent annotators
    if task == "mh":  # the paper's positive rates: weak labels 60.8% vs humans 17.2%
        rates = result.table("positive_rates").set_index("role")["positive_rate"]
        assert round(rates["weak labeler"], 3) == 0.608 and round(rates["reference"], 3) == 0.172


# ----------------------------------------------------------------------------- two annotators
def two_annotators():
    """40 items; annotators A and B disagree on items 0-5, of which 0-3 are adjudicated."""
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, 40)
    truth[:6] = [1, 0, 1, 0, 1, 1]
    a = truth.copy()
    b = truth.copy()
    b[:6] = 1 - b[:6]
    weak = truth.copy()
    weak[10:14] = 1 - weak[10:14]  # four weak errors on agreed items
    rows = []
    for i in range(40):
        tags_a = ["advocacy/awareness"] if weak[i] == 1 and truth[i] == 0 else None
        tags_b = ["indirect ideation", "missing context"] if weak[i] == 0 and truth[i] == 1 else None
        rows.append(lab(i, "A", "human", int(a[i]), tags=tags_a))
        rows.append(lab(i, "B", "human", int(b[i]), tags=tags_b))
        rows.append(lab(i, "llm-weak", "llm", int(weak[i])))
        if i < 4:
            rows.append(lab(i, "adjudicator", "adjudicated", int(truth[i]), tags=["sarcasm/humour"]))
    return frame(rows), truth, a, b, weak


def test_two_annotators_adjudication_and_error_sources():
    labels, truth, a, b, weak = two_annotators()
    result = audit_agreement(
        AgreementInputs(labels), AgreementOptions("si", weak_labeler="llm-weak", n_boot=400, seed=3)
    )
    figures = {section.title: sorted(section.figures) for section in result.sections if section.figures}
    assert figures == {
        "Human-human agreement (before adjudication)": ["Cohen's kappa with bootstrap CIs"],
        "Weak labeler against the reference": ["Confusion matrix", "Weak labeler against the reference"],
    }
    assert all(png[:4] == b"\x89PNG" for s in result.sections for png in s.figures.values())
    pair = result.table("human_agreement").iloc[0]
    assert (pair["annotator_a"], pair["annotator_b"], pair["n"]) == ("A", "B", 40)
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b))
    assert pair["observed_agreement"] == pytest.approx(34 / 40)
    assert pair["ci_low"] < pair["kappa"] < pair["ci_high"] and pair["status"] == "ok"
    comp = result.table("reference").set_index("source")["items"]
    assert comp["adjudicated (adjudicator)"] == 4
    assert comp["annotators agree (2 or more labels)"] == 34
    assert comp["annotators disagree, not adjudicated: left out"] == 2
    assert comp["items scored (reference and weak label)"] == 38
    keep = np.r_[0:4, 6:40]
    m = result.table("weak_vs_reference").set_index("metric")
    assert m.loc["kappa", "estimate"] == pytest.approx(cohen_kappa_score(truth[keep], weak[keep]))
    assert m.loc["observed_agreement", "estimate"] == pytest.approx(34 / 38)
    assert "left out of the reference" in result.summary
    errors = result.table("error_sources").set_index(["outcome", "tag"])["items"]
    n_fp = int(((weak[keep] == 1) & (truth[keep] == 0)).sum())
    n_fn = int(((weak[keep] == 0) & (truth[keep] == 1)).sum())
    assert errors[("false_positive", "advocacy/awareness")] == n_fp
    assert errors[("false_negative", "indirect ideation")] == errors[("false_negative", "missing context")] == n_fn
    assert errors[("correct", "sarcasm/humour")] == 4  # the adjudicator's tags count too
    rates = result.table("positive_rates").set_index("labeler")
    assert rates.loc["A", "positive_rate"] == pytest.approx(a[keep].mean())
    # Without any adjudication, disagreements are left out and counted.
    no_adj = labels[labels["kind"] != "adjudicated"]
    comp = audit_agreement(AgreementInputs(no_adj), AgreementOptions("si", n_boot=0)).table("reference")
    comp = comp.set_index("source")["items"]
    assert comp["annotators disagree, not adjudicated: left out"] == 6 and comp["adjudicated"] == 0
    # Consensus rows that record agreement (raw_answer 'agreed', as the annotation app writes them) are counted apart.
    agreed = frame(
        [{**lab(i, "adjudicator", "adjudicated", int(truth[i])), "raw_answer": "agreed"} for i in range(6, 10)]
    )
    comp = audit_agreement(
        AgreementInputs(pd.concat([labels, agreed], ignore_index=True)), AgreementOptions("si", n_boot=0)
    ).table("reference")
    comp = comp.set_index("source")["items"]
    assert comp["adjudicated (adjudicator)"] == 4 and comp["consensus recording agreement (adjudicator)"] == 4
    assert comp["annotators agree (2 or more labels)"] == 30
    # A named reference labeler replaces the rule.
    ref_a = audit_agreement(
        AgreementInputs(labels),
        AgreementOptions("si", weak_labeler="llm-weak", annotators=("B",), reference="A", n_boot=0),
    )
    m = ref_a.table("weak_vs_reference").set_index("metric")
    assert m.loc["kappa", "estimate"] == pytest.approx(cohen_kappa_score(a, weak))


def test_outdated_agreed_consensus_is_not_the_reference():
    """An 'agreed' consensus recorded while the annotators agreed no longer holds once one changes their label."""
    rows = []
    for i in range(10):
        rows += [
            lab(i, "llm", "llm", i % 2),
            lab(i, "alice", "human", i % 2),
            lab(i, "bob", "human", i % 2),
            {**lab(i, "consensus", "adjudicated", i % 2), "raw_answer": "agreed"},
        ]
    labels = frame(rows)
    labels.loc[(labels["item_id"] == "1") & (labels["labeler"] == "bob"), "value"] = 0  # now a disagreement
    labels.loc[labels["item_id"].isin(["2", "3"]) & (labels["kind"] == "human"), "value"] = 1  # 2: both changed
    result = audit_agreement(AgreementInputs(labels), AgreementOptions("si", n_boot=0))
    comp = result.table("reference").set_index("source")["items"]
    assert comp["annotators disagree, not adjudicated: left out"] == 1  # item 1, as the app lists it again
    assert comp["consensus recording agreement (consensus)"] == 8
    assert comp["outdated 'agreed' consensus (consensus): an annotator changed their label since; ignored"] == 2
    assert comp["annotators agree (2 or more labels)"] == 1  # item 2, by the annotators' current label
    assert comp["items scored (reference and weak label)"] == 9
    assert "1 items on which the annotators disagree" in result.summary
    confusion = result.table("confusion_matrix")
    assert confusion[["weak_0", "weak_1"]].to_numpy()[:2].tolist() == [[4, 0], [1, 4]]  # item 2: reference 1
    # An adjudicated consensus (raw_answer 'adjudicated') settles the disagreement whatever the annotators say.
    settled = labels.copy()
    settled.loc[(settled["item_id"] == "1") & (settled["labeler"] == "consensus"), "raw_answer"] = "adjudicated"
    comp = audit_agreement(AgreementInputs(settled), AgreementOptions("si", n_boot=0)).table("reference")
    comp = comp.set_index("source")["items"]
    assert comp["adjudicated (consensus)"] == 1 and comp["annotators disagree, not adjudicated: left out"] == 0


def test_tags_from_parquet_lists_count_as_error_sources(tmp_path):
    rows = [lab(i, "A", "human", 1) for i in range(4)] + [lab(i, "w", "llm", int(i < 2)) for i in range(4)]
    path = tmp_path / "labels.parquet"
    frame(rows).assign(tags=[["news", "hypothetical"], [], ["news"], None, None, None, None, None]).to_parquet(path)
    labels = read_labels(path)
    errors = audit_agreement(AgreementInputs(labels), AgreementOptions("si", n_boot=0)).table("error_sources")
    errors = errors.set_index(["outcome", "tag"])["items"]
    assert errors[("false_negative", "news")] == 1 and errors[("false_negative", "(no tag)")] == 1
    assert errors[("correct", "news")] == errors[("correct", "hypothetical")] == 1
    assert errors[("correct", "(no tag)")] == 1
    # One tag rule everywhere: ';' separates, a comma belongs to the tag.
    plain = frame(rows).assign(tags=["news; hypothetical", "sarcasm, humour", None, None, None, None, None, None])
    errors = audit_agreement(AgreementInputs(plain), AgreementOptions("si", n_boot=0)).table("error_sources")
    errors = errors.set_index(["outcome", "tag"])["items"]
    assert errors[("correct", "hypothetical")] == 1 and errors[("correct", "sarcasm, humour")] == 1


def test_three_annotators_report_krippendorff_alpha():
    krippendorff = pytest.importorskip("krippendorff")
    labels, *_ = two_annotators()
    extra = labels[labels["labeler"] == "A"].assign(labeler="C")
    extra.loc[extra.index[:5], "value"] = 1 - extra.loc[extra.index[:5], "value"]
    extra = extra.iloc[3:]  # C skipped three items: missing values
    labels = pd.concat([labels, extra], ignore_index=True)
    result = audit_agreement(AgreementInputs(labels), AgreementOptions("si", weak_labeler="llm-weak", n_boot=300))
    assert len(result.table("human_agreement")) == 3
    alpha = result.table("krippendorff_alpha").iloc[0]
    matrix = labels[labels["kind"] == "human"].pivot(index="item_id", columns="labeler", values="value")
    expected = krippendorff.alpha(
        reliability_data=matrix[["A", "B", "C"]].to_numpy(dtype=float).T, level_of_measurement="nominal"
    )
    assert alpha["alpha"] == pytest.approx(expected)
    assert alpha["ci_low"] < alpha["alpha"] < alpha["ci_high"] and alpha["n_items"] == 40


def test_no_overlap_is_an_error():
    rows = [lab(i, "A", "human", i % 2) for i in range(10)] + [lab(i, "B", "human", i % 2) for i in range(10, 20)]
    rows += [lab(i, "llm-weak", "llm", 1) for i in range(20)]
    with pytest.raises(InputError, match="annotators A and B have no labelled item in common"):
        audit_agreement(AgreementInputs(frame(rows)), AgreementOptions("si"))


def test_one_class_kappa_is_undefined_not_a_crash():
    rows = [lab(i, a, "human", 0) for i in range(12) for a in ("A", "B")]
    rows += [lab(i, "llm-weak", "llm", int(i < 3)) for i in range(12)]
    result = audit_agreement(AgreementInputs(frame(rows)), AgreementOptions("si", n_boot=200))
    pair = result.table("human_agreement").iloc[0]
    assert np.isnan(pair["kappa"]) and pair["status"] == "undefined" and "chance agreement is 1" in pair["reason"]
    assert pair["observed_agreement"] == 1.0
    m = result.table("weak_vs_reference").set_index("metric")
    assert np.isnan(m.loc["recall", "estimate"]) and "no positive item" in m.loc["recall", "reason"]
    assert "n/a (undefined" in result.summary
    md = result.table("weak_vs_reference").to_dict("records")  # renders without error
    assert md


def test_bad_report_inputs():
    labels, *_ = two_annotators()
    with pytest.raises(InputError, match="no labels for task 'mh'"):
        audit_agreement(AgreementInputs(labels), AgreementOptions("mh"))
    with pytest.raises(InputError, match="annotator 'Z' has no labels"):
        audit_agreement(AgreementInputs(labels), AgreementOptions("si", annotators=("A", "Z")))
    with pytest.raises(InputError, match="cannot be both"):
        audit_agreement(AgreementInputs(labels), AgreementOptions("si", annotators=("A", "llm-weak")))
    two_weak = pd.concat([labels, labels[labels["labeler"] == "llm-weak"].assign(labeler="other", kind="lexicon")])
    with pytest.raises(InputError, match="several weak labelers"):
        audit_agreement(AgreementInputs(two_weak), AgreementOptions("si"))


# ----------------------------------------------------------------------------------- sampling
def pool(n_pos=30, n_neg=70, task="si"):
    rows = [lab(f"p{i:03d}", "llm-weak", "llm", 1, task) for i in range(n_pos)]
    rows += [lab(f"n{i:03d}", "llm-weak", "llm", 0, task) for i in range(n_neg)]
    rows += [lab("x-invalid", "llm-weak", "llm", None, task)]
    items = pd.DataFrame({"id": [r["item_id"] for r in rows], "text": [f"post {r['item_id']}" for r in rows]})
    return frame(rows), items


def test_sample_sizes_proportional_share_and_explicit():
    labels, items = pool()
    s = sample_for_validation(labels, items, "si", 20, seed=0)
    assert s["stratum"].value_counts().to_dict() == {0: 14, 1: 6}  # the pool's 30% weak positives
    assert set(s.columns) >= {"item_id", "task", "text", "stratum", "sample_id"}
    assert s["item_id"].is_unique and "x-invalid" not in set(s["item_id"])
    assert (s["text"] == "post " + s["item_id"]).all()
    assert s.groupby("stratum")["weight"].first().to_dict() == {0: 70 / 14, 1: 30 / 6}
    assert s["item_id"].str[0].map({"p": 1, "n": 0}).tolist() == s["stratum"].tolist()
    half = sample_for_validation(labels, items, "si", 20, positive_share=0.5, seed=0)
    assert half["stratum"].value_counts().to_dict() == {0: 10, 1: 10}
    sized = sample_for_validation(labels, items, "si", sizes={0: 5, 1: 25}, seed=0)
    assert sized["stratum"].value_counts().to_dict() == {0: 5, 1: 25}
    # A rare class still gets an item by default.
    rare_labels, rare_items = pool(n_pos=1, n_neg=99)
    assert sample_for_validation(rare_labels, rare_items, "si", 10)["stratum"].sum() == 1
    # Rows are shuffled: the strata are not in blocks.
    assert not s["stratum"].is_monotonic_increasing and not s["stratum"].is_monotonic_decreasing


def test_sample_is_seeded_and_ignores_input_order():
    labels, items = pool()
    a = sample_for_validation(labels, items, "si", 20, seed=7)
    b = sample_for_validation(
        labels.sample(frac=1, random_state=3), items.sample(frac=1, random_state=4), "si", 20, seed=7
    )
    pd.testing.assert_frame_equal(a, b)
    c = sample_for_validation(labels, items, "si", 20, seed=8)
    assert set(c["item_id"]) != set(a["item_id"])


def test_sample_bad_input():
    labels, items = pool()
    with pytest.raises(InputError, match="a sample of 101 is larger than the pool: 100 items"):
        sample_for_validation(labels, items, "si", 101)
    with pytest.raises(InputError, match="asks for 40 weak positive items but the pool has only 30"):
        sample_for_validation(labels, items, "si", 80, positive_share=0.5)
    with pytest.raises(InputError, match="add up to 30, not n = 20"):
        sample_for_validation(labels, items, "si", 20, sizes={0: 5, 1: 25})
    with pytest.raises(InputError, match="both classes"):
        sample_for_validation(labels, items, "si", sizes={0: 5, 1: 0})
    one_class, one_items = pool(n_pos=0)
    with pytest.raises(InputError, match="the pool has no weak positive item"):
        sample_for_validation(one_class, one_items, "si", 10)
    with pytest.raises(InputError, match="has a text in the items table; are the ids the same"):
        sample_for_validation(labels, items.assign(id="other-" + items["id"]), "si", 10)


def test_validation_set_round_trip_and_weighted_report(tmp_path):
    """Over-sampled weak positives: the weighted estimates are the pool's, the naive ones are not."""
    # Pool: 100 weak positives (20 true) and 900 weak negatives (30 true positives missed).
    rows, texts = [], {}
    for i in range(1000):
        weak = int(i < 100)
        truth = int(i < 20) if weak else int(i < 130)
        rows += [lab(i, "llm-weak", "llm", weak), lab(i, "expert", "human", truth)]
        texts[str(i)] = f"text {i}"
    labels = frame(rows)
    items = pd.DataFrame({"id": list(texts), "text": list(texts.values())})
    s = sample_for_validation(labels, items, "si", 160, positive_share=0.5, seed=1)
    path = write_validation_set(s, tmp_path / "sample.csv")
    back = read_validation_set(path)
    assert back["item_id"].tolist() == s["item_id"].tolist()
    sampled = labels[labels["item_id"].isin(s["item_id"])]
    result = audit_agreement(AgreementInputs(sampled, validation_set=back), AgreementOptions("si", n_boot=500))
    naive = result.table("weak_vs_reference").set_index("metric")["estimate"]
    weighted = result.table("weak_vs_reference_weighted").set_index("metric")
    assert naive["weak_positive_rate"] == 0.5 and weighted.loc["weak_positive_rate", "estimate"] == pytest.approx(0.1)
    full = audit_agreement(AgreementInputs(labels), AgreementOptions("si", n_boot=0)).table("weak_vs_reference")
    full = full.set_index("metric")["estimate"]
    for metric in ("recall", "observed_agreement", "kappa", "reference_positive_rate"):
        row = weighted.loc[metric]
        assert row["ci_low"] <= full[metric] <= row["ci_high"], metric
    assert abs(naive["recall"] - full["recall"]) > 0.2  # unweighted recall is far off the pool's


def test_weights_follow_the_scored_items_of_each_stratum():
    """Sampled items that drop out of scoring must not shrink their stratum's share of the pool.

    Pool: 1000 weak positives, 1000 weak negatives, 100 + 100 sampled (design weight 10). The weak labeler is
    perfect; 50 weak-positive items are unresolved disagreements. The pool's weak positive rate is 0.5.
    """
    rows, design = [], []
    for stratum in (0, 1):
        for j in range(100):
            item = f"{stratum}-{j}"
            rows.append(lab(item, "llm", "llm", stratum))
            design.append({"item_id": item, "stratum": stratum, "pool_size": 1000, "sample_size": 100, "weight": 10.0})
            unresolved = stratum == 1 and j < 50
            bob = 1 - stratum if unresolved else stratum
            rows += [lab(item, "alice", "human", stratum), lab(item, "bob", "human", bob)]
    rows.append(lab("0-0", "llm", "llm", None))  # and one invalid weak label among the negatives
    labels = frame([r for r in rows if not (r["item_id"] == "0-0" and r["labeler"] == "llm" and r["value"] == 0)])
    result = audit_agreement(
        AgreementInputs(labels, validation_set=pd.DataFrame(design)), AgreementOptions("si", n_boot=200)
    )
    weighted = result.table("weak_vs_reference_weighted").set_index("metric")
    assert weighted.loc["weak_positive_rate", "estimate"] == pytest.approx(0.5)
    assert weighted.loc["reference_positive_rate", "estimate"] == pytest.approx(0.5)
    assert weighted.loc["kappa", "estimate"] == pytest.approx(1.0) and weighted["pool"].iloc[0] == pytest.approx(2000)
    strata = result.table("design_strata").set_index("stratum")
    columns = ["pool_size", "sampled", "scored", "dropped", "no_reference"]
    assert strata.loc[1, columns].tolist() == [1000, 100, 50, 50, 50]
    assert strata.loc[0, ["scored", "dropped", "no_valid_weak_label"]].tolist() == [99, 1, 1]
    assert strata.loc[1, "weight"] == pytest.approx(20) and strata.loc[0, "weight"] == pytest.approx(1000 / 99)
    assert strata.loc[1, "design_weight"] == 10
    text = next(s.text for s in result.sections if s.title.startswith("Design-weighted"))
    assert "51 of the 200 sampled items were not scored" in text


# ----------------------------------------------------------------------------- lexicon labels
def test_lexicon_labels_doctests():
    from mhaudit.weak_supervision.labelers import lexicon as module

    assert doctest.testmod(module).failed == 0


def test_invalid_and_missing_weak_labels_are_counted_and_left_out():
    rows = [lab(i, "expert", "human", i % 2) for i in range(10)]
    rows += [lab(i, "llm-weak", "llm", i % 2) for i in range(6)] + [lab(6, "llm-weak", "llm", None)]
    result = audit_agreement(AgreementInputs(frame(rows)), AgreementOptions("si", n_boot=0))
    comp = result.table("reference").set_index("source")["items"]
    assert comp["reference items without a label from llm-weak: left out"] == 3
    assert comp["reference items with an invalid label from llm-weak: left out"] == 1
    assert comp["items scored (reference and weak label)"] == 6
    assert result.table("weak_vs_reference").set_index("metric").loc["kappa", "estimate"] == 1.0


def test_lexicon_labels_and_corpus_labels():
    lex = Lexicon.load("mh")
    items = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "text": ["my depression is back", "a diet for summer", "Panic attacks again", "  "],
        }
    )
    out = lexicon_labels(items, lex, "mh")
    assert out["value"].tolist()[:3] == [1, 0, 1] and pd.isna(out["value"].iloc[3])
    assert (out["labeler"] == f"lexicon:mh@{lex.sha256[:12]}").all() and (out["kind"] == "lexicon").all()
    assert json.loads(out["raw_answer"].iloc[2]) == ["panic attacks"]
    with pytest.raises(InputError, match="appears twice"):
        lexicon_labels(pd.concat([items, items]), lex, "mh")
    with pytest.raises(InputError, match="'text' column"):
        lexicon_labels(items.rename(columns={"text": "body"}), lex, "mh")
    corpus = pd.DataFrame({"id": ["a", "b"], "label": ["depression", "no_depression"]})
    ref = labels_from_corpus(corpus, "mh", "experts", classes=["no_depression", "depression"])
    assert ref["value"].tolist() == [1, 0] and (ref["kind"] == "human").all()
    with pytest.raises(InputError, match="not a class"):
        labels_from_corpus(corpus, "mh", "experts", positive="anxiety")


# ------------------------------------------------------------------------------------- the CLI
def write_corpus(tmp_path):
    from mhaudit.tables.corpus.schema import Corpus

    texts = [
        "my depression is back",
        "I feel empty and worthless",
        "great match today",
        "new diet plan",
        "anxiety all week",
        "read this article about depression",
        "lovely weather",
        "cant sleep again",
        "lunch was fine",
        "so tired of everything",
    ] * 3
    labels = [
        "depression",
        "depression",
        "no_depression",
        "no_depression",
        "depression",
        "no_depression",
        "no_depression",
        "depression",
        "no_depression",
        "depression",
    ] * 3
    frame_ = pd.DataFrame(
        {
            "id": [f"t{i}" for i in range(30)],
            "text": texts,
            "label": labels,
            "platform": "bluesky",
            "dataset": "toy",
            "split": "test",
        }
    )
    path = tmp_path / "corpus.parquet"
    Corpus.build(frame_, ["no_depression", "depression"], meta={"synthetic": False}).write(path)
    return path


def test_cli_end_to_end(tmp_path):
    corpus = write_corpus(tmp_path)
    labels = tmp_path / "labels.parquet"
    r = runner.invoke(app, ["labels", "lexicon", "--items", str(corpus), "--task", "mh", "--labels", str(labels)])
    assert r.exit_code == 0, r.output
    assert "lexicon:mh@" in r.output
    r = runner.invoke(
        app,
        [
            "labels",
            "from-corpus",
            "--corpus",
            str(corpus),
            "--task",
            "mh",
            "--labeler",
            "experts",
            "--labels",
            str(labels),
        ],
    )
    assert r.exit_code == 0, r.output
    sample = tmp_path / "sample.parquet"
    r = runner.invoke(
        app,
        [
            "labels",
            "sample",
            "--labels",
            str(labels),
            "--items",
            str(corpus),
            "--task",
            "mh",
            "--n",
            "12",
            "--sizes",
            "0=6,1=6",
            "--seed",
            "3",
            "--out",
            str(sample),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "keep it from the annotators" in r.output
    drawn = pd.read_parquet(sample)
    assert len(drawn) == 12 and drawn["stratum"].sum() == 6
    # Two annotators label the sample elsewhere and bring a CSV sheet.
    sheet = []
    for i, item in enumerate(drawn["item_id"]):
        truth = int(pd.read_parquet(labels).set_index(["labeler", "item_id"]).loc[("experts", item), "value"])
        sheet += [
            lab(item, "ann1", "human", truth, "mh"),
            lab(item, "ann2", "human", truth if i % 4 else 1 - truth, "mh"),
        ]
        if i % 4 == 0:
            sheet.append(lab(item, "adj", "adjudicated", truth, "mh"))
    sheet_path = tmp_path / "sheet.csv"
    write_labels(frame(sheet), sheet_path)
    weak = [n for n in pd.read_parquet(labels)["labeler"].unique() if n.startswith("lexicon:")][0]
    out_dir = tmp_path / "report"
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(labels),
            "--labels",
            str(sheet_path),
            "--task",
            "mh",
            "--weak-labeler",
            weak,
            "--annotator",
            "ann1",
            "--annotator",
            "ann2",
            "--sample",
            str(sample),
            "--n-boot",
            "200",
            "--out",
            str(out_dir),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "Human-human agreement" in r.output and "Design-weighted" in r.output
    report = json.loads((out_dir / "report.json").read_text())
    tables = {name: t for s in report["sections"] for name, t in s["tables"].items()}
    assert tables["human_agreement"][0]["n"] == 12
    assert tables["human_agreement"][0]["observed_agreement"] == pytest.approx(9 / 12)
    assert {row["source"]: row["items"] for row in tables["reference"]}["adjudicated (adj)"] == 3
    assert (out_dir / "report.html").exists() and (out_dir / "report.md").exists()


def test_cli_bad_sheet_label_outside_0_1(tmp_path):
    labels, *_ = two_annotators()
    path = tmp_path / "sheet.csv"
    write_labels(labels, path)
    text = path.read_text().splitlines()
    bad = text[1].split(",")
    value_col = text[0].split(",").index("value")
    bad[value_col] = "2"
    path.write_text("\n".join([text[0], ",".join(bad), *text[2:]]) + "\n")
    r = runner.invoke(app, ["audit", "agreement", "--labels", str(path), "--task", "si", "--out", str(tmp_path / "r")])
    assert r.exit_code == 2
    assert "row 1: label value" in r.stderr and "is not 0, 1 or empty" in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "r").exists()


def test_cli_other_bad_input(tmp_path):
    labels, items = pool()
    lpath, ipath = tmp_path / "l.parquet", tmp_path / "items.csv"
    write_labels(labels, lpath)
    items.to_csv(ipath, index=False)
    out = tmp_path / "s.parquet"
    r = runner.invoke(
        app,
        [
            "labels",
            "sample",
            "--labels",
            str(lpath),
            "--items",
            str(ipath),
            "--task",
            "si",
            "--n",
            "500",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 2 and "larger than the pool" in r.stderr and not out.exists()
    r = runner.invoke(
        app,
        [
            "labels",
            "sample",
            "--labels",
            str(lpath),
            "--items",
            str(ipath),
            "--task",
            "si",
            "--sizes",
            "zero=3",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 2 and "--sizes" in r.stderr
    no_overlap = frame(
        [lab(i, "A", "human", i % 2) for i in range(4)]
        + [lab(i, "B", "human", 1) for i in range(4, 8)]
        + [lab(i, "w", "llm", 1) for i in range(8)]
    )
    write_labels(no_overlap, lpath)
    r = runner.invoke(app, ["audit", "agreement", "--labels", str(lpath), "--task", "si", "--out", str(tmp_path / "r")])
    assert r.exit_code == 2 and "no labelled item in common" in r.stderr


# ------------------------------------------------------------------------------------ real data
def test_real_data_bluesky_depression_lexicon_vs_experts(tmp_path):
    """The Bluesky depression set's expert labels as the reference, the MH lexicon as the weak labeler."""
    folder = data_dir("bluesky_depression")
    start = time.perf_counter()
    corpus = tmp_path / "corpus.parquet"
    labels = tmp_path / "labels.parquet"
    for args in (
        ["data", "import", "bluesky_depression", str(folder / "bluesky-depression-dataset.csv"), "--out", str(corpus)],
        ["labels", "lexicon", "--items", str(corpus), "--lexicon", "mh", "--task", "mh", "--labels", str(labels)],
        [
            "labels",
            "from-corpus",
            "--corpus",
            str(corpus),
            "--task",
            "mh",
            "--labeler",
            "experts",
            "--labels",
            str(labels),
        ],
        ["audit", "agreement", "--labels", str(labels), "--task", "mh", "--out", str(tmp_path / "report")],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    tables = {name: t for s in report["sections"] for name, t in s["tables"].items()}
    lex = Lexicon.load("mh")
    # The lexicon was fixed before scoring: its hash is part of the labeler name (docs/validation.md).
    assert lex.sha256.startswith("ee7f3c894ccc"), "mh.toml changed: rerun the real-data check and update the docs"
    assert report["options"]["weak_labeler"] == "lexicon:mh@ee7f3c894ccc"
    confusion = {row["reference"]: row for row in tables["confusion_matrix"]}
    assert [confusion["0 (negative)"]["weak_0"], confusion["0 (negative)"]["weak_1"]] == [3428, 626]
    assert [confusion["1 (positive)"]["weak_0"], confusion["1 (positive)"]["weak_1"]] == [378, 136]
    m = {row["metric"]: row for row in tables["weak_vs_reference"]}
    expected = {
        "observed_agreement": 0.780,
        "kappa": 0.091,
        "precision": 0.178,
        "recall": 0.265,
        "f1": 0.213,
        "macro_f1": 0.543,
        "weak_positive_rate": 0.167,
        "reference_positive_rate": 0.113,
    }
    for metric, value in expected.items():
        assert round(m[metric]["estimate"], 3) == value, metric
    assert m["kappa"]["ci_low"] == pytest.approx(0.059, abs=0.002)
    assert m["kappa"]["ci_high"] == pytest.approx(0.124, abs=0.002)
    assert tables["human_agreement"][0]["status"] == "unavailable"
    assert "one human label source only ('experts')" in tables["human_agreement"][0]["reason"]
    # The sampling step on real data: 250 items, half from the lexicon's positives, labelled by the experts.
    sample = tmp_path / "sample.parquet"
    r = runner.invoke(
        app,
        [
            "labels",
            "sample",
            "--labels",
            str(labels),
            "--items",
            str(corpus),
            "--task",
            "mh",
            "--weak",
            "mh",
            "--n",
            "250",
            "--positive-share",
            "0.5",
            "--seed",
            "0",
            "--out",
            str(sample),
        ],
    )
    assert r.exit_code == 0, r.output
    drawn = pd.read_parquet(sample)
    assert drawn.groupby("stratum")["pool_size"].first().to_dict() == {0: 3806, 1: 762}
    all_labels = pd.read_parquet(labels)
    write_labels(all_labels[all_labels["item_id"].isin(drawn["item_id"])], tmp_path / "sampled.parquet")
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(tmp_path / "sampled.parquet"),
            "--task",
            "mh",
            "--weak-labeler",
            "mh",
            "--sample",
            str(sample),
            "--out",
            str(tmp_path / "sample_report"),
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "sample_report" / "report.json").read_text())
    assert (
        report["options"]["weak_labeler"] == "lexicon:mh@ee7f3c894ccc"
        and drawn["weak_labeler"].eq("lexicon:mh@ee7f3c894ccc").all()
    )  # `mh` names the lexicon labeler, and the report says its full name
    tables = {name: t for s in report["sections"] for name, t in s["tables"].items()}
    naive = {row["metric"]: row for row in tables["weak_vs_reference"]}
    weighted = {row["metric"]: row for row in tables["weak_vs_reference_weighted"]}
    assert round(naive["recall"]["estimate"], 3) == 0.568 and round(weighted["recall"]["estimate"], 3) == 0.208
    assert round(weighted["observed_agreement"]["estimate"], 3) == 0.755
    for metric in ("recall", "precision", "observed_agreement", "kappa", "reference_positive_rate"):
        assert weighted[metric]["ci_low"] <= m[metric]["estimate"] <= weighted[metric]["ci_high"], metric
    assert not naive["recall"]["ci_low"] <= m["recall"]["estimate"] <= naive["recall"]["ci_high"]
    # The experts' labels entered twice under two names (the same file given twice): kappa 1, and a warning.
    copy = tmp_path / "experts-copy.parquet"
    r = runner.invoke(
        app,
        [
            "labels",
            "from-corpus",
            "--corpus",
            str(corpus),
            "--task",
            "mh",
            "--labeler",
            "experts-copy",
            "--labels",
            str(copy),
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(labels),
            str(copy),
            "--task",
            "mh",
            "--n-boot",
            "200",
            "--out",
            str(tmp_path / "copied"),
        ],
    )
    assert r.exit_code == 0, r.output
    copied = json.loads((tmp_path / "copied" / "report.json").read_text())
    pair = {name: t for s in copied["sections"] for name, t in s["tables"].items()}["human_agreement"][0]
    assert pair["kappa"] == 1.0 and pair["n"] == 4568 and "identical on all 4,568 shared items" in pair["reason"]
    assert any("'experts' and 'experts-copy'" in note for note in copied["notes"])
    assert time.perf_counter() - start < 60


def test_cli_scores_a_models_labels_against_the_reference(tmp_path):
    """`audit agreement --model NAME`: a classifier's predicted labels (kind model, a label file) scored like the
    weak labeler; the store keeps only what labelers write."""
    from mhaudit.synthetic.simulate_labels import LabelsConfig, labels_rows, simulate_labels
    from mhaudit.tables.label_store import LabelStore

    labels = simulate_labels(LabelsConfig(n_items=120))
    truth = labels[labels["labeler"] == "annotator-2"]
    model = labels_rows(truth["item_id"].to_numpy(), {"bert": ("model", truth["value"].to_numpy(int))}, "si")
    path = tmp_path / "labels.csv"
    write_labels(pd.concat([labels, model], ignore_index=True), path)
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(path),
            "--task",
            "si",
            "--model",
            "bert",
            "--n-boot",
            "200",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    scored = pd.DataFrame(
        next(s["tables"]["models_vs_reference"] for s in report["sections"] if "models_vs_reference" in s["tables"])
    ).set_index("metric")
    assert scored.loc["kappa", "labeler"] == "bert" and scored.loc["kappa", "n"] == 120
    assert [v["axis"] for v in report["verdicts"] if v["subject"] == "bert"] == ["human validation"]
    with LabelStore(tmp_path / "store.sqlite") as store:
        with pytest.raises(InputError, match="kept in label files, not in the store"):
            store.add(model.to_dict("records")[:1])


# ----------------------------------------------------------------- bootstraps clustered by author
def _authored_labels(ids):
    """Weak and adjudicated labels of 10 posts per author (synthetic): every third author is hard to read,
    and the weak labeler gets 40% of their posts wrong, against 2% for the others."""
    rng = np.random.default_rng(11)
    rows = []
    for i, item in enumerate(ids):
        ref = int(rng.uniform() < 0.5)
        wrong = 0.40 if (i // 10) % 3 == 0 else 0.02
        rows += [
            lab(item, "llm-weak", "llm", 1 - ref if rng.uniform() < wrong else ref),
            lab(item, "consensus", "adjudicated", ref),
        ]
    return frame(rows)


def test_post_store_ids_cluster_the_bootstrap_by_author():
    uris = [f"at://author{i // 10}/app.bsky.feed.post/{i}" for i in range(120)]
    options = AgreementOptions("si", weak_labeler="llm-weak", n_boot=1000)
    clustered = audit_agreement(AgreementInputs(_authored_labels(uris)), options)
    plain = audit_agreement(AgreementInputs(_authored_labels([f"post{i}" for i in range(120)])), options)
    assert clustered.options["bootstrap_unit"] == "author-clustered bootstrap (12 authors, 120 items)"
    assert plain.options["bootstrap_unit"] == "item-bootstrap"
    assert "author-clustered bootstrap" in clustered.sections[2].text
    k_c = clustered.table("weak_vs_reference").set_index("metric").loc["kappa"]
    k_p = plain.table("weak_vs_reference").set_index("metric").loc["kappa"]
    assert k_c["estimate"] == k_p["estimate"] and k_c["se"] > 1.3 * k_p["se"]  # same labels, wider CI


def test_cli_items_with_authors_and_the_sample_keeps_them(tmp_path):
    ids = [f"post{i}" for i in range(120)]
    labels = tmp_path / "labels.parquet"
    write_labels(_authored_labels(ids), labels)
    items = tmp_path / "items.csv"
    pd.DataFrame(
        {"id": ids, "text": [f"text {i}" for i in range(120)], "author": [f"a{i // 10}" for i in range(120)]}
    ).to_csv(items, index=False)
    out_dir = tmp_path / "report"
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(labels),
            "--task",
            "si",
            "--weak-labeler",
            "llm-weak",
            "--items",
            str(items),
            "--n-boot",
            "200",
            "--out",
            str(out_dir),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "bootstrap: author-clustered bootstrap (12 authors, 120 items)" in r.output
    assert json.loads((out_dir / "report.json").read_text())["options"]["bootstrap_unit"].startswith("author-clustered")
    sample = tmp_path / "sample.csv"
    r = runner.invoke(
        app,
        [
            "labels",
            "sample",
            "--labels",
            str(labels),
            "--items",
            str(items),
            "--task",
            "si",
            "--weak",
            "llm-weak",
            "--n",
            "30",
            "--out",
            str(sample),
        ],
    )
    assert r.exit_code == 0, r.output
    drawn = pd.read_csv(sample)
    assert list(drawn.columns[:5]) == ["sample_id", "item_id", "task", "text", "author"]
    assert (drawn["author"] == drawn["item_id"].str[4:].astype(int).floordiv(10).map("a{}".format)).all()
    no_author = tmp_path / "no_author.csv"
    pd.DataFrame({"id": ids, "text": ids}).to_csv(no_author, index=False)
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(labels),
            "--task",
            "si",
            "--weak-labeler",
            "llm-weak",
            "--items",
            str(no_author),
            "--out",
            str(tmp_path / "r2"),
        ],
    )
    assert r.exit_code == 2 and "an 'author' column" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "r2").exists()


# ----------------------------------------------------------------------------------- labeler names
def test_a_labeler_is_named_by_its_short_name_where_that_names_one():
    """`mh` and `lexicon:mh` name `lexicon:mh@ee7f3c894ccc` (weak labeler, annotators, reference, models); the
    numbers and the report's names are those of the full name; none or several is one sentence."""
    labels, *_ = two_annotators()
    full = "lexicon:mh@ee7f3c894ccc"
    labels = labels.assign(
        labeler=labels["labeler"].replace({"llm-weak": full, "A": "human:anna@sheet1"}),
        kind=labels["kind"].replace({"llm": "lexicon"}),
    )
    model = labels[labels["labeler"] == full].assign(labeler="model:tfidf-lr@1", kind="model")
    labels = pd.concat([labels, model], ignore_index=True)
    named = {"full": AgreementOptions("si", weak_labeler=full, models=("model:tfidf-lr@1",), n_boot=50)}
    named["mh"] = AgreementOptions("si", weak_labeler="mh", models=("tfidf-lr",), n_boot=50)
    named["lexicon:mh"] = AgreementOptions(
        "si", weak_labeler="lexicon:mh", models=("model:tfidf-lr",), annotators=("anna", "B"), n_boot=50
    )
    results = {name: audit_agreement(AgreementInputs(labels), options) for name, options in named.items()}
    for result in results.values():
        assert result.options["weak_labeler"] == full and result.options["models"] == ("model:tfidf-lr@1",)
        assert result.title.endswith(f"weak labeler {full}") and result.verdicts["subject"].iat[0] == full
        assert result.table("weak_vs_reference").equals(results["full"].table("weak_vs_reference"))
        assert result.table("models_vs_reference").equals(results["full"].table("models_vs_reference"))
    assert results["lexicon:mh"].options["annotators"] == ["human:anna@sheet1", "B"]
    ref = audit_agreement(
        AgreementInputs(labels),
        AgreementOptions("si", weak_labeler="mh", annotators=("B",), reference="human:anna", n_boot=0),
    )
    assert ref.options["reference"] == "human:anna@sheet1" and "the labels of 'human:anna@sheet1'" in ref.summary
    twice = pd.concat([labels, labels[labels["labeler"] == full].assign(labeler="lexicon:mh@0123456789ab")])
    with pytest.raises(
        InputError,
        match=r"^weak labeler 'mh' names several labelers for task 'si' "
        r"\(lexicon:mh@0123456789ab, lexicon:mh@ee7f3c894ccc\); give its full name$",
    ):
        audit_agreement(AgreementInputs(twice), AgreementOptions("si", weak_labeler="mh"))
    with pytest.raises(
        InputError,
        match=r"^weak labeler 'mhh' has no labels for task 'si' \(did you mean 'mh'\?\); "
        r"labelers: B \(human\), adjudicator \(adjudicated\), human:anna@sheet1 "
        r"\(human\), lexicon:mh@ee7f3c894ccc \(lexicon\), "
        r"model:tfidf-lr@1 \(model\)$",
    ):
        audit_agreement(AgreementInputs(labels), AgreementOptions("si", weak_labeler="mhh"))
    with pytest.raises(InputError, match="^annotator 'Z' has no labels for task 'si'; labelers: B"):
        audit_agreement(AgreementInputs(labels), AgreementOptions("si", annotators=("anna", "Z")))


def test_identical_annotators_get_a_warning_and_a_note_beside_their_kappa(tmp_path):
    """B's labels copied from A: kappa 1.000 with a warning, a note in the pairs table, the summary and the
    verdict; through the CLI the warning is printed and listed in the report's notes."""
    labels, truth, a, _, _ = two_annotators()
    copied = labels.copy()
    copied.loc[copied["labeler"] == "B", "value"] = a
    with pytest.warns(
        UserWarning,
        match=r"annotators 'A' and 'B': the two label sets are identical on all 40 shared "
        r"items, often the same file given twice or one annotator copied; their kappa "
        r"says nothing about human agreement",
    ):
        result = audit_agreement(AgreementInputs(copied), AgreementOptions("si", n_boot=200))
    pair = result.table("human_agreement").iloc[0]
    assert pair["kappa"] == 1.0 and pair["status"] == "ok"
    assert pair["reason"] == (
        "the two label sets are identical on all 40 shared items, often the same file given "
        "twice or one annotator copied"
    )
    assert f"Cohen's kappa 1.000 [95% CI 1.000, 1.000] ({pair['reason']})." in result.summary
    verdict = result.verdicts[result.verdicts["axis"] == "human agreement"].iloc[0]
    assert verdict["severity"] == "pass" and verdict["reason"] == pair["reason"]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two annotators who disagree somewhere: no warning
        assert (
            audit_agreement(AgreementInputs(labels), AgreementOptions("si", n_boot=0))
            .table("human_agreement")["reason"]
            .iat[0]
            == ""
        )
    path = tmp_path / "labels.parquet"
    write_labels(copied, path)
    r = runner.invoke(
        app,
        [
            "audit",
            "agreement",
            "--labels",
            str(path),
            "--task",
            "si",
            "--n-boot",
            "50",
            "--out",
            str(tmp_path / "report"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "identical on all 40 shared items" in " ".join(r.output.split())
    notes = json.loads((tmp_path / "report" / "report.json").read_text())["notes"]
    assert any("annotators 'A' and 'B': the two label sets are identical on all 40" in note for note in notes)
