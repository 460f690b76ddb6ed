"""What the monitor runs on (`MonitorInputs`) and how (`MonitorOptions`), each checked when built."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mhaudit.audits.monitor.ensemble import MonitorEnsemble, check_ensemble
from mhaudit.audits.monitor.windows import parse_window
from mhaudit.core.errors import InputError
from mhaudit.core.options import option
from mhaudit.stats.pair_estimate import MIN_BOOT, TrustOptions
from mhaudit.tables.predictions import PredictionSet, logit_column
from mhaudit.weak_supervision.collect.scores import SCORED_COLUMNS

__all__ = ["MonitorOptions", "MonitorInputs"]


@dataclass(frozen=True)
class MonitorOptions:
    window: str = "1d"  # window length: a number and a unit (s, min, h, d, w)
    positive: str | None = None  # the class the prevalence and change detector follow (default: the last)
    n_boot: int = 200  # bootstrap resamples of each window's label-free estimate
    seed: int = 0  # seed of those bootstraps and of the suggested sample
    psi_warn: float = 0.10
    psi_fail: float = 0.25
    suggest_budget: int = 200  # labels in the suggested validation sample on an alert
    min_posts: int = 100  # fewer posts in a window: its drift statistics are shown, never judged (noise)
    # Each window's label-free estimate is trusted by the estimate audit's rule (docs/estimate.md).
    trust: TrustOptions = option(TrustOptions(), help="The trust rule's cut-offs.")
    figures: bool = True
    # Only the whole windows within this long of the newest post (e.g. '90d'), so a weeks-long --follow keeps its
    # memory bounded; None: every post since the first.
    history: str | None = None

    def __post_init__(self):
        parse_window(self.window)
        if self.history is not None:
            history = _history_length(self.history)
            if history < self.window_length:
                raise InputError(f"the history {self.history} is shorter than the window {self.window}; keep at "
                                 "least one window")
        checks = [(self.n_boot >= MIN_BOOT, f"n_boot must be at least {MIN_BOOT}, a resample in each tail of a 95% "
                                            f"interval; got {self.n_boot}"),
                  (self.seed >= 0, f"the seed must be 0 or more, got {self.seed}"),
                  (0 < self.psi_warn < self.psi_fail, f"the PSI thresholds need 0 < psi_warn < psi_fail, got "
                                                      f"{self.psi_warn} and {self.psi_fail}"),
                  (self.suggest_budget >= 1, f"suggest_budget must be at least 1 label, got {self.suggest_budget}"),
                  (self.min_posts >= 1, f"min_posts must be at least 1, got {self.min_posts}")]
        for holds, message in checks:
            if not holds:
                raise InputError(message)

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
        raise InputError(f"the history '{text}' must be a number and a unit: s, min, h, d or w (e.g. 90d, 12w)") \
            from None


@dataclass(frozen=True)
class MonitorInputs:
    """The scored posts (weak_supervision.collect.scores.scored_posts: no text), the model's predictions on the
    labelled sample it was validated on, and the model: its name, digest (scoring.model_digest) and classes.
    `scored_now`: how many of the posts this run scored (for the record). `ensemble`: when the deployed model is
    one run of several (audits.monitor.ensemble.MonitorEnsemble), the other runs' classes on the same posts; the
    reference then holds every run's predictions, told apart by seed, and the posts are the deployed run's.
    `cached_windows`: an earlier round's `result.outputs["window_rows"]` (audits.monitor.reuse): windows whose
    posts, model, reference and options are unchanged take their costly statistics from it."""

    posts: pd.DataFrame
    reference: PredictionSet
    model: str
    model_digest: str
    classes: tuple[str, ...]
    scored_now: int = 0
    synthetic: bool = False
    ensemble: MonitorEnsemble | None = None
    collection: tuple = ()  # the collection filters: lexicon name -> SHA-256 each (audits.monitor.coverage)
    cached_windows: pd.DataFrame | None = None

    def __post_init__(self):
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "collection", tuple(dict(c) for c in self.collection))
        missing = [c for c in (*SCORED_COLUMNS, *map(logit_column, self.classes)) if c not in self.posts.columns]
        if missing:
            raise InputError(f"the scored posts have no '{missing[0]}' column; read them with scored_posts")
        if self.cached_windows is not None and "key" not in self.cached_windows.columns:
            raise InputError("the cached windows have no 'key' column; pass an earlier result's "
                             "outputs['window_rows']")
        if self.ensemble is not None:
            check_ensemble(self.posts, self.reference, self.classes, self.ensemble)
