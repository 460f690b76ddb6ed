"""Several audits of the same models as one report: read back, merged, and the command that does it.
The audits run on SYNTHETIC predictions and labels."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.audits.agreement import AgreementInputs, AgreementOptions, audit_agreement
from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.core.errors import InputError
from mhaudit.report import write_report
from mhaudit.report.combine import combine_results, read_report
from mhaudit.report.scorecard import scorecard, shared_subjects
from mhaudit.synthetic.simulate_labels import LabelsConfig, labels_rows, simulate_labels
from mhaudit.cli import app
from mhaudit.tables.prediction_files import read_predictions
from tests.cli_checks import assert_one_sentence_failure
from tests.tables.test_prediction_files import PATTERN, published


@pytest.fixture(scope="module")
def two_audits(tmp_path_factory):
    """A cross-platform audit of bert and roberta, and a validation in which bert's labels are scored too."""
    root = tmp_path_factory.mktemp("combine")
    cpfe = audit_cpfe(
        CPFEInputs(read_predictions(published(root / "files", seeds=(42,)), name_pattern=PATTERN), synthetic=True),
        CPFEOptions(reference="reddit", n_boot_significance=200, n_boot_ece=100),
    )
    labels = simulate_labels(LabelsConfig(n_items=200))
    truth = labels[labels["labeler"] == "annotator-1"]
    bert = labels_rows(
        truth["item_id"].to_numpy(),
        {"bert": ("model", truth["value"].to_numpy(int) ^ (np.arange(len(truth)) % 7 == 0))},
        "si",
    )
    agreement = audit_agreement(
        AgreementInputs(pd.concat([labels, bert], ignore_index=True), synthetic=True),
        AgreementOptions(task="si", models=("bert",), n_boot=200),
    )
    write_report(cpfe, root / "cpfe")
    write_report(agreement, root / "validation")
    return root, cpfe, agreement


def test_a_models_kappa_against_the_reference_is_scikit_learns(two_audits):
    """The reference: the annotators' label where they agree, else the adjudicator's (docs/validation.md)."""
    from sklearn.metrics import cohen_kappa_score

    _, _, agreement = two_audits
    labels = simulate_labels(LabelsConfig(n_items=200)).pivot(index="item_id", columns="labeler", values="value")
    reference = labels["annotator-1"].where(labels["annotator-1"] == labels["annotator-2"], labels["adjudicator"])
    bert = labels["annotator-1"].to_numpy(int) ^ (np.arange(len(labels)) % 7 == 0)
    kappa = agreement.table("models_vs_reference").query("metric == 'kappa'").iloc[0]
    assert kappa["estimate"] == pytest.approx(cohen_kappa_score(reference.astype(int), bert), abs=1e-12)
    verdict = agreement.verdicts.query("axis == 'human validation'").iloc[0]
    assert verdict["subject"] == "bert" and verdict["value"] == kappa["estimate"]
    assert verdict["ci_low"] < verdict["value"] < verdict["ci_high"]


def test_a_report_reads_back_as_it_was_written(two_audits):
    root, cpfe, _ = two_audits
    back = read_report(root / "cpfe")
    assert back.title == cpfe.title and back.synthetic and back.summary == cpfe.summary
    pd.testing.assert_frame_equal(back.verdicts, cpfe.verdicts)
    assert [s.title for s in back.sections] == [s.title for s in cpfe.sections]
    assert back.figures == cpfe.figures  # the same PNG bytes, under the same titles
    for name, table in cpfe.tables.items():
        got = back.table(name)
        assert list(got.columns) == list(table.columns) or table.empty, name
        numbers = table.select_dtypes("number").columns
        np.testing.assert_allclose(got[numbers].to_numpy(float), table[numbers].to_numpy(float), equal_nan=True)


def test_combined_verdicts_sections_and_scorecard(two_audits):
    _, cpfe, agreement = two_audits
    both = combine_results([cpfe, agreement])
    assert len(both.verdicts) == len(cpfe.verdicts) + len(agreement.verdicts)
    assert len(combine_results([cpfe, cpfe]).verdicts) == len(cpfe.verdicts)  # a verdict in two inputs, once
    assert both.summary.split("\n\n")[0] == "In every audit: bert."
    assert both.sections[0].title == f"Cross-platform: {cpfe.sections[0].title}"
    assert both.sections[-1].title == f"Human validation: {agreement.sections[-1].title}"
    assert both.synthetic and set(both.options) == {"Cross-platform", "Human validation"}
    assert shared_subjects(both.verdicts) == {"bert"}
    card = scorecard(both.verdicts)
    assert list(card["subject"][:3]) == ["bert", "bert", "roberta"]  # the shared model first: twitter, the labels
    bert = card[card["subject"] == "bert"].set_index("target")
    kappa = agreement.table("models_vs_reference").query("metric == 'kappa'").iloc[0]
    assert bert.loc["reference labels", "human validation"].startswith(f"warn: cohen_kappa {kappa['estimate']:.3f}")
    assert bert.loc["twitter", "discrimination"].startswith(("fail", "pass"))


def test_report_combine_command(two_audits, tmp_path):
    root, cpfe, agreement = two_audits
    done = CliRunner().invoke(
        app, ["report", "combine", str(root / "cpfe"), str(root / "validation"), "--out", str(tmp_path / "both")]
    )
    assert done.exit_code == 0, done.output
    written = json.loads((tmp_path / "both" / "report.json").read_text())
    assert len(written["verdicts"]) == len(cpfe.verdicts) + len(agreement.verdicts)
    assert (tmp_path / "both" / "report.html").read_text().count("<img") == len(cpfe.figures) + len(agreement.figures)


def test_report_combine_refuses_what_it_cannot_read_and_keeps_the_inputs(two_audits, tmp_path):
    root, _, _ = two_audits
    before = (root / "cpfe" / "report.json").read_bytes()
    for args, says in (
        (["report", "combine", root / "cpfe", tmp_path / "nothing", "--out", tmp_path / "o"], "has no report.json"),
        (["report", "combine", root / "cpfe", "--out", root / "cpfe"], "is one of the reports"),
    ):
        assert_one_sentence_failure(CliRunner().invoke(app, list(map(str, args))), says)
    assert not (tmp_path / "o").exists() and (root / "cpfe" / "report.json").read_bytes() == before
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "report.json").write_text('{"title": 1}')
    with pytest.raises(InputError, match="not a report"):
        read_report(broken)
