"""Schema versions of mhaudit's stores: one rule for the post store, the scores table, the label store and the
parse cache (docs/faults.md, "Stores written by an earlier version", says what it does on open). No store of
another version is ever read as if it were this one.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

from mhaudit.core.errors import InputError


class StoreMigratedWarning(UserWarning):
    """A store was migrated in place to this mhaudit's schema version; the old file is kept beside it."""


Step = Callable[[sqlite3.Connection], None]  # migrates one version up, inside the migration's transaction


def check_version(found: int, current: int, *, what: str, where: object, advice: str) -> None:
    """Refuse a store whose version is not `current` (used where no migration exists, e.g. PostgreSQL). `what`
    names the store as a sentence's subject ("this post store"); `advice` says what to do with an older one."""
    if found > current:
        raise InputError(
            f"{what} was written by a newer mhaudit (schema version {found}; this mhaudit reads "
            f"version {current}); upgrade mhaudit (pip install -U mhaudit) to open it",
            path=where,
        )
    if found < current:
        raise InputError(
            f"{what} has schema version {found}, which this mhaudit (version {current}) cannot migrate; {advice}",
            path=where,
        )


def migrate_sqlite(
    conn: sqlite3.Connection, path: Path, found: int, current: int, steps: Mapping[int, Step], *, what: str, advice: str
) -> Path | None:
    """Bring an SQLite store stamped `PRAGMA user_version = found` to `current`: a backup copy first, then every
    step from `found` up and the new stamp in one transaction. Returns the backup's path (None: nothing to do).
    `conn` is in autocommit mode (isolation_level=None)."""
    if found == current:
        return None
    if found > current or any(v not in steps for v in range(found, current)):
        check_version(found, current, what=what, where=path, advice=advice)
    try:
        conn.execute("BEGIN IMMEDIATE")  # one migrator at a time; a second finds the store migrated
        try:
            now = conn.execute("PRAGMA user_version").fetchone()[0]
            if now != found:  # another process migrated it meanwhile
                conn.execute("ROLLBACK")
                return migrate_sqlite(conn, path, now, current, steps, what=what, advice=advice)
            backup = _backup(path, found)
            for version in range(found, current):
                steps[version](conn)
            conn.execute(f"PRAGMA user_version={current}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except (sqlite3.Error, OSError) as exc:
        raise InputError(
            f"{what} has schema version {found} and migrating it to version {current} failed "
            f"({' '.join(str(exc).split())}); it is unchanged: make the file and its folder writable "
            "(or free some disk space) and run again",
            path=path,
        ) from None
    warnings.warn(
        f"{path}: {what} was migrated from schema version {found} to {current}; the file as it was is "
        f"kept as {backup.name}",
        StoreMigratedWarning,
        stacklevel=3,
    )
    return backup


def _backup(path: Path, version: int) -> Path:
    """A consistent copy of the store's last commit (WAL content included), written whole or not at all. It reads
    through a second connection: the migrating one holds the write lock, and a backup through it would wait on
    itself."""
    target = path.with_name(f"{path.name}.v{version}.bak")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    source, copy = sqlite3.connect(path), sqlite3.connect(partial)
    try:
        try:
            source.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, even when the store runs in WAL
        finally:
            copy.close()
            source.close()
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target
