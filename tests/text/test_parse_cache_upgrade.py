"""Parse caches of earlier mhaudit versions (tests/fixtures/stores/README.md) met by this one.

The SQLite cache written before caches were stamped (schema version 0) is migrated in place on open, after a
backup copy, and its parses are read back, not parsed again. The older Parquet cache (one file per list of texts,
keyed by the whole list, without its texts) is never read: `mhaudit cache info` says so and `cache clear` removes
it. A cache stamped with a newer version is refused with one sentence and left byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from contextlib import closing
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.core.store_versions import StoreMigratedWarning
from mhaudit.text import parse_cache
from mhaudit.text.parse import parse_texts
from mhaudit.text.parse_cache import ParseCache, cache_report

FIXTURES = Path(__file__).parents[1] / "fixtures" / "stores"
TEXTS = [f"SYNTHETIC post {i}: I could not sleep again and everything feels heavy." for i in range(3)]
NEWER = (
    "this parse cache was written by a newer mhaudit (schema version 2; this mhaudit reads version 1); "
    "upgrade mhaudit (pip install -U mhaudit) to open it"
)
runner = CliRunner()


def _flat(text: str) -> str:
    return "".join(text.split())


def _raw(path: Path) -> tuple[int, list]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:  # `with conn` alone does not close
        return (
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("SELECT key, model, n_tokens, truncated, tokens FROM parses ORDER BY key").fetchall(),
        )


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MHAUDIT_CACHE", str(tmp_path))
    (tmp_path / "parses").mkdir()
    return tmp_path / "parses"


def test_unstamped_cache_is_migrated_and_its_parses_read_back(cache_dir):
    path = Path(shutil.copy(FIXTURES / "parses.2b85693.sqlite", cache_dir / "parses.sqlite"))
    version, rows = _raw(path)
    assert version == 0 and len(rows) == 3
    with pytest.warns(
        StoreMigratedWarning,
        match=re.escape(
            "this parse cache was migrated from schema version 0 "
            "to 1; the file as it was is kept as "
            "parses.sqlite.v0.bak"
        ),
    ):
        ParseCache(path).close()
    assert _raw(path) == (1, rows) and _raw(cache_dir / "parses.sqlite.v0.bak") == (0, rows)
    cached = parse_texts(TEXTS, n_process=1)
    assert cached.parsed_now == 0  # every text read from the old rows, none parsed again
    fresh = parse_texts(TEXTS, n_process=1, use_cache=False)
    assert cached.offsets.tolist() == fresh.offsets.tolist() and cached.model == fresh.model
    for name, column in fresh.columns.items():
        assert np.array_equal(cached.columns[name], column), name
    assert _raw(path) == (1, rows)


def test_parquet_cache_is_never_read_and_cleared(cache_dir):
    shutil.copy(FIXTURES / "parses.2b85693.sqlite", cache_dir / "parses.sqlite")
    shutil.copy(FIXTURES / "parses.ac4e2b0.parquet", cache_dir / "c0766cce55adc418f666ecbf5d80e00d.parquet")
    with pytest.warns(StoreMigratedWarning):
        report = cache_report()
    assert report["texts"] == 3 and report["legacy_files"] == 1
    info = runner.invoke(app, ["cache", "info"])
    assert info.exit_code == 0 and _flat("3 texts") in _flat(info.output)
    assert _flat(
        "1 Parquet files beside it are an older mhaudit's parse cache, which this one never reads; "
        "mhaudit cache clear removes them"
    ) in _flat(info.output)
    assert runner.invoke(app, ["cache", "clear"]).exit_code == 0
    assert list(cache_dir.iterdir()) == []  # the cache, its backup and the Parquet file


def test_newer_cache_is_refused_untouched(cache_dir, monkeypatch):
    path = cache_dir / "parses.sqlite"
    with monkeypatch.context() as patch:
        patch.setattr(parse_cache, "SCHEMA_VERSION", 2)
        ParseCache(path).close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(InputError, match=re.escape(f"parses.sqlite: {NEWER}")):
        ParseCache(path)
    with pytest.raises(InputError, match=re.escape(NEWER)):
        parse_texts(TEXTS, n_process=1)  # an audit stops with the sentence, it does not go on without its cache
    info = runner.invoke(app, ["cache", "info"])
    assert info.exit_code == 2 and "Traceback" not in info.output and _flat(NEWER) in _flat(info.output)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest and sorted(p.name for p in cache_dir.iterdir()) == [
        "parses.sqlite"
    ]
