"""Axis 3, significance: platform pairs within a model (bootstrap SE of each macro-AUC, Z test,
Bonferroni or Benjamini-Hochberg within the family) and paired tests between models on one platform.

Resamples are drawn once per place (platform, data set, seed and example set) and shared by every
model scored there, so each model's bootstrap macro-AUCs are computed once and serve both its SE and
the paired differences with other models.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from mhaudit.audits.cpfe.groups import Group, pairing
from mhaudit.stats.auc import macro_auc, paired_delong
from mhaudit.stats.bootstrap import bootstrap_macro_auc, resample_counts, summarise
from mhaudit.stats.calibration import bootstrap_ece

CORRECTIONS = {"bonferroni": "bonferroni", "bh": "fdr_bh"}


def _place(g: Group) -> tuple:
    return g.platform, g.dataset, g.seed, g.n, hash(tuple(g.ids))


def place_bootstraps(groups: list[Group], n_classes: int, n_boot_auc: int, n_boot_ece: int, n_bins: int,
                     rng: np.random.Generator) -> tuple[dict[int, np.ndarray], dict[int, dict]]:
    """Label-stratified bootstraps of every group: macro-AUCs (for significance) and ECE summaries.

    One count matrix per place serves every model there and both statistics (ECE uses its first
    `n_boot_ece` resamples); it is freed once the place is done, so memory holds one at a time.
    """
    places: dict[tuple, list[Group]] = {}
    for g in groups:
        places.setdefault((*_place(g), hash(g.y.tobytes())), []).append(g)
    aucs, eces = {}, {}
    for members in places.values():
        counts = resample_counts(members[0].y, max(n_boot_auc, n_boot_ece), rng, stratified=True)
        for g in members:
            aucs[id(g)] = bootstrap_macro_auc(g.y, g.probs, n_classes, counts[:n_boot_auc])
            eces[id(g)] = summarise(bootstrap_ece(g.probs, g.y, counts[:n_boot_ece], n_bins))
    return aucs, eces


def _z_test(diff: float, se: float) -> tuple[float, float]:
    if not se > 0:
        return float("nan"), float("nan")
    z = diff / se
    return z, float(2 * norm.sf(abs(z)))


def platform_pair_rows(groups: list[Group], boot: dict[int, np.ndarray], n_classes: int,
                       correction: str = "bonferroni", alpha: float = 0.05) -> list[dict]:
    """Every pair of platforms within each (model, seed); the family for correction is those pairs."""
    se = {id(g): summarise(boot[id(g)]) for g in groups}
    families: dict[tuple[str, int], list[Group]] = {}
    for g in groups:
        families.setdefault((g.model, g.seed), []).append(g)
    z_crit = norm.ppf(1 - alpha / 2)
    rows = []
    for (model, seed), members in families.items():
        family = []
        for a, b in combinations(members, 2):
            auc_a, auc_b = macro_auc(a.y, a.probs, n_classes), macro_auc(b.y, b.probs, n_classes)
            pooled = float(np.hypot(se[id(a)]["se"], se[id(b)]["se"]))  # independent test sets
            diff = auc_a - auc_b
            z, p = _z_test(diff, pooled)
            family.append({"model": model, "seed": seed, "platform_a": a.platform, "dataset_a": a.dataset,
                           "platform_b": b.platform, "dataset_b": b.dataset, "n_a": a.n, "n_b": b.n,
                           "auc_a": auc_a, "auc_b": auc_b, "difference": diff, "se": pooled,
                           "ci_low": diff - z_crit * pooled, "ci_high": diff + z_crit * pooled, "z": z, "p": p,
                           "n_boot": se[id(a)]["n_boot"], "n_failed": se[id(a)]["n_failed"] + se[id(b)]["n_failed"]})
        p = np.array([r["p"] for r in family])
        ok = np.isfinite(p)
        adjusted, reject = np.full(len(p), np.nan), np.zeros(len(p), dtype=bool)
        if ok.any():
            reject[ok], adjusted[ok], _, _ = multipletests(p[ok], alpha=alpha, method=CORRECTIONS[correction])
        alpha_adjusted = alpha / max(int(ok.sum()), 1) if correction == "bonferroni" else alpha
        for row, p_adj, rej in zip(family, adjusted, reject):
            row.update(correction=correction, family_size=int(ok.sum()), alpha_adjusted=alpha_adjusted,
                       p_adjusted=float(p_adj), significant=bool(rej))
        rows += family
    return rows


def model_pair_rows(groups: list[Group], boot: dict[int, np.ndarray], classes: list[str]) -> list[dict]:
    """Two models on the same platform, data set and seed: a paired bootstrap of the macro-AUC difference
    (the same resamples for both) and paired DeLong per class."""
    by_place: dict[tuple, list[Group]] = {}
    for g in groups:
        by_place.setdefault((g.platform, g.dataset, g.seed), []).append(g)
    rows = []
    k = len(classes)
    for (platform, dataset, seed), members in by_place.items():
        for a, b in combinations(sorted(members, key=lambda g: g.model), 2):
            paired_by, why_not = pairing(a, b)
            base = {"platform": platform, "dataset": dataset, "seed": seed, "model_a": a.model, "model_b": b.model,
                    "n": a.n, "paired_by": paired_by}
            if not paired_by:
                rows.append({**base, "test": "paired", "class": "", "reason": why_not})
                continue
            stats = summarise(boot[id(a)] - boot[id(b)])
            diff = macro_auc(a.y, a.probs, k) - macro_auc(b.y, b.probs, k)
            z, p = _z_test(diff, stats["se"])
            rows.append({**base, "test": "paired bootstrap, macro-AUC", "class": "", "difference": diff,
                         "se": stats["se"], "z": z, "p": p, "n_boot": stats["n_boot"], "reason": ""})
            for c, name in enumerate(classes):
                d = paired_delong(a.y == c, a.probs[:, c], b.probs[:, c])
                rows.append({**base, "test": "paired DeLong", "class": name, "difference": d["diff"],
                             "se": d["se"], "z": d["z"], "p": d["p"], "reason": d.get("reason", "")})
    return rows
