"""A throwaway PostgreSQL server for the post-store tests: initdb + pg_ctl on 127.0.0.1, a free port, a temp dir.

`pg_server` (session scope) starts one server and stops and removes it at the end; `pg_url` (per test) creates a
fresh database on it and yields its URL, `postgresql://mhaudit:<password>@127.0.0.1:<port>/<db>`. Both skip, with
the reason, when the PostgreSQL server binaries or psycopg are absent. As root, the server runs as the `postgres`
system user (PostgreSQL refuses to run as root). fsync is off: the tests kill clients, never the machine.
A test module imports the fixtures by their function names, `fixture_pg_server` and `fixture_pg_url` (so that
a test's `pg_url` argument shadows no import).
A watchdog process stops the server and removes its folder when the test process dies without doing so (kill -9,
a crashed xdist worker). `PgServer.pg_ctl("-m", "fast", "restart")` restarts it (test_pg_restart.py).
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

USER, PASSWORD = "mhaudit", "pg-test-s3cret"
_counter = itertools.count()


def _bin_dir() -> Path | None:
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Runs beside the test process, in a session of its own (so a kill of the test's process group spares it): once
# the test process is gone (kill -9, a dead xdist worker), the parent pid changes, and it stops the server and
# removes its folder. argv: the stop command (JSON), the folder.
_WATCHDOG = """
import json, os, shutil, subprocess, sys, time
parent = os.getppid()
while os.getppid() == parent:
    time.sleep(0.5)
subprocess.run(json.loads(sys.argv[1]), capture_output=True, timeout=60)
shutil.rmtree(sys.argv[2], ignore_errors=True)
"""


@dataclass
class PgServer:
    host: str
    port: int
    root: Path | None = None
    prefix: tuple[str, ...] = ()
    bin_dir: Path | None = None
    watchdog: subprocess.Popen | None = None

    def url(self, dbname: str, *, password: str = PASSWORD, scheme: str = "postgresql") -> str:
        return f"{scheme}://{USER}:{password}@{self.host}:{self.port}/{dbname}"

    def create_database(self) -> str:
        import psycopg

        name = f"posts_{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def pg_ctl(self, *args: str) -> None:
        """pg_ctl ACTION on this server's data folder (start, restart and stop wait until done)."""
        command = [*self.prefix, str(self.bin_dir / "pg_ctl"), "-D", str(self.root / "data"), "-w", "-t", "30", *args]
        if args[-1] in ("start", "restart"):  # the log stays a file: pg_ctl's pipes would never close
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off -c full_page_writes=off"
            )
            command[-1:-1] = ["-l", str(self.root / "log"), "-o", options]
        result = subprocess.run(command, capture_output=True, text=True, timeout=90)
        if result.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {result.stdout}{result.stderr}")

    def stop_and_remove(self) -> None:
        try:
            self.pg_ctl("-m", "immediate", "stop")
        except RuntimeError:
            pass  # already stopped
        if self.watchdog is not None:
            self.watchdog.kill()
            self.watchdog.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def start_server() -> PgServer:
    """initdb and start a server on a free port of 127.0.0.1 in a new temporary folder, with a watchdog that
    stops it if this process dies without `stop_and_remove`. Raises RuntimeError when it cannot."""
    bin_dir = _bin_dir()
    prefix: tuple[str, ...] = ()
    owner = None
    if os.geteuid() == 0:  # PostgreSQL will not run as root
        owner = pwd.getpwnam("postgres")
        prefix = ("runuser", "-u", "postgres", "--")
    root = Path(tempfile.mkdtemp(prefix="mhaudit-pg-"))
    server = PgServer("127.0.0.1", _free_port(), root, prefix, bin_dir)
    (root / "pw").write_text(PASSWORD + "\n")
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
        os.chown(root / "pw", owner.pw_uid, owner.pw_gid)
    try:
        result = subprocess.run(
            [
                *prefix,
                str(bin_dir / "initdb"),
                "-D",
                str(root / "data"),
                "-U",
                USER,
                f"--pwfile={root / 'pw'}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed: {result.stdout}{result.stderr}")
        stop = [*prefix, str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"]
        server.watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, json.dumps(stop), str(root)],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        server.pg_ctl("start")
    except BaseException:
        server.stop_and_remove()
        raise
    return server


@pytest.fixture(scope="session", name="pg_server")
def fixture_pg_server():
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')")
    if _bin_dir() is None:
        pytest.skip("the PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the PostgreSQL server as")
    server = start_server()
    try:
        yield server
    finally:
        server.stop_and_remove()


@pytest.fixture(name="pg_url")
def fixture_pg_url(pg_server) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.url(pg_server.create_database())
