"""Do the label-free estimate's intervals hold after a change of how they are drawn? Two checkouts' estimates on
the same SYNTHETIC pairs, each over several seeds (issue 31: the bootstrap split at the reference).

    git worktree add /tmp/est-old 2e921e5      # the estimate before the split
    python benchmarks/estimate_interval_check.py --old /tmp/est-old/src [--seeds 8] [--n-boot 1000]
                                                 [--coverage 40]

Scores from `mhaudit.synthetic.simulate_scores` (4 classes), one process per checkout, one thread. For every
scenario, method, metric and CI end: the mean over seeds of each checkout and its Monte Carlo SD (the spread
over seeds), and the difference of the means in units of that SD and of the mean CI width. Same point estimates
are expected (they are not drawn); the ends should differ by Monte Carlo noise alone.

--refits: this checkout's BCTS refits by the expansion against Newton run to convergence on each resample's rows
(1,000 draws of SYNTHETIC references of 1,001, 2,000 and 6,257 rows), in bootstrap SDs.

--coverage R: R replicates of the "small reference" scenario (a new reference and target each), and how often
each checkout's 95% CIs cover the truth: the generating target priors for EM and BBSE, the macro-F1 the hidden
labels realise for CBPE.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
# name: reference rows, target rows, target priors, concept shift of the target
SCENARIOS = {"prior shift": (6257, 2883, [0.25, 0.25, 0.25, 0.25], 0.0),
             "small reference": (300, 2883, [0.25, 0.25, 0.25, 0.25], 0.0),
             "small target": (6257, 300, [0.25, 0.25, 0.25, 0.25], 0.0),
             "concept shift": (6257, 2883, [0.4, 0.2, 0.2, 0.2], 0.5)}


def _pair(ref, tgt, n_boot: int, seed: int):
    """One pair's PairEstimate through whichever API this process's checkout has, seeded by `seed`."""
    import numpy as np

    from mhaudit.stats import pair_estimate

    cutoffs = {"seed": 0} if hasattr(pair_estimate, "TrustOptions") else \
        {"seed": 0, "domain_auc_cutoff": 0.6, "prior_gap_cutoff": 0.1}  # the cut-offs typed since issue 42
    if hasattr(pair_estimate, "reference_draws"):  # the draws split at the reference (issue 31)
        draws = pair_estimate.reference_draws(ref.codes, ref.scores(), n_boot, np.random.default_rng([seed, 1]))
        return pair_estimate.estimate_pair(draws, tgt.scores(), rng=np.random.default_rng([seed, 2]), **cutoffs)
    return pair_estimate.estimate_pair(ref.codes, ref.scores(), tgt.scores(), n_boot=n_boot,
                                       rng=np.random.default_rng(seed), **cutoffs)


def worker(n_boot: int, seeds: int) -> dict:
    """{scenario: [{method/metric: (estimate, low, high)} per seed]} from this process's mhaudit."""
    import mhaudit as mh

    out = {}
    for name, (n_ref, n_tgt, priors, concept) in SCENARIOS.items():
        ref = mh.simulate_scores(n_ref, [0.4, 0.2, 0.2, 0.2], platform="home", seed=0)
        tgt = mh.simulate_scores(n_tgt, priors, platform="away", seed=1, concept_shift=concept, labelled=False)
        runs = []
        for s in range(seeds):
            pair = _pair(ref, tgt, n_boot, s)
            rows = {f"{e['method']} {e['metric']}": (e["estimate"], e["ci_low"], e["ci_high"])
                    for e in pair.estimates if e["metric"] != "macro_auc" or e["method"] == "cbpe"}
            rows |= {f"EM prior c{p['class_index']}": (p["prevalence_em"], p["em_ci_low"], p["em_ci_high"])
                     for p in pair.priors}
            rows |= {f"BBSE prior c{p['class_index']}": (p["prevalence_bbse"], p["bbse_ci_low"], p["bbse_ci_high"])
                     for p in pair.priors}
            runs.append(rows)
        out[name] = runs
    return out


def coverage(n_boot: int, replicates: int) -> dict:
    """{estimate: [covered?] per replicate} for the "small reference" scenario, from this process's mhaudit."""
    import mhaudit as mh
    from mhaudit.stats.f1 import macro_f1, tallies

    n_ref, n_tgt, priors, _ = SCENARIOS["small reference"]
    out = {}
    for r in range(replicates):
        ref = mh.simulate_scores(n_ref, [0.4, 0.2, 0.2, 0.2], platform="home", seed=10 + r)
        tgt = mh.simulate_scores(n_tgt, priors, platform="away", seed=1000 + r)
        pair = _pair(ref, tgt, n_boot, r)
        truth = float(macro_f1(tallies(tgt.codes, tgt.scores().argmax(axis=1), 4)))
        f1 = next(e for e in pair.estimates if e["method"] == "cbpe" and e["metric"] == "macro_f1")
        out.setdefault("CBPE macro-F1", []).append(bool(f1["ci_low"] <= truth <= f1["ci_high"]))
        for p in pair.priors:
            c = p["class_index"]
            for name, low, high in (("EM", "em_ci_low", "em_ci_high"), ("BBSE", "bbse_ci_low", "bbse_ci_high")):
                out.setdefault(f"{name} prior", []).append(bool(p[low] <= priors[c] <= p[high]))
    return out


