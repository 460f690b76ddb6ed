"""Axis 5 keyed by (platform, data set): two data sets on one platform each get their own Jaccard, a target
without attributions gets no attribution verdict ("-"), and a table without a dataset column still works."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.cli import app
from mhaudit.report.scorecard import scorecard
from mhaudit.tables.predictions import PredictionSet
from tests.audits.test_cpfe import CLASSES, FAST, synthetic_predictions

# SYNTHETIC: home is Reddit; away1 and away2 become two data sets of one platform, Twitter
PLACES = {"home": ("reddit", "dreaddit"), "away1": ("twitter", "tss_gold"), "away2": ("twitter", "rastogi")}
WORDS = {
    "dreaddit": ["sad", "tired", "empty", "alone"],
    "tss_gold": ["sad", "tired", "lol", "tbh"],
    "rastogi": ["ok", "meh", "lol", "tbh"],
}


def two_twitter_sets(models=("m1",)) -> PredictionSet:
    frame = synthetic_predictions(n=60, models=models, seeds=(0,)).frame
    platform = frame["platform"].map(lambda p: PLACES[p][0])
    return PredictionSet(
        frame.assign(dataset=frame["platform"].map(lambda p: PLACES[p][1]), platform=platform), CLASSES
    )


def attributions(models=("m1",), datasets=tuple(WORDS)) -> pd.DataFrame:
    place = {d: p for p, d in PLACES.values()}
    return pd.DataFrame(
        [
            {
                "model": m,
                "seed": 0,
                "platform": place[d],
                "dataset": d,
                "class": c,
                "word": w,
                "score": 10.0 - r,
                "count": 2,
                "method": "linear",
            }
            for m in models
            for d in datasets
            for c in ("depression", "stress")
            for r, w in enumerate(WORDS[d])
        ]
    )


def jaccard_verdicts(result) -> pd.Series:
    verdicts = result.verdicts
    return verdicts[verdicts["statistic"] == "jaccard_top10"].groupby("target")["value"].first()


def test_each_data_set_of_a_platform_gets_its_own_jaccard():
    result = audit_cpfe(
        CPFEInputs(two_twitter_sets(), attributions=attributions()), CPFEOptions(reference="reddit", **FAST)
    )
    stab = result.table("attribution_stability").query("`class` == 'stress' and k == 5")
    assert stab[["dataset_a", "dataset_b"]].values.tolist() == [
        ["dreaddit", "rastogi"],
        ["dreaddit", "tss_gold"],
        ["rastogi", "tss_gold"],
    ]
    # dreaddit shares sad, tired with tss_gold (2 of 6 words) and none with rastogi
    assert stab["jaccard"].tolist() == pytest.approx([0.0, 2 / 6, 2 / 6])
    assert jaccard_verdicts(result).to_dict() == {"twitter (rastogi)": 0.0, "twitter (tss_gold)": pytest.approx(1 / 3)}
    retention = result.table("clinical_retention")
    assert set(zip(retention["platform"], retention["dataset"])) == set(PLACES.values())
    assert not any("attribution" in note for note in result.notes)


def test_a_target_without_attributions_shows_a_dash_not_another_data_sets_number():
    result = audit_cpfe(
        CPFEInputs(two_twitter_sets(), attributions=attributions(datasets=("dreaddit", "tss_gold"))),
        CPFEOptions(reference="reddit", **FAST),
    )
    assert list(jaccard_verdicts(result).index) == ["twitter (tss_gold)"]
    card = scorecard(result.verdicts).set_index("target")
    assert card.loc["twitter (rastogi)", "attribution"] == "" and card.loc["twitter (tss_gold)", "attribution"]
    assert any("no attribution verdict" in n and "m1 seed 0 on twitter (rastogi)" in n for n in result.notes)


def test_a_table_without_a_dataset_column_takes_the_platforms_data_set():
    bare = attributions(datasets=("dreaddit", "tss_gold")).drop(columns="dataset")
    one_each = two_twitter_sets().frame.query("dataset != 'rastogi'")
    result = audit_cpfe(
        CPFEInputs(PredictionSet(one_each, CLASSES), attributions=bare), CPFEOptions(reference="reddit", **FAST)
    )
    # each platform has one data set in the predictions: the rows take it, and the verdict is there
    assert jaccard_verdicts(result).to_dict() == {"twitter (tss_gold)": pytest.approx(1 / 3)}
    assert any("16 attribution row(s) name no data set" in note for note in result.notes)
    # two data sets on Twitter: its rows are named "twitter", which neither target is, so neither gets a verdict
    both = audit_cpfe(CPFEInputs(two_twitter_sets(), attributions=bare), CPFEOptions(reference="reddit", **FAST))
    assert jaccard_verdicts(both).empty
    assert set(both.table("clinical_retention")["dataset"]) == {"dreaddit", "twitter"}
    assert any("2 target run(s)" in note for note in both.notes)


def test_the_heatmap_names_each_place_by_platform_and_data_set():
    result = audit_cpfe(
        CPFEInputs(two_twitter_sets(), attributions=attributions()),
        CPFEOptions(reference="reddit", top_ks=(10,), **{**FAST, "figures": True}),
    )
    section = next(s for s in result.sections if s.title.startswith("Axis 5"))
    svg = next(iter(section.figures.values())).decode()
    assert "reddit (dreaddit) vs twitter (rastogi)" in svg and "twitter (rastogi) vs twitter (tss_gold)" in svg
    assert "pair of places" in svg


@pytest.mark.parametrize("form", ["one flag", "repeated flag"])
def test_attributions_of_two_models_in_two_files_are_both_read(tmp_path, form):
    predictions = tmp_path / "predictions.parquet"
    two_twitter_sets(models=("m1", "m2")).frame.to_parquet(predictions)
    files = []
    for model in ("m1", "m2"):
        files.append(tmp_path / f"attributions-{model}.parquet")
        attributions(models=(model,)).to_parquet(files[-1])
    flags = (
        ["--attributions", *map(str, files)]
        if form == "one flag"
        else [arg for f in files for arg in ("--attributions", str(f))]
    )
    done = CliRunner().invoke(
        app,
        [
            "audit",
            "cpfe",
            "--predictions",
            str(predictions),
            "--reference",
            "reddit",
            "--out",
            str(tmp_path / "out"),
            "--n-boot-significance",
            "200",
            "--n-boot-ece",
            "100",
            *flags,
        ],
    )
    assert done.exit_code == 0, done.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    verdicts = pd.DataFrame(report["verdicts"]).query("statistic == 'jaccard_top10'")
    assert verdicts.groupby("subject")["target"].nunique().to_dict() == {"m1 seed 0": 2, "m2 seed 0": 2}
