"""`mhaudit audit agreement --combined NAME` on real weak labelers of 400 Bluesky depression posts (the three
lexicons, a keyword rule, a TF-IDF + LR trained on Depression Reddit; the data set's experts as the human reference:
tests/weak_supervision/combine_sources.py), all through the command line: the combined labeler, each source and
their majority vote against the experts (kappa, precision and recall equal to scikit-learn's on the same labels, the
majority equal to a brute-force count), the sources' accuracy as `labels combine` estimated it beside the measured
one, the design-weighted rows on a stratified sample, the verdict in the trust report's scorecard, a changed source
noted, and a labeler of another kind refused in one sentence."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, precision_score, recall_score
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

from mhaudit.audits.agreement.combined import majority_labels
from mhaudit.cli import app
from mhaudit.tables.label_store import labels_frame, read_label_files, write_labels
from mhaudit.weak_supervision.combine import Source, source_votes
from tests.cli_checks import assert_one_sentence_failure
from tests.weak_supervision.combine_sources import ITEMS, LEXICONS, build_sources

runner = CliRunner()
NAMES = [*LEXICONS.values(), "keywords", "tfidf-lr"]
SOURCES = [arg for name in ["si", "mh", "wide", "keywords", "tfidf-lr"] for arg in ("--labeler", name)]
COMBINED = "combined-dawid-skene"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The sources, a label store with the combined labeler in it (default reading: a lexicon's 0 is no vote), the
    estimates file and the printed output of labels combine."""
    folder = tmp_path_factory.mktemp("agreement-combined")
    sources = build_sources(folder)
    estimates = folder / "estimates.csv"
    args = ["labels", "combine", "--labels", *sources.files, "--task", "mh", *SOURCES, "--into", str(sources.store)]
    result = runner.invoke(app, [*args, "--estimates", str(estimates)])
    assert result.exit_code == 0, result.output
    return sources, pd.read_csv(estimates), " ".join(result.output.split())


def _audit(files, out, *args):
    command = ["audit", "agreement", "--labels", *map(str, files), "--task", "mh", "--n-boot", "200"]
    return runner.invoke(app, [*command, *args, "--out", str(out)])


def _report(folder):
    doc = json.loads((folder / "report.json").read_text())
    tables = {name: pd.DataFrame(t) for s in doc["sections"] for name, t in s["tables"].items()}
    return doc, tables


def _expected_labels(sources) -> dict[str, pd.Series]:
    """Each labeler's vote per item, counted here in pandas, NaN where it abstains (a lexicon's 0, no row, a null;
    the report reads NaN as 0): each source's value; the majority of the votes (a lexicon votes only 1, the others
    1 or 0), NaN at a tie; the combined labeler's stored value."""
    labels = read_label_files(sources.files)
    wide = labels.pivot(index="item_id", columns="labeler", values="value").astype(float).reindex(sources.items["id"])
    said = {name: wide[name].where(wide[name] == 1) if name in LEXICONS.values() else wide[name] for name in NAMES}
    ones = sum((wide[name] == 1).astype(int) for name in NAMES)
    zeros = sum((wide[name] == 0).astype(int) for name in ["keywords", "tfidf-lr"])
    majority = pd.Series(np.where(ones > zeros, 1.0, np.where(zeros > ones, 0.0, np.nan)), index=wide.index)
    return said | {"majority-vote(5 sources)": majority, COMBINED: wide[COMBINED].astype(float)}


