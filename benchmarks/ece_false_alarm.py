"""How often the CPFE `ece_above_0.10` flag fires on calibrated models, and how well the ECE interval covers.

Synthetic (simulated scores, no text). Each simulation draws a home and a target platform of `n` rows from
a perfectly calibrated model: binary, P(class 1) = s with s ~ Uniform(0, 1) and y ~ Bernoulli(s); or
`--classes` > 2, probabilities ~ Dirichlet(1, ..., 1) and y drawn from them. Both platforms get what the
audit computes (`audits.cpfe.significance._group_bootstrap`'s steps): the plug-in ECE, B label-stratified
bootstrap ECEs, the bias-corrected estimate and interval (`stats.bootstrap.bias_corrected`), and the flag
rule `audits.cpfe.summary.ece_raised`. The old rule (plug-in ECE > 0.10 and the plug-in's percentile
interval above home's plug-in ECE) runs on the same draws beside it.

Coverage: an overconfident binary model (the calibrated score's logit times `--sharpen`) whose binned
top-label ECE is known from 4 million draws; the share of simulations whose interval holds it.

The false-alarm rate is reported with its Clopper-Pearson 95% upper bound (the issue's goal: <= 5%).

    python benchmarks/ece_false_alarm.py [--sims 1000] [--n 300] [--boot 1000] [--classes 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mhaudit.audits.cpfe.summary import ECE_LIMIT, ece_raised
from mhaudit.stats.bootstrap import bias_corrected, resample_counts, summarise
from mhaudit.stats.calibration import bootstrap_ece, ece


def calibrated(rng: np.random.Generator, n: int, classes: int = 2, sharpen: float = 1.0):
    """Probabilities (n, classes) and labels; calibrated when sharpen = 1 (binary: logit times `sharpen`)."""
    if classes == 2:
        s = rng.uniform(0, 1, n)
        y = (rng.uniform(size=n) < s).astype(int)
        p = 1 / (1 + np.exp(-sharpen * np.log(s / (1 - s))))
        return np.column_stack([1 - p, p]), y
    probs = rng.dirichlet(np.ones(classes), n)
    y = (rng.uniform(size=(n, 1)) > probs.cumsum(axis=1)).sum(axis=1)
    return probs, np.minimum(y, classes - 1)


def audited(probs: np.ndarray, y: np.ndarray, n_boot: int, rng: np.random.Generator) -> dict:
    """The plug-in ECE with its percentile interval, and the bias-corrected estimate and interval."""
    point = ece(probs, y)
    boot = bootstrap_ece(probs, y, resample_counts(y, n_boot, rng, stratified=True))
    old = summarise(boot)
    new = bias_corrected(point, boot, floor=0.0)
    return {"plug_in": point, "old_low": old["ci_low"], "old_high": old["ci_high"],
            "debiased": new["estimate"], "low": new["ci_low"], "high": new["ci_high"]}


def false_alarms(sims: int, n: int, n_boot: int, classes: int = 2, seed: int = 0) -> dict:
    """Flags raised on `sims` calibrated home/target pairs, by the current rule and by the old one."""
    rng = np.random.default_rng(seed)
    new = old = 0
    plug, debiased = [], []
    for _ in range(sims):  # one simulation per pass; each one's B resamples are vectorised
        home, target = (audited(*calibrated(rng, n, classes), n_boot, rng) for _ in range(2))
        new += ece_raised(target["debiased"], target["low"], home["debiased"])
        old += bool(target["plug_in"] > ECE_LIMIT and target["old_low"] > home["plug_in"])
        plug.append(target["plug_in"])
        debiased.append(target["debiased"])
    return {"sims": sims, "raised": int(new), "raised_old_rule": int(old), "mean_plug_in": float(np.mean(plug)),
            "mean_debiased": float(np.mean(debiased))}


def true_ece(sharpen: float, classes: int = 2, draws: int = 4_000_000, seed: int = 12345) -> float:
    """The population's binned top-label ECE, from `draws` rows (its Monte Carlo error is about 1e-4)."""
    rng = np.random.default_rng(seed)
    return ece(*calibrated(rng, draws, classes, sharpen))


def coverage(sims: int, n: int, n_boot: int, sharpen: float, seed: int = 0) -> dict:
    """Share of simulations whose interval holds the true ECE: bias-corrected and old percentile, and the
    mean of each point estimate, for an overconfident binary model."""
    truth = true_ece(sharpen)
    rng = np.random.default_rng(seed)
    rows = [audited(*calibrated(rng, n, 2, sharpen), n_boot, rng) for _ in range(sims)]
    return {"sharpen": sharpen, "true_ece": truth,
            "covered": float(np.mean([r["low"] <= truth <= r["high"] for r in rows])),
            "covered_old": float(np.mean([r["old_low"] <= truth <= r["old_high"] for r in rows])),
            "mean_debiased": float(np.mean([r["debiased"] for r in rows])),
            "mean_plug_in": float(np.mean([r["plug_in"] for r in rows])),
            "plug_in_below_old_interval": float(np.mean([r["plug_in"] < r["old_low"] for r in rows]))}


def upper_bound(raised: int, sims: int, level: float = 0.95) -> float:
    """Clopper-Pearson one-sided upper bound on a rate from `raised` of `sims`."""
    from scipy.stats import beta

    return 1.0 if raised == sims else float(beta.ppf(level, raised + 1, sims - raised))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--coverage-sims", type=int, default=400)
    a = parser.parse_args()
    t0 = time.perf_counter()
    fa = false_alarms(a.sims, a.n, a.boot, a.classes, a.seed)
    print(f"synthetic, calibrated {a.classes}-class model, n = {a.n} per platform, B = {a.boot}, {a.sims} simulations:")
    print(f"  ece_above_0.10 raised {fa['raised']} times: rate {fa['raised'] / a.sims:.4f}, 95% upper bound "
          f"{upper_bound(fa['raised'], a.sims):.4f}")
    print(f"  old rule (plug-in, percentile CI) raised {fa['raised_old_rule']} times: rate "
          f"{fa['raised_old_rule'] / a.sims:.4f}, 95% upper bound {upper_bound(fa['raised_old_rule'], a.sims):.4f}")
    print(f"  mean target ECE: plug-in {fa['mean_plug_in']:.4f}, debiased {fa['mean_debiased']:.4f} (true 0)")
    for sharpen in (1.5, 2.0):
        c = coverage(a.coverage_sims, a.n, a.boot, sharpen, a.seed + 1)
        print(f"  overconfident binary (logit x {sharpen}), true ECE {c['true_ece']:.4f}, {a.coverage_sims} "
              f"simulations: coverage {c['covered']:.3f} bias-corrected, {c['covered_old']:.3f} percentile; mean "
              f"debiased {c['mean_debiased']:.4f}, plug-in {c['mean_plug_in']:.4f}; plug-in below its own "
              f"percentile interval {c['plug_in_below_old_interval']:.3f}")
    print(f"  {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
