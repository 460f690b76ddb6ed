"""Thread budgets: how many threads the BLAS and OpenMP pools may use inside a block, set in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

__all__ = ["thread_budget"]


@contextmanager
def thread_budget(threads: int = 1) -> Iterator[None]:
    """BLAS (numpy, SciPy) and OpenMP (scikit-learn) use at most `threads` threads inside the block.

    Small batched products and small tree fits lose more to waking and syncing threads than they gain,
    and on a shared machine every extra thread competes with other processes."""
    with threadpool_limits(limits=threads):
        yield
