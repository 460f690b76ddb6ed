"""What the monitor runs on (`MonitorInputs`) and how (`MonitorOptions`), each checked when built."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mhaudit.core.errors import InputError
from mhaudit.core.options import at_least, between, check, option
from mhaudit.stats.trust_rule import MIN_BOOT, TrustOptions

if TYPE_CHECKING:  # imported where used: the command line imports these options for its flags alone
    import pandas as pd

    from mhaudit.audits.monitor.ensemble import MonitorEnsemble
    from mhaudit.tables.predictions import PredictionSet

__all__ = ["MonitorOptions", "MonitorInputs"]

_UNITS = {"s": "s", "sec": "s", "m": "min", "min": "min", "h": "h", "d": "D", "w": "W"}


def parse_window(text: str) -> pd.Timedelta:
    """'1d', '6h', '30min', '90s', '2w' -> a Timedelta; one sentence for anything else."""
    import pandas as pd

    match = re.fullmatch(r"\s*(\d+)\s*([a-z]+)\s*", str(text).lower())
    if not match or match.group(2) not in _UNITS or int(match.group(1)) < 1:
        raise InputError(f"the window '{text}' must be a number and a unit: s, min, h, d or w (e.g. 1d, 6h, 30min)")
    return pd.Timedelta(int(match.group(1)), unit=_UNITS[match.group(2)])


@dataclass(frozen=True)
class MonitorOptions:
    """The monitor's options: each field's default, help and rule, shared with its command's flags."""

    window: str = option("1d", help="Window length: a number and a unit (s, min, h, d, w), e.g. 1d, 6h, 30min.")
    positive: str | None = option(None, help="Class the prevalence and the change detector follow (default: the last).")
    n_boot: int = option(
        200,
        help="Bootstrap resamples of each window's label-free estimate (at least a resample in "
        "each tail of a 95% interval).",
        rule=at_least(MIN_BOOT),
    )
    seed: int = option(0, help="Seed of the bootstrap and of the suggested sample.", rule=at_least(0))
    psi_warn: float = option(0.10, help="Score PSI against the reference that warns.", rule=between(0, 1))
    psi_fail: float = option(
        0.25, help="Score PSI against the reference that fails (above psi_warn).", rule=at_least(0)
    )
    suggest_budget: int = option(200, help="Labels in the suggested validation sample on an alert.", rule=at_least(1))
    min_posts: int = option(
        100, help="Fewer posts in a window: its drift statistics are shown, never judged (noise).", rule=at_least(1)
    )
    # Each window's label-free estimate is trusted by the estimate audit's rule (docs/estimate.md).
    trust: TrustOptions = option(TrustOptions(), help="The trust rule's cut-offs.")
    figures: bool = option(True, help="Draw the figures.")
    history: str | None = option(
        None,
        help="Analyse only the whole windows within this long of the newest post "
        "(e.g. 90d), reading only their posts, so a weeks-long --follow keeps its memory flat "
        "(default: every post).",
    )

    def __post_init__(self):
        check(self)
        parse_window(self.window)
        if self.history is not None and _history_length(self.history) < self.window_length:
            raise InputError(
                f"the history {self.history} is shorter than the window {self.window}; keep at least one window"
            )
        if not self.psi_warn < self.psi_fail:
            raise InputError(f"the PSI thresholds need psi_warn < psi_fail, got {self.psi_warn} and {self.psi_fail}")

    @property
    def window_length(self) -> pd.Timedelta:
        return parse_window(self.window)

    @property
    def history_length(self) -> pd.Timedelta | None:
        return None if self.history is None else _history_length(self.history)


def _history_length(text: str) -> pd.Timedelta:
    try:
        return parse_window(text)
    except InputError:
        raise InputError(
            f"the history '{text}' must be a number and a unit: s, min, h, d or w (e.g. 90d, 12w)"
        ) from None


