"""Thread budgets: how many threads the BLAS, OpenMP and torch pools may use, set in one place.

Two budgets. Inside a process-parallel job (a `core.executors` worker, a spaCy parse worker, a joblib fit) each
worker gets one thread: the workers already share the cores. Elsewhere a stage gets `default_threads()`: the
cores this process may run on, or fewer where the user said so (MHAUDIT_THREADS, else OMP_NUM_THREADS). Small
per-window work (the domain classifier's trees, the bootstrap's batched products) asks for one thread whatever
the machine: threads that wake and sync for a few thousand rows cost more than they save, and on a loaded
machine an OpenMP barrier waits for a thread the scheduler has parked (measured 100x slower, issue 33).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

__all__ = ["THREADS_ENV", "WORKER_THREADS", "available_cores", "default_threads", "limit_worker", "thread_budget"]

THREADS_ENV = "MHAUDIT_THREADS"
WORKER_THREADS = 1  # each worker of a process-parallel stage: the workers already share the cores


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it, else the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads(workers: int = 1) -> int:
    """The threads each of `workers` parallel jobs may use: MHAUDIT_THREADS when set, else OMP_NUM_THREADS when
    set, else the available cores; shared among the workers, at least one each."""
    for name in (THREADS_ENV, "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return max(1, int(value) // max(1, workers))
    return max(1, available_cores() // max(1, workers))


def _torch_threads(threads: int | None) -> int | None:
    """Set torch's intra-op threads if torch is loaded (never imports it); the previous count, or None."""
    torch = sys.modules.get("torch")
    if torch is None or threads is None:
        return None
    before = torch.get_num_threads()
    if before != threads:
        torch.set_num_threads(threads)
    return before


@contextmanager
def thread_budget(threads: int | None = 1, *, user_api: str | None = None) -> Iterator[None]:
    """BLAS (numpy, SciPy), OpenMP (scikit-learn) and, when loaded, torch use at most `threads` threads inside
    the block (None: `default_threads()`); `user_api` "blas" or "openmp" limits that pool only (and not torch).

    BLAS's limit is process-wide; OpenMP's applies to the threads that enter OpenMP regions from this one."""
    threads = default_threads() if threads is None else max(1, int(threads))
    with threadpool_limits(limits=threads, user_api=user_api):
        before = _torch_threads(threads if user_api is None else None)
        try:
            yield
        finally:
            _torch_threads(before)


def limit_worker(threads: int = WORKER_THREADS) -> None:
    """At the start of a worker process (an executor's initializer): BLAS, OpenMP and torch at `threads` for the
    whole process, including a torch imported later (it reads OMP_NUM_THREADS when it loads)."""
    os.environ["OMP_NUM_THREADS"] = os.environ[THREADS_ENV] = str(threads)
    threadpool_limits(limits=threads)
    _torch_threads(threads)
