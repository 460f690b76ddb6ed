"""Statistics tables of the divergence audit, all read from one matrix of bootstrap draws per data set.

For each scored data set, one instance bootstrap resamples its rows `n_boot` times and recomputes the
Macro-F1 of every prediction vector (channels, masked channels, baselines) on the same resample, so
every difference below is paired within a data set, and data sets are resampled independently. A
Degree of Divergence draw is then a mean of within-data-set differences, as in the paper's Eq. 1.
One-sided bootstrap p-values use the (k + 1) / (B + 1) rule.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from mhaudit.stats.binary import binary_scores, bootstrap_p, confusion_counts, macro_f1_from_counts, majority_macro_f1
from mhaudit.stats.bootstrap import summarise
from mhaudit.stats.divergence import regime_permutation
from mhaudit.stats.significance import benjamini_hochberg, mcnemar
from mhaudit.stats.threshold_free import bootstrap_panel

# Resamples for the threshold-free companions (AUC and AP cost a sort-ordered pass per resample, Macro-F1
# one matrix product): the first 2,000 of the same draws, ample for a 95% interval.
N_BOOT_SCORES = 2000

__all__ = [
    "Scored",
    "channel_scores",
    "interference",
    "dod",
    "dod_by_dataset",
    "dod_platform_stratified",
    "masking",
    "mcnemar_table",
    "mcnemar_pairs",
    "apply_fdr",
    "alternative_for",
]


class Scored:
    """Predictions of every run on every data set, with their shared bootstrap draws.

    `keys` name the prediction vectors ("C", "BC/pos_only", "baseline:minilm"); preds[d] is (k, n_d)
    0/1, probs[d] the matching scores; draws[d] is (n_boot, k) Macro-F1 per resample. The unmasked
    vectors (`scored`: keys without "/") also get balanced accuracy, AUC and PR-AUC gain on the first
    `n_boot_scores` of the same resamples (panel[d], `stats.threshold_free.bootstrap_panel`).
    """

    def __init__(
        self,
        keys: list[str],
        y: dict[str, np.ndarray],
        preds: dict[str, np.ndarray],
        probs: dict[str, np.ndarray],
        side: dict[str, str],
        platform: dict[str, str],
        n_boot: int,
        seed: int,
        zero_division: float = math.nan,
        n_boot_scores: int = N_BOOT_SCORES,
    ):
        self.keys, self.y, self.preds, self.probs, self.side, self.platform = keys, y, preds, probs, side, platform
        self.n_boot, self.zero_division = n_boot, zero_division
        self.scored = [k for k in keys if "/" not in k]
        self.n_boot_scores = min(n_boot, n_boot_scores)
        rng = np.random.default_rng(seed)  # one stream over the data sets, in order: bootstrap_macro_f1's draws
        rows = [keys.index(k) for k in self.scored]
        self.panel = {
            d: bootstrap_panel(
                y[d],
                preds[d],
                probs[d],
                n_boot,
                rng,
                n_boot_scores=self.n_boot_scores,
                scored=rows,
                zero_division=zero_division,
            )
            for d in y
        }
        self.draws = {d: self.panel[d]["macro_f1"] for d in y}
        self.point = {d: _macro_f1(y[d], preds[d], zero_division) for d in y}

    def col(self, key: str) -> int:
        return self.keys.index(key)

    def has(self, key: str) -> bool:
        return key in self.keys

    def against_a(self, channels: list[str]) -> list[str]:
        """The channels with a DoD against the lexical channel A: those scored, when A is scored too."""
        return [x for x in channels if x != "A" and self.has(x) and self.has("A")]

    @property
    def datasets(self) -> list[str]:
        return list(self.y)

    def on(self, side: str) -> list[str]:
        return [d for d in self.y if self.side[d] == side]


def _macro_f1(y: np.ndarray, preds: np.ndarray, zero_division: float) -> np.ndarray:
    return macro_f1_from_counts(*confusion_counts(y == 1, preds.astype(bool)), zero_division)


def _interval(draws: np.ndarray) -> tuple[float, float, float]:
    """95% percentile interval and SE over the defined resamples."""
    s = summarise(draws)
    return s["ci_low"], s["ci_high"], s["se"]


def alternative_for(channel: str) -> str:
    """The direction the paper states: channels without A gain on human labels (greater); AC, the lexical
    augmentation of style, loses there (less). Other combinations with A, and any baseline model, have no
    stated direction."""
    if channel.startswith("baseline:"):
        return "two-sided"
    if "A" not in channel:
        return "greater"
    return "less" if channel == "AC" else "two-sided"


def channel_scores(s: Scored, keys: list[str]) -> pd.DataFrame:
    rows = []
    for d in s.datasets:
        y = s.y[d]
        for key in keys:
            j = s.col(key)
            sc = binary_scores(y, s.preds[d][j], s.probs[d][j], zero_division=s.zero_division)
            lo, hi, _ = _interval(s.draws[d][:, j])
            rows.append(
                {
                    "channel": key,
                    "dataset": d,
                    "side": s.side[d],
                    "n": sc["n"],
                    "prevalence": sc["prevalence"],
                    "macro_f1": sc["macro_f1"],
                    "ci_low": lo,
                    "ci_high": hi,
                    "majority_macro_f1": majority_macro_f1(y, s.zero_division),
                    "pr_auc": sc["pr_auc"],
                    "mcc": sc["mcc"],
                    "balanced_accuracy": sc["balanced_accuracy"],
                    "f1_pos": sc["f1_pos"],
                    "precision": sc["precision"],
                    "recall": sc["recall"],
                    "reason": sc["reason"],
                }
            )
    return pd.DataFrame(rows)


def _diff_row(s: Scored, datasets: list[str], x: str, ref: str) -> tuple[float, np.ndarray]:
    """Mean over `datasets` of MF1(x) - MF1(ref): the estimate and its bootstrap draws."""
    jx, jr = s.col(x), s.col(ref)
    est = np.mean([s.point[d][jx] - s.point[d][jr] for d in datasets])
    draws = np.mean([s.draws[d][:, jx] - s.draws[d][:, jr] for d in datasets], axis=0)
    return float(est), draws


def _contrast(s: Scored, name: str, scope: str, datasets: list[str], x: str, ref: str, alternative: str) -> dict:
    est, draws = _diff_row(s, datasets, x, ref)
    lo, hi, se = _interval(draws)
    ps = bootstrap_p(draws)
    return {
        "contrast": name,
        "scope": scope,
        "datasets": ", ".join(datasets),
        "estimate": est,
        "ci_low": lo,
        "ci_high": hi,
        "se": se,
        "alternative": alternative,
        "p": ps[f"p_{alternative}"] if alternative != "two-sided" else ps["p_two_sided"],
        "n_boot": s.n_boot,
    }


def interference(s: Scored) -> pd.DataFrame:
    """MF1(AC) - MF1(C) per data set and per label source (the paper: a drop on human labels)."""
    if not (s.has("AC") and s.has("C")):
        return pd.DataFrame()
    rows = []
    for side in ("human", "auto"):
        members = s.on(side)
        rows.append(_contrast(s, "AC-C", side, members, "AC", "C", "less" if side == "human" else "greater"))
        rows += [_contrast(s, "AC-C", d, [d], "AC", "C", "two-sided") for d in members]
    return pd.DataFrame(rows)


def dod(s: Scored, channels: list[str]) -> pd.DataFrame:
    """DoD_{X-A} = mean_human[MF1(X) - MF1(A)] - mean_auto[...], with the regime-permutation diagnostic.
    `channels` may name baselines ("baseline:<model>"): a model's DoD against the lexical channel."""
    rows = []
    human, auto = s.on("human"), s.on("auto")
    for x in s.against_a(channels):
        h_est, h_draws = _diff_row(s, human, x, "A")
        a_est, a_draws = _diff_row(s, auto, x, "A")
        draws = h_draws - a_draws
        lo, hi, se = _interval(draws)
        alt = alternative_for(x)
        ps = bootstrap_p(draws)
        deltas = {d: float(s.point[d][s.col(x)] - s.point[d][s.col("A")]) for d in human + auto}
        perm = _permutation(deltas, human, alt)
        est = h_est - a_est
        rows.append(
            {
                "contrast": f"{x}-A",
                "estimate": est,
                "ci_low": lo,
                "ci_high": hi,
                "se": se,
                "z": est / se if se > 0 else float("nan"),
                "alternative": alt,
                "p": ps["p_two_sided" if alt == "two-sided" else f"p_{alt}"],
                "p_two_sided": ps["p_two_sided"],
                "permutation_p": perm["p"],
                "permutation_min_p": perm["min_p"],
                "human_delta": h_est,
                "auto_delta": a_est,
                "n_boot": s.n_boot,
            }
        )
    return pd.DataFrame(rows)


