"""The one table reader and writer (`mhaudit.tables.io`): the rules in its docstring, format by format."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.io import SOURCE_FILE, SOURCE_ROW, read_table, write_table

FRAME = pd.DataFrame(
    {
        "item_id": ["007", "NA", "x"],
        "text": ['a, "quoted" b', "", "ü"],
        "score": [0.125, 1e-17, 2.0],
        "tags": [["a", "b"], [], ["c"]],
    }
)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv", ".jsonl"])
def test_write_then_read_keeps_ids_text_and_missing_cells(tmp_path, suffix):
    path = write_table(FRAME, tmp_path / f"t{suffix}")
    back = read_table(path)
    assert list(back["item_id"]) == ["007", "NA", "x"]  # ids stay strings; "NA" is text, not missing
    assert back["text"].iloc[0] == 'a, "quoted" b' and back["text"].iloc[2] == "ü"
    if suffix in (".csv", ".tsv"):  # cells are text; an empty cell is the only missing value
        assert pd.isna(back["text"].iloc[1])
        assert [float(v) for v in back["score"]] == [0.125, 1e-17, 2.0]
        assert [json.loads(v) for v in back["tags"]] == [["a", "b"], [], ["c"]]  # a JSON list, not repr
    else:
        assert back["text"].iloc[1] == ""
        assert list(back["score"]) == [0.125, 1e-17, 2.0]
        assert [list(v) for v in back["tags"]] == [["a", "b"], [], ["c"]]
    assert not list(tmp_path.glob(".*.part"))


def test_integer_ids_with_gaps_read_as_strings_without_decimal_point(tmp_path):
    pd.DataFrame({"id": [1.0, np.nan, 30.0], "text": ["a", "b", "c"]}).to_parquet(tmp_path / "t.parquet")
    ids = read_table(tmp_path / "t.parquet")["id"]
    assert ids.iloc[0] == "1" and pd.isna(ids.iloc[1]) and ids.iloc[2] == "30"


def test_place_numbers_data_rows_from_one(tmp_path):
    (tmp_path / "t.csv").write_text("text,label\na,1\nb,0\n")
    frame = read_table(tmp_path / "t.csv", place=True)
    assert list(frame[SOURCE_ROW]) == [1, 2] and set(frame[SOURCE_FILE]) == {str(tmp_path / "t.csv")}


def test_json_array_and_json_lines_both_read(tmp_path):
    rows = [{"text": "a", "label": 1}, {"text": "b", "label": None}]
    (tmp_path / "array.json").write_text(json.dumps(rows, indent=2))
    (tmp_path / "lines.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    for name in ("array.json", "lines.json"):
        frame = read_table(tmp_path / name, required=["text", "label"])
        assert list(frame["text"]) == ["a", "b"] and frame["label"].iloc[0] == 1 and pd.isna(frame["label"].iloc[1])


def test_sep_overrides_the_suffix(tmp_path):
    (tmp_path / "t.txt").write_text("text;label\na;1\n")
    assert read_table(tmp_path / "t.txt", sep=";").to_dict("list") == {"text": ["a"], "label": ["1"]}


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("t.xml", "<a/>", "unknown file type '.xml' for the table; expected .parquet, .csv, .tsv or .jsonl"),
        ("t.jsonl", '{"a": 1}\n{"a": \n', "line 2 of the table is not valid JSON"),
        ("t.jsonl", '{"a": 1}\n[1, 2]\n', "line 2 of the table is not a JSON object"),
        ("t.json", '[{"a": 1}, 2]', "item 2 of the JSON array is not an object"),
        ("t.json", '[{"a": 1},\n {"a": }]', "is not valid JSON (line 2"),
        (
            "t.csv",
            "text;label\na;1\n",
            "missing column(s) text, label; found text;label; the header is one column "
            "'text;label', is the delimiter ';'?",
        ),
        ("t.parquet", "not parquet", "cannot read the table ("),
    ],
)
def test_bad_files_are_one_sentence_naming_the_file(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_table(path, required=["text", "label"] if name.endswith(".csv") else ())
    assert expected in str(caught.value) and str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_undecodable_bytes_name_the_line_and_suggest_an_encoding(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("text\nfine\ncaf\u00e9\n".encode("cp1252"))
    with pytest.raises(InputError, match=r"bytes at line 3 \(byte 13\) are not valid utf-8; .*--encoding cp1252"):
        read_table(path)
    assert read_table(path, encoding="cp1252")["text"].iloc[1] == "café"


def test_missing_file_folder_and_empty_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_table(tmp_path / "absent.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(InputError, match="is a folder; expected a file"):
        read_table(tmp_path / "dir.csv")
    (tmp_path / "empty.csv").write_text("")
    assert read_table(tmp_path / "empty.csv").empty
    with pytest.raises(InputError, match="the file is empty; expected a header and data rows"):
        read_table(tmp_path / "empty.csv", required=["text"])


def test_a_failed_write_leaves_the_old_file_untouched(tmp_path):
    path = write_table(FRAME, tmp_path / "t.jsonl")
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_table(pd.DataFrame({"x": [object()]}), path)
    assert path.read_bytes() == before and not list(tmp_path.glob(".*.part"))
    with pytest.raises(InputError, match="unknown file type '.xlsx'"):
        write_table(FRAME, tmp_path / "t.xlsx")


@pytest.mark.parametrize("umask, want", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_honour_the_umask_and_secrets_stay_private(tmp_path, umask, want):
    """Reports, tables and corpora get what `open()` would give (0o666 less the umask), so colleagues on a
    shared server can read them under umask 022; the annotation tokens file (token hashes) stays 0600.
    Run in a child process: the umask is the process's."""
    code = f"""
import os, stat, sys
from pathlib import Path
import pandas as pd
os.umask({umask:#o})
from mhaudit.report import AuditResult, Section, write_report
from mhaudit.tables.io import current_umask, write_table, write_text_atomic
from mhaudit.weak_supervision.annotate.tokens import TokenFile
out = Path(sys.argv[1])
assert current_umask() == {umask:#o}
write_table(pd.DataFrame({{"id": ["a"], "x": [1]}}), out / "t.parquet")
write_text_atomic(out / "note.txt", "hi")
write_report(AuditResult("T", [Section("S", "", {{"n": pd.DataFrame({{"a": [1]}})}})]), out / "report")
store = TokenFile(out / "tokens.json")
store.save()
for path in sorted(out.rglob("*")):
    if path.is_file():
        print(path.relative_to(out), oct(stat.S_IMODE(path.stat().st_mode)))
"""
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    modes = dict(line.split() for line in done.stdout.splitlines())
    assert modes.pop("tokens.json") == "0o600"
    assert set(modes) >= {"t.parquet", "note.txt", "report/report.html", "report/report.json", "report/tables/s--n.csv"}
    assert set(modes.values()) == {oct(want)}, modes
