"""The fault battery (docs/faults.md): every writer x every fault, one table.

Each case starts from an earlier good output in its own folder, runs the writer over it under the fault, and
checks that (a) the writer failed with the right exit code (2 for a user-side fault; -9 for kill -9), (b) it
said so in one sentence naming the file, without a traceback, (c) the earlier output is byte-identical (an
SQLite store: row for row, after `PRAGMA integrity_check`) and (d) nothing new was left in the folder (kill -9
may leave only the writer's hidden temporary file; SQLite's -wal/-shm must be gone after the next clean open).
Setup runs in this process, once per writer; the faults that need a process of their own (kill -9, a dropped
capability, a file-size limit) run the writer in a subprocess.
"""

from __future__ import annotations

import errno
import json
import signal
from pathlib import Path

import pytest

from mhaudit.cli import app
from tests.faults import harness
from tests.faults.writers import PART, WRITERS, Writer, runner

FAULTS = ("kill-9", "corrupt-input", "read-only", "full-disk")
BY_NAME = {w.name: w for w in WRITERS}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Each writer's inputs and earlier output, made once for the module (and only for the writers asked for)."""
    done: dict[str, Writer] = {}

    def get(name: str) -> Writer:
        if name not in done:
            writer, root = BY_NAME[name], tmp_path_factory.mktemp(name)
            writer.prepare(root)
            writer.template = root / "template"
            assert any(writer.template.iterdir())
            done[name] = writer
        return done[name]

    return get


def _in_process(args: list[str], capsys) -> tuple[int, str]:
    """A corrupt-input case needs no subprocess: the command (or the post-store driver) in this process."""
    if args[0] == "cli":
        result = runner.invoke(app, args[1:])
        return result.exit_code, result.stderr
    from tests.faults.driver import post_store

    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        post_store(args[1], int(args[2]), int(args[3]))
    return stop.value.code, capsys.readouterr().err


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("name", [w.name for w in WRITERS])
def test_fault(name, fault, prepared, tmp_path, capsys):
    writer = prepared(name)
    out = harness.copy_folder(writer.template, tmp_path / "out")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = writer.args(out)
    if fault == "corrupt-input":
        args, named = writer.corrupt(out, scratch)
    store = writer.sqlite[0] if writer.sqlite else None
    before = harness.snapshot(out)
    content = writer.content(out) if store and fault != "corrupt-input" else None  # a cut store: bytes only

    if fault == "kill-9":
        done = harness.kill_at(args, writer.pause, scratch)
        assert done.returncode == -signal.SIGKILL, done.stderr
    elif fault == "corrupt-input":
        code, stderr = _in_process(args, capsys)
        assert code == 2, stderr
        harness.one_sentence(stderr, named)
    else:
        if fault == "read-only":
            harness.read_only(out)
            try:
                done = harness.run(args, drop_caps=True)
            finally:
                harness.writable(out)
        else:
            done = harness.run(args, fsize=writer.fsize)
        assert done.returncode == 2, done.stdout + done.stderr
        harness.one_sentence(done.stderr, str(out))

    after = harness.snapshot(out)
    compared = [k for k in before if content is None or k != store]
    changed = sorted(k for k in compared if after.get(k) != before[k])
    assert not changed, f"the earlier output changed: {changed}"
    temporary = PART if fault == "kill-9" else ()  # a killed writer cannot remove its hidden temporary file
    sqlite_own = harness.SQLITE_SIDE_FILES if store else ()  # SQLite's -wal/-shm: the next open recovers them
    assert harness.strays(out, before, allowed=temporary + sqlite_own) == [], "stray files in the output folder"
    if content is not None:  # the store opens, passes integrity_check and holds exactly the earlier rows
        assert writer.content(out) == content
        assert harness.strays(out, before, allowed=temporary) == [], "SQLite left -wal/-shm after a clean open"


def test_the_table_is_complete():
    """docs/faults.md tables every writer x fault, with the count of cases."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "faults.md").read_text(encoding="utf-8")
    assert f"{len(WRITERS)} writers × {len(FAULTS)} faults = {len(WRITERS) * len(FAULTS)} cases" in doc
    for writer in WRITERS:
        assert f"| {writer.name} |" in doc, writer.name


def test_a_real_enospc_is_one_sentence_and_keeps_the_earlier_file(tmp_path):
    """RLIMIT_FSIZE gives EFBIG; a full disk gives ENOSPC, here the kernel's own from /dev/full."""
    from mhaudit.core.errors import OutputError
    from mhaudit.tables.io import atomic_path

    final = tmp_path / "table.csv"
    final.write_text("earlier\n")
    with pytest.raises(OutputError) as caught, atomic_path(final) as tmp:
        tmp.write_text("later\n")
        with open("/dev/full", "w") as full:
            full.write("x" * 10_000)
            full.flush()
    assert str(caught.value) == (
        f"{final}: cannot write it: the disk is full; free some space (or raise the "
        "file-size limit, ulimit -f) and run again; the earlier file, if any, is unchanged"
    )
    assert final.read_text() == "earlier\n" and [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_another_os_error_stays_a_bug(tmp_path):
    """Only the faults a user can fix become a sentence; any other OSError keeps its traceback (exit code 1)."""
    from mhaudit.tables.io import atomic_path

    with pytest.raises(FileNotFoundError, match="gone"), atomic_path(tmp_path / "x.csv") as tmp:
        raise FileNotFoundError(errno.ENOENT, "gone", str(tmp))
    assert not any(tmp_path.iterdir())


def test_a_damaged_benchmark_cache_entry_is_trained_again(prepared, tmp_path):
    """The cache is the benchmark's own input on a re-run: an entry cut short is trained again and written over."""
    writer = prepared("benchmark-cache")
    out = harness.copy_folder(writer.template, tmp_path / "out")
    (entry,) = (out / "jobs").glob("*.json")
    harness.truncate_copy(writer.template / "jobs" / entry.name, entry)
    result = runner.invoke(app, [a for a in writer.args(out)[1:] if a != "--no-resume"])
    assert result.exit_code == 0, result.output
    assert "read from the cache" not in result.stderr and "trained in" in result.stderr
    assert json.loads(entry.read_text())["logits"]