def _permutation(deltas: dict[str, float], human: list[str], alternative: str) -> dict:
    if alternative != "two-sided":
        return regime_permutation(deltas, human, alternative=alternative)
    up, down = (regime_permutation(deltas, human, alternative=a) for a in ("greater", "less"))
    return {"p": min(1.0, 2 * min(up["p"], down["p"])), "min_p": min(1.0, 2 * up["min_p"])}


def dod_by_dataset(s: Scored, channels: list[str]) -> pd.DataFrame:
    """The per-data-set differences behind every DoD (label source is confounded with domain: show them)."""
    rows = []
    for x in s.against_a(channels):
        for d in s.datasets:
            fx, fa = s.point[d][s.col(x)], s.point[d][s.col("A")]
            rows.append(
                {"channel": x, "dataset": d, "side": s.side[d], "macro_f1_x": fx, "macro_f1_a": fa, "delta": fx - fa}
            )
    return pd.DataFrame(rows)


def dod_platform_stratified(s: Scored, channels: list[str]) -> pd.DataFrame:
    """DoD on one platform at a time (human vs auto data sets of that platform), removing the platform contrast."""
    rows = []
    for platform in sorted(set(s.platform.values())):
        human = [d for d in s.on("human") if s.platform[d] == platform]
        auto = [d for d in s.on("auto") if s.platform[d] == platform]
        if not human or not auto:
            continue
        for x in s.against_a(channels):
            h_est, h_draws = _diff_row(s, human, x, "A")
            a_est, a_draws = _diff_row(s, auto, x, "A")
            lo, hi, se = _interval(h_draws - a_draws)
            rows.append(
                {
                    "platform": platform,
                    "contrast": f"{x}-A",
                    "human": ", ".join(human),
                    "auto": ", ".join(auto),
                    "estimate": h_est - a_est,
                    "ci_low": lo,
                    "ci_high": hi,
                    "se": se,
                    "p": bootstrap_p(h_draws - a_draws)["p_two_sided"],
                    "alternative": "two-sided",
                    "n_boot": s.n_boot,
                }
            )
    return pd.DataFrame(rows)


