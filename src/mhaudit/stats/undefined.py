"""One convention for statistics that cannot be computed (docs/statistics.md).

A statistic whose definition divides by zero (precision with no positive prediction, an AUC with one
class, kappa with chance agreement 1) is NaN, never a substituted 0, 0.5 or 1. A function that returns
a bare number or array warns with `UndefinedStatisticWarning` saying why; a function that returns a
record, and every table, carries the reason in a `reason` field instead. A macro average over classes
is undefined when any of its classes is: averaging only the defined ones would change what is averaged
without saying so.

Where a paper substituted a value (scikit-learn's `zero_division=0`), the functions that compute such
ratios take `zero_division`: NaN (the default) or an explicit 0.0 or 1.0, which reproduces the paper
and does not warn, since the caller asked for it.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np

__all__ = ["UndefinedStatisticWarning", "warn_undefined", "check_zero_division", "divide", "quiet_undefined"]


class UndefinedStatisticWarning(UserWarning):
    """A returned statistic is NaN because it is undefined for these inputs (as sklearn's UndefinedMetricWarning)."""


def warn_undefined(reason: str, stacklevel: int = 3) -> None:
    """Warn that a returned value is NaN, with the reason (one sentence)."""
    warnings.warn(reason, UndefinedStatisticWarning, stacklevel=stacklevel)


def check_zero_division(zero_division: float) -> float:
    """NaN, 0.0 or 1.0; anything else is a ValueError."""
    try:
        value = float(zero_division)
    except (TypeError, ValueError):
        value = None
    if value is None or not (math.isnan(value) or value in (0.0, 1.0)):
        raise ValueError(f"zero_division must be NaN, 0 or 1, got {zero_division!r}")
    return value


def divide(num, den, zero_division: float = math.nan) -> np.ndarray:
    """num / den elementwise, `zero_division` (NaN by default) where den is 0; arrays broadcast."""
    num, den = np.broadcast_arrays(np.asarray(num, dtype=float), np.asarray(den, dtype=float))
    out = np.full(den.shape, check_zero_division(zero_division))
    np.divide(num, den, out=out, where=den != 0)
    return out


@contextlib.contextmanager
def quiet_undefined():
    """Silence UndefinedStatisticWarning where the caller records the reason in a table itself."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        yield
