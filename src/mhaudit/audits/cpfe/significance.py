"""Axis 3, significance: data set pairs within a model and seed (bootstrap SE of each macro-AUC, Z test,
Bonferroni or Benjamini-Hochberg within a family: the reference-vs-target pairs, and apart from them the pairs of
targets) and paired tests between models on one platform.

When every group has at least `CPFEOptions.delong_min_rows` rows the macro-AUC's SEs come from DeLong's
placement values instead (`MacroAucSpread`, stats.macro_delong): no significance resamples are drawn.

Resamples are drawn once per place (platform, data set, seed and example set), a block at a time, and
shared by every model scored there, so each model's bootstrap macro-AUCs are computed once and serve both its SE and
the paired differences with other models.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations

import numpy as np

from mhaudit.audits.cpfe.groups import pairing
from mhaudit.core.threads import available_cores
from mhaudit.stats.auc import macro_auc_unchecked, paired_delong_unchecked
from mhaudit.stats.bootstrap import bias_corrected, grouped_count_blocks, macro_auc_of_counts, summarise
from mhaudit.stats.calibration import ece_of_counts, ece_unchecked
from mhaudit.stats.macro_delong import macro_row_terms, stratified_variance
from mhaudit.stats.normal import quantile, two_sided_p
from mhaudit.tables.predictions import Group


def place_bootstraps(
    groups: list[Group], n_classes: int, n_boot_auc: int, n_boot_ece: int, n_bins: int, rng: np.random.Generator
) -> tuple[dict[int, np.ndarray], dict[int, dict]]:
    """Label-stratified bootstraps of every group: macro-AUCs (for significance) and bias-corrected ECEs.

    One stream of resamples per place serves every model there and both statistics (ECE uses its first
    `n_boot_ece` resamples). The counts are drawn a block at a time (`grouped_count_blocks`), on this thread and in
    order, so the resamples are the same whatever the threads and the block size, and memory stays bounded
    at any n (one (resamples x n) matrix was 16 GB at 1M rows); each block's statistics run on a worker
    thread (numpy releases the GIL in take, cumsum and einsum: ~1.8x on 2 idle cores) while the next block
    is drawn, each block split among the workers (each resample's statistics depend on its own row alone, so
    the pieces give the same floats). At most two blocks are in flight.
    """
    places: dict[tuple, list[Group]] = {}
    for g in groups:  # a place: one platform, data set and seed, with the same rows (ids and labels)
        places.setdefault((g.platform, g.dataset, g.seed, g.n, hash(tuple(g.ids)), hash(g.y.tobytes())), []).append(g)
    aucs = {id(g): np.empty(n_boot_auc) for g in groups}
    boot_eces = {id(g): np.empty(n_boot_ece) for g in groups}
    workers = min(2, available_cores())
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        for members in places.values():
            # the counts in their draw's column order, the same integers as count_blocks without putting each
            # block back in row order: the sorting and binning of each group gather through layout.column, once
            layout, blocks = grouped_count_blocks(members[0].y, max(n_boot_auc, n_boot_ece), rng, stratified=True)
            stats = [
                (
                    g,
                    macro_auc_of_counts(g.y, g.probs, n_classes, layout.column) if n_boot_auc else None,
                    ece_of_counts(g.probs, g.y, n_bins, layout.column),
                )
                for g in members
            ]
            for start, counts in blocks:  # each block in a piece per worker: one model per place keeps both busy
                piece = -(-counts.shape[0] // workers)
                pending.append(
                    [
                        pool.submit(
                            _block, start + lo, counts[lo : lo + piece], aucs[id(g)], boot_eces[id(g)], auc, ece
                        )
                        for g, auc, ece in stats
                        for lo in range(0, len(counts), piece)
                    ]
                )
                if len(pending) > 1:
                    _wait(pending.popleft())
        while pending:
            _wait(pending.popleft())
    # ECE: the bias-corrected estimate and interval (stats.bootstrap.bias_corrected), not the plug-in's
    # percentile interval, which the plug-in point can fall below.
    eces = {id(g): bias_corrected(ece_unchecked(g.probs, g.y, n_bins), boot_eces[id(g)], floor=0.0) for g in groups}
    return aucs, eces


def _wait(futures) -> None:
    for future in futures:
        future.result()  # raises what the worker raised


def _block(start: int, counts: np.ndarray, auc_out: np.ndarray, ece_out: np.ndarray, auc, ece) -> None:
    """One block of resamples (rows start, start + 1, ...) into the group's macro-AUCs and ECEs, as far as each goes."""
    for out, statistic in ((auc_out, auc), (ece_out, ece)):
        rows = min(counts.shape[0], out.size - start)
        if rows > 0:
            out[start : start + rows] = statistic(counts[:rows])


