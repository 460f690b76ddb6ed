"""Featurise with channels A, B, C and fit one linear model per channel combination.

Each channel's rows are L2-normalised (x / ||x||); a combination stacks its channels' normalised blocks
scaled by 1/sqrt(#channels), so every row still has norm 1 and no channel dominates by size.
Models (TSS paper section 4.4): class_weight balanced; L2 logistic regression after a StandardScaler
for combinations without B; elastic-net logistic regression with an internal grid search over
(C, l1 ratio) by 5-fold cross-validation, and no StandardScaler, for any combination with B (scaling
re-introduces the length signal B's normalisation removed), solved to convergence (elastic_net.py). The
decision threshold maximises Macro-F1 (the reported metric) over [0.20, 0.80] on out-of-fold training
probabilities: the same rule for every model, masked or not, and never tuned on evaluation data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed, parallel_config
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from mhaudit.audits.divergence.elastic_net import ElasticNetLogistic
from mhaudit.audits.divergence.options import BLOCKS, parse_channel
from mhaudit.core.threads import WORKER_THREADS
from mhaudit.stats.binary import confusion_counts, macro_f1_from_counts

__all__ = [
    "BLOCKS",
    "parse_channel",
    "stratified_folds",
    "combine",
    "FittedChannel",
    "fit_channel",
    "ChannelFit",
    "fit_many",
    "THRESHOLDS",
    "ELASTIC_NET_GRID",
]

THRESHOLDS = np.round(np.arange(0.20, 0.8001, 0.01), 2)
ELASTIC_NET_GRID = tuple((c, r) for c in (0.1, 1.0, 10.0) for r in (0.5, 0.95))


def stratified_folds(y: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    folds = np.empty(y.size, dtype=np.int64)
    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for k, (_, held) in enumerate(splitter.split(np.zeros(y.size), y)):
        folds[held] = k
    return folds


def _l2_rows(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x, dtype=np.float64), where=norm > 0)


def combine(blocks: dict[str, np.ndarray], letters: tuple[str, ...]) -> np.ndarray:
    scale = 1.0 / np.sqrt(len(letters))
    return np.hstack([_l2_rows(np.asarray(blocks[c], dtype=np.float64)) * scale for c in letters])


def _best_threshold(y: np.ndarray, prob: np.ndarray) -> tuple[float, float]:
    scores = macro_f1_from_counts(*confusion_counts(y == 1, prob[None, :] >= THRESHOLDS[:, None]))  # per threshold
    best = np.flatnonzero(scores >= scores.max() - 1e-12)
    pick = best[np.argmin(np.abs(THRESHOLDS[best] - 0.5))]  # ties: the threshold nearest 0.5
    return float(THRESHOLDS[pick]), float(scores[pick])


@dataclass
class FittedChannel:
    """A fitted channel model: effective weights on the combined features, threshold, training diagnostics."""

    name: str
    letters: tuple[str, ...]
    scaler: StandardScaler | None
    model: LogisticRegression | ElasticNetLogistic
    threshold: float
    oof_macro_f1: float
    config: dict
    block_sizes: dict[str, int]
    train_mean: np.ndarray = field(repr=False)

    def prob(self, x: np.ndarray) -> np.ndarray:
        z = self.scaler.transform(x) if self.scaler is not None else x
        return self.model.predict_proba(z)[:, 1]

    @property
    def coef(self) -> np.ndarray:
        """Weights on the (unscaled) combined features: the model's weights divided by the scaler's scale."""
        w = self.model.coef_.ravel()
        return w / self.scaler.scale_ if self.scaler is not None else w

    def weights_kept(self) -> dict[str, int]:
        """Non-zero weights per channel block (elastic net can drop a whole channel)."""
        blocks = np.split(np.abs(self.coef) > 1e-10, np.cumsum([self.block_sizes[c] for c in self.letters])[:-1])
        return {c: int(np.count_nonzero(kept)) for c, kept in zip(self.letters, blocks)}

    def attributions(self, x: np.ndarray) -> np.ndarray:
        """Linear SHAP values coef_j * (x_j - training mean_j) (exact for a linear logit)."""
        return (x - self.train_mean) * self.coef


def _model(config: dict) -> LogisticRegression | ElasticNetLogistic:
    # Elastic net: solved to convergence (elastic_net.py; scikit-learn's saga stopped short of the optimum at
    # the tolerance it could afford). Newton-Cholesky solves the L2 fits in a few exact steps.
    if config["l1_ratio"] > 0:
        return ElasticNetLogistic(C=config["C"], l1_ratio=config["l1_ratio"])
    return LogisticRegression(C=config["C"], solver="newton-cholesky", class_weight="balanced", max_iter=200)


def _fit(x, y, config):
    scaler = StandardScaler().fit(x) if config["scale"] else None
    z = scaler.transform(x) if scaler is not None else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = _model(config).fit(z, y)
    return scaler, model


def _held_out_prob(x, y, held, config) -> np.ndarray:
    scaler, model = _fit(x[~held], y[~held], config)
    z = scaler.transform(x[held]) if scaler is not None else x[held]
    return model.predict_proba(z)[:, 1]


def _configs(letters: tuple[str, ...]) -> list[dict]:
    if "B" in letters:
        return [dict(C=c, l1_ratio=r, scale=False) for c, r in ELASTIC_NET_GRID]
    return [dict(C=1.0, l1_ratio=0.0, scale=True)]


def _cost(x: np.ndarray, config: dict) -> float:
    """A rough relative cost of one fit (measured on Dreaddit: the elastic net slows with C), so the longest
    fits start first and no worker waits alone for a straggler at the end."""
    size = float(x.shape[0] * x.shape[1])
    return size * (0.5 + np.sqrt(config["C"])) if config["l1_ratio"] > 0 else size


def _keyed(key, function, *args):
    return key, function(*args)


@dataclass
class ChannelFit:
    """One channel to fit: its name (e.g. "BC"), training blocks by letter, 0/1 labels, fold ids. (Both solvers
    are deterministic: the folds carry all the randomness.)"""

    name: str
    blocks: dict[str, np.ndarray]
    y: np.ndarray
    folds: np.ndarray


def _choose(f: ChannelFit, configs: list[dict], oof: dict) -> tuple[float, float, dict]:
    """The best tuned out-of-fold Macro-F1 (internal CV): its threshold, that Macro-F1 and its config."""
    best = None
    for c, config in enumerate(configs):
        prob = np.empty(f.y.size)
        for k in np.unique(f.folds):
            prob[f.folds == k] = oof[(c, k)]
        threshold, score = _best_threshold(f.y, prob)
        if best is None or score > best[1] + 1e-12:
            best = (threshold, score, config)
    assert best is not None, "a channel has at least one config"
    return best


def fit_many(fits: list[ChannelFit], *, n_jobs: int = 2) -> list[FittedChannel]:
    """`fit_channel` for several channels (or training sets) at once, each result the same as its own call.

    Every out-of-fold fit of every channel shares one pool of workers, longest first, so both workers stay
    busy where one channel at a time left one idle at each channel's end. The final fits run here, as
    `fit_channel` always ran them (a Newton-Cholesky fit in a one-thread worker differs from this process's in
    the last bits), while the workers go on: each as soon as its channel's config is chosen."""
    xs = [combine(f.blocks, parse_channel(f.name)) for f in fits]
    configs = [_configs(parse_channel(f.name)) for f in fits]
    # The costliest channel's fits first, so its final fit runs here while the workers go on with the
    # others; within a channel, the costliest fits first. The cheap channels finish last: a short tail.
    total = [sum(_cost(x, config) for config in configs[i]) for i, x in enumerate(xs)]
    jobs = sorted(
        [
            ((-total[i], -_cost(x, config)), (i, c, k), (_held_out_prob, x, f.y, f.folds == k, config))
            for i, (f, x) in enumerate(zip(fits, xs))
            for c, config in enumerate(configs[i])
            for k in np.unique(f.folds)
        ],
        key=lambda job: job[0],
    )
    chosen: dict[int, tuple[float, float, dict]] = {}  # by channel: its _choose and its _fit
    finals: dict[int, tuple[StandardScaler | None, LogisticRegression | ElasticNetLogistic]] = {}
    oof: list[dict] = [{} for _ in fits]
    left = [len(configs[i]) * np.unique(f.folds).size for i, f in enumerate(fits)]

    def finish(i):  # choose the config and fit on all training rows, here
        chosen[i] = _choose(fits[i], configs[i], oof[i])
        finals[i] = _fit(xs[i], fits[i].y, chosen[i][2])

    # each worker on core.threads' worker budget (loky's own default is cores // n_jobs: one on two cores)
    with parallel_config(backend="loky", inner_max_num_threads=WORKER_THREADS):
        pending = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_keyed)(key, *call) for _, key, call in jobs
        )
        for (i, c, k), prob in pending:
            oof[i][(c, k)] = prob
            left[i] -= 1
            if left[i] == 0:
                finish(i)
    for i in range(len(fits)):  # channels without any fold (none in practice)
        if i not in finals:
            finish(i)
    return [
        FittedChannel(
            f.name,
            parse_channel(f.name),
            *finals[i] + chosen[i],
            {c: f.blocks[c].shape[1] for c in parse_channel(f.name)},
            xs[i].mean(axis=0),
        )
        for i, f in enumerate(fits)
    ]


def fit_channel(
    name: str, blocks: dict[str, np.ndarray], y: np.ndarray, folds: np.ndarray, *, n_jobs: int = 2
) -> FittedChannel:
    """Fit channel `name` on the training blocks; the threshold comes from out-of-fold probabilities."""
    return fit_many([ChannelFit(name, blocks, y, folds)], n_jobs=n_jobs)[0]
