import json

import numpy as np
import pandas as pd

from mhaudit.report import Result, Section, write_report


def test_every_format_carries_the_same_numbers(tmp_path):
    table = pd.DataFrame({"platform": ["a|b", "c"], "auc": [0.91234, np.nan], "n": [np.int64(3), np.int64(4)]})
    result = Result("T", [Section("S", "words <b>", {"numbers": table})], synthetic=False, options={"seed": 1})
    write_report(result, tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["sections"][0]["tables"]["numbers"] == [{"platform": "a|b", "auc": 0.91234, "n": 3},
                                                        {"platform": "c", "auc": None, "n": 4}]
    md = (tmp_path / "report.md").read_text()
    assert "| a\\|b | 0.912 | 3 |" in md and "| c | n/a | 4 |" in md and "SYNTHETIC" not in md
    html = (tmp_path / "report.html").read_text()
    assert "<td>0.912</td>" in html and "words &lt;b&gt;" in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]
