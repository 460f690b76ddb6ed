"""Conflict zone for qualitative review (TSS paper Appendix D): where lexical channel A and the
structural verdict disagree, and which side was right.

The structural verdict is BC when it was run, else C, else B. Failure types, by who is wrong:
- keyword_false_positive: A says positive, gold and the structural verdict say negative;
- implicit_false_negative: A misses a positive that the structural verdict catches;
- structural_false_positive / structural_false_negative: the reverse, A is right.
Counts cover every instance; the exported sample is drawn at random (seeded) per data set. Post text
is written only when asked (`include_text`): by default ids, labels and predictions only.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.tables.io import atomic_path, write_table

__all__ = ["structural_channel", "conflicts", "write_conflicts", "FAILURE_TYPES"]

FAILURE_TYPES = (
    "keyword_false_positive",
    "implicit_false_negative",
    "structural_false_positive",
    "structural_false_negative",
)


def structural_channel(channels: list[str]) -> str | None:
    return next((c for c in ("BC", "C", "B") if c in channels), None)


def _types(y: np.ndarray, a: np.ndarray, s: np.ndarray) -> np.ndarray:
    out = np.full(y.size, "", dtype=object)
    out[(a == 1) & (s == 0) & (y == 0)] = FAILURE_TYPES[0]
    out[(a == 0) & (s == 1) & (y == 1)] = FAILURE_TYPES[1]
    out[(s == 1) & (a == 0) & (y == 0)] = FAILURE_TYPES[2]
    out[(s == 0) & (a == 1) & (y == 1)] = FAILURE_TYPES[3]
    return out


def conflicts(
    frames: dict[str, pd.DataFrame],
    preds: dict[str, dict[str, np.ndarray]],
    y: dict[str, np.ndarray],
    channels: list[str],
    *,
    per_dataset: int = 200,
    include_text: bool = False,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(counts per data set and failure type, sampled rows). `preds[d][channel]` are 0/1 vectors."""
    verdict = structural_channel(channels)
    if verdict is None or "A" not in channels:
        return pd.DataFrame(), pd.DataFrame()
    rng = np.random.default_rng(seed)
    counts, samples = [], []
    shown = [c for c in ("A", "B", "C", "BC") if c in channels]
    for d, frame in frames.items():
        kinds = _types(y[d], preds[d]["A"], preds[d][verdict])
        for kind in FAILURE_TYPES:
            counts.append(
                {
                    "dataset": d,
                    "structural": verdict,
                    "failure_type": kind,
                    "count": int(np.count_nonzero(kinds == kind)),
                    "scored": int(y[d].size),
                }
            )
        rows = np.flatnonzero(kinds != "")
        pick = np.sort(rng.choice(rows, size=min(per_dataset, rows.size), replace=False)) if rows.size else rows
        sample = pd.DataFrame(
            {
                "dataset": d,
                "id": frame["id"].to_numpy()[pick],
                "gold": y[d][pick],
                **{f"pred_{c}": preds[d][c][pick] for c in shown},
                "failure_type": kinds[pick],
            }
        )
        if include_text:
            sample.insert(2, "text", frame["text"].to_numpy()[pick])
        samples.append(sample)
    return pd.DataFrame(counts), pd.concat(samples, ignore_index=True)


def write_conflicts(counts: pd.DataFrame, sample: pd.DataFrame, out_dir: Path) -> list[Path]:
    """conflicts.csv and conflicts.xlsx (a counts sheet and one sheet per data set), written atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv, xlsx = out_dir / "conflicts.csv", out_dir / "conflicts.xlsx"
    write_table(sample, csv)
    with atomic_path(xlsx) as tmp, pd.ExcelWriter(tmp, engine="openpyxl") as writer:
        counts.to_excel(writer, sheet_name="counts", index=False)
        for d, rows in sample.groupby("dataset", sort=False):
            rows.to_excel(writer, sheet_name=re.sub(r"[\[\]:*?/\\]", "_", str(d))[:31], index=False)
    return [csv, xlsx]
