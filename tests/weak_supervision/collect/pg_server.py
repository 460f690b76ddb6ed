"""A throwaway PostgreSQL server for the post-store tests: initdb + pg_ctl on 127.0.0.1, a free port, a temp dir.

`pg_server` (session scope) starts one server and stops and removes it at the end; `pg_url` (per test) creates a
fresh database on it and yields its URL, `postgresql://mhaudit:<password>@127.0.0.1:<port>/<db>`. Both skip, with
the reason, when the PostgreSQL server binaries or psycopg are absent. As root, the server runs as the `postgres`
system user (PostgreSQL refuses to run as root). fsync is off: the tests kill clients, never the machine.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
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


@dataclass
class PgServer:
    host: str
    port: int

    def url(self, dbname: str, *, password: str = PASSWORD, scheme: str = "postgresql") -> str:
        return f"{scheme}://{USER}:{password}@{self.host}:{self.port}/{dbname}"

    def create_database(self) -> str:
        import psycopg

        name = f"posts_{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name


@pytest.fixture(scope="session")
def pg_server():
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'psycopg[binary]')")
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip("the PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    prefix: list[str] = []
    owner = None
    if os.geteuid() == 0:  # PostgreSQL will not run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the PostgreSQL server as")
        prefix = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="mhaudit-pg-"))
    data, port = root / "data", _free_port()
    (root / "pw").write_text(PASSWORD + "\n")
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
        os.chown(root / "pw", owner.pw_uid, owner.pw_gid)

    def run(*args: str) -> None:
        result = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {result.stdout}{result.stderr}")

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={root / 'pw'}", "--auth-local=trust",
            "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--locale=C")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", "-t", "30",
            "start")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        yield PgServer("127.0.0.1", port)
    finally:
        subprocess.run([*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.url(pg_server.create_database())
