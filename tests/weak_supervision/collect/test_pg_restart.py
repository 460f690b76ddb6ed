"""The real PostgreSQL server of pg_server.py restarted (`pg_ctl restart -m fast`, then `-m immediate`) or stopped
for longer than the retry budget while the collector writes a known stream from a local relay and while
`mhaudit audit monitor` scores a store of 3,000 SYNTHETIC posts: the store reconnects and goes on, or stops with
one sentence and a rerun completes; either way exactly the stream's matching posts are stored (none lost, none
twice) and the scores equal an undisturbed run's. And the watchdog that stops a server whose test process died."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.collector import CollectOptions, Collector, PostFilter
from mhaudit.weak_supervision.collect.store import PostStore
from tests.audits.test_monitor import _monitor, _scores, _store, fixture_setup  # noqa: F401  (fixture)
from tests.weak_supervision.collect.pg_server import PASSWORD, fixture_pg_server, fixture_pg_url  # noqa: F401  (fixtures)
from tests.weak_supervision.collect.stream_server import StreamServer, jetstream_frames
from tests.weak_supervision.collect.test_collector import FAST_RETRY, MH, _bad, _cli, stored_rkeys, stream

SRC = Path(__file__).resolve().parents[3] / "src"
CYCLES = 200  # 1,600 events, 600 matching posts


def _count(url: str, table: str) -> int:
    """Rows in `table`, from a connection of its own; -1 while the server is away (or the table not there yet)."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
            return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except psycopg.Error:
        return -1


def _wait_for(url: str, table: str, at_least: int, *, proc=None, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout  # a guard against a hang only; a loaded machine is slow
    while time.monotonic() < deadline and (proc is None or proc.poll() is None):
        n = _count(url, table)
        if n >= at_least:
            return n
        time.sleep(0.02)
    raise AssertionError(f"{table} never reached {at_least} rows")


def _env(**extra: str) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "COLUMNS": "200",
        **extra,
    }


def _one_sentence(stderr: str, *fragments: str) -> str:
    """The last line of stderr: the command's one sentence (earlier lines are its progress notes)."""
    assert "Traceback" not in stderr and PASSWORD not in stderr, stderr
    message = stderr.strip().splitlines()[-1]
    assert message.startswith("error: lost the connection to the PostgreSQL post store"), message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------------------------------------ the collector
def test_collector_rides_out_a_fast_and_an_immediate_restart(pg_server, pg_url):
    events, expected = stream(CYCLES)
    with StreamServer(jetstream_frames(events), delay_s=0.004) as relay, PostStore(pg_url) as store:
        options = CollectOptions(retry=FAST_RETRY, duration_s=40, batch_size=10, flush_every_s=0.2)
        collector = Collector(store, PostFilter([MH], langs=options.langs), relay=relay.url, options=options, seed=0)
        thread = threading.Thread(target=collector.run)
        thread.start()
        at_restart = []
        try:
            for mode, at_least in (("fast", 150), ("immediate", 350)):
                at_restart.append(_wait_for(pg_url, "posts", at_least))
                pg_server.pg_ctl("-m", mode, "restart")
            _wait_for(pg_url, "posts", len(expected))
        finally:
            collector.stop()
            thread.join(timeout=120)
        stored, reconnects = stored_rkeys(store), store.dialect.reconnects
    assert reconnects == 2  # one new connection per restart
    assert 150 <= at_restart[0] < 350 <= at_restart[1] < len(expected)  # both restarts landed mid-stream
    assert len(stored) == len(set(stored)) == len(expected) == 600 and set(stored) == set(expected)
    assert collector.stats.stop_reason == "stopped" and len(relay.requests) == 1  # the relay never noticed


