"""Beyond the paper: label-mapping sensitivity (schemes A-E), text length, and label shift."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from mhaudit.stats.auc import macro_auc_unchecked
from mhaudit.stats.calibration import ece_unchecked
from mhaudit.stats.label_shift import bbse_priors, em_priors
from mhaudit.tables.predictions import Group

CPFE_CLASSES = ["normal", "depression", "anxiety", "stress"]
# Schemes as the CPFE paper's released code computes them from 4-class probabilities (summed per coarse
# class). D equals B by construction; E keeps only truly distressed rows (normal dropped).
SCHEMES = {
    "A": [["normal"], ["depression"], ["anxiety"], ["stress"]],
    "B": [["normal"], ["depression", "anxiety", "stress"]],
    "C": [["normal"], ["depression"], ["anxiety", "stress"]],
    "D": [["normal"], ["depression", "anxiety", "stress"]],
    "E": [["depression"], ["anxiety", "stress"]],
}


def scheme_view(group: Group, classes: list[str], parts: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Labels and summed probabilities under a coarser scheme; rows whose class is in no part are dropped."""
    index = {c: i for i, c in enumerate(classes)}
    target = np.full(len(classes), -1)
    probs = np.column_stack([group.probs[:, [index[c] for c in part]].sum(axis=1) for part in parts])
    for j, part in enumerate(parts):
        target[[index[c] for c in part]] = j
    y = target[group.y]
    keep = y >= 0
    kept = probs[keep]
    return y[keep], kept / kept.sum(axis=1, keepdims=True)


def sensitivity_rows(groups: list[Group], references: dict, classes: list[str]) -> list[dict]:
    if sorted(classes) != sorted(CPFE_CLASSES):
        return []
    rows = []
    for scheme, parts in SCHEMES.items():
        for g in groups:
            ref = references[(g.model, g.seed)]
            y, p = scheme_view(g, classes, parts)
            ry, rp = scheme_view(ref, classes, parts)
            auc, ref_auc = macro_auc_unchecked(y, p, len(parts)), macro_auc_unchecked(ry, rp, len(parts))
            rows.append(
                {
                    **g.key(),
                    "scheme": scheme,
                    "classes": " | ".join("+".join(p) for p in parts),
                    "n": len(y),
                    "macro_auc": auc,
                    "delta_auc_pct": 100 * (auc - ref_auc) / ref_auc,
                    "note": "identical to B by construction (released-code definition)" if scheme == "D" else "",
                }
            )
    return rows


def length_rows(
    groups: list[Group], words_of: dict[int, np.ndarray], classes: list[str], max_tokens: int
) -> list[dict]:
    """Words per example, share beyond the token budget (whitespace words), macro-AUC by length quartile.
    `words_of` maps id(group) to the word count of each of its rows."""
    rows = []
    for g in groups:
        words = words_of[id(g)]
        base = {
            **g.key(),
            "n": g.n,
            "mean_words": float(words.mean()),
            "median_words": float(np.median(words)),
            "p75_words": float(np.percentile(words, 75)),
            "share_over_max_tokens": float((words > max_tokens).mean()),
            "max_tokens": max_tokens,
        }
        if g.n < 4:
            rows.append({**base, "reason": "fewer than 4 rows: no length quartiles"})
            continue
        quartile = pd.qcut(pd.Series(words).rank(method="first"), 4, labels=False).to_numpy()
        for q in range(4):
            m = quartile == q
            rows.append(
                {
                    **base,
                    "quartile": f"Q{q + 1}",
                    "quartile_words_min": int(words[m].min()),
                    "quartile_words_max": int(words[m].max()),
                    "quartile_n": int(m.sum()),
                    "quartile_macro_auc": macro_auc_unchecked(g.y[m], g.probs[m], len(classes)),
                }
            )
    return rows


def _after_correction(g: Group, corrected: np.ndarray | None, k: int, n_bins: int) -> dict:
    nan = float("nan")
    return {
        "macro_auc": macro_auc_unchecked(g.y, g.probs, k),
        "accuracy": float((g.pred == g.y).mean()),
        "ece": ece_unchecked(g.probs, g.y, n_bins),
        "macro_auc_em_corrected": macro_auc_unchecked(g.y, corrected, k) if corrected is not None else nan,
        "accuracy_em_corrected": float((corrected.argmax(1) == g.y).mean()) if corrected is not None else nan,
        "ece_em_corrected": ece_unchecked(corrected, g.y, n_bins) if corrected is not None else nan,
    }


def label_shift_rows(groups: list[Group], references: dict, classes: list[str], n_bins: int) -> list[dict]:
    """Estimated vs true class prevalence on each target (EM and BBSE), and metrics after prior correction."""
    k = len(classes)
    rows = []
    for g in groups:
        ref = references[(g.model, g.seed)]
        if g is ref:
            continue
        prior_src = np.bincount(ref.y, minlength=k) / ref.n
        true = np.bincount(g.y, minlength=k) / g.n
        bbse = bbse_priors(ref.y, ref.pred, g.pred, k)
        if (prior_src == 0).any():  # EM cannot move a prior that starts at 0
            em_q, corrected, em_note = np.full(k, np.nan), None, "a class is absent on the reference: EM undefined"
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                em = em_priors(g.probs, prior_src)
            em_q, corrected, em_note = em.priors, em.probs, "; ".join(str(w.message) for w in caught)
        metrics = _after_correction(g, corrected, k, n_bins)  # per group, shared by its class rows
        for c, name in enumerate(classes):
            rows.append(
                {
                    **g.key(),
                    "n": g.n,
                    "class": name,
                    "prevalence_reference": float(prior_src[c]),
                    "prevalence_true": float(true[c]),
                    "prevalence_em": float(em_q[c]),
                    "prevalence_bbse": float(bbse.priors[c]),
                    "bbse_note": bbse.note,
                    "em_note": em_note,
                    **metrics,
                }
            )
    return rows
