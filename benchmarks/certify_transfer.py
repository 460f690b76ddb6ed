"""Certifying a model on a target with few human labels, simulated on the real transfers with known labels.

    python benchmarks/certify_transfer.py --work /tmp/mhaudit-estimate [--draws 500] [--budgets 50,100,200,500]

The pairs and predictions are those of benchmarks/estimate_transfer.py (its cached predictions.parquet in
--work, made by it when absent): TF-IDF models trained on one data set, scored on another whose labels are
known. For each pair the target is the pool; the posteriors are the scores calibrated on the model's home
test set (BCTS). For each budget, --draws samples are drawn with each design and the labels of the drawn
items revealed:

- ours: strata by predicted class x confidence (up to 4 bins), shrunk Neyman allocation (`labels sample --strategy
  estimate`), PPI++ estimates (`audit certify`);
- srs: a simple random sample of the same size, labels only (the sample's own shares);
- and, to tell the parts apart, srs+ppi (PPI++ on the simple random sample) and strata (our design, labels only).

Reported per pair and budget: the 95% CI coverage of the true accuracy, macro-F1 and class prevalences, and
the mean macro-F1 CI half-width; per pair, the labels each design needs for a ± 0.05 macro-F1 CI (half-width
fitted as c·sqrt(1/n − 1/N) over the budgets) and their ratio. The simulation is over draws of the sample;
the pool is fixed (population "pool", finite-population correction).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from estimate_transfer import DATA, predictions  # noqa: E402  (the same pairs and cached predictions)

DESIGNS = {"ours": ("strata", "power"), "srs": ("one", "labels"), "srs+ppi": ("one", "power"),
           "strata": ("strata", "labels")}
TOLERANCE = 0.05


def draws(strata: np.ndarray, alloc: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Membership matrices (draws x items): a simple random sample of alloc[h] items in each stratum h."""
    m = np.zeros((n_draws, strata.size))
    for h, n_h in enumerate(alloc):
        rows = np.flatnonzero(strata == h)
        picks = np.argsort(rng.random((n_draws, rows.size)), axis=1)[:, :n_h]
        m[np.arange(n_draws)[:, None], rows[picks]] = 1
    return m


def simulate_pair(ref: pd.DataFrame, tgt: pd.DataFrame, classes: list[str], budgets, n_draws: int, seed: int):
    from mhaudit.tables.sample_design import allocate, bins_for, confidence_strata
    from mhaudit.stats.bcts import fit_bcts
    from mhaudit.stats.ppi import pool_estimates
    from mhaudit.tables.predictions import scores

    k = len(classes)
    y_ref = pd.Categorical(ref["label"], categories=classes).codes.astype(np.int64)
    probs = fit_bcts(scores(ref, classes), y_ref).probs(scores(tgt, classes))
    pred = scores(tgt, classes).argmax(axis=1)
    y = pd.Categorical(tgt["label"], categories=classes).codes.astype(np.int64)
    truth = {"accuracy": float((y == pred).mean()),
             "macro_f1": float(np.mean([2 * ((y == c) & (pred == c)).sum() / max((y == c).sum() + (pred == c).sum(), 1)
                                        for c in range(k)])),
             "prevalence": np.bincount(y, minlength=k) / y.size}
    one = np.zeros(y.size, dtype=np.int64)
    rng = np.random.default_rng(seed)
    rows = []
    for budget in budgets:
        if budget >= y.size:
            continue
        strata, _ = confidence_strata(probs, pred, classes, bins_for(budget, k, 4))  # as labels sample does
        alloc = {"strata": allocate(probs, pred, strata, budget), "one": np.array([budget])}
        for design, (layout, tuning) in DESIGNS.items():
            s = strata if layout == "strata" else one
            covered = {"accuracy": [], "macro_f1": [], "prevalence": []}
            half, errors = [], []
            for start in range(0, n_draws, 100):  # chunks of draws, each a batch of matrix products
                m = draws(s, alloc[layout], min(100, n_draws - start), rng)
                est = pool_estimates(m, y, pred, probs, s, tuning=tuning, population="pool")
                for metric in covered:
                    low, high = est.interval(metric)
                    hit = (low <= truth[metric]) & (truth[metric] <= high)
                    covered[metric].append(hit if metric != "prevalence" else hit.mean(axis=1))
                low, high = est.interval("macro_f1")
                half.append((high - low) / 2)
                errors.append(est.estimate["macro_f1"] - truth["macro_f1"])
            rows.append({"budget": budget, "design": design, "n_pool": y.size,
                         **{f"coverage_{m}": float(np.concatenate(v).mean()) for m, v in covered.items()},
                         "half_width_macro_f1": float(np.concatenate(half).mean()),
                         "bias_macro_f1": float(np.concatenate(errors).mean()),
                         "sd_macro_f1": float(np.concatenate(errors).std()), "truth_macro_f1": truth["macro_f1"]})
    return rows


def labels_needed(frame: pd.DataFrame) -> float:
    """n for a ± TOLERANCE CI, from half-width = c sqrt(1/n − 1/N) fitted over the budgets (least squares on c²)."""
    n, big_n = frame["budget"].to_numpy(float), float(frame["n_pool"].iat[0])
    x = 1 / n - 1 / big_n
    c2 = float((frame["half_width_macro_f1"].to_numpy() ** 2 * x).sum() / (x ** 2).sum())
    return float(1 / (TOLERANCE ** 2 / c2 + 1 / big_n))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mhaudit-estimate"))
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--budgets", default="50,100,200,500")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"skipped: the shared data sets are not at {DATA}")
        return 0
    budgets = [int(b) for b in args.budgets.split(",")]
    preds = predictions(args.work)
    rows, started = [], time.perf_counter()
    for (source, model), block in preds.groupby(["source", "model"], sort=True):
        classes = block["classes"].iat[0].split(",")
        ref = block[block["role"] == "reference"]
        for target, tgt in block[block["role"] == "target"].groupby("target"):
            t0 = time.perf_counter()
            for row in simulate_pair(ref, tgt.reset_index(drop=True), classes, budgets, args.draws, seed=0):
                rows.append({"model": model, "source": source, "target": target, **row})
            print(f"{model} {source} -> {target} ({len(tgt):,} posts): {time.perf_counter() - t0:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.work / "certify_pairs.csv", index=False)
    pd.set_option("display.width", 220)
    cov = table.groupby(["design", "budget"])[["coverage_accuracy", "coverage_macro_f1", "coverage_prevalence",
                                               "half_width_macro_f1"]].mean()
    worst = table.groupby(["design", "budget"])[["coverage_macro_f1"]].min().rename(
        columns={"coverage_macro_f1": "worst_pair_coverage_macro_f1"})
    print("\nMean over pairs (coverage of 95% CIs; macro-F1 half-width):")
    print(cov.join(worst).round(3).to_string())
    need = table.groupby(["model", "source", "target", "design"]).apply(labels_needed, include_groups=False).unstack()
    need["ratio_srs_to_ours"] = need["srs"] / need["ours"]
    print("\nLabels needed for a ± 0.05 macro-F1 CI:")
    print(need.round(1).to_string())
    print(f"\nmedian ratio srs / ours: {need['ratio_srs_to_ours'].median():.2f} over {len(need)} pairs "
          f"({time.perf_counter() - started:.0f} s)")
    need.to_csv(args.work / "certify_labels_needed.csv")
    (args.work / "certify_run.json").write_text(json.dumps({"draws": args.draws, "budgets": budgets}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