def test_side_by_side_against_scikit_learn_and_labels_combine(made, tmp_path):
    sources, estimates, printed = made
    result = _audit(sources.files, tmp_path / "report", "--combined", "combined-dawid-skene")
    assert result.exit_code == 0, result.output
    doc, tables = _report(tmp_path / "report")
    experts = (sources.items.set_index("id")["label"] == "depression").astype(int)
    table = tables["combined_vs_reference"].set_index("labeler")
    expected = _expected_labels(sources)
    assert list(table.index) == list(expected)
    assert (
        list(table["role"])[:2] == ["lexicon (0 = no vote)"] * 2 and table.at["tfidf-lr", "role"] == "model (0 = vote)"
    )
    for name, label in expected.items():  # every labeler on all 400 items, an abstention read as 0
        said = label.fillna(0).astype(int).reindex(experts.index)
        row = table.loc[name]
        assert row["kappa"] == pytest.approx(cohen_kappa_score(experts, said), abs=1e-12)
        assert row["precision"] == pytest.approx(precision_score(experts, said), abs=1e-12)
        assert row["recall"] == pytest.approx(recall_score(experts, said), abs=1e-12)
        assert row["kappa_lo"] < row["kappa"] < row["kappa_hi"]
    assert table["coverage"].round(12).tolist() == [
        124 / ITEMS,
        113 / ITEMS,
        302 / ITEMS,
        60 / ITEMS,
        1,
        348 / ITEMS,
        1,
    ]
    # the majority vote: stats.label_model.majority_vote of the vote matrix labels combine builds, = the count
    rows = read_label_files(sources.files)
    rows = rows[rows["task"] == "mh"]
    votes = source_votes(
        rows, tuple(Source(n, k, k != "lexicon") for n, k in zip(NAMES, ["lexicon"] * 3 + ["llm", "model"]))
    )
    pd.testing.assert_series_equal(
        majority_labels(votes).astype(float),
        expected["majority-vote(5 sources)"].reindex(votes.index),
        check_names=False,
    )
    # the combined labeler is the weak labeler: one labeler, one set of numbers
    weak = tables["weak_vs_reference"].set_index("metric")
    for metric in ("kappa", "precision", "recall"):
        assert table.at[COMBINED, metric] == weak.at[metric, "estimate"]
        assert table.at[COMBINED, f"{metric}_lo"] == weak.at[metric, "ci_low"]
    # estimated accuracies: exactly what labels combine wrote and printed
    accuracy = tables["source_accuracy"].set_index("source")
    assert list(accuracy.index) == NAMES
    assert np.allclose(accuracy["estimated"], estimates.set_index("labeler").loc[NAMES, "accuracy"], rtol=0, atol=1e-12)
    assert all(
        f"labeler: {n} " in printed and f"accuracy: {a:.3f}" in printed for n, a in accuracy["estimated"].items()
    )
    # measured accuracies: the share of each source's votes the experts confirm, Wilson intervals
    labels = rows.pivot(index="item_id", columns="labeler", values="value").astype(float)
    for name in NAMES:
        voted = labels[name].dropna()
        voted = voted[voted == 1] if name in LEXICONS.values() else voted
        right = int((voted.astype(int) == experts.reindex(voted.index)).sum())
        low, high = proportion_confint(right, len(voted), alpha=0.05, method="wilson")
        assert accuracy.at[name, "votes_on_reference"] == len(voted)
        assert accuracy.at[name, "measured"] == pytest.approx(right / len(voted), abs=1e-12)
        assert (accuracy.at[name, "measured_lo"], accuracy.at[name, "measured_hi"]) == pytest.approx((low, high))
    assert accuracy.at[LEXICONS["mh"], "measured"] == pytest.approx(table.at[LEXICONS["mh"], "precision"], abs=1e-12)
    verdicts = pd.DataFrame(doc["verdicts"])
    mine = verdicts[verdicts["subject"] == COMBINED]
    assert mine[["axis", "severity"]].values.tolist() == [["weak labels", "fail"]]  # kappa 0.107 < 0.41
    assert mine["value"].iat[0] == table.at[COMBINED, "kappa"]
    assert "Combined labeler 'combined-dawid-skene' (dawid-skene of 5 sources" in doc["summary"]
    assert doc["notes"] == []


def test_another_weak_labeler_and_the_trust_report(made, tmp_path):
    sources, _, _ = made
    args = ["--weak-labeler", "keywords", "--combined", "combined-dawid-skene"]
    assert _audit(sources.files, tmp_path / "validation", *args).exit_code == 0
    doc, tables = _report(tmp_path / "validation")
    weak_labels = pd.DataFrame(doc["verdicts"]).query("axis == 'weak labels'").set_index("subject")
    assert list(weak_labels.index) == ["keywords", COMBINED]
    kappa = tables["combined_vs_reference"].set_index("labeler").at[COMBINED, "kappa"]
    assert weak_labels.at[COMBINED, "value"] == kappa
    assert weak_labels.at[COMBINED, "reason"] == f"kappa {kappa:.3f}, an abstention read as 0 (combined_vs_reference)"
    result = runner.invoke(app, ["report", "combine", str(tmp_path / "validation"), "--out", str(tmp_path / "trust")])
    assert result.exit_code == 0, result.output
    trust = json.loads((tmp_path / "trust" / "report.json").read_text())
    card = {row["subject"]: row for row in trust["scorecard"]}
    assert card[COMBINED]["weak labels"].startswith(f"fail: cohen_kappa {kappa:.3f} [")
    assert (
        "Source accuracy: estimated without labels vs measured on the human sample"
        in (tmp_path / "trust" / "report.html").read_text()
    )


