"""Robustness audits beside the DoD: leave-one-domain-out, stylistic phenotypes, channel orthogonality and
lexical concentration (TSS paper Appendix C and F)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_mutual_info_score

from mhaudit.audits.divergence.design import Design
from mhaudit.audits.divergence.fitting import ChannelFit, FittedChannel, combine, fit_many, stratified_folds
from mhaudit.audits.divergence.kmeans import bootstrap_kmeans
from mhaudit.audits.divergence.views import FeatureMemo, build_view
from mhaudit.stats.binary import binary_scores
from mhaudit.stats.cluster_agreement import adjusted_rand_indices, mutual_informations
from mhaudit.text.parse import Parses

__all__ = ["lodo", "phenotypes", "orthogonality", "concentration"]


def _domain(values: pd.Series) -> pd.Series:
    # Dreaddit stores '<domain>/<subreddit>'; the stressor domain is the part before the slash.
    return values.astype("string").str.split("/").str[0]


def lodo(
    design: Design,
    channels: list[str],
    *,
    lexical: str,
    n_folds: int,
    seed: int,
    zero_division: float,
    train_parses: Parses,
    test_parses: Parses,
    memo: FeatureMemo | None = None,
) -> pd.DataFrame:
    """Leave-one-domain-out on the training data set: fit on the training rows of the other domains,
    score the held-out domain's test rows. Parses are reused, never re-parsed, and with the audit's `memo`
    the texts' n-gram counts and style features too; every domain's fits share one pool of workers. Empty
    without a `domain`."""
    train, test = design.train, design.evaluation.get(design.train_dataset)
    if test is None or "domain" not in train.columns or train["domain"].isna().all():
        return pd.DataFrame()
    train_domain, test_domain = _domain(train["domain"]), _domain(test["domain"])
    letters = tuple(sorted({c for ch in channels for c in ch}))
    memo = memo if memo is not None else FeatureMemo()
    splits, fits = [], []
    for held in sorted(train_domain.dropna().unique()):
        fit_rows, score_rows = (train_domain != held).to_numpy(), (test_domain == held).to_numpy()
        y_fit = train["label"].to_numpy()[fit_rows] == design.positive
        if score_rows.sum() == 0 or min(y_fit.sum(), (~y_fit).sum()) < n_folds:
            continue  # nothing to score, or too few rows of a class left to fit (rows without a domain always fit)
        sub = Design(
            design.train_dataset,
            design.positive,
            train[fit_rows].reset_index(drop=True),
            {"held_out": test[score_rows].reset_index(drop=True)},
            {"held_out": "human"},
        )
        folds = stratified_folds(sub.y_train, n_folds, seed)
        original = Parses.concat(
            [train_parses.take(np.flatnonzero(fit_rows)), test_parses.take(np.flatnonzero(score_rows))]
        )
        view = build_view(
            sub, letters, "none", ["held_out"], folds, lexical=lexical, seed=seed, original=original, memo=memo
        )
        splits.append((held, sub, view, int(fit_rows.sum()), int(score_rows.sum())))
        fits += [ChannelFit(ch, view.train, sub.y_train, folds) for ch in channels]
    models = iter(fit_many(fits))
    rows = []
    for held, sub, view, n_train, n_scored in splits:
        y_held = sub.y("held_out")
        for ch in channels:
            model = next(models)
            prob = model.prob(combine(view.evaluation["held_out"], model.letters))
            scores = binary_scores(y_held, (prob >= model.threshold).astype(np.int8), prob, zero_division)
            rows.append(
                {
                    "channel": ch,
                    "held_out_domain": held,
                    "n_train": n_train,
                    "n_scored": n_scored,
                    "macro_f1": scores["macro_f1"],
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    summary = (
        table.groupby("channel", sort=False)["macro_f1"]
        .agg(["mean", "std", "count"])
        .reset_index()
        .rename(columns={"mean": "ood_macro_f1_mean", "std": "ood_macro_f1_sd", "count": "domains"})
    )
    return table.merge(summary, on="channel")


def phenotypes(
    features: np.ndarray, datasets: np.ndarray, *, k: int = 3, n_boot: int = 100, n_perm: int = 200, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """K-means (K = 3) on channel C: cluster sizes per data set, bootstrap ARI stability, AMI with data set.

    Stability: refit on a bootstrap resample, assign every instance, ARI against the full-data clusters (all
    resamples' K-means fitted together: `kmeans.bootstrap_kmeans`, the labels of KMeans on each; the ARIs
    from batched contingency tables). AMI's p-value permutes the data-set labels (n_perm times, +1 rule)."""
    rng = np.random.default_rng(seed)
    reference = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(features)
    labels = reference.labels_
    resamples, seeds, n = [], [], len(features)
    for _ in range(n_boot):  # drawn in the order one-fit-at-a-time drew them: rows, then the fit's seed
        resamples.append(rng.integers(0, n, size=n))
        seeds.append(int(rng.integers(1 << 31)))
    refits = bootstrap_kmeans(features, resamples, seeds, k=k, n_init=3)
    ari = adjusted_rand_indices(labels, refits)
    ami = adjusted_mutual_info_score(datasets, labels)
    # Permuting the data-set codes is permuting the names (the same draws); a permutation keeps both
    # marginals, so AMI rises with the mutual information and the test ranks that (stats.cluster_agreement).
    codes = np.unique(np.asarray(datasets), return_inverse=True)[1].ravel()
    shuffled = np.stack([codes, *(codes[rng.permutation(codes.size)] for _ in range(n_perm))])
    mi = mutual_informations(shuffled, labels)
    ami_p = (np.count_nonzero(mi[1:] >= mi[0]) + 1) / (n_perm + 1)
    summary = pd.DataFrame(
        [
            {
                "k": k,
                "n": int(features.shape[0]),
                "features": int(features.shape[1]),
                "bootstrap_ari_mean": float(ari.mean()),
                "ari_ci_low": float(np.percentile(ari, 2.5)),
                "ari_ci_high": float(np.percentile(ari, 97.5)),
                "n_boot": n_boot,
                "ami_dataset": float(ami),
                "ami_p": float(ami_p),
                "n_perm": n_perm,
            }
        ]
    )
    sizes = pd.crosstab(pd.Series(labels, name="cluster"), pd.Series(datasets, name="dataset")).reset_index()
    return summary, sizes


def orthogonality(scores: dict[str, np.ndarray]) -> pd.DataFrame:
    """Spearman correlation of instance-level scores between every pair of channels (all scored instances)."""
    rows = []
    for a, b in itertools.combinations(scores, 2):
        rho = spearmanr(scores[a], scores[b]).statistic
        rows.append({"channel_1": a, "channel_2": b, "spearman_rho": float(rho), "abs_rho": abs(float(rho))})
    return pd.DataFrame(rows)


def concentration(
    model: FittedChannel, names: list[str], x_by_dataset: dict[str, np.ndarray], top: int = 10
) -> pd.DataFrame:
    """Share of total |attribution| (linear SHAP) carried by the `top` features, per data set."""
    rows = []
    for d, x in x_by_dataset.items():
        mass = np.abs(model.attributions(x)).sum(axis=0)
        order = np.argsort(mass)[::-1][:top]
        total = mass.sum()
        share = float(mass[order].sum() / total) if total > 0 else float("nan")
        rows.append(
            {
                "channel": model.name,
                "dataset": d,
                "features": mass.size,
                "top": top,
                "top_share": share,
                "uniform_share": top / mass.size,
                "ratio_to_uniform": share / (top / mass.size),
                "top_features": ", ".join(names[i] for i in order),
            }
        )
    return pd.DataFrame(rows)
