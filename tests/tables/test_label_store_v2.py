"""Schema version 2 of the label store: kind `combined` and the column `probability` (a label model's probability
of class 1). A version 1 store written by the code before it (tests/fixtures/stores/labels.e86beef.sqlite, README
there) is rebuilt on open, every label kept, after a backup copy; label files carry `probability` when a row has
one."""

from __future__ import annotations

import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.store_versions import StoreMigratedWarning
from mhaudit.tables.label_store import LabelStore, read_labels, write_labels

FIXTURE = Path(__file__).parents[1] / "fixtures" / "stores" / "labels.e86beef.sqlite"
COMBINED = {"item_id": "item0", "task": "si", "labeler": "combined-majority", "kind": "combined", "value": 1}


def _raw(path: Path) -> tuple[int, list, str]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return (
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("SELECT * FROM labels ORDER BY item_id, labeler").fetchall(),
            conn.execute("SELECT sql FROM sqlite_master WHERE name = 'labels'").fetchone()[0],
        )


def test_a_version_1_store_is_rebuilt_with_every_label(tmp_path):
    path = Path(shutil.copy(FIXTURE, tmp_path / "labels.sqlite"))
    version, rows, schema = _raw(path)
    assert version == 1 and len(rows) == 600 and "combined" not in schema and "probability" not in schema
    with pytest.warns(StoreMigratedWarning, match=re.escape("migrated from schema version 1 to 2")):
        store = LabelStore(path)
    with store:
        assert store.backup == tmp_path / "labels.sqlite.v1.bak"
        assert store.add([{**COMBINED, "probability": 0.75}]) == 1
        frame = store.frame()
    version, after, schema = _raw(path)
    assert version == 2 and "'combined'" in schema and "probability REAL" in schema
    assert [row[:-1] for row in after if row[2] != "combined-majority"] == rows  # every label as it was
    assert all(row[-1] is None for row in after if row[2] != "combined-majority")
    assert len(frame) == 601 and frame["probability"].dtype == "float64"
    assert frame["probability"].notna().sum() == 1 and frame["probability"].max() == 0.75
    assert frame["value"].sum() == 301 and frame["value"].isna().sum() == 1
    assert _raw(store.backup)[:2] == (1, rows)  # the backup: the old file, still version 1
    with closing(sqlite3.connect(store.backup)) as old, pytest.raises(sqlite3.IntegrityError):
        old.execute("INSERT INTO labels VALUES ('x', 'si', 'c', 'combined', 1, NULL, NULL, NULL, NULL, NULL, 'now')")


def test_probability_is_checked(tmp_path):
    with LabelStore(tmp_path / "labels.sqlite") as store:
        with pytest.raises(InputError, match=re.escape("label 1: probability 1.5 is not a number between 0 and 1")):
            store.add([{**COMBINED, "probability": 1.5}])
        with pytest.raises(InputError, match="probability 'high' is not a number between 0 and 1"):
            store.add([{**COMBINED, "probability": "high"}])
        assert store.frame().empty


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_label_files_keep_probability_and_leave_it_out_when_unset(tmp_path, suffix):
    weak = {"item_id": "item0", "task": "si", "labeler": "llm-a", "kind": "llm", "value": 0}
    both = pd.DataFrame([weak, {**COMBINED, "probability": 0.625}])
    back = read_labels(write_labels(both, tmp_path / f"both{suffix}"))
    assert back["probability"].tolist()[1] == 0.625 and pd.isna(back["probability"].tolist()[0])
    assert back["kind"].tolist() == ["llm", "combined"]
    plain = write_labels(
        read_labels(write_labels(pd.DataFrame([weak]), tmp_path / f"weak{suffix}")), tmp_path / "w2.csv"
    )
    assert "probability" not in pd.read_csv(plain).columns  # a file without combined labels: the columns it had
    assert read_labels(plain)["probability"].isna().all()


def test_replace_labeler_makes_a_labeler_anew_in_one_transaction(tmp_path):
    other = {**COMBINED, "labeler": "llm-a", "kind": "llm"}
    with LabelStore(tmp_path / "labels.sqlite") as store:
        store.add([COMBINED, {**COMBINED, "item_id": "item1"}, other])
        assert store.replace_labeler("si", "combined-majority", [{**COMBINED, "value": 0, "probability": 0.25}]) == 1
        frame = store.frame()
        assert store.labelled("si", "combined-majority") == {"item0"}  # item1's old label is gone
        assert frame.set_index("labeler").loc["combined-majority", "probability"] == 0.25
        assert store.labelled("si", "llm-a") == {"item0"}  # another labeler is untouched
        with pytest.raises(ValueError, match="label 1 is not of task 'si' and labeler 'combined-majority'"):
            store.replace_labeler("si", "combined-majority", [other])
        with pytest.raises(InputError, match="probability 2 is not a number between 0 and 1"):
            store.replace_labeler("si", "combined-majority", [{**COMBINED, "probability": 2}])
        assert store.frame().equals(frame)  # a refused replacement changes nothing