def test_design_weighted_rows_on_a_stratified_sample(made, tmp_path):
    sources, _, _ = made
    sample = tmp_path / "sample.parquet"
    items = sources.store.parent / "items.parquet"
    args = ["labels", "sample", "--items", str(items), "--task", "mh", "--labels", *sources.files]
    result = runner.invoke(
        app, [*args, "--weak", COMBINED, "--n", "120", "--positive-share", "0.5", "--out", str(sample)]
    )
    assert result.exit_code == 0, result.output
    assert _audit(sources.files, tmp_path / "r", "--combined", COMBINED, "--sample", str(sample)).exit_code == 0
    _, tables = _report(tmp_path / "r")
    drawn = pd.read_parquet(sample).set_index("item_id")
    experts = (sources.items.set_index("id")["label"] == "depression").astype(int).reindex(drawn.index)
    weighted = tables["combined_vs_reference_weighted"].set_index("labeler")
    for name, label in _expected_labels(sources).items():
        said = label.fillna(0).astype(int).reindex(drawn.index)
        kappa = cohen_kappa_score(experts, said, sample_weight=drawn["weight"])
        assert weighted.at[name, "kappa"] == pytest.approx(kappa, abs=1e-12)
        labelled = label.reindex(drawn.index).notna()
        assert weighted.at[name, "coverage"] == pytest.approx(drawn["weight"][labelled].sum() / drawn["weight"].sum())
        assert weighted.at[name, "recall"] == pytest.approx(
            recall_score(experts, said, sample_weight=drawn["weight"]), abs=1e-12
        )
    unweighted = tables["combined_vs_reference"].set_index("labeler")
    assert (weighted["kappa"] != unweighted["kappa"]).all()  # the 400 items vs the pool the 120 stand for


def test_a_changed_source_is_noted(made, tmp_path):
    sources, estimates, _ = made
    keywords = read_label_files([sources.keywords])
    flipped = labels_frame(keywords["item_id"], {"keywords": ("llm", 1 - keywords["value"].to_numpy())}, "mh")
    changed = write_labels(flipped, tmp_path / "keywords.parquet")
    files = [sources.store, changed, sources.model]
    assert _audit(files, tmp_path / "r", "--combined", COMBINED).exit_code == 0
    doc, tables = _report(tmp_path / "r")
    assert len(doc["notes"]) == 1 and "changed since 'combined-dawid-skene' was made" in doc["notes"][0]
    refit = tables["source_accuracy"].set_index("source")["estimated"]
    assert not np.allclose(refit, estimates.set_index("labeler").loc[NAMES, "accuracy"])


def test_a_labeler_of_another_kind_is_refused(made, tmp_path):
    sources, _, _ = made
    store = shutil.copy(sources.store, tmp_path / "labels.sqlite")
    result = _audit([store, sources.keywords, sources.model], tmp_path / "r", "--combined", "si")
    assert_one_sentence_failure(
        result,
        f"--combined '{LEXICONS['si']}' is a lexicon labeler; name one of kind combined (mhaudit labels combine)",
    )
    assert not (tmp_path / "r").exists()


def test_a_source_without_votes_on_the_reference_is_nan_with_its_reason(made, tmp_path):
    """The reference is the experts' labels on the 340 posts the keyword rule has no row for: its measured accuracy
    and its precision there are undefined, NaN with the reason, never 0 or 1."""
    sources, _, _ = made
    ruled = set(read_label_files([sources.keywords])["item_id"])
    rest = sources.items[~sources.items["id"].isin(ruled)]
    experts = (rest["label"] == "depression").astype(int).to_numpy()
    subset = write_labels(labels_frame(rest["id"], {"experts-rest": ("human", experts)}, "mh"), tmp_path / "rest.csv")
    args = ["--combined", COMBINED, "--reference", "experts-rest", "--annotator", "experts-rest"]
    result = _audit([*sources.files, subset], tmp_path / "r", *args)
    assert result.exit_code == 0, result.output
    _, tables = _report(tmp_path / "r")
    accuracy = tables["source_accuracy"].set_index("source")
    assert accuracy.at["keywords", "votes_on_reference"] == 0 and accuracy.at["keywords", "votes"] == 60
    assert np.isnan(accuracy.at["keywords", "measured"]) and np.isnan(accuracy.at["keywords", "difference"])
    assert accuracy.at["keywords", "reason"] == "measured: it votes on no reference item"
    assert accuracy["reason"].drop("keywords").eq("").all()
    keywords = tables["combined_vs_reference"].set_index("labeler").loc["keywords"]
    assert keywords["coverage"] == 0 and np.isnan(keywords["precision"]) and keywords["recall"] == 0
    assert keywords["reason"] == "precision: undefined: the weak labeler gave no positive label"
