"""One executor seam for independent jobs (model x seed training, prediction, attribution): local processes by
default, Ray on request (docs/models.md).

Jobs are top-level functions with picklable arguments that write their results to disk and return something
small. A Ray worker imports only the job's module and what the job itself imports (a TF-IDF model's scoring job
never imports torch), and an InputError raised in a job reaches the caller as itself, one sentence (e.g. the
extra a model needs), not a Ray traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from mhaudit.core.errors import InputError
from mhaudit.core.progress import Progress
from mhaudit.core.threads import limit_worker

EXECUTORS = ("local", "ray")


def run_jobs(
    fn: Callable, jobs: Sequence[dict], *, executor: str = "local", workers: int = 1, progress: Progress | None = None
) -> list:
    """Call fn(**job) for every job and return the results in job order; `progress` advances by one in this
    process as each result arrives, in job order (within the caller's stage, whose total is the jobs)."""
    if executor not in EXECUTORS:
        raise InputError(f"executor '{executor}' must be one of {', '.join(EXECUTORS)}")
    if not jobs:
        return []
    if executor == "ray":
        return _ray(fn, jobs, progress)
    if workers <= 1 or len(jobs) == 1:  # in-process: simplest, and what 2-core machines want
        return [_counted(progress, fn(**job)) for job in jobs]
    # the workers share the cores: one BLAS, OpenMP and torch thread each
    with ProcessPoolExecutor(max_workers=workers, initializer=limit_worker) as pool:
        futures = [pool.submit(fn, **job) for job in jobs]
        return [_counted(progress, f.result()) for f in futures]


def _counted(progress: Progress | None, result):
    if progress is not None:
        progress.advance()
    return result


def _ray(fn: Callable, jobs: Sequence[dict], progress: Progress | None) -> list:
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray: pip install 'mhaudit[ray]'") from None
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        ray.init(address=address) if address else ray.init(num_cpus=os.cpu_count(), include_dashboard=False)
    remote = ray.remote(_one_thread)  # Ray's own default (OMP_NUM_THREADS=1 where unset) misses a set variable
    refs = [remote.remote(fn, job) for job in jobs]
    try:
        return [_counted(progress, ray.get(ref)) for ref in refs]
    except ray.exceptions.RayTaskError as exc:
        # a job's bad input (e.g. a model whose extra the workers lack) is its one sentence, not Ray's traceback
        if isinstance(exc.cause, InputError):
            raise exc.cause from None
        raise


def _one_thread(fn: Callable, job: dict):
    """A Ray task: `fn(**job)` on core.threads' worker budget, like a local worker process."""
    limit_worker()
    return fn(**job)
