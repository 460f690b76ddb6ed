"""A SYNTHETIC post stream with a planted change, for the monitor's tests and benchmarks.

Posts are drawn from labelled texts (e.g. the synthetic corpus's tweets): `per_window` posts per window,
spread evenly over it, each positive with the window's prevalence. From `change_at` the prevalence is
multiplied by `factor` (0 leaves it); from `shift_at` every post has half its words replaced by words of
an unrelated vocabulary (new slang the model never saw), which flattens its scores. Each post is a mapping for
`PostStore.commit_batch` (a synthetic DID per author, a URI per post); its true label rides along as
'label', which the store ignores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["StreamConfig", "simulate_stream", "SLANG"]

SLANG = (
    "fr",
    "ngl",
    "lowkey",
    "bussin",
    "delulu",
    "mid",
    "slay",
    "rizz",
    "yeet",
    "vibe",
    "based",
    "cringe",
    "sus",
    "bet",
    "cap",
    "finna",
    "periodt",
    "stan",
    "tea",
    "bruh",
)


@dataclass(frozen=True)
class StreamConfig:
    """Windows, sizes, prevalence and planted changes of a SYNTHETIC stream of posts."""

    n_windows: int = 12
    per_window: int = 1000
    window: str = "1D"
    start: str = "2026-01-01T00:00:00Z"
    prevalence: float = 0.2
    change_at: int | None = None  # first window of the changed prevalence
    factor: float = 2.0
    shift_at: int | None = None  # first window of the vocabulary shift
    n_authors: int = 400
    seed: int = 0


def _shifted(text: str, rng: np.random.Generator) -> str:
    words = text.split()
    swap = rng.random(len(words)) < 0.5
    return " ".join(SLANG[rng.integers(len(SLANG))] if s else w for w, s in zip(words, swap))


def simulate_stream(positives: list[str], negatives: list[str], config: StreamConfig = StreamConfig()) -> list[dict]:
    """The stream's posts, in time order (SYNTHETIC)."""
    rng = np.random.default_rng(config.seed)
    step = pd.Timedelta(config.window) / config.per_window
    start = pd.Timestamp(config.start)
    posts = []
    for w in range(config.n_windows):
        p = config.prevalence * (config.factor if config.change_at is not None and w >= config.change_at else 1.0)
        labels = rng.random(config.per_window) < p
        for i, positive in enumerate(labels):
            pool = positives if positive else negatives
            text = pool[rng.integers(len(pool))]
            if config.shift_at is not None and w >= config.shift_at:
                text = _shifted(text, rng)
            n = w * config.per_window + i
            author = f"did:plc:synthetic{rng.integers(config.n_authors):05d}"
            when = start + pd.Timedelta(config.window) * w + step * i
            posts.append(
                {
                    "uri": f"at://{author}/app.bsky.feed.post/s{n:07d}",
                    "did": author,
                    "text": text,
                    "created_at": when.isoformat().replace("+00:00", "Z"),
                    "langs": ["en"],
                    "categories": ["synthetic"],
                    "terms": [],
                    "label": int(positive),
                }
            )
    return posts
