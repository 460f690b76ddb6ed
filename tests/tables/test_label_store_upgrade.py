"""A label store written before label stores were stamped (schema version 0: tests/fixtures/stores/README.md) is
migrated in place on open: a backup copy `<name>.v0.bak` first, then the stamp, with every label as it was. One
stamped with a newer version is refused with one sentence and left byte for byte as it was."""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import subprocess
import sys
import re
import shutil
from contextlib import closing
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.core.errors import InputError
from mhaudit.core.store_versions import StoreMigratedWarning
from mhaudit.tables import label_store
from mhaudit.tables.label_store import LabelStore, read_labels

FIXTURE = Path(__file__).parents[1] / "fixtures" / "stores" / "labels.2b85693.sqlite"
NEWER = (
    "this label store was written by a newer mhaudit (schema version 3; this mhaudit reads version 2); "
    "upgrade mhaudit (pip install -U mhaudit) to open it"
)
runner = CliRunner()


def _raw(path: Path) -> tuple[int, list]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:  # `with conn` alone does not close
        return (
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("SELECT * FROM labels ORDER BY item_id, labeler").fetchall(),
        )


def _with_probability(rows: list) -> list:
    """The rows as a version 2 store holds them: a null probability after created_at."""
    return [(*row, None) for row in rows]


def _flat(text: str) -> str:
    return "".join(text.split())


def test_unstamped_label_store_is_migrated_with_a_backup(tmp_path):
    path = Path(shutil.copy(FIXTURE, tmp_path / "labels.sqlite"))
    version, rows = _raw(path)
    assert version == 0 and len(rows) == 600
    with pytest.warns(
        StoreMigratedWarning,
        match=re.escape(
            "labels.sqlite: this label store was migrated from "
            "schema version 0 to 2; the file as it was is kept as "
            "labels.sqlite.v0.bak"
        ),
    ):
        store = LabelStore(path)
    with store:
        assert store.backup == tmp_path / "labels.sqlite.v0.bak"
        frame = store.frame()
        assert store.labelled("si", "ann1") == {f"item{i}" for i in range(300)}
    assert _raw(path) == (2, _with_probability(rows))  # stamped, rebuilt, every label as it was
    assert _raw(store.backup) == (0, rows)  # the backup: the old file, still version 0
    assert len(frame) == 600 and frame["value"].isna().sum() == 1 and frame["value"].sum() == 300
    ann1 = frame[frame["labeler"] == "ann1"].set_index("item_id")["value"]
    assert ann1["item0"] == 0 and ann1["item1"] == 1 and ann1.sum() == 150
    assert frame["tags"].dropna().tolist() == ['["SYNTHETIC"]', '["SYNTHETIC"]']
    backup_bytes = store.backup.read_bytes()
    with LabelStore(path) as again:  # migrated once: no second backup, no warning
        assert again.backup is None
    assert store.backup.read_bytes() == backup_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.sqlite", "labels.sqlite.v0.bak"]  # nothing else


def test_unstamped_label_store_through_the_cli(tmp_path):
    path = Path(shutil.copy(FIXTURE, tmp_path / "labels.sqlite"))
    rows = _raw(path)[1]
    result = runner.invoke(app, ["labels", "export", "--labels", str(path), "--out", str(tmp_path / "out.csv")])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert _flat("this label store was migrated from schema version 0 to 2") in _flat(result.output)
    exported = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert len(exported) == 600 and exported["item_id"].nunique() == 300
    assert _raw(path) == (2, _with_probability(rows)) and (tmp_path / "labels.sqlite.v0.bak").exists()
    assert read_labels(path)["value"].astype("float").sum() == 300  # ann1, llm-a: 150 ones each (llm-a's item3: null)


def test_newer_label_store_is_refused_untouched(tmp_path, monkeypatch):
    path = tmp_path / "newer.sqlite"
    with monkeypatch.context() as patch:
        patch.setattr(label_store, "SCHEMA_VERSION", 3)
        with LabelStore(path) as store:
            store.add([{"item_id": "i1", "task": "si", "labeler": "ann1", "kind": "human", "value": 1}])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(InputError, match=re.escape(f"newer.sqlite: {NEWER}")):
        LabelStore(path)
    result = runner.invoke(app, ["labels", "export", "--labels", str(path), "--out", str(tmp_path / "out.csv")])
    assert result.exit_code == 2 and "Traceback" not in result.output and _flat(NEWER) in _flat(result.output)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert not (tmp_path / "out.csv").exists() and not list(tmp_path.glob("*.bak"))


def test_a_migration_that_cannot_finish_leaves_the_store_as_it_was(tmp_path):
    """The disk fills during the backup copy: RLIMIT_FSIZE of 40 KiB, as the fault battery does, above the 32 KiB
    that SQLite's -shm file needs and below the store's 72 KiB."""
    path = Path(shutil.copy(FIXTURE, tmp_path / "labels.sqlite"))
    before = path.read_bytes()

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (40960, 40960))

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mhaudit",
            "labels",
            "export",
            "--labels",
            str(path),
            "--out",
            str(tmp_path / "out.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_files,
        env={**os.environ, "COLUMNS": "500"},
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        "labels.sqlite: this label store has schema version 0 and migrating it to version 2 failed (disk I/O "
        "error); it is unchanged: make the file and its folder writable (or free some disk space) and "
        "run again"
    ) in result.stderr
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["labels.sqlite"]


def test_four_processes_opening_it_at_once_migrate_it_once(tmp_path):
    path = Path(shutil.copy(FIXTURE, tmp_path / "labels.sqlite"))
    rows = _raw(path)[1]
    code = (
        "import sys, warnings; from mhaudit.tables.label_store import LabelStore; "
        "warnings.simplefilter('ignore'); store = LabelStore(sys.argv[1]); "
        "print(len(store.frame()), store.backup is not None); store.close()"
    )
    opened = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    answers = sorted(p.communicate(timeout=120)[0].split() for p in opened)
    assert all(p.returncode == 0 for p in opened)
    assert answers == [["600", "False"]] * 3 + [["600", "True"]]  # one of them migrated, the others read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.sqlite", "labels.sqlite.v0.bak"]
    assert _raw(path) == (2, _with_probability(rows)) and _raw(tmp_path / "labels.sqlite.v0.bak") == (0, rows)
