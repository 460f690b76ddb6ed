"""Per window of the stream (by the posts' createdAt): volume, mix, predictions, drift, the label-free estimate.

Against the reference predictions (the model's scores on the labelled sample it was validated on): the score drift
(PSI, KS, Jensen–Shannon of the calibrated posterior of the positive class, or of the top posterior for more
classes), the EM estimate of the class priors (the positive class's with a 95% bootstrap interval) and the
label-free performance estimate with its trust verdict (audits.estimate). Against the stream's first posts (the
reference has no text): text-length drift (PSI, KS) and the language mix (Jensen–Shannon). Over the windows: a
self-starting CUSUM of the mean calibrated probability of the positive class (stats.change), which follows the
prevalence more closely than the share predicted positive when the model is weak (benchmarks/monitor_detection.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.stats.bcts import fit_bcts
from mhaudit.stats.change import self_starting_cusum
from mhaudit.stats.drift import binned_shares, category_shares, decile_edges, js_distance, ks, psi
from mhaudit.stats.bootstrap import resample_counts, summarise
from mhaudit.stats.label_shift import em_priors, em_priors_resampled
from mhaudit.report.trust import untrusted_because
from mhaudit.stats.pair_estimate import ReferenceDraws, estimate_pair, reference_draws
from mhaudit.tables.predictions import logit_column

__all__ = ["check_resolution", "Reference", "in_time_order", "window_table", "history_start", "in_history"]

_RESOLUTIONS = {
    pd.Timedelta("1D"): "1 day",
    pd.Timedelta("1h"): "1 hour",
    pd.Timedelta("1min"): "1 minute",
    pd.Timedelta("1s"): "1 second",
}


def parse_times(created_at) -> pd.Series:
    return pd.to_datetime(pd.Series(created_at), utc=True, errors="coerce", format="ISO8601").dt.as_unit("ns")


def window_start(times, window: pd.Timedelta):
    """The start of each time's window (a Series or one Timestamp): windows are whole multiples of their length
    since 1970-01-01 UTC, so a window's start does not depend on which posts there are."""
    if isinstance(times, pd.Timestamp):
        return pd.Timestamp((times.value // window.value) * window.value, unit="ns", tz="UTC")
    return (
        times.dt.floor(window)
        if window <= pd.Timedelta("1D")
        else pd.to_datetime((times.astype("int64") // window.value) * window.value, utc=True)
    )


def history_start(newest: pd.Timestamp, history: pd.Timedelta, window: pd.Timedelta) -> pd.Timestamp:
    """The first moment of a history of `history` up to the `newest` post: floored to the window grid, so the
    oldest window kept is whole."""
    return window_start(newest - history, window)


def in_history(posts: pd.DataFrame, history: pd.Timedelta, window: pd.Timedelta) -> pd.DataFrame:
    """The scored posts of the whole windows within `history` of the newest readable createdAt (posts with an
    unreadable one are dropped: the windows never hold them), in their order."""
    times = parse_times(posts["created_at"])
    if times.isna().all():
        return posts
    keep = (times >= history_start(times.max(), history, window)).to_numpy()
    return posts[keep].reset_index(drop=True)


def check_resolution(created_at, window: pd.Timedelta, window_text: str) -> None:
    """One sentence when no createdAt is readable, or when the window is finer than the times' resolution: the
    coarsest of 1 day, 1 hour, 1 minute, 1 second that every time is a whole multiple of (else 1 ms)."""
    ns = parse_times(created_at).dropna().astype("int64")
    if ns.empty:
        raise InputError("no post has a readable createdAt time; the monitor windows posts by it")
    resolution = next((unit for unit in _RESOLUTIONS if (ns % unit.value == 0).all()), pd.Timedelta("1ms"))
    if window < resolution:
        raise InputError(
            f"a window of {window_text} is shorter than the posts' time resolution (every createdAt is "
            f"a whole {_RESOLUTIONS.get(resolution, 'fraction of a second')}); choose a window of at "
            "least that"
        )


@dataclass
class Reference:
    """The validated sample's labels and scores, the calibration fitted on them, and the drift bins."""

    y: np.ndarray
    logits: np.ndarray
    classes: list[str]
    positive: int

    def __post_init__(self):
        self.calibration = fit_bcts(self.logits, self.y)
        self.probs = self.calibration.probs(self.logits)
        self.priors = np.bincount(self.y, minlength=len(self.classes)) / self.y.size
        self.score = self.drift_score(self.probs)
        self.edges = decile_edges(self.score)
        self.shares = binned_shares(self.score, self.edges)

    def drift_score(self, probs: np.ndarray) -> np.ndarray:
        return probs[:, self.positive] if probs.shape[1] == 2 else probs.max(axis=1)

    def estimate_draws(self, n_boot: int, seed: int) -> ReferenceDraws:
        """The reference's side of every window's estimate draws (stats.estimate_draws): made once, from its own
        generator, and shared by the windows, so a window's draws depend only on its posts and start."""
        cached = getattr(self, "_draws", None)
        if cached is None or cached[0] != (n_boot, seed):
            cached = (n_boot, seed), reference_draws(self.y, self.logits, n_boot, np.random.default_rng([seed, 3]))
            self._draws = cached
        return cached[1]


def in_time_order(posts: pd.DataFrame) -> pd.DataFrame:
    """The scored posts with a readable createdAt, by parsed time (then uri), with that time as `time`."""
    frame = posts.assign(time=parse_times(posts["created_at"]).to_numpy())
    bad = frame["time"].isna()
    if bad.all():
        raise InputError("no scored post has a readable createdAt time; the monitor windows posts by it")
    # createdAt is whatever the client sent ("...-05:00" sorts before "...Z" as text): order by the parsed time
    return frame[~bad].sort_values(["time", "uri"], kind="stable").reset_index(drop=True)


def window_table(
    posts: pd.DataFrame,
    reference: Reference,
    window: pd.Timedelta,
    *,
    n_boot: int,
    seed: int,
    options,
    baseline_posts: int = 100,
    ensemble=None,
    reuse=None,
) -> pd.DataFrame:
    """One row per window with posts (`posts`: the scored posts, weak_supervision.collect.scores.scored_posts;
    `options`: MonitorOptions, with the trust cut-offs; the stream's first `baseline_posts` posts are the baseline
    of the length and language drift, and only windows of at least that many posts feed the change detector). Each
    window's bootstrap has its own seed (from `seed` and the window's start), so a late post in one window
    changes no other window's interval. `ensemble` (audits.monitor.ensemble.WindowEnsemble, or None) adds its
    columns from each window's post uris. `reuse` (audits.monitor.reuse.WindowReuse, or None) gives the costly
    columns of windows unchanged since its rows were computed (`_costly`); the others are always computed."""
    frame = in_time_order(posts)
    logits = frame[[logit_column(c) for c in reference.classes]].to_numpy(dtype=float)
    frame["window"] = window_start(frame["time"], window)
    frame["language"] = frame["langs"].map(lambda langs: langs[0] if len(langs) else "none")
    languages = [*frame["language"].value_counts().index[:5], "other"]
    frame["categories"] = frame["categories"].map(set)
    categories = sorted(set().union(*frame["categories"]))
    probs = reference.calibration.probs(logits)
    first = frame.index < baseline_posts  # the rows are in time order
    length_edges = decile_edges(frame.loc[first, "length"])
    length_ref = binned_shares(frame.loc[first, "length"], length_edges)
    lang_ref = category_shares(frame.loc[first, "language"], languages)
    label = "%Y-%m-%d %H:%M:%S" if window < pd.Timedelta("1min") else "%Y-%m-%d %H:%M"
    out = []
    for start, rows_w in frame.groupby("window", sort=True):
        at = rows_w.index.to_numpy()
        z, p = logits[at], probs[at]
        pred = z.argmax(axis=1)
        score = reference.drift_score(p)
        row = {"window": start.strftime(label), "n_posts": len(at)}  # UTC
        row |= {f"share_{cat}": float(np.mean([cat in cell for cell in rows_w["categories"]])) for cat in categories}
        row |= {f"predicted_{name}": float((pred == c).mean()) for c, name in enumerate(reference.classes)}
        positive = p[:, reference.positive]
        row[f"mean_posterior_{reference.classes[reference.positive]}"] = float(positive.mean())
        row["_sum"], row["_squares"] = float(positive.sum()), float((positive**2).sum())
        uris = rows_w["uri"].to_numpy()
        key = (
            None
            if reuse is None
            else reuse.key(
                int(start.value), uris, z, None if ensemble is None else ensemble.predicted.loc[list(uris)].to_numpy()
            )
        )
        costly = None if reuse is None else reuse.cached(key)
        if costly is None:
            costly = _costly(reference, z, p, n_boot, seed, int(start.value), options, ensemble, uris)
            if reuse is not None:
                reuse.columns = list(costly)
        row |= {c: costly[c] for c in costly if c.startswith("em_")}
        shares = binned_shares(score, reference.edges)
        row["psi_score"], row["js_score"] = psi(reference.shares, shares), js_distance(reference.shares, shares)
        row["ks_score"], row["ks_score_p"] = ks(reference.score, score)
        lengths = rows_w["length"].to_numpy(float)
        row["psi_length"] = psi(length_ref, binned_shares(lengths, length_edges))
        row["ks_length"] = ks(frame.loc[first, "length"].to_numpy(float), lengths)[0]
        row["js_language"] = js_distance(lang_ref, category_shares(rows_w["language"], languages))
        row |= {c: costly[c] for c in costly if not c.startswith("em_")}
        out.append(row)
    table = pd.DataFrame(out)
    judged = (table["n_posts"] >= baseline_posts).to_numpy()  # a window of a few posts is noise, not a change
    sums, squares = table.pop("_sum").to_numpy(), table.pop("_squares").to_numpy()
    cusum = self_starting_cusum(sums[judged], table["n_posts"].to_numpy()[judged], squares[judged])
    columns = {"cusum_z": cusum.z, "cusum_upper": cusum.upper, "cusum_lower": cusum.lower, "change_alarm": cusum.alarm}
    for name, values in columns.items():
        full = np.full(len(table), False if name == "change_alarm" else np.nan, dtype=values.dtype)
        full[judged] = values
        table[name] = full
    return table


def _costly(
    reference: Reference,
    z: np.ndarray,
    p: np.ndarray,
    n_boot: int,
    seed: int,
    start: int,
    options,
    ensemble,
    uris: np.ndarray,
) -> dict:
    """A window's costly columns, a function of its own posts (scores, uris), its start and the reference only: the
    EM prevalence with its interval, the label-free estimate with its trust verdict and the ensemble's columns."""
    name = reference.classes[reference.positive]
    em = em_priors(p, reference.priors).priors
    row = {f"em_prior_{name}": float(em[reference.positive])}
    # its own generator (the estimate's draws below stay as they were): seeded by the window as theirs
    row[f"em_ci_low_{name}"], row[f"em_ci_high_{name}"] = _em_interval(
        p, reference, em, n_boot, np.random.default_rng([seed, start, 2])
    )
    row |= _estimate(reference, z, n_boot, np.random.default_rng([seed, start]), seed, options)
    if ensemble is not None:
        row |= ensemble.columns(uris, start)
    return row


def _em_interval(p: np.ndarray, reference: Reference, em: np.ndarray, n_boot: int, rng) -> tuple[float, float]:
    """The 95% percentile interval of the positive class's EM prevalence over `n_boot` resamples of the window's
    posts (one batched EM from the window's estimate), or NaN for a window too small to estimate."""
    if len(p) < 20:
        return np.nan, np.nan
    counts = resample_counts(np.zeros(len(p)), n_boot, rng, stratified=False)
    draws = em_priors_resampled(p, reference.priors, counts, start=em)[:, reference.positive]
    ci = summarise(draws)
    return ci["ci_low"], ci["ci_high"]


def _estimate(reference: Reference, z: np.ndarray, n_boot: int, rng, seed: int, options) -> dict:
    """CBPE macro-F1 with its CI and the trust verdict, or NaN for a window too small to estimate."""
    if len(z) < 20:
        return {
            "expected_macro_f1": np.nan,
            "expected_ci_low": np.nan,
            "expected_ci_high": np.nan,
            "estimate_trusted": False,
            "untrusted_because": "fewer than 20 posts",
        }
    pair = estimate_pair(reference.estimate_draws(n_boot, seed), z, rng=rng, seed=seed, cutoffs=options.trust)
    head = next(e for e in pair.estimates if e["method"] == "cbpe" and e["metric"] == "macro_f1")
    return {
        "expected_macro_f1": head["estimate"],
        "expected_ci_low": head["ci_low"],
        "expected_ci_high": head["ci_high"],
        "estimate_trusted": not pair.failed,
        "untrusted_because": untrusted_because(pair.failed, options.trust, reference.classes),
    }
