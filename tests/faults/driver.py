"""Run one writer in this process, optionally stopping it at a hook so the test can kill -9 it there.

    python tests/faults/driver.py [--pause rename|sqlite:N] [--marker FILE] cli ARGS...        # mhaudit ARGS
    python tests/faults/driver.py [--pause ...] [--marker FILE] post-store STORE N CURSOR      # PostStore API

Hooks (the process writes FILE when it reaches one, then sleeps until it is killed):

* ``rename``: an audit hook on ``os.rename`` (``os.replace`` raises it): the first rename of a ``*.part`` temporary
  file. Every temporary file of the write is complete then, and nothing is published under its final name yet;
  a writer that wrote the final name in place would have half a file there.
* ``sqlite:N``: a progress handler on every SQLite connection: inside a transaction that has already inserted N
  rows, before it commits.

The post store has no offline command (``mhaudit collect bluesky`` needs a relay), so ``post-store`` commits one
batch of N posts through the public API, behind the same ``guarded`` layer every command uses: an InputError is
one sentence on stderr and exit code 2, as from the CLI.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time

PAUSE_SECONDS = 300


def _stop_here(marker: str) -> None:
    with open(marker, "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(PAUSE_SECONDS)  # the test kills us here
    os._exit(99)  # never reached in a passing test: the writer must not go on


def _pause_at_rename(marker: str) -> None:
    def hook(event: str, args: tuple) -> None:
        if event == "os.rename" and str(args[0]).endswith(".part"):
            _stop_here(marker)

    sys.addaudithook(hook)


def _pause_in_transaction(marker: str, rows: int) -> None:
    connect = sqlite3.connect

    def connect_and_watch(*args, **kwargs):
        conn = connect(*args, **kwargs)
        start = conn.total_changes  # an existing store: no rows written by opening it

        def progress() -> int:
            if conn.in_transaction and conn.total_changes - start >= rows:
                _stop_here(marker)
            return 0

        conn.set_progress_handler(progress, 50)
        return conn

    sqlite3.connect = connect_and_watch


def post_store(path: str, n: int, cursor: int) -> None:
    import typer

    from mhaudit.cli.console import guarded
    from mhaudit.weak_supervision.collect.store import PostStore

    @guarded
    def write() -> None:
        with PostStore(path) as store:
            store.start_run(f"fault-{cursor}")
            store.commit_batch(fake_posts(n, start=cursor), cursor)

    try:
        write()
    except typer.Exit as stop:
        sys.exit(stop.exit_code)


def fake_posts(n: int, *, start: int = 0) -> list[dict]:
    return [
        {
            "uri": f"at://did:plc:a{i % 7}/app.bsky.feed.post/{start}-{i}",
            "did": f"did:plc:a{i % 7}",
            "text": f"post {start}-{i} " + "words of a post " * 12,
            "created_at": "2024-05-01T12:00:00Z",
            "langs": ["en"],
            "terms": ["sad"],
            "categories": ["mh"],
        }
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pause")
    parser.add_argument("--marker")
    parser.add_argument("writer", choices=("cli", "post-store"))
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args()
    if ns.pause == "rename":
        _pause_at_rename(ns.marker)
    elif ns.pause and ns.pause.startswith("sqlite:"):
        _pause_in_transaction(ns.marker, int(ns.pause.split(":", 1)[1]))
    if ns.writer == "post-store":
        store, n, cursor = ns.args
        post_store(store, int(n), int(cursor))
        return
    from mhaudit.cli import app

    app(ns.args, prog_name="mhaudit")


if __name__ == "__main__":
    main()
