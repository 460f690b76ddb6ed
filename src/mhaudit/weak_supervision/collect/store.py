"""The post store of the Bluesky collector: one embedded SQLite file (see docs/collect.md, "Post store").

Durability rule: `commit_batch` writes a batch of posts and advances the stream cursor in ONE transaction,
so the saved cursor never runs ahead of the posts before it. A crash (even kill -9) loses at most the batch
in flight, posts and cursor together; a restart resumes from the saved cursor, and a replay of posts that
were already stored is ignored (the URI is the primary key), so there is no gap and no duplicate.

Privacy: authors are stored as `mhaudit.core.privacy` pseudonyms (HMAC-SHA256 with the local secret). The raw
DID also sits inside a post's at:// URI, so the stored URI has the DID replaced by the pseudonym. The raw
DID and URI are kept (column `raw_did`, original `uri`) only with `keep_raw_ids=True`.

Journal mode WAL, synchronous=NORMAL: in WAL mode a commit with NORMAL is written to the WAL before
`commit_batch` returns, so it survives a crash of the collector process (kill -9); only an OS crash or
power loss can roll back the last few commits, and then posts and cursor roll back together (same
transaction), so the rule above still holds: the collector re-reads those events from the older cursor.
FULL would fsync on every batch for no gain in correctness; pass `synchronous="FULL"` to have it anyway.

PostgreSQL: `PostStore("postgresql://user:password@host:port/dbname")` (or `postgres://`) keeps the same tables
in that database (its current schema), marked as a post store by a `mhaudit_meta` table (application id, schema
version). The store is one implementation; `_SQLite` and `_Postgres` below are the dialect layer (connecting,
creating and checking the schema, placeholders, the upsert, the errors). A commit on the server is durable
before `commit_batch` returns, and a client killed mid-transaction leaves nothing of it (the server rolls it back).
Any other URL (mysql://, sqlite:///...) is refused with one sentence (`check_store_path`); a URL's password is
never echoed (`redact_url`).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.privacy import local_secret, pseudonymise

SCHEMA_VERSION = 1
APPLICATION_ID = 0x6D68_6131  # "mha1": marks a file as an mhaudit post store
SQLITE_MAGIC = b"SQLite format 3\x00"
DEFAULT_STREAM = "jetstream"
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
    stream {key} PRIMARY KEY,      -- one row per stream/source: 'jetstream', 'firehose:<relay host>'
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _json_list(value: object) -> str:
    if value is None:
        return "[]"
    if isinstance(value, str):
        return json.dumps([value], ensure_ascii=False)
    return json.dumps(list(value), ensure_ascii=False)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def lexicons_hash(lexicons: Mapping[str, str]) -> str | None:
    """One hash for a set of lexicons: the lexicon's own hash if there is one, else a hash of name:hash pairs."""
    if not lexicons:
        return None
    if len(lexicons) == 1:
        return str(next(iter(lexicons.values())))
    joined = "\n".join(f"{name}:{lexicons[name]}" for name in sorted(lexicons))
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


POSTGRES_SCHEMES = ("postgresql", "postgres")


def _postgres_url(text: str) -> str | None:
    """The URL if `text` is a postgresql:// or postgres:// URL (also as a Path that collapsed '//' to '/')."""
    match = _URL.match(text)
    if not match or match.group(1).lower() not in POSTGRES_SCHEMES:
        return None
    rest = text[match.end():]
    return f"{match.group(1)}://{rest.lstrip('/')}"


def redact_url(url: str) -> str:
    """scheme://host[:port]/dbname of a database URL: no user, no password, no query."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    host = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_store_path(path: str | Path) -> Path | str:
    """The post store's file path, or a postgresql:// / postgres:// URL as a string; another URL (mysql://,
    sqlite:///, ...) is an InputError."""
    text = str(path)
    url = _postgres_url(text)
    if url is not None:
        return url
    match = _URL.match(text)
    if match:
        # Only the scheme is echoed: the rest of a URL may hold a password.
        raise InputError(f"{match.group(1)}://… is a database URL of a kind the post store does not support; give "
                         "a file path for the SQLite post store (e.g. posts.sqlite) or a postgresql:// URL")
    return Path(path)


