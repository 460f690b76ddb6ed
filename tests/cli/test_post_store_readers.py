"""Only the collector creates a post store: a command that reads one, given a path where there is none (a typo),
says so in one sentence, exits 2 and leaves no file behind (docs/collect.md)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.core.errors import InputError
from mhaudit.weak_supervision.collect.store import PostStore

runner = CliRunner()
MISSING = "no such post store: {path} (collect posts first with mhaudit collect bluesky)"


def _invoke(args):
    from mhaudit.cli import app

    return runner.invoke(app, [str(a) for a in args])


def test_collect_summary_names_a_missing_store_and_creates_nothing(tmp_path):
    store = tmp_path / "post.sqlite"
    result = _invoke(["collect", "summary", "--db", store])
    assert result.exit_code == 2, result.output
    assert MISSING.format(path=store) in " ".join(result.output.split())
    assert list(tmp_path.iterdir()) == []


def test_annotate_with_a_missing_store_names_it_and_creates_nothing(tmp_path):
    sample = tmp_path / "sample.csv"
    pd.DataFrame({"item_id": ["at://x/app.bsky.feed.post/1"], "task": ["depression"]}).to_csv(sample, index=False)
    store = tmp_path / "post.sqlite"
    result = _invoke(
        ["annotate", "--sample", sample, "--labels", tmp_path / "labels.sqlite", "--annotator", "ann", "--store", store]
    )
    assert result.exit_code == 2, result.output
    assert MISSING.format(path=store) in " ".join(result.output.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.csv"]


def test_a_reader_refuses_an_empty_file_and_leaves_it_as_it_was(tmp_path):
    empty = tmp_path / "post.sqlite"
    empty.touch()
    with pytest.raises(InputError, match="no such post store"):
        PostStore(empty, create=False)
    assert empty.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["post.sqlite"]
    with PostStore(empty) as store:  # the collector makes its store there
        assert store.count() == 0
    with PostStore(empty, create=False) as store:  # and then readers open it
        assert store.count() == 0