def masking(
    s: Scored, channels: list[str], masks: list[str], datasets: list[str], empty: dict[str, dict[str, int]]
) -> pd.DataFrame:
    """Macro-F1 per mask with the paired difference against the unmasked run of the same channel."""
    rows = []
    for d in datasets:
        for x in channels:
            for mask in masks:
                key = x if mask == "none" else f"{x}/{mask}"
                if not s.has(key):
                    continue
                j = s.col(key)
                lo, hi, _ = _interval(s.draws[d][:, j])
                row = {
                    "channel": x,
                    "mask": mask,
                    "dataset": d,
                    "macro_f1": s.point[d][j],
                    "ci_low": lo,
                    "ci_high": hi,
                    "empty_after_mask": empty.get(mask, {}).get(d, 0),
                }
                if mask != "none":
                    delta = s.draws[d][:, j] - s.draws[d][:, s.col(x)]
                    dlo, dhi, _ = _interval(delta)
                    row |= {
                        "delta_vs_none": s.point[d][j] - s.point[d][s.col(x)],
                        "delta_ci_low": dlo,
                        "delta_ci_high": dhi,
                        "p": bootstrap_p(delta)["p_two_sided"],
                    }
                rows.append(row)
    return pd.DataFrame(rows)


def mcnemar_table(s: Scored, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """McNemar (continuity-corrected) and the paired-bootstrap Macro-F1 difference, per data set and pair."""
    rows = []
    for d in s.datasets:
        for x, ref in pairs:
            jx, jr = s.col(x), s.col(ref)
            test = mcnemar(s.y[d], s.preds[d][jx], s.preds[d][jr])
            delta = s.draws[d][:, jx] - s.draws[d][:, jr]
            lo, hi, _ = _interval(delta)
            rows.append(
                {
                    "dataset": d,
                    "channel": x,
                    "versus": ref,
                    "delta_macro_f1": s.point[d][jx] - s.point[d][jr],
                    "ci_low": lo,
                    "ci_high": hi,
                    "p_bootstrap": bootstrap_p(delta)["p_two_sided"],
                    "b": test["b"],
                    "c": test["c"],
                    "mcnemar_statistic": test["statistic"],
                    "p": test["p"],
                }
            )
    return pd.DataFrame(rows)


def mcnemar_pairs(keys: list[str], channels: list[str]) -> list[tuple[str, str]]:
    """Every channel against A, AC against C, and every baseline against every channel."""
    pairs = [(x, "A") for x in channels if x != "A" and "A" in channels]
    pairs += [(k, "A") for k in keys if k.startswith("A_") and "A" in channels]  # word vs char n-grams
    if "AC" in channels and "C" in channels:
        pairs.append(("AC", "C"))
    baselines = [k for k in keys if k.startswith("baseline:")]
    pairs += [(x, b) for b in baselines for x in channels]
    pairs += list(itertools.combinations(baselines, 2))
    return pairs


def apply_fdr(tables: dict[str, pd.DataFrame], columns: dict[str, str]) -> int:
    """Benjamini-Hochberg across the whole family of tests: adds `q` to each table; returns the family size."""
    pieces = [
        (name, tables[name][col].to_numpy(dtype=float))
        for name, col in columns.items()
        if name in tables and col in tables[name].columns
    ]
    if not pieces:
        return 0
    q = benjamini_hochberg(np.concatenate([p for _, p in pieces]))
    start = 0
    for name, p in pieces:
        tables[name] = tables[name].assign(q=q[start : start + p.size])
        start += p.size
    return int(sum(np.isfinite(p).sum() for _, p in pieces))
