"""How an LLM request fails and is retried: the errors that stop a run or fail one item, and `RetryPolicy`
(docs/labels.md, "Retry policy and failures").

A connection error, a timeout, HTTP 429 or any 5xx is retried with a doubling wait; other 4xx are not. A server
that cannot be reached at all stops the run with one sentence naming the URL and this policy; an item whose
request still fails after its retries is counted as failed, not stored, and asked again by the next run.

Privacy: a server's response body is never copied into a failure, a note or the run report (an error body
can echo the prompt, i.e. the post): they keep the URL, the HTTP status code or the exception class. Only the
one-sentence stop for 401/403/404 (`ServerRejected`, shown on the console, never stored) quotes the server's
reason, cut to 300 characters.
"""

from __future__ import annotations

from dataclasses import dataclass

from mhaudit.core.errors import InputError


class ServerUnreachable(InputError):
    """The server could not be reached after every retry: stop the run (exit 2)."""


class ServerRejected(InputError):
    """The server refused the request in a way every item would share (unknown model, auth): stop the run."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class RequestFailed(Exception):
    """One item's request failed after its retries (5xx, timeout, other 4xx); the item is not stored.

    The message names the URL and the status code or exception class, never the server's body; `reason` is
    the same without the URL and the retry policy (for notes)."""

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason or message


def brief(exc: BaseException) -> str:
    """The exception class and HTTP status, e.g. 'ServerRejected (HTTP 404)': what a report may keep."""
    status = getattr(exc, "status", None)
    return type(exc).__name__ + (f" (HTTP {status})" if status else "")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0

    def __post_init__(self):
        if self.retries < 0 or self.backoff < 0:
            raise InputError("--retries and --backoff must be >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed try number `attempt` (0-based)."""
        return min(self.backoff * 2**attempt, self.max_backoff)

    def describe(self) -> str:
        waits = ", ".join(f"{self.delay(i):g} s" for i in range(min(self.retries, 4)))
        more = ", ..." if self.retries > 4 else ""
        return (
            f"{self.retries} retr{'y' if self.retries == 1 else 'ies'} on connection errors, timeouts, "
            f"HTTP 429 and 5xx, waiting {waits or 'nothing'}{more} (doubling, at most {self.max_backoff:g} s)"
        )
