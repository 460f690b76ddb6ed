"""Confidence-based performance estimation (CBPE): a model's metrics on unlabelled rows, from posteriors.

If p(y | x) is calibrated on the target, each row's true class is a draw from it, so every metric of the
model's fixed predictions has a known distribution. The point estimates are ratios of expected tallies
(the expected confusion matrix, NannyML's CBPE); `draw_metrics` samples the labels themselves, giving
the distribution of the metric the hidden labels would realise on these very rows (stats.cbpe_interval).

Conventions: confusion matrices are [true, predicted]; macro-F1 is `mhaudit.stats.f1`'s (the mean over
classes of 2 TP / (2 TP + FP + FN), NaN when a class has no true and no predicted row);
macro-AUC is one-vs-rest, class k ranked by `scores[:, k]`, ties counted one half, NaN when a class has
no expected positive or no expected negative. A NaN comes with an UndefinedStatisticWarning.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from mhaudit.stats.f1 import confusion_tallies, macro_f1
from mhaudit.stats.undefined import warn_undefined

__all__ = ["expected_confusion", "expected_macro_auc", "expected_metrics", "draw_metrics", "score_ranks", "METRICS"]

METRICS = ("accuracy", "macro_f1", "macro_auc")


def expected_confusion(probs: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """`E[confusion][j, i]` = sum over rows predicted i of p(y = j | x): the expected count of (true j, pred i)."""
    k = probs.shape[1]
    return np.stack([probs[pred == i].sum(axis=0) for i in range(k)], axis=1)


def _expected_auc(p: np.ndarray, s: np.ndarray) -> float:
    """E[#(pos ranked above neg)] / E[#pos x #neg] when row i is positive with probability p_i.

    Pairs i != j only; ties count one half. Both expectations are sums over pairs, so sorting by score
    and cumulating (1 - p) gives the numerator in O(n log n).
    """
    order = np.argsort(s, kind="stable")
    p, s = p[order], s[order]
    q = 1 - p
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    group = np.cumsum(np.r_[True, s[1:] != s[:-1]]) - 1
    q_group = np.add.reduceat(q, starts)
    below = np.r_[0.0, np.cumsum(q_group)[:-1]][group]  # sum of (1 - p) over strictly lower scores
    tied = q_group[group] - q  # over the other rows of the same score
    numerator = np.sum(p * (below + 0.5 * tied))
    denominator = p.sum() * q.sum() - np.sum(p * q)
    return float(numerator / denominator) if denominator > 0 else np.nan


def expected_macro_auc(probs: np.ndarray, scores: np.ndarray) -> float:
    """Mean over classes of the expected one-vs-rest AUC of `scores[:, k]` under labels drawn from `probs`."""
    aucs = [_expected_auc(probs[:, k], scores[:, k]) for k in range(probs.shape[1])]
    if not np.isfinite(aucs).all():
        warn_undefined("macro-AUC undefined: a class has no expected positive or no expected negative")
        return np.nan
    return float(np.mean(aucs))


def expected_metrics(probs: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """CBPE point estimates of accuracy, macro-F1 and macro-AUC of predictions argmax(scores)."""
    pred = scores.argmax(axis=1)
    cm = expected_confusion(probs, pred)
    return {
        "accuracy": float(np.trace(cm) / len(probs)),
        "macro_f1": float(macro_f1(confusion_tallies(cm))),
        "macro_auc": expected_macro_auc(probs, scores),
    }


def _draw_labels(probs: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """(n_draws, n) class codes, row i of draw b from Categorical(probs[i]) (or probs[b, i] when 3-D): the number
    of cumulative probabilities below a uniform; the last class takes whatever rounding leaves above."""
    u = rng.random((n_draws, probs.shape[-2], 1))[..., 0]
    labels = np.zeros(u.shape, dtype=np.int64)
    cumulative = np.zeros(probs.shape[:-1])
    for c in range(probs.shape[-1] - 1):  # class by class: a class-major posterior's slices are contiguous
        cumulative += probs[..., c]
        labels += u > cumulative
    return labels


def score_ranks(scores: np.ndarray) -> np.ndarray:
    """(k, n) midranks of each class's scores over the rows: what `draw_metrics` ranks by, computed once per target."""
    return np.stack([rankdata(scores[:, c]) for c in range(scores.shape[1])])


def _auc_of_draws(labels: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """One-vs-rest macro-AUC of each row of drawn labels, by the rank-sum formula (midranks (k, n) for ties)."""
    k = len(ranks)
    per_class = np.full((len(labels), k), np.nan)
    for c in range(k):
        positive = labels == c
        n_pos = positive.sum(axis=1).astype(float)
        n_neg = labels.shape[1] - n_pos
        with np.errstate(invalid="ignore", divide="ignore"):
            per_class[:, c] = (positive @ ranks[c] - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    out = per_class.mean(axis=1)  # NaN where a class has no drawn positive or no drawn negative
    if np.isnan(out).any():
        warn_undefined("macro-AUC undefined in some label draws: a class has no positive or no negative")
    return out


def draw_metrics(
    posterior: np.ndarray, scores: np.ndarray, rng: np.random.Generator, ranks: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """One label draw per posterior in `posterior` (B, n, k), and the metrics each draw realises, (B,) each.
    `ranks`: `score_ranks(scores)`, where the caller draws chunk after chunk on the same rows."""
    size, k = len(posterior), scores.shape[1]
    pred = scores.argmax(axis=1)
    labels = _draw_labels(posterior, size, rng)
    cell = labels * k + pred[None, :] + np.arange(size)[:, None] * k * k
    cm = np.bincount(cell.ravel(), minlength=size * k * k).reshape(size, k, k).astype(float)
    return {
        "accuracy": np.trace(cm, axis1=1, axis2=2) / len(pred),
        "macro_f1": macro_f1(confusion_tallies(cm)),
        "macro_auc": _auc_of_draws(labels, score_ranks(scores) if ranks is None else ranks),
    }
