"""On an alert: the posts people should label to certify the model on the alerting window.

The audit returns them in its outputs; `mhaudit audit monitor` writes them under `<report folder>/alert/<window>/`
(`alert_folder`: one folder per alerting window, so a later round of `--follow` never replaces a sample people
may be labelling): the window's predictions (pseudonymous post ids and scores, as `predictions.parquet`), and
`sample.parquet` with its design, drawn as `labels sample --strategy estimate` draws (calibrated on the
reference). The sample holds post ids, no text: `mhaudit annotate --store` reads the text from the post store.
A store that keeps raw DIDs in its post ids gets no sample (its ids would carry them).
"""

from __future__ import annotations

import pandas as pd

from mhaudit.tables.certification_sample import certification_sample
from mhaudit.tables.predictions import PredictionSet, logit_column
from mhaudit.tables.sample_design import pool_of

__all__ = ["alert_folder", "suggest_sample"]


def alert_folder(window_start: str) -> str:
    """The alerting window's folder under the report folder, e.g. alert/2026-01-12T00-00."""
    return "alert/" + window_start.replace(" ", "T").replace(":", "-")


def suggest_sample(
    posts: pd.DataFrame,
    window_start: str,
    window: pd.Timedelta,
    model: str,
    classes: list[str],
    reference: PredictionSet,
    options,
) -> tuple[str, dict[str, pd.DataFrame]]:
    """The note for the report and the outputs (suggested_predictions, suggested_sample, suggested_design) of the
    window starting at `window_start`; `posts` in the order the store reads them (the sample's draw depends on
    it only through ties, but bit for bit)."""
    start = pd.Timestamp(window_start, tz="UTC")
    times = pd.to_datetime(posts["created_at"], utc=True, errors="coerce", format="ISO8601")
    chosen = posts[(times >= start) & (times < start + window)]
    if chosen["uri"].str.contains("did:", regex=False).any():
        return (
            "The store keeps raw DIDs in its post ids (collected with --keep-raw-ids), so no sample of post ids "
            "was suggested: it would carry them."
        ), {}
    if chosen.empty:
        return f"The alerting window {window_start} has no post with a readable time; no sample was drawn.", {}
    frame = pd.DataFrame(
        {
            "id": chosen["uri"].to_numpy(),
            "model": model,
            "seed": 0,
            "platform": "stream",
            "dataset": f"window {window_start}",
            "split": "stream",
            "label": None,
            **{logit_column(c): chosen[logit_column(c)].to_numpy() for c in classes},
        }
    )
    target = PredictionSet(frame, list(classes))
    budget = min(options.suggest_budget, len(chosen))
    sample, design = certification_sample(pool_of(target, reference), None, "monitor", budget, seed=options.seed)
    drawn = f"all {budget}" if budget == len(chosen) else f"{budget} of them"
    where = alert_folder(window_start)
    note = (
        f"The latest alerting window, {window_start}, has {len(chosen):,} posts; {drawn} were drawn "
        f"for people to label ({where}/sample.parquet, stratified by predicted class and confidence, design "
        f"beside it; post ids only). Serve it with `mhaudit annotate --sample {where}/sample.parquet --store "
        f"POSTS` and certify with `mhaudit audit certify --sample {where}/sample.parquet "
        f"--predictions {where}/predictions.parquet`."
    )
    return note, {"suggested_predictions": target.frame, "suggested_sample": sample, "suggested_design": design}