def test_collect_gives_up_in_one_sentence_after_the_budget_and_a_rerun_completes(pg_server, pg_url):
    events, expected = stream(CYCLES)
    db = pg_url.rsplit("/", 1)[1]
    with StreamServer(jetstream_frames(events), delay_s=0.004) as relay:
        command = [
            sys.executable,
            "-m",
            "mhaudit",
            "collect",
            "bluesky",
            "--db",
            pg_url,
            "--lexicon",
            "mh",
            "--relay",
            relay.url,
            "--batch-size",
            "10",
            "--duration",
            "60s",
            "--db-retry",
            "1",
        ]
        proc = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            before = _wait_for(pg_url, "posts", 100, proc=proc)
            stopped = time.monotonic()
            pg_server.pg_ctl("-m", "fast", "stop")
            _, stderr = proc.communicate(timeout=120)
            waited = time.monotonic() - stopped
        finally:
            if proc.poll() is None:
                proc.kill()
            pg_server.pg_ctl("start")
        assert proc.returncode == 2
        _one_sentence(
            stderr, f"postgresql://127.0.0.1:{pg_server.port}/{db}", "within 1 s", "run the same command again"
        )
        assert 1 <= waited < 60  # its 1 s budget, then it stops (the sentence says 1 s; generous: a busy machine)
        with PostStore(pg_url) as store:
            stored = set(stored_rkeys(store))
        assert before <= len(stored) < 600 and stored <= set(expected)
        done = subprocess.run(
            command + ["--max-posts", str(600 - len(stored))], env=_env(), capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
    with PostStore(pg_url) as store:
        rkeys = stored_rkeys(store)
    assert len(rkeys) == len(set(rkeys)) == 600 and set(rkeys) == set(expected)


def test_a_bad_retry_budget_is_one_sentence(pg_url, monkeypatch):
    monkeypatch.setenv("MHAUDIT_DB_RETRY_S", "soon")
    with pytest.raises(
        InputError,
        match=r"budget \(--db-retry or MHAUDIT_DB_RETRY_S\) must be 0 or more seconds, "
        "not 'soon'",
    ):
        PostStore(pg_url)
    monkeypatch.delenv("MHAUDIT_DB_RETRY_S")
    _bad(
        _cli("bluesky", "--db", pg_url, "--lexicon", "mh", "--relay", "ws://127.0.0.1:1", "--db-retry", "-1"),
        "must be 0 or more seconds, not -1.0",
    )


def test_a_lock_timeout_on_a_live_connection_is_not_waited_for(pg_url):
    """A lock timeout is an OperationalError too, but the connection is alive: one sentence at once, no retry."""
    import psycopg

    with PostStore(pg_url, timeout=1) as store, psycopg.connect(pg_url) as other:
        other.execute("LOCK TABLE posts IN EXCLUSIVE MODE")  # held until `other` ends its transaction
        started = time.monotonic()
        with pytest.raises(InputError, match="cannot write to the post store: .*lock timeout.*the batch was rolled"):
            store.commit_batch([{"uri": "at://did:plc:x/app.bsky.feed.post/1", "did": "did:plc:x"}], 1)
        assert time.monotonic() - started < 10 and store.dialect.reconnects == 0


# ------------------------------------------------------------------------------------------ the monitor
@pytest.fixture(scope="module")
def posts(setup):
    _, texts = setup
    return simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=6, per_window=500, seed=7))


@pytest.fixture(scope="module")
def undisturbed(setup, posts, pg_server, tmp_path_factory):
    """The scores of a run that nothing disturbed."""
    work, _ = setup
    clean = pg_server.url(pg_server.create_database())
    _store(clean, posts)
    assert _monitor(work, clean, tmp_path_factory.mktemp("clean")).exit_code == 0
    return _scores(clean, work)


@pytest.mark.parametrize("fault", ["restart fast", "restart immediate", "stop"])
def test_monitor_scores_through_a_restart_equal_to_an_undisturbed_run(
    setup, posts, undisturbed, pg_server, pg_url, tmp_path, fault
):
    work, _ = setup
    _store(pg_url, posts)
    command = [
        sys.executable,
        "-m",
        "mhaudit",
        "audit",
        "monitor",
        "--store",
        pg_url,
        "--model",
        str(work / "model"),
        "--reference",
        str(work / "reference.parquet"),
        "--window",
        "1d",
        "--positive",
        "depression",
        "--n-boot",
        "100",
        "--out",
        str(tmp_path / "report"),
    ]
    # slow batches (0.2 s after each commit of 256), so the fault lands mid-run; a budget of 1 s for `stop`
    env = _env(MHAUDIT_MONITOR_BATCH_DELAY="0.2", MHAUDIT_DB_RETRY_S="1" if fault == "stop" else "30")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        at_fault = _wait_for(pg_url, "scores", 256, proc=proc)
        if fault == "stop":
            pg_server.pg_ctl("-m", "fast", "stop")
            _, stderr = proc.communicate(timeout=120)
            pg_server.pg_ctl("start")
            assert proc.returncode == 2
            _one_sentence(stderr, f"postgresql://127.0.0.1:{pg_server.port}/", "within 1 s")
            partial = _count(pg_url, "scores")
            assert at_fault <= partial < len(posts) and partial % 256 == 0  # whole batches only
            proc = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        else:
            pg_server.pg_ctl("-m", fault.split()[1], "restart")
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        if _count(pg_server.url("postgres"), "pg_database") < 0:
            pg_server.pg_ctl("start")
    assert proc.returncode == 0, stderr
    assert at_fault < len(posts)  # the fault landed mid-run
    assert _count(pg_url, "scores") == len(posts) == 3000  # each post scored once
    pd.testing.assert_frame_equal(_scores(pg_url, work), undisturbed)


# ------------------------------------------------------------------------------------------ the watchdog
WATCHED = textwrap.dedent("""
    import sys, time
    from tests.weak_supervision.collect.pg_server import start_server
    server = start_server()
    print(server.port, server.root, flush=True)
    time.sleep(120)
""")


def test_a_server_whose_test_process_was_killed_is_stopped_by_its_watchdog(pg_server):
    repo = SRC.parent
    env = _env(PYTHONPATH=f"{SRC}{os.pathsep}{repo}")
    proc = subprocess.Popen([sys.executable, "-c", WATCHED], env=env, cwd=repo, stdout=subprocess.PIPE, text=True)
    try:
        port, root = proc.stdout.readline().split()
        with socket.create_connection(("127.0.0.1", int(port)), timeout=60):
            pass  # serving
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
        deadline = time.monotonic() + 120  # the event is the folder's removal; the bound only stops a hang
        while time.monotonic() < deadline and Path(root).exists():
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not Path(root).exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
