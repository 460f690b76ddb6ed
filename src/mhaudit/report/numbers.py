"""How a number prints in every report page and in the scorecard: three decimals, four significant digits
from 1e4, a p or q value under 1e-3 in scientific notation (p = 1e-4 is not 0.000), and a count (a name
starting n_) that is a whole number as one (200 human labels, not 200.000)."""

from __future__ import annotations

import re

__all__ = ["P_COLUMNS", "COUNT_COLUMNS", "format_number"]

P_COLUMNS = re.compile(r"^(p|q|p_.*|.*_p|p_value.*)$")  # p values and FDR q values, by column or statistic name
COUNT_COLUMNS = re.compile(r"^n_.+")


def format_number(value: float, name: str = "") -> str:
    """`value` as a table cell of the column (or statistic) called `name`."""
    if P_COLUMNS.match(name) and 0 < abs(value) < 1e-3:
        return f"{value:.1e}"
    if COUNT_COLUMNS.match(name) and float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3f}" if abs(value) < 1e4 else f"{value:.4g}"