class MacroAucSpread:
    """The SE of each group's macro-AUC and of two models' paired difference: from the groups' bootstrap
    macro-AUCs (`place_bootstraps`), or, with method 'DeLong', from each row's DeLong term (n_boot then 0)."""

    def __init__(self, groups: list[Group], boot: dict[int, np.ndarray], n_classes: int, method: str = "bootstrap"):
        self.method, self.boot, self.k = method, boot, n_classes
        self.terms = {}
        if method == "DeLong":
            for g in groups:  # None: a class lacks positives or negatives, so the macro-AUC is undefined
                defined = all(0 < int((g.y == c).sum()) < g.n for c in range(n_classes))
                self.terms[id(g)] = macro_row_terms(g.y, g.probs, n_classes)[1] if defined else None

    def group(self, g: Group) -> dict:
        if self.method == "bootstrap":
            return summarise(self.boot[id(g)])
        return self._delong(g.y, self.terms[id(g)])

    def paired(self, a: Group, b: Group) -> dict:
        if self.method == "bootstrap":
            return summarise(self.boot[id(a)] - self.boot[id(b)])
        ta, tb = self.terms[id(a)], self.terms[id(b)]
        return self._delong(a.y, None if ta is None or tb is None else ta - tb)

    def _delong(self, y: np.ndarray, terms) -> dict:
        var = float("nan") if terms is None else stratified_variance(y, terms, self.k)
        return {"se": float(np.sqrt(var)), "n_boot": 0, "n_failed": 0}


def _z_test(diff: float, se: float) -> tuple[float, float]:
    if not se > 0:
        return float("nan"), float("nan")
    z = diff / se
    return z, two_sided_p(z)


def adjust(p: np.ndarray, alpha: float, correction: str) -> tuple[np.ndarray, np.ndarray]:
    """Rejections and adjusted p-values, as statsmodels' `multipletests(p, alpha, 'bonferroni' | 'fdr_bh')`
    computes them, operation for operation (the same floats), without importing statsmodels (~1 s)."""
    m = len(p)
    if correction == "bonferroni":
        reject, adjusted = p <= alpha / float(m), p * float(m)
    else:  # Benjamini-Hochberg on the sorted p-values, then back in the input order
        order = np.argsort(p)
        ranked = np.take(p, order)
        ecdf = np.arange(1, m + 1) / float(m)
        sorted_reject = ranked <= ecdf * alpha
        if sorted_reject.any():
            sorted_reject[: np.flatnonzero(sorted_reject).max()] = True
        sorted_adjusted = np.minimum.accumulate((ranked / ecdf)[::-1])[::-1]
        reject, adjusted = np.empty_like(sorted_reject), np.empty_like(sorted_adjusted)
        reject[order], adjusted[order] = sorted_reject, sorted_adjusted
    return reject, np.minimum(adjusted, 1.0)