def refit_errors() -> None:
    """The expansion's refits against exact ones on the same draws, in units of the exact refits' bootstrap SD."""
    import numpy as np

    import mhaudit as mh
    from mhaudit.stats.bcts import bcts_expansion, fit_bcts, newton_refits
    from mhaudit.stats.bootstrap import resample_counts

    print("| reference rows | max error (SDs) | mean error | 2.5% and 97.5% points, max error |\n|---|---|---|---|")
    for n in (1001, 2000, 6257):
        ref = mh.simulate_scores(n, [0.4, 0.2, 0.2, 0.2], platform="home", seed=0)
        z, y = ref.scores(), ref.codes
        fit = fit_bcts(z, y)
        w = resample_counts(np.zeros(n), 1000, np.random.default_rng(0), stratified=False).astype(float)
        expansion = bcts_expansion(z, y, fit)
        approx = np.c_[expansion.refits(w @ expansion.rows, w.sum(axis=1))]
        exact = np.c_[newton_refits(z, y, w, *expansion.refits(w @ expansion.rows, w.sum(axis=1)), n_iter=50)]
        approx, exact = (np.c_[a[:, 0], a[:, 2:]] for a in (approx, exact))  # slope, biases 1..k-1
        sd = exact.std(axis=0)
        error = np.abs(approx - exact) / sd
        points = np.abs(np.quantile(approx, [0.025, 0.975], axis=0) - np.quantile(exact, [0.025, 0.975], axis=0)) / sd
        print(f"| {n:,} | {error.max():.3f} | {error.mean():.4f} | {points.max():.3f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=False, help="the src/ folder of the checkout to compare with")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--coverage", type=int, default=0, help="replicates for the coverage check (0: none)")
    parser.add_argument("--refits", action="store_true", help="the BCTS expansion against exact refits, then stop")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.refits:
        refit_errors()
        return 0
    if args.worker:
        print(json.dumps(coverage(args.n_boot, args.coverage) if args.coverage else worker(args.n_boot, args.seeds)))
        return 0
    import numpy as np

    results = {}
    for name, src in {"new": str(SRC), "old": args.old}.items():
        env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
        command = [sys.executable, __file__, "--worker", "--n-boot", str(args.n_boot), "--seeds", str(args.seeds),
                   "--coverage", str(args.coverage)]
        results[name] = json.loads(subprocess.run(command, env=env, check=True, capture_output=True,
                                                  text=True).stdout.splitlines()[-1])
    if args.coverage:
        print(f"95% CI coverage over {args.coverage} SYNTHETIC replicates of the small-reference scenario "
              f"({args.n_boot:,} draws; priors: 4 classes per replicate)")
        print("| estimate | old | new |\n|---|---|---|")
        for key in results["new"]:
            print(f"| {key} | " + " | ".join(f"{np.mean(results[side][key]):.3f} ({sum(results[side][key])} of "
                                             f"{len(results[side][key])})" for side in ("old", "new")) + " |")
        return 0
    print(f"SYNTHETIC pairs, {args.n_boot:,} draws, {args.seeds} seeds per checkout; differences of the mean CI ends "
          "(new - old) in Monte Carlo SDs (the larger of the two spreads over seeds) and in mean CI widths")
    print("| scenario | estimate | point, old → new | CI old (mean) | CI new (mean) | Δ low (SD, width) | "
          "Δ high (SD, width) |")
    print("|---|---|---|---|---|---|---|")
    for scenario in results["new"]:
        old, new = (np.array([[run[key] for key in results["new"][scenario][0]] for run in results[side][scenario]],
                             dtype=float) for side in ("old", "new"))
        for i, key in enumerate(results["new"][scenario][0]):
            width = np.nanmean(old[:, i, 2] - old[:, i, 1])
            cells = []
            for end in (1, 2):
                sd = max(np.nanstd(old[:, i, end], ddof=1), np.nanstd(new[:, i, end], ddof=1))
                delta = np.nanmean(new[:, i, end]) - np.nanmean(old[:, i, end])
                cells.append(f"{delta:+.4f} ({delta / sd:+.1f}, {delta / width:+.2f})")
            print(f"| {scenario} | {key} | {old[0, i, 0]:.4f} → {new[0, i, 0]:.4f} | [{np.nanmean(old[:, i, 1]):.4f}, "
                  f"{np.nanmean(old[:, i, 2]):.4f}] | [{np.nanmean(new[:, i, 1]):.4f}, {np.nanmean(new[:, i, 2]):.4f}] | "
                  f"{cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