class _SQLite:
    """Dialect: one embedded SQLite file (WAL, synchronous NORMAL or FULL)."""

    name = "SQLite"
    key, integer, posts_suffix = "TEXT", "INTEGER", " WITHOUT ROWID"
    begin, greatest, insert_ignore = "BEGIN IMMEDIATE", "max", "INSERT OR IGNORE INTO {table} {rest}"
    errors: tuple[type[BaseException], ...] = (sqlite3.OperationalError,)
    nul_free = False  # SQLite text may hold U+0000

    def __init__(self, path: Path, *, synchronous: str, timeout: float):
        self.path, self.location = path, path
        self._check_header()
        try:
            self.conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise InputError(f"cannot open the post store: {exc}", path=path) from None
        try:
            self._open(synchronous)
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise InputError(f"cannot open the post store: {exc} (not a valid SQLite database, or locked "
                             "by another process)", path=path) from None
        except InputError:
            self.conn.close()
            raise

    def _check_header(self) -> None:
        if self.path.is_dir():
            raise InputError("is a folder, not a post store file", path=self.path)
        if self.path.exists() and self.path.stat().st_size > 0:
            with open(self.path, "rb") as handle:
                head = handle.read(len(SQLITE_MAGIC))
            if head != SQLITE_MAGIC:
                raise InputError("is not an SQLite database, so not an mhaudit post store", path=self.path)

    def _open(self, synchronous: str) -> None:
        conn = self.conn
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        n_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id == 0 and version == 0 and n_tables == 0:
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
            raise InputError("is an SQLite database but not an mhaudit post store (no post-store "
                             "application id); give a new file name", path=self.path)
        else:
            _check_version(version, self.path, "collect into a new file")
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

    def close(self) -> None:
        self._conn.close()


