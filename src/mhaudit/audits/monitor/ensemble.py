"""The monitor's ensemble estimate: when the deployed model is one run of several (`mhaudit train --runs N`), each
window's posts, scored by every run, give the deployed run's accuracy from the agreement line (stats.agreement_line,
ALine-D, Baek et al. 2022), with its 95% CI and the line's own trust verdict; no label of the window is used.

The labelled sample the model was validated on is the line's reference: the reference predictions hold every
run's predictions on it, a run's rows told apart by its seed (its `seed` column), paired across runs by id
(tables.pairing, shared with the estimate audit). A window's posts are paired across runs by uri. Runs with
identical predictions on both sides are one point of the line (stats.agreement_line.distinct_runs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.report.trust import line_untrusted_because
from mhaudit.stats.agreement_line import agreement_line, distinct_runs, line_trust
from mhaudit.tables.pairing import aligned_codes, check_reference_labels, labels_in_id_order
from mhaudit.tables.predictions import Group, PredictionSet, logit_column

__all__ = [
    "MonitorEnsemble",
    "ENSEMBLE_COLUMNS",
    "check_ensemble",
    "deployed_reference",
    "EnsembleReference",
    "ensemble_reference",
    "WindowEnsemble",
]

ENSEMBLE_COLUMNS = (
    "ensemble_accuracy",
    "ensemble_ci_low",
    "ensemble_ci_high",
    "ensemble_trusted",
    "ensemble_untrusted_because",
)
METHOD = "aline-d"  # the estimate audit's headline of the line (Baek et al.'s better of the two)


@dataclass(frozen=True)
class MonitorEnsemble:
    """The runs of the deployed model's ensemble: their names (e.g. the model folder's run-0 .. run-4), each run's
    seed (its `seed` in the reference predictions), which run is deployed, every run's predicted class code per
    scored post (`predicted`: a `uri` column, then one column per run; weak_supervision.collect.scores
    .run_predictions reads it from the scores table) and, for the record, each run's model digest."""

    runs: tuple[str, ...]
    seeds: tuple[int, ...]
    deployed: str
    predicted: pd.DataFrame
    digests: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "runs", tuple(str(r) for r in self.runs))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "digests", tuple(self.digests))
        runs, seeds = self.runs, self.seeds
        first: dict[int, str] = {}  # each seed's first run
        twins = [(first.setdefault(s, r), r) for r, s in zip(runs, seeds) if first.setdefault(s, r) != r]
        checks = [
            (
                len(runs) >= 2 and len(set(runs)) == len(runs),
                f"an ensemble needs two or more runs with distinct names, got {', '.join(runs) or 'none'}",
            ),
            (len(seeds) == len(runs), f"{len(runs)} runs but {len(seeds)} seeds; give each run its seed"),
            (
                not twins,
                "runs {} and {} have the same seed; the reference predictions could not tell them apart".format(
                    *(twins[0] if twins else ("", ""))
                ),
            ),
            (self.deployed in runs, f"the deployed run '{self.deployed}' is not one of the runs ({', '.join(runs)})"),
            (len(self.digests) in (0, len(runs)), f"{len(runs)} runs but {len(self.digests)} model digests"),
            ("uri" in self.predicted.columns, "the ensemble's predictions have no 'uri' column"),
        ]
        for holds, message in checks:
            if not holds:
                raise InputError(message)
        missing = [r for r in runs if r not in self.predicted.columns]
        if missing:
            raise InputError(f"the ensemble's predictions have no column of run {missing[0]}; they need one per run")
        if not self.predicted["uri"].is_unique:
            raise InputError("the ensemble's predictions repeat a post uri; each post needs one row")

    @property
    def index(self) -> int:
        """The deployed run's position among the runs."""
        return self.runs.index(self.deployed)


def _by_run(reference: PredictionSet, ensemble: MonitorEnsemble) -> dict[str, PredictionSet]:
    """Each run's reference rows (those of its seed); one sentence naming the runs that have none."""
    rows = reference.frame.groupby(reference.frame["seed"].astype(np.int64)).indices
    missing = [f"{run} (seed {seed})" for run, seed in zip(ensemble.runs, ensemble.seeds) if seed not in rows]
    if missing:
        raise InputError(
            f"the reference predictions hold no rows of {', '.join(missing)}; with a model folder of "
            f"{len(ensemble.runs)} runs they need every run's predictions on the labelled sample, told "
            "apart by their seed (mhaudit predict --model DIR scores every run)"
        )
    return {run: reference.subset(rows[seed]) for run, seed in zip(ensemble.runs, ensemble.seeds)}


def deployed_reference(reference: PredictionSet, ensemble: MonitorEnsemble | None) -> PredictionSet:
    """The deployed run's predictions on the labelled sample (all of `reference` without an ensemble)."""
    return reference if ensemble is None else _by_run(reference, ensemble)[ensemble.deployed]


@dataclass
class EnsembleReference:
    """Every run's predicted class on the labelled sample, (runs, rows) in id order, and the labels in that order."""

    pred: np.ndarray
    y: np.ndarray

    @property
    def accuracy(self) -> np.ndarray:
        return (self.pred == self.y[None, :]).mean(axis=1)


