"""What an LLM server's answer means: the label in its text, and the 0/1 log-probabilities of its first token.

Answers: the answer text is stripped of surrounding whitespace; exactly "1" or "0" is a label, anything
else is stored as invalid (value NULL) with the raw text. Nothing is coerced ("1." or "Yes" are invalid).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CHOICES = ["0", "1"]


def parse_answer(raw: str | None) -> int | None:
    """1 or 0 when the answer is exactly that after stripping whitespace, else None (invalid, never coerced)."""
    text = (raw or "").strip()
    return int(text) if text in ("0", "1") else None


@dataclass
class Answer:
    raw: str
    value: int | None
    latency_ms: float
    attempts: int
    top_logprobs: list[tuple[str, float]] | None = None  # at the first non-blank answer token


def answer_logprobs(top: Sequence[tuple[str, float]] | None) -> dict[str, float]:
    """Log-probability of the answers '0' and '1' among a token's top alternatives.

    Tokens that are '0' or '1' after stripping whitespace (" 1", "1") are pooled by log-sum-exp. An answer
    missing from the list is missing from the result (`mhaudit.models.llm.positive_probability` bounds its mass).
    """
    out: dict[str, float] = {}
    for token, logprob in top or ():
        key = str(token).strip()
        if key in CHOICES and logprob is not None and math.isfinite(logprob):
            out[key] = float(np.logaddexp(out[key], logprob)) if key in out else float(logprob)
    return out


def first_answer_token(entries: Sequence[dict] | None) -> list[tuple[str, float]] | None:
    """Top alternatives at the first generated token that is not blank, as (token, logprob) pairs."""
    for entry in entries or ():
        if str(entry.get("token", "")).strip():
            top = entry.get("top_logprobs") or []
            pairs = [(str(t.get("token", "")), float(t["logprob"])) for t in top if t.get("logprob") is not None]
            if entry.get("logprob") is not None and all(p[0] != entry["token"] for p in pairs):
                pairs.append((str(entry["token"]), float(entry["logprob"])))
            return pairs
    return None
