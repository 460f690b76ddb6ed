"""Bad input: one clear sentence naming the file, row or column; exit code 2; no traceback; no output."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from tests.cli_checks import assert_one_sentence_failure

runner = CliRunner()


def run_import(tmp_path, content: bytes | str, *extra, name="posts.csv"):
    src = tmp_path / name
    src.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "out" / "corpus.parquet"
    result = runner.invoke(
        app, ["data", "import", "generic", str(src), "--platform", "reddit", "--out", str(out), *extra]
    )
    return result, out


def assert_clean_failure(result, out, *fragments):
    assert_one_sentence_failure(result, *fragments)
    assert not out.exists()
    assert not out.parent.exists() or list(out.parent.iterdir()) == []  # no temporary leftovers


def test_missing_file(tmp_path):
    out = tmp_path / "c.parquet"
    result = runner.invoke(
        app, ["data", "import", "generic", str(tmp_path / "nope.csv"), "--platform", "x", "--out", str(out)]
    )
    assert_clean_failure(result, out, "nope.csv: no such file")


def test_wrong_delimiter(tmp_path):
    result, out = run_import(tmp_path, "text;label\nhello;1\nbye;0\n")
    assert_clean_failure(result, out, "posts.csv", "missing column(s) text, label", "is the delimiter ';'?")


def test_missing_column(tmp_path):
    result, out = run_import(tmp_path, "text,tag\nhello,1\n")
    assert_clean_failure(result, out, "posts.csv", "missing column(s) label", "found text, tag")


def test_empty_or_whitespace_text(tmp_path):
    result, out = run_import(tmp_path, 'text,label\nhello,1\n"   ",0\n')
    assert_clean_failure(result, out, "posts.csv: row 2: text is empty or whitespace only")


def test_bytes_invalid_in_the_declared_encoding(tmp_path):
    result, out = run_import(tmp_path, b"text,label\nfine,1\ncaf\xe9 \x93quoted\x94,0\n")
    assert_clean_failure(result, out, "posts.csv", "line 3", "not valid utf-8", "--encoding")
    ok, out = run_import(
        tmp_path, b"text,label\nfine,1\ncaf\xe9 \x93quoted\x94,0\n", "--encoding", "cp1252", "--split", "test"
    )
    assert ok.exit_code == 0, ok.output


def test_label_unknown_to_the_mapping(tmp_path):
    result, out = run_import(tmp_path, "text,label\na,1\nb,0\nc,2\n", "--mapping", "stress-binary")
    assert_clean_failure(
        result, out, "posts.csv: row 3", "label '2' is not known to mapping 'stress-binary'", "expected one of 0, 1"
    )


def test_duplicate_ids(tmp_path):
    result, out = run_import(tmp_path, "pid,text,label\n7,a,1\n8,b,0\n7,c,1\n", "--id-col", "pid", "--split", "test")
    assert_clean_failure(result, out, "posts.csv: row 3", "id '7' appears more than once")


def test_a_split_left_with_one_class(tmp_path):
    rows = "text,label\n" + "".join(f"t{i},0\n" for i in range(9)) + "lonely,1\n"
    result, out = run_import(tmp_path, rows)
    assert_clean_failure(result, out, "would hold only class '0'", "each split needs at least two classes")


def test_empty_corpus(tmp_path):
    result, out = run_import(tmp_path, "text,label\n")
    assert_clean_failure(result, out, "posts.csv", "the corpus would be empty")


def test_describe_of_a_file_that_is_not_a_corpus(tmp_path):
    bad = tmp_path / "c.parquet"
    bad.write_text("not parquet")
    result = runner.invoke(app, ["data", "describe", str(bad)])
    assert result.exit_code == 2 and "not a readable Parquet file" in result.stderr


def test_a_failed_import_keeps_the_previous_output_and_the_input(tmp_path):
    good = "text,label\n" + "".join(f"t{i},{i % 2}\n" for i in range(40))
    result, out = run_import(tmp_path, good)
    assert result.exit_code == 0, result.output
    before = out.read_bytes()
    result, out = run_import(tmp_path, 'text,label\na,1\n"  ",0\n')
    assert result.exit_code == 2
    assert out.read_bytes() == before  # nothing the user had is lost
    assert (tmp_path / "posts.csv").read_text() == 'text,label\na,1\n"  ",0\n'
    assert sorted(p.name for p in out.parent.iterdir()) == ["corpus.parquet"]


def test_the_installed_entry_point_prints_one_line_and_exits_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mhaudit", "data", "describe", str(tmp_path / "none.parquet")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such file" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["data", "import", "nosuchsource", "x.csv", "--out", "o.parquet"], "unknown source 'nosuchsource'"),
        (["data", "import", "dreaddit", "x.csv", "--out", "o.parquet", "--mapping", "nope"], "x.csv: no such file"),
    ],
)
def test_unknown_names(args, fragment):
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and fragment in result.stderr


def test_messages_with_brackets_are_printed_verbatim(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "m"\nclasses = ["x"]\n[map]\nx = "10"\n')
    result, out = run_import(tmp_path, "text,label\na,1\n", "--mapping", str(bad))
    assert_clean_failure(result, out, "[map] x must be a list of strings")