def ensemble_reference(reference: PredictionSet, ensemble: MonitorEnsemble) -> EnsembleReference:
    """The runs' reference predictions paired by id; one sentence when a run is missing or covers other rows."""
    seed_of = dict(zip(ensemble.runs, ensemble.seeds))
    groups = {
        run: Group(
            run,
            seed_of[run],
            "",
            "",
            rows.frame["id"].astype(str).to_numpy(),
            rows.codes,
            rows.scores(),
            rows.frame["split"].to_numpy(),
        )
        for run, rows in _by_run(reference, ensemble).items()
    }
    pred = aligned_codes(groups, list(ensemble.runs), "reference", name=lambda run: f"{run} (seed {seed_of[run]})")
    y = labels_in_id_order(groups[ensemble.deployed])
    check_reference_labels(y, (), f"the reference predictions of {ensemble.deployed}")
    assert pred is not None, "_by_run gives every run a group"
    return EnsembleReference(pred, y)


def check_ensemble(
    posts: pd.DataFrame, reference: PredictionSet, classes: tuple[str, ...], ensemble: MonitorEnsemble
) -> None:
    """The ensemble belongs with the scored posts and the reference: every post has every run's class, the
    deployed run's classes are the posts' (the argmax of their scores), and the reference holds every run."""
    predicted = ensemble.predicted.set_index("uri")[list(ensemble.runs)]
    codes = predicted.to_numpy()
    if codes.size and (not np.issubdtype(codes.dtype, np.integer) or codes.min() < 0 or codes.max() >= len(classes)):
        raise InputError(
            f"the ensemble's predictions must be class codes 0 to {len(classes) - 1} ({', '.join(classes)})"
        )
    at = predicted.index.get_indexer(posts["uri"])
    if (at < 0).any():
        raise InputError(
            f"the ensemble's predictions miss {int((at < 0).sum()):,} of the {len(posts):,} scored posts; "
            "every run must score every post"
        )
    logits = posts[[logit_column(c) for c in classes]].to_numpy(dtype=float)
    differ = int((codes[at, ensemble.index] != logits.argmax(axis=1)).sum())
    if differ:
        raise InputError(
            f"the ensemble's predictions of the deployed run {ensemble.deployed} differ from the scored "
            f"posts' on {differ:,} posts; the posts must be scored by the deployed run"
        )
    ensemble_reference(reference, ensemble)


class WindowEnsemble:
    """A window's ensemble columns (ENSEMBLE_COLUMNS) from its posts' uris: the deployed run's ALine-D accuracy,
    its 95% CI, and the line's trust (stats.agreement_line.line_trust); NaN with the reason in a window of fewer
    than `min_posts` posts or with fewer than three distinct runs. Each window's bootstrap has its own seed."""

    def __init__(
        self, reference: EnsembleReference, ensemble: MonitorEnsemble, *, n_boot: int, seed: int, min_posts: int
    ):
        self.reference, self.deployed, self.n_runs = reference, ensemble.index, len(ensemble.runs)
        self.predicted = ensemble.predicted.set_index("uri")[list(ensemble.runs)]
        self.n_boot, self.seed, self.min_posts = n_boot, seed, min_posts

    def _undefined(self, because: str) -> dict:
        return {
            "ensemble_accuracy": np.nan,
            "ensemble_ci_low": np.nan,
            "ensemble_ci_high": np.nan,
            "ensemble_trusted": False,
            "ensemble_untrusted_because": because,
        }

    def columns(self, uris, start: int) -> dict:
        if len(uris) < self.min_posts:
            return self._undefined(f"fewer than {self.min_posts} posts")
        pred = self.predicted.loc[list(uris)].to_numpy(dtype=np.int64).T
        distinct, twin = distinct_runs(self.reference.pred, pred)
        if len(distinct) < 3:
            return self._undefined(
                f"only {len(distinct)} distinct run(s) of {self.n_runs}: the agreement line needs three or more"
            )
        line = agreement_line(
            self.reference.pred[distinct],
            self.reference.y,
            pred[distinct],
            n_boot=self.n_boot,
            rng=np.random.default_rng([self.seed, start, 1]),
        )
        failed = line_trust(line)
        d = twin[self.deployed]
        return {
            "ensemble_accuracy": float(line.estimates[METHOD][d]),
            "ensemble_ci_low": float(line.ci_low[METHOD][d]),
            "ensemble_ci_high": float(line.ci_high[METHOD][d]),
            "ensemble_trusted": not failed,
            "ensemble_untrusted_because": line.note or line_untrusted_because(failed),
        }


def runs_table(reference: EnsembleReference, ensemble: MonitorEnsemble) -> pd.DataFrame:
    """One row per run: name, seed, deployed or not, accuracy on the labelled sample, model digest (its start)."""
    return pd.DataFrame(
        {
            "run": ensemble.runs,
            "seed": ensemble.seeds,
            "deployed": [r == ensemble.deployed for r in ensemble.runs],
            "accuracy_reference": reference.accuracy,
            "model_digest": [d[:12] for d in ensemble.digests] if ensemble.digests else "",
        }
    )
