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
    assert data["sections"][0]["tables"]["numbers"] == [{"platform": "a|b", "auc": 0.91234, "n": 3},
                                                        {"platform": "c", "auc": None, "n": 4}]
    md = (tmp_path / "report.md").read_text()
    assert "| a\\|b | 0.912 | 3 |" in md and "| c | n/a | 4 |" in md and "SYNTHETIC" not in md
    html = (tmp_path / "report.html").read_text()
    assert "<td class='num'>0.912</td><td class='num'>3</td>" in html and "<td class='num'>n/a</td>" in html
    assert "<td class='text'>a|b</td>" in html and "words &lt;b&gt;" in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]


def test_summary_and_verdicts_lead_every_format_failures_first(tmp_path):
    rows = [verdict("x", "axis", "m", "p1", "stat", 0.9, "> 0.5", "pass", "fine"),
            verdict("x", "axis", "m", "p2", "stat", 0.1, "> 0.5", "fail", "too low"),
            verdict("x", "axis", "m", "p3", "stat", None, "> 0.5", "pass", "no rows")]
    result = AuditResult("T", [Section("S", "", {"numbers": pd.DataFrame({"a": [1]})})], summary="It failed once.",
                         verdicts=verdict_table(rows), provenance={"inputs": {"x": "0" * 64}})
    write_report(result, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["summary"] == "It failed once." and data["provenance"]["inputs"] == {"x": "0" * 64}
    assert [v["severity"] for v in data["verdicts"]] == ["pass", "fail", "undefined"]  # as given, None undefined
    html = (tmp_path / "report.html").read_text()
    assert html.index("It failed once.") < html.index("Verdicts") < html.index("<h2>S</h2>")
    badge = lambda s: html.index(f"<span class='sev sev-{s}'>")  # noqa: E731
    assert badge("fail") < badge("undefined") < badge("pass")
    assert "1 fail, 1 undefined, 1 pass of 3 checks." in html and "ci_low" not in html
    md = (tmp_path / "report.md").read_text()
    assert md.index("It failed once.") < md.index("## Verdicts") < md.index("## S")


def test_verdict_table_refuses_an_unknown_severity_and_a_missing_value_that_passes():
    with pytest.raises(ValueError, match="not among"):
        verdict_table([{**verdict("x", "a", "s", "t", "v", 1.0, "", "pass", ""), "severity": "ok"}])
    with pytest.raises(ValueError, match="no value"):
        verdict_table([{**verdict("x", "a", "s", "t", "v", 1.0, "", "pass", ""), "value": float("nan")}])
    assert list(verdict_table([]).columns) == VERDICT_COLUMNS
