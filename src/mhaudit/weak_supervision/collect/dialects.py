"""The post store's dialect layer: where it keeps its tables, SQLite or PostgreSQL (see docs/collect.md).

`PostStore` runs the same SQL on both; `SQLiteDialect` and `PostgresDialect` hold what differs: connecting,
creating and checking the schema, placeholders, the upsert, the errors. An SQLite store is marked by its
application id and user_version; a PostgreSQL store (the database's current schema) by a `mhaudit_meta` table
(application id, schema version). A reader opens a store with `create=False`: one that does not exist (no file
or an empty one; for PostgreSQL, a database or schema without the store's tables) is then `missing_store`'s
sentence, and nothing is created. `check_store_path` tells a file path from a postgresql:// or postgres:// URL and
refuses any other URL (mysql://, sqlite:///...) with one sentence; a URL's password is never echoed (`redact_url`).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

from mhaudit.core.errors import InputError
from mhaudit.core.store_versions import check_version, migrate_sqlite
from mhaudit.weak_supervision.collect.migrations import POST_STORE, POST_STORE_STEPS
from mhaudit.weak_supervision.collect.reconnect import ReconnectPolicy, retrying

SCHEMA_VERSION = 1
APPLICATION_ID = 0x6D68_6131  # "mha1": marks a file as an mhaudit post store
SQLITE_MAGIC = b"SQLite format 3\x00"
POSTGRES_SCHEMES = ("postgresql", "postgres")
# scheme:// (or scheme:/ once a Path has collapsed the double slash); two letters at least, so C:/ is a path.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")

_SCHEMA = """
CREATE TABLE posts (
    uri {key} PRIMARY KEY,         -- the at:// URI, with the author's DID replaced by the pseudonym
    cid TEXT,
    author TEXT NOT NULL,          -- mhaudit.core.privacy pseudonym of the DID
    raw_did TEXT,                  -- NULL unless keep_raw_ids
    text TEXT NOT NULL,
    created_at TEXT,               -- the record's createdAt as sent
    langs TEXT NOT NULL,           -- JSON list
    terms TEXT NOT NULL,           -- JSON list of matched lexicon terms
    categories TEXT NOT NULL,      -- JSON list of matched categories
    run_id TEXT,
    lexicon_hash TEXT,
    stored_at TEXT NOT NULL        -- UTC ISO time of the commit
){posts_suffix};
CREATE TABLE cursor (
    stream {key} PRIMARY KEY,      -- one per stream: 'jetstream', 'jetstream-xrpc:<host>', 'firehose:<host>'
    cursor {integer} NOT NULL,     -- last committed cursor (Jetstream: time_us, firehose: the relay seq)
    updated_at TEXT NOT NULL
);
CREATE TABLE runs (
    run_id {key} PRIMARY KEY,
    started_at TEXT NOT NULL,
    relay_url TEXT,
    lexicons TEXT NOT NULL,        -- JSON object name -> hash
    options TEXT NOT NULL          -- JSON
);
"""


def redact_url(url: str) -> str:
    """scheme://host[:port]/dbname of a database URL: no user, no password, no query."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    host = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def missing_store(location: object) -> InputError:
    """The one sentence for a reader given a post store that does not exist (a mistyped --store or --db)."""
    return InputError(f"no such post store: {location} (collect posts first with mhaudit collect bluesky)")


def check_store_path(path: str | Path) -> Path | str:
    """The post store's file path, or a postgresql:// / postgres:// URL as a string; another URL (mysql://,
    sqlite:///, ...) is an InputError."""
    text = str(path)
    match = _URL.match(text)
    if match and match.group(1).lower() in POSTGRES_SCHEMES:  # also as a Path that collapsed '//' to '/'
        return f"{match.group(1)}://{text[match.end() :].lstrip('/')}"
    if match:
        # Only the scheme is echoed: the rest of a URL may hold a password.
        raise InputError(
            f"{match.group(1)}://… is a database URL of a kind the post store does not support; give "
            "a file path for the SQLite post store (e.g. posts.sqlite) or a postgresql:// URL"
        )
    return Path(path)