class _Postgres:
    """Dialect: the store's tables in a PostgreSQL database (its current schema), marked by `mhaudit_meta`."""

    name = "PostgreSQL"
    key, integer, posts_suffix = 'TEXT COLLATE "C"', "BIGINT", ""  # "C": uri order as in SQLite (bytes)
    begin, greatest = "BEGIN", "GREATEST"
    insert_ignore = "INSERT INTO {table} {rest} ON CONFLICT DO NOTHING"
    errors: tuple[type[BaseException], ...] = ()
    nul_free = True  # PostgreSQL text cannot hold U+0000: it is stored as U+FFFD

    def __init__(self, url: str, *, synchronous: str, timeout: float):
        try:
            import psycopg
        except ImportError:
            raise InputError("a postgresql:// post store needs psycopg (pip install 'psycopg[binary]', or the "
                             "bluesky extra)") from None
        self.location = redact_url(url)
        self.errors = (psycopg.OperationalError,)
        try:
            conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)))
        except psycopg.Error as exc:
            raise InputError(f"cannot connect to the PostgreSQL post store {self.location}: "
                             f"{_pg_reason(exc, url)}; nothing was read or written") from None
        self.conn = _PgConnection(conn)
        try:
            # A lock held by another writer makes a statement wait at most `timeout`; FULL also waits for
            # synchronous standbys, NORMAL is the server's own setting (a commit is durable on return either way).
            conn.execute(f"SET lock_timeout = '{int(timeout * 1000)}ms'")
            if synchronous == "FULL":
                conn.execute("SET synchronous_commit = 'on'")
            self._open()
        except psycopg.Error as exc:
            conn.close()
            raise InputError(f"cannot open the PostgreSQL post store {self.location}: {_pg_reason(exc, url)}") \
                from None
        except BaseException:
            conn.close()
            raise

    def _open(self) -> None:
        conn = self.conn
        conn.execute("BEGIN")
        try:
            # One creator at a time: a second collector starting on an empty database waits, then finds the store.
            conn.execute("SELECT pg_advisory_xact_lock(?)", (APPLICATION_ID,))
            existing = {row[0] for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_name IN ('mhaudit_meta', 'posts', 'cursor', 'runs')")}
            if "mhaudit_meta" in existing:
                meta = dict(conn.execute("SELECT key, value FROM mhaudit_meta").fetchall())
                if meta.get("application_id") != str(APPLICATION_ID):
                    raise InputError(f"{self.location} has a mhaudit_meta table that does not mark an mhaudit "
                                     "post store; use another database or schema")
                _check_version(int(meta.get("schema_version", 0)), self.location,
                               "collect into another database or schema")
            elif existing:
                raise InputError(f"{self.location} already has tables named {', '.join(sorted(existing))} that "
                                 "are not an mhaudit post store (no mhaudit_meta table); use another database or "
                                 "schema")
            else:
                _create_tables(conn, self)
                conn.execute("CREATE TABLE mhaudit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                conn.executemany("INSERT INTO mhaudit_meta (key, value) VALUES (?, ?)",
                                 [("application_id", str(APPLICATION_ID)), ("schema_version", str(SCHEMA_VERSION))])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


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


def _check_version(version: int, where: object, advice: str) -> None:
    if version != SCHEMA_VERSION:
        raise InputError(f"was written with post-store schema version {version}; this mhaudit reads version "
                         f"{SCHEMA_VERSION} ({advice})", path=where)


def _create_tables(conn, dialect) -> None:
    schema = _SCHEMA.format(key=dialect.key, integer=dialect.integer, posts_suffix=dialect.posts_suffix)
    for statement in filter(str.strip, schema.split(";")):
        conn.execute(statement)


class PostStore:
    """Posts, stream cursors and collection runs in one SQLite file, or in a PostgreSQL database given as a
    postgresql:// URL. Use as a context manager or close()."""

    def __init__(self, path: str | Path, *, keep_raw_ids: bool = False, secret: bytes | None = None,
                 synchronous: str = "NORMAL", timeout: float = 10.0):
        target = check_store_path(path)
        self.keep_raw_ids = keep_raw_ids
        if synchronous.upper() not in {"NORMAL", "FULL"}:
            raise InputError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self._secret = secret
        self.run_id: str | None = None
        self.lexicon_hash: str | None = None
        dialect = _SQLite if isinstance(target, Path) else _Postgres
        self._db = dialect(target, synchronous=synchronous.upper(), timeout=timeout)
        self._conn = self._db.conn
        # The file path (SQLite), or the server URL without credentials (PostgreSQL): safe to print.
        self.path = self.location = self._db.location

    # -- runs and cursors ------------------------------------------------------------------------------------
    def start_run(self, run_id: str, *, relay_url: str | None = None, lexicons: Mapping[str, str] | None = None,
                  options: Mapping[str, object] | None = None) -> str:
        """Record a collection run; later batches are tagged with its id and lexicon hash."""
        lexicons = dict(lexicons or {})
        self._write(lambda c: c.execute(self._db.insert_ignore.format(
            table="runs", rest="(run_id, started_at, relay_url, lexicons, options) VALUES (?,?,?,?,?)"),
            (run_id, _now(), relay_url, json.dumps(lexicons, sort_keys=True),
             json.dumps(dict(options or {}), sort_keys=True, default=str))))
        self.run_id, self.lexicon_hash = run_id, lexicons_hash(lexicons)
        return run_id

    def cursor(self, stream: str = DEFAULT_STREAM) -> int | None:
        """The last committed cursor of a stream, or None if nothing was committed yet."""
        row = self._conn.execute("SELECT cursor FROM cursor WHERE stream = ?", (stream,)).fetchone()
        return None if row is None else int(row[0])

    def cursors(self) -> dict[str, int]:
        """Every saved cursor, by stream key."""
        return {str(k): int(v) for k, v in self._conn.execute("SELECT stream, cursor FROM cursor")}

    def run_relays(self, wire: str) -> set[str]:
        """The relay hosts (`host[:port]`) of the recorded runs whose options name this wire."""
        from mhaudit.weak_supervision.collect.jetstream import relay_host

        hosts = set()
        for relay_url, options in self._conn.execute("SELECT relay_url, options FROM runs"):
            try:
                run_wire = json.loads(options).get("wire")
            except (ValueError, AttributeError):
                continue
            if run_wire == wire and relay_url:
                hosts.add(relay_host(relay_url))
        return hosts

    # -- writing ---------------------------------------------------------------------------------------------
    def _rows(self, posts: Iterable[Mapping[str, object]], run_id: str | None, lexicon_hash: str | None) -> list:
        posts = list(posts)
        for i, post in enumerate(posts):
            if not post.get("uri") or not post.get("did"):
                raise InputError(f"post {i} of the batch has no 'uri' or no 'did'")
        if not posts:
            return []
        if self._secret is None:
            self._secret = local_secret()
        dids = [str(p["did"]) for p in posts]
        authors = pseudonymise(dids, secret=self._secret)
        stored_at = _now()
        rows = []
        for post, did, author in zip(posts, dids, authors):
            uri = str(post["uri"])
            rows.append((
                uri if self.keep_raw_ids else uri.replace(did, author),
                post.get("cid"), author, did if self.keep_raw_ids else None, str(post.get("text") or ""),
                post.get("created_at"), _json_list(post.get("langs")), _json_list(post.get("terms")),
                _json_list(post.get("categories")), post.get("run_id", run_id),
                post.get("lexicon_hash", lexicon_hash), stored_at))
        if self._db.nul_free:
            rows = [tuple(v.replace("\x00", "\ufffd") if isinstance(v, str) else v for v in row) for row in rows]
        return rows

    def commit_batch(self, posts: Iterable[Mapping[str, object]], cursor: int, *, stream: str = DEFAULT_STREAM,
                     run_id: str | None = None) -> int:
        """Insert posts and advance the stream's cursor in one transaction; returns how many posts were new.

        A post is a mapping with 'uri', 'did' (the raw author DID) and optionally 'cid', 'text',
        'created_at', 'langs', 'terms', 'categories'. URIs already stored are ignored. The cursor never
        moves back: a replay from an older position keeps the newer saved cursor.
        """
        rows = self._rows(posts, run_id if run_id is not None else self.run_id, self.lexicon_hash)
        cursor = int(cursor)

        def write(conn) -> int:
            new = conn.executemany(self._db.insert_ignore.format(
                table="posts", rest="(uri, cid, author, raw_did, text, created_at, langs, terms, categories, "
                "run_id, lexicon_hash, stored_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"), rows).rowcount if rows else 0
            conn.execute("INSERT INTO cursor (stream, cursor, updated_at) VALUES (?,?,?) ON CONFLICT(stream) "
                         f"DO UPDATE SET cursor = {self._db.greatest}(cursor.cursor, excluded.cursor), "
                         "updated_at = excluded.updated_at", (stream, cursor, _now()))
            return max(0, new)

        return self._write(write)

    def _write(self, action):
        conn, errors = self._conn, self._db.errors
        try:
            conn.execute(self._db.begin)
        except errors as exc:
            raise InputError(f"cannot write to the post store: {_one_line(exc)} (another process holds it, or "
                             "the server is gone?); nothing was stored from this batch", path=self.location) from None
        try:
            result = action(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            try:
                conn.execute("ROLLBACK")
            except errors:
                pass  # the connection is gone: the server rolls the transaction back itself
            if isinstance(exc, errors):
                raise InputError(f"cannot write to the post store: {_one_line(exc)}; the batch was rolled back",
                                 path=self.location) from None
            raise
        return result

    # -- reading ---------------------------------------------------------------------------------------------
    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM posts").fetchone()[0])

    def posts(self, run_id: str | None = None) -> pd.DataFrame:
        """Stored posts as a DataFrame; langs, terms and categories decoded to lists."""
        query, params = "SELECT * FROM posts", ()
        if run_id is not None:
            query, params = query + " WHERE run_id = ?", (run_id,)
        cur = self._conn.execute(query + " ORDER BY stored_at, uri", params)
        frame = pd.DataFrame.from_records(cur.fetchall(), columns=[d[0] for d in cur.description],
                                          coerce_float=True)
        for column in ("langs", "terms", "categories"):
            frame[column] = frame[column].map(json.loads)
        return frame

    def summary(self, run_id: str | None = None) -> dict[str, pd.DataFrame]:
        """Counts as in the Bluesky paper's Table 4.

        'per_category': category (a post with several categories counts in each; 'all' = every post), posts,
        unique_authors, posts_per_author_mean / _median / _max. 'per_day': day (UTC date of created_at;
        posts without a readable created_at are left out), posts, unique_authors.
        """
        frame = self.posts(run_id)[["author", "created_at", "categories"]]
        exploded = frame.explode("categories").dropna(subset=["categories"])
        groups = [("all", frame)] + [(str(c), g) for c, g in exploded.groupby("categories", sort=True)]
        rows = []
        for name, group in groups:
            per_author = group.groupby("author").size()
            rows.append({"category": name, "posts": len(group), "unique_authors": int(per_author.size),
                         "posts_per_author_mean": float(per_author.mean()) if len(per_author) else 0.0,
                         "posts_per_author_median": float(per_author.median()) if len(per_author) else 0.0,
                         "posts_per_author_max": int(per_author.max()) if len(per_author) else 0})
        per_category = pd.DataFrame(rows)
        days = pd.to_datetime(frame["created_at"], utc=True, errors="coerce", format="ISO8601")
        dated = frame.assign(day=days.dt.date).dropna(subset=["day"])
        per_day = (dated.groupby("day").agg(posts=("author", "size"), unique_authors=("author", "nunique"))
                   .reset_index())
        return {"per_category": per_category, "per_day": per_day}

    # -- closing ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
