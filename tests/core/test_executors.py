"""The executor seam: in-process, local processes and a local Ray instance give the same results."""

import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.executors import run_jobs
from mhaudit.core.progress import Progress


def square_plus(x, y=0):
    return x * x + y


JOBS = [{"x": i, "y": 1} for i in range(5)]


@pytest.mark.parametrize("workers", [1, 2])
def test_local(workers):
    told = []
    progress = Progress(told.append)
    with progress.stage("square", total=len(JOBS)):
        assert run_jobs(square_plus, JOBS, workers=workers, progress=progress) == [1, 2, 5, 10, 17]
    assert [(e.done, e.total) for e in told if e.kind == "advance"] == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def refuse(x):
    if x == 1:
        raise InputError(f"job {x} refuses")
    return x


def test_ray_local_instance(monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is the optional mhaudit[ray] extra")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        told = []
        progress = Progress(told.append)
        with progress.stage("square", total=len(JOBS)):
            assert run_jobs(square_plus, JOBS, executor="ray", progress=progress) == [1, 2, 5, 10, 17]
        assert [e.done for e in told if e.kind == "advance"] == [1, 2, 3, 4, 5]
        # a job's bad input reaches the caller as itself (one sentence), not wrapped in Ray's traceback
        with pytest.raises(InputError) as raised:
            run_jobs(refuse, [{"x": 1}, {"x": 2}], executor="ray")
        assert type(raised.value) is InputError and str(raised.value) == "job 1 refuses"
    finally:
        ray.shutdown()


def test_unknown_executor():
    with pytest.raises(InputError, match="executor 'dask'"):
        run_jobs(square_plus, JOBS, executor="dask")
