"""On an alert: the posts people should label to certify the model on the alerting window.

Written under `<report folder>/alert/<window>/` (one folder per alerting window, so a later round of
`--follow` never replaces a sample people may be labelling): the window's predictions (pseudonymous post ids and scores, as
`predictions.parquet`), and `sample.parquet` with its design, drawn as `validate sample --strategy estimate`
draws (calibrated on the reference). The sample holds post ids, no text: `mhaudit annotate --store` reads the
text from the post store. A store that keeps raw DIDs in its post ids gets no sample (its ids would carry them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.tables.certification_sample import certification_sample, write_certification_sample
from mhaudit.tables.sample_design import pool_of
from mhaudit.tables.io import write_table
from mhaudit.tables.predictions import KEY_COLUMNS, PredictionSet, logit_column

__all__ = ["suggest_sample"]


def suggest_sample(store, digest: str, rows: list[tuple], window_start: str, window: pd.Timedelta, model, ref,
                   reference: PredictionSet, options, out: str | Path) -> str:
    start = pd.Timestamp(window_start, tz="UTC")
    times = pd.to_datetime([r[1] for r in rows], utc=True, errors="coerce", format="ISO8601")
    chosen = [r for r, t in zip(rows, times) if pd.notna(t) and start <= t < start + window]
    if any("did:" in r[0] for r in chosen):
        return ("The store keeps raw DIDs in its post ids (collected with --keep-raw-ids), so no sample of post ids "
                "was written: it would carry them.")
    logits = np.array([json.loads(r[5]) for r in chosen], dtype=float)
    frame = pd.DataFrame({"id": [r[0] for r in chosen], "model": model.name, "seed": 0, "platform": "stream",
                          "dataset": f"window {window_start}", "split": "stream", "label": None})
    for c, name in enumerate(ref.classes):
        frame[logit_column(name)] = logits[:, c]
    target = PredictionSet(frame[[*KEY_COLUMNS, *[logit_column(c) for c in ref.classes]]], list(ref.classes))
    if not chosen:
        return f"The alerting window {window_start} has no post with a readable time; no sample was drawn."
    budget = min(options.suggest_budget, len(chosen))
    sample, design = certification_sample(pool_of(target, reference), None, "monitor", budget, seed=options.seed)
    folder = Path(out) / "alert" / window_start.replace(" ", "T").replace(":", "-")  # one folder per window
    write_table(target.frame, folder / "predictions.parquet", what="the window's predictions")
    write_certification_sample(sample, design, folder / "sample.parquet")
    drawn = f"all {budget}" if budget == len(chosen) else f"{budget} of them"
    where = folder.relative_to(Path(out)).as_posix()
    return (f"The latest alerting window, {window_start}, has {len(chosen):,} posts; {drawn} were drawn "
            f"for people to label ({where}/sample.parquet, stratified by predicted class and confidence, design "
            f"beside it; post ids only). Serve it with `mhaudit annotate --sample {where}/sample.parquet --store "
            f"POSTS` and certify with `mhaudit validate report --estimate --sample {where}/sample.parquet "
            f"--predictions {where}/predictions.parquet`.")
