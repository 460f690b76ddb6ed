"""What a collection run is told: `CollectOptions` (languages, replies, batching, when to stop, the rewind) with
its `RetryPolicy` (docs/collect.md, "Retry policy"), checked once; and `parse_duration` for the command's '14d'."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from mhaudit.core.errors import InputError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'30s', '10m', '2h', '14d' (or a plain number of seconds) -> seconds."""
    raw = text.strip().lower()
    number, unit = (raw[:-1], raw[-1]) if raw[-1:] in _UNITS else (raw, "s")
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise InputError(f"the duration {text!r} is not a number followed by s, m, h or d (e.g. 14d)") from None
    if not seconds > 0 or seconds == float("inf"):
        raise InputError(f"the duration {text!r} must be positive")
    return seconds


@dataclass(frozen=True)
class RetryPolicy:
    max_failures: int = 10
    base_s: float = 1.0
    max_s: float = 60.0

    def delay(self, failure: int, rng: random.Random) -> float:
        """Wait before reconnect number `failure` (1-based): exponential, capped, jittered to [d/2, d]."""
        ceiling = min(self.max_s, self.base_s * 2 ** (failure - 1))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)


@dataclass
class CollectOptions:
    langs: Sequence[str] = ("en",)  # primary language subtags to keep; empty = every language
    replies: bool = True
    batch_size: int = 500  # commit when this many posts are pending ...
    flush_every_s: float = 1.0  # ... or this long after the last commit
    duration_s: float | None = None
    max_posts: int | None = None  # stop once this many NEW posts are stored in this run
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    connect_timeout_s: float = 10.0
    rewind_s: float = 5.0  # subscribe wire: (re)subscribe this long before the last processed time_us


def check_collect_options(opts: CollectOptions) -> None:
    """One sentence (InputError) for a batch size or --max-posts below 1, or a rewind that is not seconds >= 0."""
    if opts.batch_size < 1:
        raise InputError(f"the batch size must be at least 1, not {opts.batch_size}")
    if opts.max_posts is not None and opts.max_posts < 1:
        raise InputError(f"--max-posts must be at least 1, not {opts.max_posts}")
    rewind = opts.rewind_s
    if not (isinstance(rewind, (int, float)) and math.isfinite(rewind) and rewind >= 0):
        raise InputError(f"the rewind must be a number of seconds, 0 or more, not {rewind!r}")
