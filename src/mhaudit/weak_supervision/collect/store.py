"""The post store of the Bluesky collector: one embedded SQLite file or a PostgreSQL database (docs/collect.md,
"Post store": the durability rule, the journal mode, privacy, restarts and failover).

Durability rule: `commit_batch` writes a batch of posts and advances the stream cursor in ONE transaction,
so the saved cursor never runs ahead of the posts before it; a replay of stored posts is ignored (the URI is
the primary key). Authors are stored as `mhaudit.core.privacy` pseudonyms, and the DID inside a post's at://
URI is replaced by the pseudonym, unless `keep_raw_ids=True`. On PostgreSQL (`dialects.py` holds what differs)
every statement and transaction runs through the dialect's `retrying` (reconnect.py), which redoes it whole on a
new connection after a restart; redoing is idempotent (posts keyed by uri, cursor never moving back).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.privacy import local_secret, pseudonymise
from mhaudit.weak_supervision.collect.dialects import PostgresDialect, SQLiteDialect, check_store_path
from mhaudit.weak_supervision.collect.reconnect import ReconnectPolicy

DEFAULT_STREAM = "jetstream"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _json_list(value) -> str:  # None, a string or an iterable of them (else list() raises)
    return json.dumps([] if value is None else [value] if isinstance(value, str) else list(value), ensure_ascii=False)


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


class PostStore:
    """Posts, stream cursors and collection runs in one SQLite file, or in a PostgreSQL database given as a
    postgresql:// URL. Use as a context manager or close()."""

    def __init__(
        self,
        path: str | Path,
        *,
        keep_raw_ids: bool = False,
        secret: bytes | None = None,
        synchronous: str = "NORMAL",
        timeout: float = 10.0,
        retry_s: float | None = None,
        wait_for_server: bool = False,
        create: bool = True,
    ):
        """`create`: make the store if it does not exist (the collector); readers (the monitor, annotate, the
        summary) pass False, and a missing store is then an InputError, "no such post store: <where> (collect
        posts first with mhaudit collect bluesky)", with nothing created: no SQLite file (an empty file is no
        store either), and on PostgreSQL no tables in a database or schema that lacks them. `retry_s`: how long a
        PostgreSQL store waits for a server that went away (default: MHAUDIT_DB_RETRY_S, else 30 s; reconnect.py);
        `wait_for_server`: the store was reached before in this run, so a refused connect at open is waited out
        too (else it fails at once: a wrong URL should say so)."""
        target = check_store_path(path)
        self.keep_raw_ids = keep_raw_ids
        if synchronous.upper() not in {"NORMAL", "FULL"}:
            raise InputError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        # The secret now, before any connection: a bad MHAUDIT_SECRET stops the run before a relay is reached,
        # not when the first post arrives.
        self._secret = secret if secret is not None else local_secret()
        self.run_id: str | None = None
        self.lexicon_hash: str | None = None
        if isinstance(target, Path):
            self._db: SQLiteDialect | PostgresDialect = SQLiteDialect(
                target, synchronous=synchronous.upper(), timeout=timeout, create=create
            )
        else:
            self._db = PostgresDialect(
                target,
                synchronous=synchronous.upper(),
                timeout=timeout,
                retry=ReconnectPolicy.with_budget(retry_s),
                wait_for_server=wait_for_server,
                create=create,
            )
        self._conn = self._opened = self._db.conn
        # The file path (SQLite), or the server URL without credentials (PostgreSQL): safe to print.
        self.path = self.location = self._db.location

    def _fresh(self):
        """The connection to use: the dialect's new one after a reconnect, else `_conn` (which a test may wrap)."""
        if self._db.conn is not self._opened:
            self._conn = self._opened = self._db.conn
        return self._conn

    def _query(self, sql: str, params=()) -> tuple[list, list[str]]:
        """Rows and column names of one query, asked again on a new connection if the server restarted."""

        def ask():
            cur = self._fresh().execute(sql, params)
            return cur.fetchall(), [d[0] for d in cur.description or ()]

        return self._db.retrying(ask)

    # -- runs and cursors ------------------------------------------------------------------------------------
    def start_run(
        self,
        run_id: str,
        *,
        relay_url: str | None = None,
        lexicons: Mapping[str, str] | None = None,
        options: Mapping[str, object] | None = None,
    ) -> str:
        """Record a collection run; later batches are tagged with its id and lexicon hash."""
        lexicons = dict(lexicons or {})
        self.transaction(
            lambda c: c.execute(
                self._db.insert_ignore.format(
                    table="runs", rest="(run_id, started_at, relay_url, lexicons, options) VALUES (?,?,?,?,?)"
                ),
                (
                    run_id,
                    _now(),
                    relay_url,
                    json.dumps(lexicons, sort_keys=True),
                    json.dumps(dict(options or {}), sort_keys=True, default=str),
                ),
            )
        )
        self.run_id, self.lexicon_hash = run_id, lexicons_hash(lexicons)
        return run_id

    def cursor(self, stream: str = DEFAULT_STREAM) -> int | None:
        """The last committed cursor of a stream, or None if nothing was committed yet."""
        rows = self._query("SELECT cursor FROM cursor WHERE stream = ?", (stream,))[0]
        return int(rows[0][0]) if rows else None

    def cursors(self) -> dict[str, int]:
        """Every saved cursor, by stream key."""
        return {str(k): int(v) for k, v in self._query("SELECT stream, cursor FROM cursor")[0]}

    def run_relays(self, wire: str) -> set[str]:
        """The relay hosts (`host[:port]`) of the recorded runs whose options name this wire."""
        from mhaudit.weak_supervision.collect.jetstream import relay_host

        hosts = set()
        for relay_url, options in self._query("SELECT relay_url, options FROM runs")[0]:
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
        dids = [str(p["did"]) for p in posts]
        authors = pseudonymise(dids, secret=self._secret)
        stored_at = _now()
        rows: list[tuple] = []
        for post, did, author in zip(posts, dids, authors):
            uri = str(post["uri"])
            rows.append(
                (
                    uri if self.keep_raw_ids else uri.replace(did, str(author)),  # a non-empty did's is a str
                    post.get("cid"),
                    author,
                    did if self.keep_raw_ids else None,
                    str(post.get("text") or ""),
                    post.get("created_at"),
                    _json_list(post.get("langs")),
                    _json_list(post.get("terms")),
                    _json_list(post.get("categories")),
                    post.get("run_id", run_id),
                    post.get("lexicon_hash", lexicon_hash),
                    stored_at,
                )
            )
        if self._db.nul_free:
            rows = [tuple(v.replace("\x00", "\ufffd") if isinstance(v, str) else v for v in row) for row in rows]
        return rows

    def commit_batch(
        self,
        posts: Iterable[Mapping[str, object]],
        cursor: int,
        *,
        stream: str = DEFAULT_STREAM,
        run_id: str | None = None,
    ) -> int:
        """Insert posts and advance the stream's cursor in one transaction; returns how many posts were new.

        A post is a mapping with 'uri', 'did' (the raw author DID) and optionally 'cid', 'text',
        'created_at', 'langs', 'terms', 'categories'. URIs already stored are ignored. The cursor never
        moves back: a replay from an older position keeps the newer saved cursor.
        """
        rows = self._rows(posts, run_id if run_id is not None else self.run_id, self.lexicon_hash)
        cursor = int(cursor)

        def write(conn) -> int:
            new = (
                conn.executemany(
                    self._db.insert_ignore.format(
                        table="posts",
                        rest="(uri, cid, author, raw_did, text, created_at, langs, terms, categories, "
                        "run_id, lexicon_hash, stored_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    ),
                    rows,
                ).rowcount
                if rows
                else 0
            )
            conn.execute(
                "INSERT INTO cursor (stream, cursor, updated_at) VALUES (?,?,?) ON CONFLICT(stream) "
                f"DO UPDATE SET cursor = {self._db.greatest}(cursor.cursor, excluded.cursor), "
                "updated_at = excluded.updated_at",
                (stream, cursor, _now()),
            )
            return max(0, new)

        return self.transaction(write)

    def _transaction(self, action):
        conn, errors, lost = self._fresh(), self._db.errors, self._db.lost
        try:
            conn.execute(self._db.begin)
        except errors as exc:
            if lost(exc):
                raise  # for `retrying`
            raise InputError(
                f"cannot write to the post store: {_one_line(exc)} (another process holds it, or "
                "the server is gone?); nothing was stored from this batch",
                path=self.location,
            ) from None
        try:
            result = action(conn)
            conn.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(*errors):  # the connection is gone: the server rolls the transaction back itself
                conn.execute("ROLLBACK")
            if isinstance(exc, errors) and not lost(exc):
                raise InputError(
                    f"cannot write to the post store: {_one_line(exc)}; the batch was rolled back", path=self.location
                ) from None
            raise
        return result

    # -- other tables in the same database (the monitor's scores, weak_supervision.collect.scores) ---------
    @property
    def dialect(self):
        """What differs between SQLite and PostgreSQL (key type, upsert, errors): see dialects.py."""
        return self._db

    def read(self, sql: str, params=()) -> list[tuple]:
        """Rows of a query (? placeholders on both databases)."""
        return [tuple(row) for row in self._query(sql, params)[0]]

    def transaction(self, action):
        """Run action(conn) in one transaction (conn.execute / executemany, ? placeholders); rolled back on error,
        redone whole on a new connection if the server went away."""
        return self._db.retrying(lambda: self._transaction(action))

    # -- reading ---------------------------------------------------------------------------------------------
    def count(self) -> int:
        return int(self._query("SELECT count(*) FROM posts")[0][0][0])

    def texts(self, uris: Iterable[str]) -> dict[str, str]:
        """The text of each stored post among `uris`, by uri (the annotation app serves a sample of post ids)."""
        wanted, found = sorted(set(uris)), dict[str, str]()
        for i in range(0, len(wanted), 500):  # bounded IN lists
            chunk = wanted[i : i + 500]
            sql = f"SELECT uri, text FROM posts WHERE uri IN ({', '.join('?' * len(chunk))})"
            found |= dict(self._query(sql, chunk)[0])
        return found

    def posts(self, run_id: str | None = None, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
        """Stored posts as a DataFrame (`columns`: only these, e.g. without the text; default all); langs, terms
        and categories decoded to lists."""
        query, params = f"SELECT {', '.join(columns) if columns else '*'} FROM posts", tuple[str, ...]()
        if run_id is not None:
            query, params = query + " WHERE run_id = ?", (run_id,)
        rows, names = self._query(query + " ORDER BY stored_at, uri", params)
        frame = pd.DataFrame.from_records(rows, columns=names, coerce_float=True)
        for column in {"langs", "terms", "categories"}.intersection(frame.columns):
            frame[column] = frame[column].map(json.loads)
        return frame

    def summary(self, run_id: str | None = None) -> dict[str, pd.DataFrame]:
        """Counts as in the Bluesky paper's Table 4.

        'per_category': category (a post with several categories counts in each; 'all' = every post), posts,
        unique_authors, posts_per_author_mean / _median / _max. 'per_day': day (UTC date of created_at;
        posts without a readable created_at are left out), posts, unique_authors.
        """
        frame = self.posts(run_id, columns=("author", "created_at", "categories"))  # not the texts: weeks of posts
        exploded = frame.explode("categories").dropna(subset=["categories"])
        groups = [("all", frame)] + [(str(c), g) for c, g in exploded.groupby("categories", sort=True)]
        rows = []
        for name, group in groups:
            per_author = group.groupby("author").size()
            rows.append(
                {
                    "category": name,
                    "posts": len(group),
                    "unique_authors": int(per_author.size),
                    "posts_per_author_mean": float(per_author.mean()) if len(per_author) else 0.0,
                    "posts_per_author_median": float(per_author.median()) if len(per_author) else 0.0,
                    "posts_per_author_max": int(per_author.max()) if len(per_author) else 0,
                }
            )
        per_category = pd.DataFrame(rows)
        days = pd.to_datetime(frame["created_at"], utc=True, errors="coerce", format="ISO8601")
        dated = frame.assign(day=days.dt.date).dropna(subset=["day"])
        per_day = dated.groupby("day").agg(posts=("author", "size"), unique_authors=("author", "nunique")).reset_index()
        return {"per_category": per_category, "per_day": per_day}

    # -- closing ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