class SQLiteDialect:
    """Dialect: one embedded SQLite file (WAL, synchronous NORMAL or FULL)."""

    name = "SQLite"
    key, integer, posts_suffix = "TEXT", "INTEGER", " WITHOUT ROWID"
    begin, greatest, insert_ignore = "BEGIN IMMEDIATE", "max", "INSERT OR IGNORE INTO {table} {rest}"
    errors: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)
    nul_free = False  # SQLite text may hold U+0000

    @staticmethod
    def lost(exc: BaseException) -> bool:
        return False  # a file cannot restart under us

    @staticmethod
    def retrying(action):
        return action()

    def __init__(self, path: Path, *, synchronous: str, timeout: float, create: bool = True):
        self.path, self.location, self._create = path, path, create
        self.backup: Path | None = None  # the copy kept when opening migrated the store (migrations.py)
        if path.is_dir():
            raise InputError("is a folder, not a post store file", path=path)
        if not create and not path.exists():
            raise missing_store(path)  # before connect(), which would make the file
        if path.exists() and path.stat().st_size > 0:
            with open(path, "rb") as handle:
                if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    raise InputError("is not an SQLite database, so not an mhaudit post store", path=path)
        try:
            self.conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise InputError(f"cannot open the post store: {exc}", path=path) from None
        try:
            self._open(synchronous)
        except BaseException as exc:
            self.conn.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise InputError(f"cannot open the post store: {exc} ({_sqlite_advice(exc)})", path=path) from None
            raise

    def _open(self, synchronous: str) -> None:
        conn = self.conn
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        n_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id == 0 and version == 0 and n_tables == 0:
            if not self._create:
                raise missing_store(self.path)  # an empty file: nothing was ever collected into it
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")  # not executescript: it would commit each statement
            try:
                _create_tables(conn, self)
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        elif app_id != APPLICATION_ID:
            raise InputError(
                "is an SQLite database but not an mhaudit post store (no post-store "
                "application id); give a new file name",
                path=self.path,
            )
        else:
            self.backup = migrate_sqlite(
                conn,
                self.path,
                version,
                SCHEMA_VERSION,
                POST_STORE_STEPS,
                what=POST_STORE,
                advice="collect into a new file",
            )
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise InputError(f"cannot switch the post store to WAL mode (got {mode})", path=self.path)
        conn.execute(f"PRAGMA synchronous={synchronous}")


class _PgConnection:
    """A psycopg connection with sqlite3's `execute`/`executemany` and `?` placeholders (no '?' or '%' appears
    in the store's SQL text: values are always parameters)."""

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql: str, params=()):
        return self._conn.execute(sql.replace("?", "%s"), params or None)

    def executemany(self, sql: str, rows):
        cur = self._conn.cursor()
        cur.executemany(sql.replace("?", "%s"), rows)
        return cur  # psycopg >= 3.1: rowcount is the sum over the rows, as in sqlite3

    @property
    def closed(self) -> bool:
        return bool(self._conn.closed)

    def close(self) -> None:
        self._conn.close()


