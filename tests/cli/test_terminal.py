"""What a command prints to a log or a pipe (80 columns): warnings once per kind without their source line,
a scorecard of one line per model and target, tables whose columns are never narrower than their header;
and the report of the 40 released-like files (SYNTHETIC) that the audit writes beside it."""

from __future__ import annotations

import json
import re
import warnings

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.cli.console import guarded, out, print_table, write_report
from mhaudit.report import AuditResult, Section
from mhaudit.stats.undefined import UndefinedStatisticWarning
from mhaudit.tables.prediction_files import read_predictions
from tests.fixtures.released_like import MODELS, NAME_PATTERN, write_released_like

runner = CliRunner()
PYTHON_WARNING = re.compile(r"\.py:\d+: \w*Warning")


@pytest.fixture(scope="module")
def released_audit(tmp_path_factory):
    """`mhaudit audit cpfe` over the 40 SYNTHETIC released-like files, its output and its report folder."""
    folder = tmp_path_factory.mktemp("released")
    write_released_like(folder / "files", n=200)
    result = runner.invoke(
        app,
        [
            "audit",
            "cpfe",
            "--predictions",
            str(folder / "files" / "*.csv"),
            "--name-pattern",
            NAME_PATTERN,
            "--reference",
            "reddit",
            "--n-boot-significance",
            "200",
            "--n-boot-ece",
            "100",
            "--out",
            str(folder / "report"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert not PYTHON_WARNING.search(result.output) and "Warning:" not in result.output  # stderr too
    return result.stdout, folder / "report"


def test_the_audit_of_40_files_prints_a_scorecard_of_one_line_per_model(released_audit):
    output, _ = released_audit
    lines = output.splitlines()
    assert max(map(len, lines)) <= 80  # what the command prints; the stage lines on stderr are the progress's
    start = next(i for i, line in enumerate(lines) if line.startswith("Scorecard"))
    header = lines[start + 1]
    assert header.split() == ["subject", "target", "discrimination", "calibration", "significance", "equity"]
    rows = lines[start + 3 : start + 3 + len(MODELS)]
    assert sorted(row.split()[0] for row in rows) == sorted(MODELS)
    for row in rows:  # every verdict starts under its axis's heading, whole
        for axis in ("discrimination", "calibration", "significance", "equity"):
            assert row[header.index(axis) :].split()[0] in ("fail", "warn", "pass", "n/a")
    assert lines[start + 3 + len(MODELS)].startswith("report:")  # nothing else: every check is in the report


def test_the_report_of_40_files_reads_well(released_audit):
    _, folder = released_audit
    page = (folder / "report.html").read_text()
    footer = page[page.index("<footer>") :]
    assert "<details><summary>Inputs (41), with the start of each SHA-256</summary>" in footer
    assert "<li>bert_reddit_seed42_predictions.csv sha256 " in footer and str(folder.parent) not in footer
    assert "<details><summary>Options</summary>" in footer
    assert "Text length" not in page  # no corpus given: no empty section
    assert "Off their home platform (reddit" in page and "the models&#x27; macro-AUC" in page
    assert "Per-class AUC with DeLong CIs (seed 0 only; the scorecard averages 5 seeds)" in page
    assert (
        "Reliability before and after temperature scaling (seed 0 of each model only; the scorecard averages "
        "5 seeds)" in page
    )
    card = {row["subject"]: row for row in json.loads((folder / "report.json").read_text())["scorecard"]}
    assert re.fullmatch(r"fail: bonferroni_p in 5 of 5 runs \(largest p \S+\)", card["bert"]["significance"])
    assert re.search(r"; ece_after_ts \d\.\d{3} \((pass|warn)\)(;|$)", card["bert"]["calibration"])


def test_warnings_print_once_per_kind_and_reach_the_report_notes(tmp_path):
    command = typer.Typer()

    @command.command()
    @guarded
    def run() -> None:
        for _ in range(3):
            warnings.warn("macro-F1 undefined: a class has no row", UndefinedStatisticWarning)
        warnings.warn("one of a kind\nwith a second line")
        for n in (8, 17):  # the same kind with other counts: one line, the first message shown
            warnings.warn(f"macro-F1 undefined in {n} of 500 table(s)", UndefinedStatisticWarning)
        warnings.warn("old", DeprecationWarning)  # ignored, as Python ignores it by default
        write_report(AuditResult("T", [Section("S", "", {"t": pd.DataFrame({"a": [1]})})]), tmp_path)
        out.print("done")

    result = runner.invoke(command, [])
    assert result.exit_code == 0, result.output
    assert "warning: macro-F1 undefined: a class has no row (3 times)" in result.output
    assert "warning: one of a kind\n" in result.output and "second line" not in result.output
    assert "warning: macro-F1 undefined in 8 of 500 table(s) (2 times, the first shown)" in result.output
    assert "17 of 500" not in result.output
    assert not PYTHON_WARNING.search(result.output) and "old" not in result.output
    notes = json.loads((tmp_path / "report.json").read_text())["notes"]
    assert notes == [
        "warning: macro-F1 undefined: a class has no row (3 times)",
        "warning: one of a kind",
        "warning: macro-F1 undefined in 8 of 500 table(s) (2 times, the first shown)",
    ]
    assert "warning: one of a kind" in (tmp_path / "report.md").read_text()
    with pytest.warns(UndefinedStatisticWarning):  # outside a command, Python's own warnings
        warnings.warn("seen by Python", UndefinedStatisticWarning)


def test_print_table_keeps_every_column_as_wide_as_its_header(capsys):
    frame = pd.DataFrame(
        {
            "severity": ["warn"],
            "subject": ["mentalroberta"],
            "target": ["twitter"],
            "n": [300],
            "observed_agreement": [0.91],
            "p": [2e-5],
            "reason": ["words " * 20],
        }
    )
    print_table("Human-human agreement", frame)
    printed = capsys.readouterr().out.splitlines()
    assert max(map(len, printed)) <= 80
    assert printed[1].split() == list(frame.columns)  # every header whole on one line
    assert printed[3].split()[3:6] == ["300", "0.910", "2.0e-05"] and printed[4].strip() == "words words"
    wide = pd.DataFrame({f"a_long_column_name_{i}": [i] for i in range(6)})
    print_table("Too wide", wide)  # cannot fit as columns: one line of column: value pairs per row
    assert capsys.readouterr().out.splitlines()[1].startswith("a_long_column_name_0: 0 · a_long_column_name_1: 1")


def test_many_unlabelled_files_give_one_note(tmp_path):
    paths = write_released_like(tmp_path, n=20, models=("bert",), seeds=(0, 1, 2))
    notes = read_predictions(paths, labelled=False, name_pattern=NAME_PATTERN).notes
    ignored = [note for note in notes if "is ignored" in note]
    assert ignored == [
        "the 'label' column of 6 files (bert_reddit_seed0_predictions.csv, "
        "bert_reddit_seed1_predictions.csv, bert_reddit_seed2_predictions.csv and 3 more) is ignored "
        "(read as unlabelled)"
    ]
