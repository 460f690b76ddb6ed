"""Our full CPFE audit against fairscope 0.3.0's CPFEProtocol on the same SYNTHETIC predictions (not a test).

Workload: 4 models x 5 seeds x 3 platforms, 8,000 examples per platform, 4 classes. The reference
platform ('kaggle') is well separated; the two targets ('reddit', 'twitter') are shifted: weaker
separation (lower AUC), different class priors and a per-class logit bias. Every model and seed scores
the same example ids on a platform, so our paired model tests run.

- Ours: one `audit_cpfe` call over the whole table (every axis, DeLong CIs, ECE CIs, temperature
  scaling incl. cross-fit, significance with model pairs, equity, sensitivity, label shift), B = 2,000
  for significance and 1,000 for the ECE CI, no figures. Wall time untraced, then peak memory in a
  second, traced call (tracemalloc peak beyond the start; ru_maxrss before and after the first call).
- fairscope: `CPFEProtocol(platform_data, 'kaggle', 4, n_bins=10, n_boot=2000).run()` once per
  (model, seed), as it is designed (one model's outputs per platform): 20 runs; with --quick, 2 runs
  extrapolated linearly to 20 (fairscope's deterministic metrics are then also computed for the other
  18 through the same `fairscope.nlp.metrics` functions `run()` calls, so every number is compared).

Then every number both compute is compared: deterministic ones should agree to 1e-9, bootstrap SEs
within Monte Carlo error. fairscope is NOT a project dependency; install it to run this.

    python benchmarks/cpfe_speed.py [--quick] [--n 8000] [--profile]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pandas as pd

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.tables.predictions import KEY_COLUMNS, PredictionSet, logit_column

CLASSES = ["normal", "depression", "anxiety", "stress"]
REFERENCE = "kaggle"
# platform: class priors, separation of the true class's logit, per-class logit bias (the shift)
PLATFORMS = {
    "kaggle": ([0.40, 0.25, 0.20, 0.15], 2.2, [0.0, 0.0, 0.0, 0.0]),
    "reddit": ([0.20, 0.40, 0.25, 0.15], 1.1, [0.6, 0.0, -0.3, 0.0]),
    "twitter": ([0.55, 0.15, 0.10, 0.20], 0.8, [-0.4, 0.5, 0.0, 0.2]),
}
# model: separation factor, logit scale (> 1: over-confident, so temperature scaling has work to do)
MODELS = {"bert": (1.0, 1.6), "distilbert": (0.9, 1.3), "mentalbert": (1.15, 1.8), "roberta": (1.05, 1.4)}
SEEDS = [0, 1, 2, 3, 4]
N_BOOT_SIG, N_BOOT_ECE, N_BINS = 2000, 1000, 10
TOL = 1e-9


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def synthetic(n: int, seed: int = 20240601):
    """Labels per platform and logits per (model, seed, platform); returns (frame, labels, logits)."""
    rng = np.random.default_rng(seed)
    labels, logits, parts = {}, {}, []
    for p, (priors, sep, bias) in PLATFORMS.items():
        y = rng.choice(len(CLASSES), size=n, p=priors)
        shared = rng.normal(size=(n, len(CLASSES)))  # example difficulty, common to every model: correlated models
        labels[p] = y
        ids = np.array([f"{p}-{i:05d}" for i in range(n)])
        for m, (sep_m, scale) in MODELS.items():
            for s in SEEDS:
                z = 0.7 * shared + 0.7 * rng.normal(size=(n, len(CLASSES))) + np.asarray(bias)
                z[np.arange(n), y] += sep * sep_m
                z *= scale
                logits[(m, s, p)] = z
                part = pd.DataFrame({"id": ids, "model": m, "seed": np.int64(s), "platform": p, "dataset": p,
                                     "split": "test", "label": np.asarray(CLASSES)[y]})
                for c, name in enumerate(CLASSES):
                    part[logit_column(name)] = z[:, c]
                parts.append(part)
    frame = pd.concat(parts, ignore_index=True)[[*KEY_COLUMNS, *map(logit_column, CLASSES)]]
    return frame, labels, logits


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def machine() -> str:
    try:
        up = subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        up = "load average: %.2f, %.2f, %.2f" % os.getloadavg()
    return f"nproc {len(os.sched_getaffinity(0))} (cpu_count {os.cpu_count()}); {up}"


def run_ours(predictions: PredictionSet, profile: bool):
    options = CPFEOptions(reference=REFERENCE, n_boot_significance=N_BOOT_SIG, n_boot_ece=N_BOOT_ECE,
                          n_bins=N_BINS, figures=False)
    rss0 = maxrss_mb()
    t = time.perf_counter()
    result = audit_cpfe(CPFEInputs(predictions, synthetic=True), options)
    wall = time.perf_counter() - t
    rss1 = maxrss_mb()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t = time.perf_counter()
    audit_cpfe(CPFEInputs(predictions, synthetic=True), options)
    wall_traced = time.perf_counter() - t
    peak = (tracemalloc.get_traced_memory()[1] - base) / 2**20
    tracemalloc.stop()
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        audit_cpfe(CPFEInputs(predictions, synthetic=True), options)
        prof.disable()
        print("\n--- cProfile of one more audit (cumulative, top 30) ---")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    return result, {"wall": wall, "wall_traced": wall_traced, "peak_mb": peak, "rss0": rss0, "rss1": rss1}


def run_fairscope(labels, logits, pairs, all_pairs):
    from fairscope.nlp.cross_platform import CPFEProtocol
    from fairscope.nlp.metrics import (
        macro_auc,
        macro_f1,
        multiclass_ece,
        per_class_disparate_impact,
        per_class_equalized_odds,
    )

    def data(m, s):
        return {p: {"y_true": labels[p], "probs": softmax(logits[(m, s, p)])} for p in PLATFORMS}

    reports, times = {}, []
    for m, s in pairs:
        platform_data = data(m, s)
        t = time.perf_counter()
        rep = CPFEProtocol(platform_data, REFERENCE, len(CLASSES), n_bins=N_BINS, n_boot=N_BOOT_SIG).run()
        times.append(time.perf_counter() - t)
        reports[(m, s)] = {"performance": rep.performance, "significance": rep.significance, "equity": rep.equity}
        print(f"  fairscope run {len(times)}/{len(pairs)}: model {m}, seed {s}: {times[-1]:.1f} s", flush=True)
    extra = {}  # deterministic parts of run() for the (model, seed) not run, by the same metric functions
    for m, s in all_pairs:
        if (m, s) in reports:
            continue
        d = data(m, s)
        ref = d[REFERENCE]
        extra[(m, s)] = {
            "performance": {p: {"macro_auc": macro_auc(v["y_true"], v["probs"]),
                                "macro_f1": macro_f1(v["y_true"], v["probs"]),
                                "ece": multiclass_ece(v["y_true"], v["probs"], N_BINS)} for p, v in d.items()},
            "significance": {},
            "equity": {p: {"disparate_impact": per_class_disparate_impact(ref["probs"], v["probs"], len(CLASSES)),
                           "equalized_odds": per_class_equalized_odds(ref["y_true"], ref["probs"], v["y_true"],
                                                                      v["probs"], len(CLASSES))}
                       for p, v in d.items() if p != REFERENCE},
        }
    for rep in reports.values():  # delta_auc_pct is computed by run() from macro_auc
        ref_auc = rep["performance"][REFERENCE]["macro_auc"]
        for v in rep["performance"].values():
            v.setdefault("delta_auc_pct", 100 * (v["macro_auc"] - ref_auc) / ref_auc)
    for rep in extra.values():
        ref_auc = rep["performance"][REFERENCE]["macro_auc"]
        for v in rep["performance"].values():
            v["delta_auc_pct"] = 100 * (v["macro_auc"] - ref_auc) / ref_auc
    return reports, extra, times


def compare(result, fs: dict) -> dict:
    disc = result.table("discrimination").set_index(["model", "seed", "platform"])
    cal = result.table("calibration").set_index(["model", "seed", "platform"])
    eq = result.table("equity").set_index(["model", "seed", "platform", "class"])
    sig = result.table("significance")
    d = {k: [] for k in ("macro_auc", "macro_f1", "ece", "delta_auc_pct", "di", "eod", "difference",
                         "se_rel", "se_rel_signed", "z", "p", "p_ours", "p_fs", "z_fs", "p_adj_ours", "p_adj_fs")}
    for (m, s), rep in fs.items():
        for p, perf in rep["performance"].items():
            d["macro_auc"].append(abs(disc.loc[(m, s, p), "macro_auc"] - perf["macro_auc"]))
            d["macro_f1"].append(abs(disc.loc[(m, s, p), "macro_f1"] - perf["macro_f1"]))
            d["delta_auc_pct"].append(abs(disc.loc[(m, s, p), "delta_auc_pct"] - perf["delta_auc_pct"]))
            d["ece"].append(abs(cal.loc[(m, s, p), "ece"] - perf["ece"]))
        for p, e in rep["equity"].items():
            for c, name in enumerate(CLASSES):
                d["di"].append(abs(eq.loc[(m, s, p, name), "disparate_impact"] - e["disparate_impact"][c]))
                ours, theirs = eq.loc[(m, s, p, name), "equal_opportunity_gap"], e["equalized_odds"][c]
                d["eod"].append(abs(ours - theirs) if theirs is not None else float("nan"))
        for p, st in rep["significance"].items():
            rows = sig[(sig["model"] == m) & (sig["seed"] == s)
                       & (((sig["platform_a"] == REFERENCE) & (sig["platform_b"] == p))
                          | ((sig["platform_a"] == p) & (sig["platform_b"] == REFERENCE)))]
            assert len(rows) == 1, rows
            row = rows.iloc[0]
            sign = 1.0 if row["platform_a"] == REFERENCE else -1.0  # fairscope: delta = reference - target
            d["difference"].append(abs(sign * row["difference"] - st["delta"]))
            d["se_rel"].append(abs(row["se"] - st["se"]) / st["se"])
            d["se_rel_signed"].append((row["se"] - st["se"]) / st["se"])
            d["z"].append(abs(sign * row["z"] - st["z"]) / abs(st["z"]))
            d["p"].append(abs(row["p"] - st["p_value"]))
            d["p_ours"].append(row["p"])
            d["p_fs"].append(st["p_value"])
            d["z_fs"].append(abs(st["z"]))
            d["p_adj_ours"].append(row["family_size"])
            d["p_adj_fs"].append(len(rep["significance"]))
    return {k: np.asarray(v, dtype=float) for k, v in d.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="run fairscope for 2 (model, seed) and extrapolate to 20")
    ap.add_argument("--n", type=int, default=8000, help="examples per platform")
    ap.add_argument("--profile", action="store_true", help="also print a cProfile of one more audit of ours")
    args = ap.parse_args()

    print("CPFE audit vs fairscope 0.3.0 -- SYNTHETIC predictions (generated here, not real data)")
    print(f"machine at start: {machine()}")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pd.__version__}")
    t = time.perf_counter()
    frame, labels, logits = synthetic(args.n)
    pairs = [(m, s) for m in MODELS for s in SEEDS]
    print(f"workload: {len(MODELS)} models x {len(SEEDS)} seeds x {len(PLATFORMS)} platforms x {args.n} examples "
          f"= {len(frame):,} rows, {len(CLASSES)} classes, reference '{REFERENCE}'; built in "
          f"{time.perf_counter() - t:.1f} s ({frame.memory_usage(deep=True).sum() / 2**20:.0f} MB frame)")

    result, ours = run_ours(PredictionSet(frame, CLASSES), args.profile)
    disc = result.table("discrimination")
    for p in PLATFORMS:
        a = disc[disc["platform"] == p]
        print(f"  {p:8s} macro-AUC mean {a['macro_auc'].mean():.3f} (min {a['macro_auc'].min():.3f}, "
              f"max {a['macro_auc'].max():.3f})")
    print(f"\nours: audit_cpfe, whole workload (60 groups, every axis): {ours['wall']:.1f} s "
          f"(traced re-run {ours['wall_traced']:.1f} s)")
    print(f"  peak memory: tracemalloc peak {ours['peak_mb']:.0f} MB beyond the start; ru_maxrss "
          f"{ours['rss0']:.0f} -> {ours['rss1']:.0f} MB (delta {ours['rss1'] - ours['rss0']:.0f} MB, absolute "
          "includes the interpreter, libraries and the input frame)")

    runs = pairs[:1] + pairs[len(SEEDS) + 1:len(SEEDS) + 2] if args.quick else pairs  # quick: (bert,0), (distilbert,1)
    print(f"\nfairscope: CPFEProtocol(...).run() per (model, seed), n_boot={N_BOOT_SIG}: {len(runs)} of "
          f"{len(pairs)} runs{' (--quick)' if args.quick else ''}", flush=True)
    rss_fs0 = maxrss_mb()
    reports, extra, times = run_fairscope(labels, logits, runs, pairs)
    fs_total = float(np.sum(times)) * len(pairs) / len(runs)
    how = (f"measured on {len(runs)} runs (mean {np.mean(times):.1f} s each) and EXTRAPOLATED linearly to "
           f"{len(pairs)}" if len(runs) < len(pairs) else f"measured, all {len(pairs)} runs")
    print(f"fairscope total for the 20-run workload: {fs_total:.1f} s ({how}); ru_maxrss now "
          f"{maxrss_mb():.0f} MB (was {rss_fs0:.0f})")
    ratio = fs_total / ours["wall"]
    print(f"ratio fairscope / ours: {ratio:.1f}x   (target >= 50x: {'MET' if ratio >= 50 else 'NOT MET'}; "
          "ours also computes far more than fairscope's run())")
    print(f"peak memory target < 2 GB: tracemalloc {ours['peak_mb']:.0f} MB, ru_maxrss {ours['rss1']:.0f} MB: "
          f"{'MET' if max(ours['peak_mb'], ours['rss1']) < 2048 else 'NOT MET'}")

    d = compare(result, {**reports, **extra})
    print(f"\ncomparison over {len(reports) + len(extra)} (model, seed) x {len(PLATFORMS)} platforms "
          f"({len(d['macro_auc'])} groups; significance from the {len(reports)} fairscope run(s) only, "
          f"{len(d['se_rel'])} reference-target pairs)")
    det = [("macro_auc", "discrimination.macro_auc vs performance.macro_auc"),
           ("macro_f1", "discrimination.macro_f1 vs performance.macro_f1"),
           ("ece", "calibration.ece vs performance.ece"),
           ("delta_auc_pct", "discrimination.delta_auc_pct vs performance.delta_auc_pct"),
           ("di", "equity.disparate_impact vs per_class_disparate_impact"),
           ("eod", "equity.equal_opportunity_gap vs per_class_equalized_odds"),
           ("difference", "significance.difference vs significance.delta (sign aligned)")]
    worst = 0.0
    for key, what in det:
        v = d[key]
        mx = float(np.nanmax(v)) if np.isfinite(v).any() else float("nan")
        worst = max(worst, mx)
        print(f"  max |diff| {mx:.3e}  {'ok' if mx <= TOL else 'OVER 1e-9'}  {what} ({len(v)} values, "
              f"{int(np.isnan(v).sum())} undefined)")
    print(f"  deterministic numbers identical to 1e-9: {'MET' if worst <= TOL else 'NOT MET'}")
    if len(d["se_rel"]):
        mc = 1 / np.sqrt(2 * (N_BOOT_SIG - 1))
        print(f"  bootstrap SE (reference-target pair): max relative |diff| {d['se_rel'].max():.2%}, mean signed "
              f"{d['se_rel_signed'].mean():+.2%}; Monte Carlo relative SD of one SE estimate at B={N_BOOT_SIG} "
              f"~ {mc:.1%}, of the difference of two independent estimates ~ {np.sqrt(2) * mc:.1%}")
        print(f"  z: max relative |diff| {d['z'].max():.2%} (z = difference / SE, so it inherits the SE's "
              f"Monte Carlo error); |z| (fairscope) from {d['z_fs'].min():.1f} to {d['z_fs'].max():.1f}")
        print(f"  p: max |diff| {d['p'].max():.3e}; ours from {d['p_ours'].min():.3e} to {d['p_ours'].max():.3e}, "
              f"fairscope from {d['p_fs'].min():.3e} to {d['p_fs'].max():.3e} (a normal p underflows to 0 "
              "beyond |z| ~ 38)")
        print(f"  p_adjusted is not compared: Bonferroni family size ours {int(d['p_adj_ours'][0])} "
              f"(the reference-vs-target pairs of the model and seed) vs fairscope {int(d['p_adj_fs'][0])} "
              "(reference vs each target)")
    print("\ndefinitions that differ (none changes a number on these inputs unless stated):")
    for note in NOTES:
        print(f"  - {note}")
    print(f"\nmachine at end: {machine()}")


NOTES = [
    "predicted class: ours argmax of the logits, fairscope argmax of softmax(logits); the same unless the "
    "softmax rounds two different logits to one probability.",
    "macro-F1: both average over the classes present in y or the predictions (sklearn's default).",
    "macro-AUC: ours averages the one-vs-rest AUCs of the classes with positives and negatives; fairscope "
    "(sklearn) requires every class. Equal here.",
    "ECE: same equal-width top-label bins; ours sums |sum(correct - conf)| per bin / n, fairscope "
    "(|B|/n)|acc - conf|: algebraically equal, differing by rounding only.",
    "disparate impact: both rates 0 -> ours NaN with a reason, fairscope 1.0 (parity). Equal-opportunity "
    "gap with a class absent -> ours NaN, fairscope None. fairscope calls |TPR gap| 'equalized_odds'; "
    "ours also reports the full equalized-odds gap max(|dTPR|, |dFPR|).",
    "significance SE: same estimator (label-stratified bootstrap, SD with ddof=1, pooled as "
    "sqrt(se_a^2 + se_b^2), two-sided normal p) but different resamples: fairscope draws indices with "
    "rng.choice (seed 0 for each target, so the reference SE is re-estimated identically for each target); "
    "ours draws count matrices, one per (platform, seed) shared by every model. SE, z and p therefore agree "
    "only within Monte Carlo error.",
    "multiple testing: ours Bonferroni over every platform pair of a (model, seed) (3 here, incl. "
    "reddit-twitter); fairscope over reference-vs-target pairs (2).",
]


if __name__ == "__main__":
    main()
