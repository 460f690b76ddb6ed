"""The score columns of one prediction source: which kind it gives (`logit_<class>` preferred, else
`prob_<class>`), for which classes, and their values as finite numbers, each fault one sentence naming the row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import SOURCE_ROW
from mhaudit.tables.prediction_sources import PredictionSource
from mhaudit.tables.predictions import LOGIT, PROB

# prob_ and logit_ columns in one file must agree: softmax(logits) within this of the probabilities
BOTH_KINDS_TOLERANCE = 1e-3
PLAIN_NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"  # what score_values parses without pd.to_numeric


def score_columns(source: PredictionSource) -> tuple[str, list[str]]:
    """The score kind used (logit_ preferred) and the classes in column order; both kinds must agree."""
    frame = source.frame
    logits = [str(c)[len(LOGIT) :] for c in frame.columns if str(c).startswith(LOGIT)]
    probs = [str(c)[len(PROB) :] for c in frame.columns if str(c).startswith(PROB)]
    if not logits and not probs:
        raise InputError(
            f"{source.name} has no score columns; expected one 'logit_<class>' (preferred) or "
            f"'prob_<class>' column per class, found {', '.join(map(str, frame.columns[:-2]))}"
        )
    if logits and probs:
        if sorted(logits) != sorted(probs):
            raise InputError(
                f"{source.name}: the logit_ columns ({', '.join(logits)}) and prob_ columns "
                f"({', '.join(probs)}) name different classes"
            )
        z = score_values(source, LOGIT, logits)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        gap = np.abs(p - score_values(source, PROB, logits)).max(axis=1)
        if (gap > BOTH_KINDS_TOLERANCE).any():
            i = int(np.argmax(gap > BOTH_KINDS_TOLERANCE))
            raise InputError(
                f"{source.name}: row {frame[SOURCE_ROW].iat[i]}: softmax of the logit_ columns differs "
                f"from the prob_ columns by {gap[i]:.3g}; give one kind of score or make them agree"
            )
    return (LOGIT, logits) if logits else (PROB, probs)


def _plain_floats(column: pd.Series) -> np.ndarray | None:
    """A text column of plain decimal numbers as floats, by one pyarrow cast (~6x faster than pd.to_numeric,
    the same correctly rounded values); None when any cell is something else (empty, a word, a space)."""
    if not isinstance(column.dtype, pd.StringDtype):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = pa.array(column.array)
    if cells.null_count or not pc.all(pc.match_substring_regex(cells, PLAIN_NUMBER)).as_py():
        return None
    return pc.cast(cells, pa.float64()).to_numpy(zero_copy_only=False)


def score_values(source: PredictionSource, kind: str, classes: list[str]) -> np.ndarray:
    """The `kind` columns of `classes` as an (n, k) array of floats; InputError naming the first cell that is not a
    finite number."""
    frame = source.frame
    parsed = [_plain_floats(frame[f"{kind}{c}"]) for c in classes]
    if all(p is not None for p in parsed):  # the common case: plain numbers (1e999 still reaches the check)
        values = np.array(parsed).T  # (n, k), laid out as DataFrame.to_numpy lays it out
    else:
        values = frame[[f"{kind}{c}" for c in classes]].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raw = frame[f"{kind}{classes[col]}"].iat[row]
        shown = "empty" if str(raw).strip() in ("", "nan", "None") else repr(raw)
        raise InputError(
            f"{source.name}: row {frame[SOURCE_ROW].iat[row]}: score column '{kind}{classes[col]}' is "
            f"{shown}; scores must be finite numbers"
        )
    return values
