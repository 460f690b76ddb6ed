"""Schema versions of the post store and its scores table, and the steps between them (the rule in
core.store_versions; docs/faults.md, "Stores written by an earlier version"; docs/collect.md, "Upgrading").

Both are version 1 since they were created, so there is no step yet: a store of version 1 is read as it is, a
newer one is refused (upgrade mhaudit), and an older one cannot exist. A version N + 1 adds its step here,
`POST_STORE_STEPS[N]` (SQLite, run after a backup copy, in one transaction with the new stamp; on PostgreSQL in
the transaction that opens the store, so it commits whole or not at all).
"""

from __future__ import annotations

from mhaudit.core.store_versions import Step, check_version

POST_STORE = "this post store"
POST_STORE_STEPS: dict[int, Step] = {}  # version -> its step to version + 1


def check_scores_table(found: int, current: int, where: object) -> None:
    check_version(
        found,
        current,
        what="its scores table",
        where=where,
        advice="score into a new post store, or drop its scores table to score its posts again",
    )
