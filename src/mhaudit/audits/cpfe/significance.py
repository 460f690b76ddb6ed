"""Axis 3, significance: platform pairs within a model (bootstrap SE of each macro-AUC, Z test,
Bonferroni or Benjamini-Hochberg within the family) and paired tests between models on one platform."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from mhaudit.audits.cpfe.groups import Group
from mhaudit.stats.auc import macro_auc, paired_delong
from mhaudit.stats.bootstrap import bootstrap_macro_auc, resample_counts, summarise

CORRECTIONS = {"bonferroni": "bonferroni", "bh": "fdr_bh"}


def bootstrap_se(group: Group, n_classes: int, n_boot: int, rng: np.random.Generator) -> dict:
    counts = resample_counts(group.y, n_boot, rng, stratified=True)
    return summarise(bootstrap_macro_auc(group.y, group.probs, n_classes, counts))


def platform_pair_rows(groups: list[Group], n_classes: int, n_boot: int, rng: np.random.Generator,
                       correction: str = "bonferroni", alpha: float = 0.05) -> list[dict]:
    """Every pair of platforms within each (model, seed); the family for correction is those pairs."""
    boot = {id(g): bootstrap_se(g, n_classes, n_boot, rng) for g in groups}
    rows = []
    families: dict[tuple[str, int], list[Group]] = {}
    for g in groups:
        families.setdefault((g.model, g.seed), []).append(g)
    for (model, seed), members in families.items():
        family = []
        for a, b in combinations(members, 2):
            auc_a, auc_b = macro_auc(a.y, a.probs, n_classes), macro_auc(b.y, b.probs, n_classes)
            se = float(np.hypot(boot[id(a)]["se"], boot[id(b)]["se"]))
            diff = auc_a - auc_b
            z = diff / se if se > 0 else float("nan")
            family.append({"model": model, "seed": seed, "platform_a": a.platform, "dataset_a": a.dataset,
                           "platform_b": b.platform, "dataset_b": b.dataset, "n_a": a.n, "n_b": b.n,
                           "auc_a": auc_a, "auc_b": auc_b, "difference": diff, "se": se,
                           "ci_low": diff - norm.ppf(1 - alpha / 2) * se, "ci_high": diff + norm.ppf(1 - alpha / 2) * se,
                           "z": z, "p": float(2 * norm.sf(abs(z))) if np.isfinite(z) else float("nan"),
                           "n_boot": n_boot, "n_failed": boot[id(a)]["n_failed"] + boot[id(b)]["n_failed"]})
        p = np.array([r["p"] for r in family])
        ok = np.isfinite(p)
        adjusted = np.full(len(p), np.nan)
        reject = np.zeros(len(p), dtype=bool)
        if ok.any():
            reject[ok], adjusted[ok], _, _ = multipletests(p[ok], alpha=alpha, method=CORRECTIONS[correction])
        for row, p_adj, rej in zip(family, adjusted, reject):
            row.update(correction=correction, family_size=int(ok.sum()), alpha_adjusted=alpha / max(int(ok.sum()), 1)
                       if correction == "bonferroni" else alpha, p_adjusted=float(p_adj), significant=bool(rej))
        rows += family
    return rows


def model_pair_rows(groups: list[Group], classes: list[str], n_boot: int, rng: np.random.Generator) -> list[dict]:
    """Two models on the same platform, data set and seed: paired DeLong per class and a paired
    bootstrap of the macro-AUC difference (the same resamples for both models)."""
    by_place: dict[tuple, list[Group]] = {}
    for g in groups:
        by_place.setdefault((g.platform, g.dataset, g.seed), []).append(g)
    rows = []
    k = len(classes)
    for (platform, dataset, seed), members in by_place.items():
        for a, b in combinations(sorted(members, key=lambda g: g.model), 2):
            base = {"platform": platform, "dataset": dataset, "seed": seed, "model_a": a.model, "model_b": b.model}
            if a.n != b.n or set(a.ids) != set(b.ids):
                rows.append({**base, "test": "paired", "reason": "the two models were scored on different examples"})
                continue
            order = np.argsort(b.ids)[np.argsort(np.argsort(a.ids))]  # align b's rows to a's ids
            b_probs = b.probs[order]
            counts = resample_counts(a.y, n_boot, rng, stratified=True)
            diffs = bootstrap_macro_auc(a.y, a.probs, k, counts) - bootstrap_macro_auc(a.y, b_probs, k, counts)
            stats = summarise(diffs)
            diff = macro_auc(a.y, a.probs, k) - macro_auc(a.y, b_probs, k)
            z = diff / stats["se"] if stats["se"] > 0 else float("nan")
            rows.append({**base, "test": "paired bootstrap, macro-AUC", "class": "", "difference": diff,
                         "se": stats["se"], "z": z, "p": float(2 * norm.sf(abs(z))) if np.isfinite(z) else float("nan"),
                         "n_boot": stats["n_boot"], "reason": ""})
            for c, name in enumerate(classes):
                y = a.y == c
                if y.all() or not y.any():
                    rows.append({**base, "test": "paired DeLong", "class": name, "reason": "class absent or alone"})
                    continue
                d = paired_delong(y, a.probs[:, c], b_probs[:, c])
                rows.append({**base, "test": "paired DeLong", "class": name, "difference": d["diff"], "se": d["se"],
                             "z": d["z"], "p": d["p"], "reason": ""})
    return rows