class PostgresDialect:
    """Dialect: the store's tables in a PostgreSQL database (its current schema), marked by `mhaudit_meta`."""

    name = "PostgreSQL"
    key, integer, posts_suffix = 'TEXT COLLATE "C"', "BIGINT", ""  # "C": uri order as in SQLite (bytes)
    begin, greatest = "BEGIN", "GREATEST"
    insert_ignore = "INSERT INTO {table} {rest} ON CONFLICT DO NOTHING"
    errors: tuple[type[BaseException], ...] = ()
    nul_free = True  # PostgreSQL text cannot hold U+0000: it is stored as U+FFFD

    def __init__(
        self,
        url: str,
        *,
        synchronous: str,
        timeout: float,
        retry: ReconnectPolicy | None = None,
        wait_for_server: bool = False,
        create: bool = True,
    ):
        """`create=False`: a database (its current schema) without the store's tables is a missing store, an
        InputError, and no table is made (the server and the database itself must exist either way)."""
        try:
            import psycopg
        except ImportError:
            raise InputError(
                "a postgresql:// post store needs psycopg (pip install 'psycopg[binary]', or the bluesky extra)"
            ) from None
        self.location = redact_url(url)
        self.errors = (psycopg.OperationalError,)
        self._url, self._synchronous, self._timeout, self._retry = url, synchronous, timeout, retry
        self._create = create
        self.reconnects = 0  # connections lost and made again (tests, logs)
        try:
            # wait_for_server: the store was reached earlier in this run, so a refused connect is a restart
            # in progress, waited out as a lost connection is (reconnect.py); otherwise a wrong URL fails at once.
            conn = (
                retrying(
                    self._connect,
                    lost=lambda exc: isinstance(exc, psycopg.OperationalError),
                    where=self.location,
                    policy=retry,
                    describe=lambda exc: _pg_reason(exc, url),
                )
                if wait_for_server
                else self._connect()
            )
        except psycopg.Error as exc:
            raise InputError(
                f"cannot connect to the PostgreSQL post store {self.location}: "
                f"{_pg_reason(exc, url)}; nothing was read or written"
            ) from None
        self.conn = _PgConnection(conn)
        try:
            self._open()
        except BaseException as exc:
            conn.close()
            if isinstance(exc, psycopg.Error):
                raise InputError(
                    f"cannot open the PostgreSQL post store {self.location}: {_pg_reason(exc, url)}"
                ) from None
            raise

    def _connect(self):
        import psycopg

        conn = psycopg.connect(self._url, autocommit=True, connect_timeout=max(1, int(self._timeout)))
        try:
            # A lock held by another writer makes a statement wait at most `timeout`; FULL also waits for
            # synchronous standbys, NORMAL is the server's own setting (a commit is durable on return either way).
            conn.execute(f"SET lock_timeout = '{int(self._timeout * 1000)}ms'")
            if self._synchronous == "FULL":
                conn.execute("SET synchronous_commit = 'on'")
        except BaseException:
            conn.close()
            raise
        return conn

    # -- a server that restarts or fails over (reconnect.py) -------------------------------------------------
    def lost(self, exc: BaseException) -> bool:
        """Whether `exc` means the connection is gone (server shut down, restarted, failed over), not that a
        statement failed (a lock timeout is an OperationalError too, on a live connection)."""
        return isinstance(exc, self.errors) and self.conn.closed

    def retrying(self, action):
        """action(), redone on a new connection while the server is away, within the retry budget."""
        return retrying(
            action,
            lost=self.lost,
            reconnect=self._reconnect,
            where=self.location,
            policy=self._retry,
            describe=lambda exc: _pg_reason(exc, self._url),
        )

    def _reconnect(self) -> None:
        self.conn.close()
        self.conn = _PgConnection(self._connect())
        self.reconnects += 1

    def _open(self) -> None:
        conn = self.conn
        conn.execute("BEGIN")
        try:
            # One creator at a time: a second collector starting on an empty database waits, then finds the store.
            conn.execute("SELECT pg_advisory_xact_lock(?)", (APPLICATION_ID,))
            existing = {
                row[0]
                for row in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                    "AND table_name IN ('mhaudit_meta', 'posts', 'cursor', 'runs')"
                )
            }
            if "mhaudit_meta" in existing:
                meta = dict(conn.execute("SELECT key, value FROM mhaudit_meta").fetchall())
                if meta.get("application_id") != str(APPLICATION_ID):
                    raise InputError(
                        f"{self.location} has a mhaudit_meta table that does not mark an mhaudit "
                        "post store; use another database or schema"
                    )
                check_version(
                    int(meta.get("schema_version", 0)),
                    SCHEMA_VERSION,
                    what=POST_STORE,
                    where=self.location,
                    advice="collect into another database or schema",
                )
            elif existing:
                raise InputError(
                    f"{self.location} already has tables named {', '.join(sorted(existing))} that "
                    "are not an mhaudit post store (no mhaudit_meta table); use another database or "
                    "schema"
                )
            elif not self._create:
                raise missing_store(self.location)
            else:
                _create_tables(conn, self)
                conn.execute("CREATE TABLE mhaudit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                conn.executemany(
                    "INSERT INTO mhaudit_meta (key, value) VALUES (?, ?)",
                    [("application_id", str(APPLICATION_ID)), ("schema_version", str(SCHEMA_VERSION))],
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _sqlite_advice(exc: sqlite3.DatabaseError) -> str:
    """What to do about an SQLite error at open, from its message (sqlite3 gives no error code before 3.11)."""
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return "the file or its folder is not writable; make it writable or collect into another file"
    if "locked" in text or "busy" in text:
        return "another process holds it locked; stop it or wait"
    if "disk i/o" in text or "full" in text:
        return "the disk may be full; free some space and run again"
    return "not a valid SQLite database; give a new file name and keep this one for inspection"


def _pg_reason(exc: BaseException, url: str) -> str:
    """The server's or libpq's reason for a failed connect, one line, without the URL's password."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
    # libpq: 'connection to server at "h", port p failed: FATAL:  <reason>', then hint lines (dropped).
    text = next((line for line in lines if "FATAL:" in line), lines[0])
    for marker in ("FATAL:", "failed:"):
        if marker in text:
            text = text.rsplit(marker, 1)[1].strip()
            break
    text = " ".join(text.split())
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text


def _create_tables(conn, dialect) -> None:
    schema = _SCHEMA.format(key=dialect.key, integer=dialect.integer, posts_suffix=dialect.posts_suffix)
    for statement in filter(str.strip, schema.split(";")):
        conn.execute(statement)
