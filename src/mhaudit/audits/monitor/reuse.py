"""Windows of an earlier round reused instead of recomputed (docs/monitor.md, "Reruns").

A window's costly statistics (the EM prevalence and its bootstrap interval, the label-free estimate and its trust
verdict, the ensemble's accuracy) depend only on its own posts' uris and scores, its start (their bootstraps'
seed), the reference predictions, the model and the options. `window_context` digests everything but the
window; `WindowReuse.key` adds the window. A window whose key is among the cached rows takes their values; the
rest (counts, shares, drift against the stream's first posts, the CUSUM over windows) is cheap and always
recomputed, since it depends on other windows. The cached rows come in as `MonitorInputs.cached_windows` and the
round's rows go out as `result.outputs["window_rows"]` (weak_supervision.collect.window_cache stores them).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import numpy as np
import pandas as pd

from mhaudit import __version__
from mhaudit.tables.digest import digest_frame

__all__ = ["REUSE_VERSION", "window_context", "WindowReuse"]

REUSE_VERSION = 2  # bump when a cached statistic is computed differently (the mhaudit version is in the key too);
# 2: the estimate's draws split at the reference (issue 31)
# options read after the windows are computed, and the history, which only chooses which windows there are: a
# window's costly statistics depend on its own posts alone, and the history keeps whole windows only
_NOT_IN_ROWS = ("psi_warn", "psi_fail", "suggest_budget", "figures", "history")


def window_context(inputs, options) -> str:
    """SHA-256 of what every window's costly statistics depend on, the window aside: the code's version, the
    model digest and classes, the reference predictions, the options that reach a window's row and the
    ensemble's runs (`inputs`: MonitorInputs; `options`: MonitorOptions)."""
    ensemble = inputs.ensemble
    parts = {
        "reuse": REUSE_VERSION,
        "mhaudit": __version__,
        "model": inputs.model_digest,
        "classes": list(inputs.classes),
        "reference": digest_frame(inputs.reference.frame),
        "options": {k: v for k, v in asdict(options).items() if k not in _NOT_IN_ROWS},
        "ensemble": None
        if ensemble is None
        else [list(ensemble.runs), list(ensemble.seeds), ensemble.deployed, list(ensemble.digests)],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class WindowReuse:
    """The cached rows by key (`cached`: a `key` column and the statistics, or None), the keys of this round's
    windows in order, the costly columns' names and how many windows were computed afresh."""

    def __init__(self, context: str, cached: pd.DataFrame | None = None):
        self.context, self.keys, self.columns, self.recomputed = context, list[str](), list[str](), 0
        self._rows = (
            {}
            if cached is None or cached.empty
            else dict(zip(cached["key"], cached.drop(columns="key").to_dict("records")))
        )

    def key(self, start: int, uris: np.ndarray, logits: np.ndarray, codes: np.ndarray | None) -> str:
        """The window's key from the context, its start, its posts' uris and scores (and, with an ensemble, every
        run's class codes on them); recorded in this round's keys."""
        digest = hashlib.sha256(f"{self.context}\0{start}\0".encode())
        digest.update("\n".join(map(str, uris)).encode() + b"\0")
        digest.update(np.ascontiguousarray(logits, dtype=np.float64).tobytes())
        if codes is not None:
            digest.update(np.ascontiguousarray(codes, dtype=np.int64).tobytes())
        key = digest.hexdigest()
        self.keys.append(key)
        return key

    def cached(self, key: str) -> dict | None:
        """The window's cached statistics, or None (then the caller computes them, and they are counted)."""
        row = self._rows.get(key)
        if row is None:
            self.recomputed += 1
        elif not self.columns:
            self.columns = list(row)
        return row

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        """This round's rows to cache: the key, then the costly columns of the window table (`table`, one row per
        window in order, as window_table returns it)."""
        return pd.concat([pd.DataFrame({"key": self.keys}), table[self.columns].reset_index(drop=True)], axis=1)
