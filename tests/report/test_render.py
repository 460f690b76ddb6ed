import json

import numpy as np
import pandas as pd

import pytest

from mhaudit.report import VERDICT_COLUMNS, AuditResult, Section, verdict, verdict_table, write_report


def test_every_format_carries_the_same_numbers(tmp_path):
    table = pd.DataFrame({"platform": ["a|b", "c"], "auc": [0.91234, np.nan], "n": [np.int64(3), np.int64(4)]})
    result = AuditResult("T", [Section("S", "words <b>", {"numbers": table})], synthetic=False, options={"seed": 1})
    write_report(result, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["sections"][0]["tables"]["numbers"] == [
        {"platform": "a|b", "auc": 0.91234, "n": 3},
        {"platform": "c", "auc": None, "n": 4},
    ]
    md = (tmp_path / "report.md").read_text()
    assert "| a\\|b | 0.912 | 3 |" in md and "| c | n/a | 4 |" in md and "SYNTHETIC" not in md
    html = (tmp_path / "report.html").read_text()
    assert "<td class='num'>0.912</td><td class='num'>3</td>" in html and "<td class='num'>n/a</td>" in html
    assert "<td class='text'>a|b</td>" in html and "words &lt;b&gt;" in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md", "tables"]
    assert pd.read_csv(tmp_path / "tables" / "s--numbers.csv")["auc"].tolist()[0] == 0.91234


def test_summary_and_verdicts_lead_every_format_failures_first(tmp_path):
    rows = [
        verdict("x", "axis", "m", "p1", "stat", 0.9, "> 0.5", "pass", "fine"),
        verdict("x", "axis", "m", "p2", "stat", 0.1, "> 0.5", "fail", "too low"),
        verdict("x", "axis", "m", "p3", "stat", None, "> 0.5", "pass", "no rows"),
    ]
    result = AuditResult(
        "T",
        [Section("S", "", {"numbers": pd.DataFrame({"a": [1]})})],
        summary="It failed once.",
        verdicts=verdict_table(rows),
        provenance={"inputs": {"x": "0" * 64}},
    )
    write_report(result, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["summary"] == "It failed once." and data["provenance"]["inputs"] == {"x": "0" * 64}
    assert [v["severity"] for v in data["verdicts"]] == ["pass", "fail", "undefined"]  # as given, None undefined
    html = (tmp_path / "report.html").read_text()
    assert html.index("It failed once.") < html.index("Verdicts") < html.index("<h2 id='s'>S</h2>")
    badge = lambda s: html.index(f"<span class='sev sev-{s}'>", html.index("Verdicts"))  # noqa: E731
    assert badge("fail") < badge("undefined") < badge("pass")
    assert "1 fail, 1 undefined, 1 pass of 3 checks." in html and "ci_low" not in html
    md = (tmp_path / "report.md").read_text()
    assert md.index("It failed once.") < md.index("## Verdicts") < md.index("\n## S\n")


def test_verdict_table_refuses_an_unknown_severity_and_a_missing_value_that_passes():
    with pytest.raises(ValueError, match="not among"):
        verdict_table([{**verdict("x", "a", "s", "t", "v", 1.0, "", "pass", ""), "severity": "ok"}])
    with pytest.raises(ValueError, match="no value"):
        verdict_table([{**verdict("x", "a", "s", "t", "v", 1.0, "", "pass", ""), "value": float("nan")}])
    assert list(verdict_table([]).columns) == VERDICT_COLUMNS


def seed_verdicts():
    rows = []
    for seed, auc_drop, di in ((0, 0.20, 0.85), (1, 0.24, 0.95)):
        rows += [
            verdict(
                "cpfe",
                "discrimination",
                f"bert seed {seed}",
                "twitter",
                "macro_auc_drop",
                auc_drop,
                "> 0",
                "fail",
                "drop",
            ),
            verdict("cpfe", "equity", f"bert seed {seed}", "twitter", "disparate_impact", di, "< 0.8", "pass", ""),
            verdict("cpfe", "equity", f"bert seed {seed}", "twitter", "disparate_impact", di, "< 0.5", "pass", ""),
        ]
    rows.append(
        verdict(
            "cpfe",
            "calibration",
            "roberta seed 0",
            "twitter",
            "ece",
            0.12,
            "> 0.1",
            "warn",
            "",
            ci_low=0.10,
            ci_high=0.15,
        )
    )
    return verdict_table(rows)


def test_the_scorecard_folds_seeds_and_leads_the_page(tmp_path):
    from mhaudit.report.scorecard import scorecard

    card = scorecard(seed_verdicts()).set_index("subject")
    assert list(card.columns) == ["target", "discrimination", "equity", "calibration"]
    assert card.loc["bert", "discrimination"] == "fail: macro_auc_drop 0.220 ± 0.028 (n = 2)"  # SD of 0.20, 0.24
    assert card.loc["bert", "equity"] == "pass: disparate_impact 0.900 ± 0.071 (n = 2)"  # two checks per seed, once
    assert card.loc["roberta", "calibration"] == "warn: ece 0.120 [0.100, 0.150]"
    assert card.loc["roberta", "equity"] == ""
    result = AuditResult(
        "T",
        [Section("S", "", {"numbers": pd.DataFrame({"a": [1]})})],
        summary="Words.",
        verdicts=seed_verdicts(),
        provenance={"inputs": {"preds.csv": "ab" * 32}, "created": "now"},
        options={"seed": 3},
    )
    write_report(result, tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert html.index("<h2>Scorecard</h2>") < html.index("Words.") < html.index("<h2>Verdicts</h2>")
    assert "<footer><p>mhaudit " in html and "<li>preds.csv sha256 abababababab</li>" in html
    assert "<details><summary>Options</summary><pre>seed: 3</pre></details>" in html
    assert json.loads((tmp_path / "report.json").read_text())["scorecard"][0]["subject"] == "bert"
    assert "## Scorecard" in (tmp_path / "report.md").read_text()


def test_p_values_empty_and_long_tables(tmp_path):
    tables = {
        "tests": pd.DataFrame({"z": [5.0, 0.5], "p": [1e-4, 0.62], "p_adjusted": [3e-5, 1.0]}),
        "nothing": pd.DataFrame({"a": []}),
        "long": pd.DataFrame({"i": range(40)}),
    }
    write_report(AuditResult("T", [Section("S", "", tables)]), tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "<td class='num'>1.0e-04</td>" in html and "<td class='num'>3.0e-05</td>" in html  # not 0.000
    assert "<td class='num'>0.620</td>" in html and "<td class='num'>5.000</td>" in html
    assert "nothing" not in html and (tmp_path / "tables" / "s--nothing.csv").exists()  # kept in the files
    assert "<details><summary>long (40 rows)</summary>" in html
    assert "| 1.0e-04 |" in (tmp_path / "report.md").read_text()


def test_one_value_checked_against_two_thresholds_shows_once_at_its_worst(tmp_path):
    rows = [
        verdict("cpfe", "equity", "bert seed 0", "twitter", "disparate_impact", 0.41, "< 0.8", "warn", "4/5"),
        verdict("cpfe", "equity", "bert seed 0", "twitter", "disparate_impact", 0.41, "< 0.5", "fail", "half"),
        verdict("cpfe", "equity", "bert seed 1", "twitter", "disparate_impact", 0.90, "< 0.8", "pass", "fine"),
        verdict("cpfe", "equity", "bert seed 1", "twitter", "disparate_impact", 0.90, "< 0.5", "pass", "fine"),
    ]
    write_report(AuditResult("T", [], verdicts=verdict_table(rows)), tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "1 fail, 1 pass of 2 checks." in html and "4/5" not in html and "< 0.5" not in html
    md = (tmp_path / "report.md").read_text().split("## Verdicts")[1]
    assert md.count("| equity |") == 2 and "| < 0.5 | fail | half |" in md
    assert len(json.loads((tmp_path / "report.json").read_text())["verdicts"]) == 4  # every check kept


def test_scorecard_cells_fold_p_values_and_give_each_statistic_its_severity():
    from mhaudit.report.scorecard import scorecard

    rows = []
    for seed, p, ece, after in ((0, 3e-5, 0.20, 0.04), (1, 2e-3, 0.22, 0.12), (2, 0.3, 0.18, 0.05)):
        subject = f"bert seed {seed}"
        rows += [
            verdict(
                "cpfe",
                "significance",
                subject,
                "twitter",
                "p_adjusted",
                p,
                "< 0.05",
                "fail" if p < 0.05 else "pass",
                "",
            ),
            verdict("cpfe", "calibration", subject, "twitter", "ece_debiased", ece, "> 0.1", "fail", ""),
            verdict(
                "cpfe",
                "calibration",
                subject,
                "twitter",
                "ece_after_ts",
                after,
                "> 0.1",
                "warn" if after > 0.1 else "pass",
                "",
            ),
        ]
    card = scorecard(verdict_table(rows)).set_index("subject")
    assert card.loc["bert", "significance"] == "fail: p_adjusted in 2 of 3 runs (largest p 0.300)"
    assert card.loc["bert", "calibration"] == "fail: ece_debiased 0.200 ± 0.020 (n = 3); ece_after_ts 0.070 (warn)"


def test_a_scorecard_cell_has_one_severity_word_and_a_second_number_says_what_it_is():
    """The label-source audit's cell: a Macro-F1 divergence (fail) that holds on AUC (that check passes). The
    cell read "fail … dod on AUC 0.036 (pass)", the "pass" saying the opposite of the cell's "fail"; a second
    number's severity is said only where it is not pass, and its name says what it is."""
    from mhaudit.audits.divergence.verdicts import divergence_verdicts
    from mhaudit.report.scorecard import scorecard

    dod = pd.DataFrame(
        [
            {"contrast": c, "estimate": e, "ci_low": lo, "ci_high": hi}
            for c, e, lo, hi in (
                ("C-A", 0.107, 0.051, 0.163),
                ("B-A", 0.090, 0.020, 0.160),
                ("AC-A", 0.010, -0.030, 0.050),
            )
        ]
    )
    free = pd.DataFrame(
        [
            {"contrast": c, "metric": m, "estimate": e, "ci_low": e - 0.02, "ci_high": e + 0.02, "apart": abs(e) > 0.02}
            for c, values in (
                ("C-A", (0.107, 0.036, 0.050)),
                ("B-A", (0.090, 0.004, 0.060)),
                ("AC-A", (0.010, 0.001, 0.002)),
            )
            for m, e in zip(("macro_f1", "auc", "pr_auc_gain"), values)
        ]
    )
    card = scorecard(divergence_verdicts(dod, free)).set_index("subject")["label source"]
    assert card["C-A"] == "fail: dod 0.107 [0.051, 0.163]; also on AUC 0.036"
    assert card["B-A"] == "fail: dod 0.090 [0.020, 0.160]; not on AUC 0.004 (warn)"  # maybe a threshold effect
    assert card["AC-A"] == "pass: dod 0.010 [-0.030, 0.050]; dod on AUC 0.001"


def test_the_monitor_cell_gives_the_failing_number_and_names_its_window():
    """The platform team's walk read "fail 0.121": a warning-level PSI of another window beside the change alarm's
    fail. The cell now gives the worst check's number and the first window that reached it."""
    from mhaudit.audits.monitor import MonitorOptions
    from mhaudit.audits.monitor.verdicts import monitor_verdicts
    from mhaudit.report.scorecard import scorecard

    table = pd.DataFrame(
        {
            "window": ["2026-01-05 00:00", "2026-01-06 00:00", "2026-01-07 00:00"],
            "n_posts": [300, 300, 300],
            "psi_score": [0.121, 0.04, 0.16],
            "change_alarm": [False, True, True],
            "cusum_z": [1.0, 6.35, 7.1],
            "expected_macro_f1": [0.7, 0.7, 0.7],
            "expected_ci_low": [0.6, 0.6, 0.6],
            "expected_ci_high": [0.8, 0.8, 0.8],
            "estimate_trusted": [True, True, True],
            "untrusted_because": ["", "", ""],
        }
    )
    verdicts = monitor_verdicts(table, MonitorOptions(), model_name="tfidf-lr", target="stream, windows of 1d")
    card = scorecard(verdicts).set_index("subject")["drift on the stream"]
    assert card["tfidf-lr"] == "fail: change_z 6.350 in window 2026-01-06 00:00; psi_score 0.121 (warn)"


def test_footer_lists_notes_and_collapses_inputs_and_options(tmp_path):
    inputs = {
        "predictions": "c" * 64,
        **{f"/data/released/bert_reddit_seed{s}_predictions.csv": "d" * 64 for s in range(40)},
    }
    result = AuditResult(
        "T",
        [Section("S", "", {"t": pd.DataFrame({"a": [1]})}), Section("Empty", "", {})],
        provenance={"inputs": inputs},
        options={"reference": "reddit"},
        notes=["warning: macro-F1 undefined (3 times)"],
    )
    write_report(result, tmp_path)
    html = (tmp_path / "report.html").read_text()
    footer = html[html.index("<footer>") :]
    assert "<ul class='notes'><li>warning: macro-F1 undefined (3 times)</li></ul>" in footer
    assert "<summary>Inputs (41), with the start of each SHA-256</summary>" in footer and "/data/" not in footer
    assert "<li>bert_reddit_seed39_predictions.csv sha256 dddddddddddd</li>" in footer
    assert "Empty" not in html  # a section with nothing to show is left off the page
    md = (tmp_path / "report.md").read_text()
    assert "- warning: macro-F1 undefined (3 times)" in md and "<details><summary>Inputs (41) and options" in md
    assert "Empty" not in md and json.loads((tmp_path / "report.json").read_text())["sections"][1]["title"] == "Empty"


def test_svg_and_png_figures_are_written_linked_and_read_back_as_they_are(tmp_path):
    """An SVG figure (the CPFE audit's) goes to figures/<slug>.svg, a PNG one (other audits') to .png: each
    format links the right file, the page embeds both as images, and the report reads back the same bytes."""
    from mhaudit.report.combine import read_report
    from mhaudit.report.svg import Axis, Panel, figure

    svg = figure([[Panel(Axis(0, 1), Axis(0, 1))]], "AUC <by> model")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
    result = AuditResult(
        "T", [Section("S", "", {"t": pd.DataFrame({"a": [1]})}, {"AUC <by> model": svg, "F1 by model": png})]
    )
    write_report(result, tmp_path)
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["auc--by--model.svg", "f1-by-model.png"]
    assert (tmp_path / "figures" / "auc--by--model.svg").read_bytes() == svg
    files = [f["file"] for f in json.loads((tmp_path / "report.json").read_text())["sections"][0]["figures"]]
    assert files == ["figures/auc--by--model.svg", "figures/f1-by-model.png"]
    md = (tmp_path / "report.md").read_text()
    assert "![AUC <by> model](figures/auc--by--model.svg)" in md and "![F1 by model](figures/f1-by-model.png)" in md
    html = (tmp_path / "report.html").read_text()
    assert html.count("<img alt=") == 2 and "<figcaption>AUC &lt;by&gt; model</figcaption>" in html
    assert html.count("src='data:image/svg+xml;base64,") == 1 and html.count("src='data:image/png;base64,") == 1
    assert "<svg" not in html  # the SVG travels base64-encoded inside its <img>: its text is never page markup
    assert read_report(tmp_path).figures == result.figures