@dataclass(frozen=True)
class MonitorInputs:
    """The scored posts (weak_supervision.collect.scores.scored_posts: no text), the model's predictions on the
    labelled sample it was validated on, and the model: its name, digest (scoring.model_digest), classes and
    `model_source` (mhaudit, huggingface, skops or pickle: the model's `source`, for the report's inputs).
    `scored_now`: how many of the posts this run scored (for the record). `ensemble`: when the deployed model is
    one run of several (audits.monitor.ensemble.MonitorEnsemble), the other runs' classes on the same posts; the
    reference then holds every run's predictions, told apart by seed, and the posts are the deployed run's.
    `cached_windows`: an earlier round's `result.outputs["window_rows"]` (audits.monitor.reuse): windows whose
    posts, model, reference and options are unchanged take their costly statistics from it. `recorded_alerts`: the
    alerts the post store recorded in earlier rounds (window, kind, acknowledged; weak_supervision.collect.alert_log),
    which set each alert's status (audits.monitor.alerts)."""

    posts: pd.DataFrame
    reference: PredictionSet
    model: str
    model_digest: str
    classes: tuple[str, ...]
    scored_now: int = 0
    synthetic: bool = False
    ensemble: MonitorEnsemble | None = None
    model_source: str = "mhaudit"  # where the model came from: mhaudit, huggingface, skops or pickle
    collection: tuple | list = ()  # the collection filters: lexicon name -> SHA-256 each (audits.monitor.coverage)
    cached_windows: pd.DataFrame | None = None
    recorded_alerts: pd.DataFrame | None = None

    def __post_init__(self):
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "collection", tuple(dict(c) for c in self.collection))
        from mhaudit.audits.monitor.ensemble import check_ensemble
        from mhaudit.tables.predictions import logit_column
        from mhaudit.weak_supervision.collect.scores import SCORED_COLUMNS

        missing = [c for c in (*SCORED_COLUMNS, *map(logit_column, self.classes)) if c not in self.posts.columns]
        if missing:
            raise InputError(f"the scored posts have no '{missing[0]}' column; read them with scored_posts")
        if self.cached_windows is not None and "key" not in self.cached_windows.columns:
            raise InputError("the cached windows have no 'key' column; pass an earlier result's outputs['window_rows']")
        if self.recorded_alerts is not None and not {"window", "kind", "acknowledged"} <= set(self.recorded_alerts):
            raise InputError(
                "the recorded alerts need window, kind and acknowledged columns (alert_log.recorded_alerts)"
            )
        if self.ensemble is not None:
            check_ensemble(self.posts, self.reference, self.classes, self.ensemble)

    @classmethod
    def from_store(
        cls,
        posts,
        reference: PredictionSet,
        model: str,
        digests: dict[str, str],
        classes,
        options: MonitorOptions,
        *,
        ensemble: MonitorEnsemble | None = None,
        **rest,
    ) -> MonitorInputs:
        """From an open post store (weak_supervision.collect.store.PostStore) whose posts the runs have scored:
        `digests`, run name -> model digest, the deployed run first. With a history, only the posts of its whole
        windows are read; with an ensemble, every run's classes on them; the alerts it recorded. `rest`:
        scored_now, synthetic."""
        from mhaudit.audits.monitor.windows import history_start
        from mhaudit.weak_supervision.collect.alert_log import recorded_alerts
        from mhaudit.weak_supervision.collect.scores import newest_scored, run_predictions, scored_posts
        from mhaudit.weak_supervision.lexicons.measured import collection_filters

        digest = next(iter(digests.values()))
        newest = None if options.history is None else newest_scored(posts, digest)
        # audit_monitor keeps the exact whole windows of the posts read
        since = None if newest is None else history_start(newest, options.history_length, options.window_length)
        if ensemble is not None:
            ensemble = replace(ensemble, predicted=run_predictions(posts, digests, since))
        return cls(
            scored_posts(posts, digest, list(classes), since),
            reference,
            model,
            digest,
            classes,
            ensemble=ensemble,
            collection=collection_filters(posts),
            recorded_alerts=recorded_alerts(posts, digest),
            **rest,
        )
