"""Riding out a restart or failover of the post store's PostgreSQL server (docs/collect.md, "Restarts and failover").

One policy and one loop for every statement the store sends: when an action fails because the connection is
lost, the store reconnects with a bounded, growing back-off and runs the whole action again. That is safe because
every action is idempotent: a transaction either committed or left nothing, and the store's writes are `INSERT …
ON CONFLICT DO NOTHING` plus a cursor that never moves back. Once the budget is spent the store gives up, with one
sentence.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from mhaudit.core.errors import InputError

__all__ = ["ENV", "ReconnectPolicy", "StoreUnreachable", "retrying"]

ENV = "MHAUDIT_DB_RETRY_S"
T = TypeVar("T")


class StoreUnreachable(InputError):
    """The database stayed unreachable for the whole retry budget."""


@dataclass(frozen=True)
class ReconnectPolicy:
    budget_s: float = 30.0  # give up once this long has passed since the connection was lost
    base_s: float = 0.1  # first wait; doubled after each failed reconnect ...
    max_s: float = 2.0  # ... up to this

    @classmethod
    def with_budget(cls, budget_s: float | None = None) -> ReconnectPolicy:
        """The default policy with a budget of `budget_s` seconds, or MHAUDIT_DB_RETRY_S's when None (else 30 s);
        0 gives up at the first failed reconnect."""
        raw = os.environ.get(ENV, "").strip() if budget_s is None else budget_s
        if raw == "":
            return cls()
        try:
            budget = float(raw)
        except (TypeError, ValueError):
            budget = -1.0
        if not 0 <= budget < float("inf"):
            raise InputError(f"the database retry budget (--db-retry or {ENV}) must be 0 or more seconds, not {raw!r}")
        return cls(budget_s=budget)

    def delay(self, attempt: int) -> float:
        return min(self.max_s, self.base_s * 2 ** (attempt - 1))


def retrying(
    action: Callable[[], T],
    *,
    lost: Callable[[BaseException], bool],
    where: str,
    reconnect: Callable[[], object] | None = None,
    policy: ReconnectPolicy | None = None,
    describe: Callable[[BaseException], str] = lambda exc: " ".join(str(exc).split()),
) -> T:
    """action(), redone after `reconnect()` (None: action() connects itself) while it fails with an error that
    `lost(error)` calls a lost connection; StoreUnreachable once `policy.budget_s` has passed since the first
    loss. Any other error passes through at once. `where` (the database, without password) and `describe(error)`
    (its reason, one line, without password) go into the sentence."""
    policy = policy or ReconnectPolicy.with_budget()
    deadline, attempt = None, 0
    while True:
        try:
            if attempt and reconnect is not None:
                reconnect()
            return action()
        except Exception as exc:
            if not lost(exc):
                raise
            last = exc
        now = time.monotonic()
        deadline = now + policy.budget_s if deadline is None else deadline
        attempt += 1
        if now >= deadline:
            reason = describe(last) or type(last).__name__
            raise StoreUnreachable(
                f"lost the connection to the PostgreSQL post store {where} and could not reconnect within "
                f"{policy.budget_s:g} s (last error: {reason}); the batch in flight was not stored and everything "
                f"committed before it was; once the server is back, run the same command again (it skips what "
                f"is stored), or set {ENV} to wait longer"
            ) from None
        time.sleep(min(policy.delay(attempt), deadline - now))
