"""Thread budgets (core.threads): the default budget's sources in order, the limits held and restored (BLAS,
OpenMP, torch), and one thread in every worker of a process-parallel stage (core.executors, issue 33)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from mhaudit.core.executors import run_jobs
from mhaudit.core.threads import THREADS_ENV, available_cores, default_threads, thread_budget


def _pools() -> dict[str, int]:
    return {p["internal_api"]: p["num_threads"] for p in threadpool_info()}


def test_default_budget_from_the_user_then_the_cores(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert default_threads() == available_cores() >= 1
    assert default_threads(workers=available_cores() + 1) == 1  # never below one thread a worker
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert default_threads() == 4 and default_threads(workers=2) == 2
    monkeypatch.setenv(THREADS_ENV, "3")  # mhaudit's own setting comes first
    assert default_threads() == 3 and default_threads(workers=2) == 1
    monkeypatch.setenv(THREADS_ENV, "none")  # not a count: ignored
    assert default_threads() == 4


def test_budget_limits_blas_openmp_and_torch_then_restores():
    torch = pytest.importorskip("torch", reason="torch is the mhaudit[transformers] extra")
    torch.set_num_threads(2)
    with threadpool_limits(2):
        before = _pools()
        with thread_budget(1):
            assert set(_pools().values()) == {1} and torch.get_num_threads() == 1
        assert _pools() == before and torch.get_num_threads() == 2
        with thread_budget(1, user_api="blas"):  # one pool only: OpenMP and torch keep theirs
            assert _pools()["openblas"] == 1 and torch.get_num_threads() == 2


def worker_threads(job: int) -> tuple[str | None, str | None, dict[str, int]]:
    np.ones(2) @ np.ones(2)  # BLAS loaded in every worker
    return os.environ.get("OMP_NUM_THREADS"), os.environ.get(THREADS_ENV), _pools()


def test_every_executor_worker_runs_on_one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.delenv(THREADS_ENV, raising=False)
    with threadpool_limits(2):  # what the forked workers inherit
        assert _pools()["openblas"] == 2
        seen = run_jobs(worker_threads, [{"job": i} for i in range(4)], workers=2)
    for omp, own, pools in seen:
        assert omp == own == "1" and set(pools.values()) == {1}


def test_every_ray_task_runs_on_one_thread(monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is the optional mhaudit[ray] extra")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # Ray's own default would keep a variable already set
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        seen = run_jobs(worker_threads, [{"job": i} for i in range(2)], executor="ray")
    finally:
        ray.shutdown()
    for omp, own, pools in seen:
        assert omp == own == "1" and set(pools.values()) == {1}
