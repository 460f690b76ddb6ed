"""The ensemble estimate: several runs scored on the same reference rows and the same target rows, each run's
target accuracy from the agreement line (stats.agreement_line), and the line's own trust verdict.

Runs pair rows by id (tables.pairing, shared with the monitor). Runs with identical predictions on both
sides are one point of the line (stats.agreement_line.distinct_runs): the line is fitted on distinct runs and a
copy takes its twin's estimate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.report.trust import line_untrusted_because
from mhaudit.stats.agreement_line import AgreementLine, agreement_line, distinct_runs, line_trust
from mhaudit.tables.pairing import aligned_codes, labels_in_id_order
from mhaudit.tables.predictions import PredictionSet

__all__ = ["ensemble_estimates"]

METHODS = ("aline-s", "aline-d")


def ensemble_estimates(
    reference: PredictionSet, targets: PredictionSet, *, n_boot: int, rng: np.random.Generator
) -> dict[str, pd.DataFrame]:
    """Tables `ensemble` (one row per run x target x method, metric accuracy), `agreement_line` (one row per
    target: the line and its trust) and `agreement_pairs` (per target and pair of distinct runs, the two
    agreements). Empty when fewer than three runs are scored on both the reference and a target."""
    ref_groups = {key[:2]: group for key, group in reference.groups().items()}
    runs = sorted(ref_groups)
    estimates, lines, pairs = list[dict](), list[dict](), list[dict]()  # the rows of the three tables
    if len(runs) < 3:
        return _tables(estimates, lines, pairs)
    try:
        pred_ref = aligned_codes(ref_groups, runs, "reference")
    except InputError as error:  # the runs stand apart: each keeps its per-run estimates
        return _tables(
            estimates,
            [{"platform": "", "dataset": "", "n_runs": len(runs), "trusted": False, "untrusted_because": str(error)}],
            pairs,
        )
    y_ref = labels_in_id_order(ref_groups[runs[0]])
    by_target: dict[tuple, dict] = {}
    for key, group in targets.groups().items():
        by_target.setdefault(key[2:], {})[key[:2]] = group
    for (platform, dataset), tgt_groups in by_target.items():
        keys = {"platform": platform, "dataset": dataset}
        try:
            pred_tgt = aligned_codes(tgt_groups, runs, f"target {dataset}")
        except InputError as error:
            lines.append({**keys, "n_runs": len(runs), "trusted": False, "untrusted_because": str(error)})
            continue
        if pred_tgt is None or pred_ref is None:  # a target without some run (pred_ref: never, runs are its keys)
            continue
        distinct, twin = distinct_runs(pred_ref, pred_tgt)
        row = {
            **keys,
            "n_runs": len(runs),
            "n_distinct_runs": len(distinct),
            "n_reference": pred_ref.shape[1],
            "n_target": pred_tgt.shape[1],
        }
        if len(distinct) < 3:
            lines.append(
                {
                    **row,
                    "trusted": False,
                    "untrusted_because": f"only {len(distinct)} distinct run(s): a line needs three or more",
                }
            )
            continue
        line = agreement_line(pred_ref[distinct], y_ref, pred_tgt[distinct], n_boot=n_boot, rng=rng)
        failed = line_trust(line)
        lines.append(_line_row(row, line, failed))
        names = [f"{runs[r][0]} seed {runs[r][1]}" for r in distinct]
        pairs += [
            {**keys, "run_a": names[i], "run_b": names[j], "agreement_reference": a, "agreement_target": b}
            for (i, j), a, b in zip(line.pairs, line.agreement_reference, line.agreement_target)
        ]
        estimates += _run_estimates(runs, twin, line, keys, trusted=not failed)
    return _tables(estimates, lines, pairs)


def _line_row(row: dict, line: AgreementLine, failed: dict) -> dict:
    """The `agreement_line` row of one target: `row` (the target and its run counts), the line and its trust."""
    return {
        **row,
        "slope": line.slope,
        "intercept": line.intercept,
        "r2": line.r2,
        "residual_sd": line.residual_sd,
        "spread": line.spread,
        "agreement_reference": float(line.agreement_reference.mean()),
        "agreement_target": float(line.agreement_target.mean()),
        "trusted": not failed,
        "untrusted_because": line_untrusted_because(failed),
        "method_gap": line.method_gap,
    }


def _run_estimates(runs: list, twin: np.ndarray, line: AgreementLine, keys: dict, *, trusted: bool) -> list[dict]:
    """The `ensemble` rows of one target: each run's accuracy by each method, a copied run taking its twin's
    (the distinct run `twin[r]` the line was fitted on)."""
    rows = []
    for r, (model, seed) in enumerate(runs):
        d = twin[r]
        for method in METHODS:
            rows.append(
                {
                    "model": model,
                    "seed": seed,
                    **keys,
                    "method": method,
                    "metric": "accuracy",
                    "estimate": float(line.estimates[method][d]),
                    "ci_low": float(line.ci_low[method][d]),
                    "ci_high": float(line.ci_high[method][d]),
                    "reference_value": float(line.accuracy_reference[d]),
                    "trusted": trusted,
                }
            )
    return rows


def _tables(estimates: list, lines: list, pairs: list) -> dict[str, pd.DataFrame]:
    return {
        "ensemble": pd.DataFrame(estimates),
        "agreement_line": pd.DataFrame(lines),
        "agreement_pairs": pd.DataFrame(pairs),
    }
