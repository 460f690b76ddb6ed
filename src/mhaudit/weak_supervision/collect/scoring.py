"""Scoring the posts of a post store with a model: every post it has not scored yet, batch by batch.

Each batch is one job of `core.executors.run_jobs` (in this process, local processes or Ray) that scores its
texts and commits their scores in one transaction, so a kill -9 loses at most the batches in flight. The batches
are cut here, in uri order, so the numbers are the same wherever they run. A job loads the model once per process
(`loaded_model`) with the `load` function it is given (anything that turns a folder into an object with
`predict_logits`), so this module knows no model and imports no torch (docs/monitor.md, "--executor ray").
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from mhaudit.core.errors import InputError
from mhaudit.core.executors import run_jobs
from mhaudit.weak_supervision.collect.scores import ensure_scores_table, pending_posts, store_scores
from mhaudit.weak_supervision.collect.store import PostStore

__all__ = ["model_digest", "loaded_model", "score_posts", "score_batch"]

_LOADED: dict[str, object] = {}  # this process's models, by folder


def model_digest(model_dir: str | Path) -> str:
    """SHA-256 over the model folder's files, names and bytes, in name order; a model that is one file (a skops
    pipeline) is hashed the same way, as a folder holding only that file."""
    folder = Path(model_dir)
    digest = hashlib.sha256()
    if folder.is_file():
        files, folder = [folder], folder.parent
    else:
        files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    for path in files:
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def loaded_model(load: Callable[[str], object], model_dir: str | Path):
    """The model in `model_dir`, loaded by `load` on this process's first call and kept for the next ones. Kept
    per `load` too (by its repr, which a `functools.partial` spells with its arguments): an outside model loaded
    with another label mapping is another model."""
    given = Path(model_dir)
    path = str(given.resolve()) if given.exists() else str(model_dir)  # what names nothing here (a Hub id) as given
    key = f"{path}\0{load!r}"
    if key not in _LOADED:
        _LOADED[key] = load(path)
    return _LOADED[key]


def score_batch(
    store: str, load: Callable[[str], object], model_dir: str, digest: str, uris: list[str], texts: list[str]
) -> int:
    """One job: score `texts` and commit their scores; returns how many rows were new (in a worker process,
    torch and BLAS take one thread: core.executors)."""
    model = loaded_model(load, model_dir)
    logits = model.predict_logits(texts)
    with PostStore(store, wait_for_server=True, create=False) as posts:  # reached at the start: a refusal is a restart
        done = store_scores(posts, digest, uris, logits)
    time.sleep(float(os.environ.get("MHAUDIT_MONITOR_BATCH_DELAY", "0")))  # fault tests: slow batches to kill
    return done


def score_posts(
    store: str | Path,
    load: Callable[[str], object],
    model_dir: str | Path,
    digest: str,
    *,
    batch_size: int = 256,
    executor: str = "local",
    workers: int = 1,
) -> int:
    """Score every post of `store` (a path or postgresql:// URL) that the model in `model_dir` (whose
    `model_digest` is `digest`) has not scored yet; returns how many were scored. `executor` and `workers`: as
    core.executors.run_jobs."""
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    with PostStore(store, create=False) as posts:
        ensure_scores_table(posts)
        pending = pending_posts(posts, digest)
    jobs = [
        {
            "store": str(store),
            "load": load,
            "model_dir": str(model_dir),
            "digest": digest,
            "uris": pending["uri"].iloc[i : i + batch_size].tolist(),
            "texts": pending["text"].iloc[i : i + batch_size].tolist(),
        }
        for i in range(0, len(pending), batch_size)
    ]
    return sum(run_jobs(score_batch, jobs, executor=executor, workers=workers))