def platform_pair_rows(
    groups: list[Group],
    references: dict,
    spread: MacroAucSpread,
    n_classes: int,
    correction: str = "bonferroni",
    alpha: float = 0.05,
) -> list[dict]:
    """Every pair of data sets within each (model, seed), in two families for the correction: the reference's pairs
    with each target (what the verdicts judge) and the pairs of targets (descriptive, as the paper's Reddit vs
    Twitter; not counted in the first family). `references`: (model, seed) -> its reference group (reference_of).

    alpha_adjusted is the level at which the verdict's CI excludes 0 exactly when the test rejects: alpha / m for
    Bonferroni, R alpha / m for Benjamini-Hochberg with R rejections (at least 1; Benjamini and Yekutieli's
    FCR-adjusted level), m the family's size."""
    se = {id(g): spread.group(g) for g in groups}
    runs: dict[tuple[str, int], list[Group]] = {}
    for g in groups:
        runs.setdefault((g.model, g.seed), []).append(g)
    z_crit = quantile(1 - alpha / 2)
    rows = []
    for (model, seed), members in runs.items():
        pairs = []
        for a, b in combinations(members, 2):
            auc_a, auc_b = macro_auc_unchecked(a.y, a.probs, n_classes), macro_auc_unchecked(b.y, b.probs, n_classes)
            pooled = float(np.hypot(se[id(a)]["se"], se[id(b)]["se"]))  # independent test sets
            diff = auc_a - auc_b
            z, p = _z_test(diff, pooled)
            home = references[(model, seed)] in (a, b)
            pairs.append(
                {
                    "model": model,
                    "seed": seed,
                    "platform_a": a.platform,
                    "dataset_a": a.dataset,
                    "platform_b": b.platform,
                    "dataset_b": b.dataset,
                    "n_a": a.n,
                    "n_b": b.n,
                    "auc_a": auc_a,
                    "auc_b": auc_b,
                    "difference": diff,
                    "se": pooled,
                    "ci_low": diff - z_crit * pooled,
                    "ci_high": diff + z_crit * pooled,
                    "z": z,
                    "p": p,
                    "n_boot": se[id(a)]["n_boot"],
                    "n_failed": se[id(a)]["n_failed"] + se[id(b)]["n_failed"],
                    "test": f"two-sided Z test, {spread.method} SE",
                    "family": "reference vs target" if home else "between targets",
                }
            )
        for family in ("reference vs target", "between targets"):
            _correct([r for r in pairs if r["family"] == family], correction, alpha)
        rows += pairs
    return rows


def _correct(family: list[dict], correction: str, alpha: float) -> None:
    """The family's adjusted p-values, rejections and alpha_adjusted, into its rows."""
    p = np.array([r["p"] for r in family])
    ok = np.isfinite(p)
    adjusted, reject = np.full(len(p), np.nan), np.zeros(len(p), dtype=bool)
    if ok.any():
        reject[ok], adjusted[ok] = adjust(p[ok], alpha, correction)
    m = max(int(ok.sum()), 1)
    alpha_adjusted = alpha / m if correction == "bonferroni" else max(int(reject.sum()), 1) * alpha / m
    for row, p_adj, rej in zip(family, adjusted, reject):
        row.update(
            correction=correction,
            family_size=int(ok.sum()),
            alpha_adjusted=alpha_adjusted,
            p_adjusted=float(p_adj),
            significant=bool(rej),
        )


def model_pair_rows(groups: list[Group], spread: MacroAucSpread, classes: list[str]) -> list[dict]:
    """Two models on the same platform, data set and seed: a paired bootstrap of the macro-AUC difference
    (the same resamples for both; or its DeLong SE, `spread.method`) and paired DeLong per class."""
    by_place: dict[tuple, list[Group]] = {}
    for g in groups:
        by_place.setdefault((g.platform, g.dataset, g.seed), []).append(g)
    rows = []
    k = len(classes)
    for (platform, dataset, seed), members in by_place.items():
        for a, b in combinations(sorted(members, key=lambda g: g.model), 2):
            paired_by, why_not = pairing(a, b)
            base = {
                "platform": platform,
                "dataset": dataset,
                "seed": seed,
                "model_a": a.model,
                "model_b": b.model,
                "n": a.n,
                "paired_by": paired_by,
            }
            if not paired_by:
                rows.append({**base, "test": "paired", "class": "", "reason": why_not})
                continue
            stats = spread.paired(a, b)
            diff = macro_auc_unchecked(a.y, a.probs, k) - macro_auc_unchecked(b.y, b.probs, k)
            z, p = _z_test(diff, stats["se"])
            rows.append(
                {
                    **base,
                    "test": f"paired {spread.method}, macro-AUC",
                    "class": "",
                    "difference": diff,
                    "se": stats["se"],
                    "z": z,
                    "p": p,
                    "n_boot": stats["n_boot"],
                    "reason": "",
                }
            )
            for c, name in enumerate(classes):
                d = paired_delong_unchecked(a.y == c, a.probs[:, c], b.probs[:, c])
                rows.append(
                    {
                        **base,
                        "test": "paired DeLong",
                        "class": name,
                        "difference": d["diff"],
                        "se": d["se"],
                        "z": d["z"],
                        "p": d["p"],
                        "reason": d.get("reason", ""),
                    }
                )
    return rows
