"""Certifying a model on a target with few human labels, simulated on the real transfers with known labels.

    python benchmarks/certify_transfer.py --work /tmp/mhaudit-estimate [--draws 500] [--budgets 50,100,200,500]
    python benchmarks/certify_transfer.py --ensembles /tmp/mhaudit-ensembles --work /tmp/mhaudit-certify-ens [...]

Single models (the default): the pairs and predictions of benchmarks/estimate_transfer.py (its cached
predictions.parquet in --work, made by it when absent): TF-IDF models trained on one data set, scored on another
whose labels are known. Ensembles (--ensembles DIR): the transfers benchmarks/ensemble_transfers.py wrote,
DIR/<source>__<target>/{reference,target}.parquet, every run of tfidf-lr and char-tfidf-lr scored on both; each
model's run 0 (its lowest seed) is certified in turn, every run in the files forms the ensemble.

For each pair the target is the pool; the posteriors are the scores calibrated on the home test set (BCTS;
`mhaudit.tables.sample_design.pool_of`, as `labels sample --strategy estimate` makes them). The target's labels
are hidden from every design: they are revealed only for the drawn items. For each budget, --draws samples are
drawn with each design:

- srs: a simple random sample of the same size, labels only (the sample's own shares), with the same
  finite-population correction as every other design (population "pool"): the fair baseline;
- ours: strata by predicted class x confidence (up to 4 bins), shrunk Neyman allocation, PPI++ estimates
  (`labels sample --strategy estimate` and `audit certify` on one model);
- srs+ppi (PPI++ on the simple random sample) and strata (our design, labels only), to tell the parts apart;
- with ensembles, ens: strata, allocation and PPI++'s predictor all from the ensemble-mean posterior (what
  `labels sample --strategy estimate --certify MODEL:SEED` does with several runs); ens-ppi: our strata and
  allocation, the ensemble-mean predictor; ens-disagree: strata by predicted class x the share of the other
  runs that disagree with the certified prediction (none, up to half, more), the ensemble's allocation and
  predictor; srs+ens: PPI++ with the ensemble-mean predictor on a simple random sample.

Reported per pair and budget: the 95% CI coverage of the true accuracy, macro-F1 and class prevalences, and
the mean macro-F1 CI half-width; per pair, the labels each design needs for a ± 0.05 macro-F1 CI (half-width
fitted as c·sqrt(1/n − 1/N) over the budgets), srs-exact (the n solving t·S·sqrt(1/n − 1/N) = 0.05 with S the
pool's own SD of labels-only macro-F1's linearised value: the fair baseline without simulation noise) and the
ratios. The simulation is over draws of the sample; the pool is fixed (population "pool").
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

# design: (layout of strata and allocation, predictor, tuning)
SINGLE = {"ours": ("strata", "model", "power"), "srs": ("one", "model", "labels"),
          "srs+ppi": ("one", "model", "power"), "strata": ("strata", "model", "labels")}
ENSEMBLE = {**SINGLE, "ens": ("ens-strata", "ensemble", "power"), "ens-ppi": ("strata", "ensemble", "power"),
            "ens-disagree": ("disagree", "ensemble", "power"), "srs+ens": ("one", "ensemble", "power")}
TOLERANCE = 0.05
CERTIFIED_MODELS = ("tfidf-lr", "char-tfidf-lr")


def draws(strata: np.ndarray, alloc: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Membership matrices (draws x items): a simple random sample of alloc[h] items in each stratum h."""
    m = np.zeros((n_draws, strata.size))
    for h, n_h in enumerate(alloc):
        rows = np.flatnonzero(strata == h)
        picks = np.argsort(rng.random((n_draws, rows.size)), axis=1)[:, :n_h]
        m[np.arange(n_draws)[:, None], rows[picks]] = 1
    return m


def truth_of(y: np.ndarray, pred: np.ndarray, k: int) -> dict:
    return {"accuracy": float((y == pred).mean()),
            "macro_f1": float(np.mean([2 * ((y == c) & (pred == c)).sum() / max((y == c).sum() + (pred == c).sum(), 1)
                                       for c in range(k)])),
            "prevalence": np.bincount(y, minlength=k) / y.size}


def srs_exact(y: np.ndarray, pred: np.ndarray, k: int) -> float:
    """Labels a simple random sample needs for ± TOLERANCE on macro-F1 (labels only, FPC), from the pool's own SD."""
    from mhaudit.stats.ppi import label_coordinates, macro_f1_gradient
    from mhaudit.stats.sample_size import srs_labels_for_tolerance

    z = label_coordinates(y, pred, k)
    mu = z.mean(axis=0)
    u = z @ np.nan_to_num(macro_f1_gradient(mu[:k], mu[k:], np.bincount(pred, minlength=k) / pred.size))
    return srs_labels_for_tolerance(float(u.std(ddof=1)), y.size, TOLERANCE)


def disagreement_strata(disagree: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Predicted class x share of the other runs disagreeing (0, up to 1/2, more), empty cells dropped."""
    level = np.where(disagree == 0, 0, np.where(disagree <= 0.5, 1, 2))
    cell = pred * 3 + level
    return np.unique(cell, return_inverse=True)[1].astype(np.int64)


def layouts(budget: int, pred: np.ndarray, probs: dict, classes: list[str], disagree) -> dict:
    """Per layout: (strata codes, items per stratum), as `labels sample --strategy estimate` draws them."""
    from mhaudit.tables.sample_design import allocate, bins_for, confidence_strata

    bins = bins_for(budget, len(classes), 4)
    out = {"one": (np.zeros(pred.size, dtype=np.int64), np.array([budget]))}
    strata, _ = confidence_strata(probs["model"], pred, classes, bins)
    out["strata"] = (strata, allocate(probs["model"], pred, strata, budget))
    if "ensemble" in probs:
        strata, _ = confidence_strata(probs["ensemble"], pred, classes, bins)
        out["ens-strata"] = (strata, allocate(probs["ensemble"], pred, strata, budget))
        strata = disagreement_strata(disagree, pred)
        out["disagree"] = (strata, allocate(probs["ensemble"], pred, strata, budget))
    return out


def simulate_pair(y, pred, probs: dict, classes: list[str], budgets, n_draws: int, seed: int, designs: dict,
                  disagree=None) -> list[dict]:
    """Coverage, half-width and error of each design at each budget over n_draws samples of the fixed pool."""
    from mhaudit.stats.ppi import pool_estimates

    k = len(classes)
    truth = truth_of(y, pred, k)
    rng = np.random.default_rng(seed)
    rows = []
    for budget in budgets:
        if budget >= y.size:
            continue
        layout = layouts(budget, pred, probs, classes, disagree)
        for design, (kind, predictor, tuning) in designs.items():
            s, alloc = layout[kind]
            covered = {"accuracy": [], "macro_f1": [], "prevalence": []}
            half, errors = [], []
            for start in range(0, n_draws, 100):  # chunks of draws, each a batch of matrix products
                m = draws(s, alloc, min(100, n_draws - start), rng)
                est = pool_estimates(m, y, pred, probs[predictor], s, tuning=tuning, population="pool")
                for metric in covered:
                    low, high = est.interval(metric)
                    hit = (low <= truth[metric]) & (truth[metric] <= high)
                    covered[metric].append(hit if metric != "prevalence" else hit.mean(axis=1))
                low, high = est.interval("macro_f1")
                half.append((high - low) / 2)
                errors.append(est.estimate["macro_f1"] - truth["macro_f1"])
            rows.append({"budget": budget, "design": design, "n_pool": y.size, "strata": int(s.max()) + 1,
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


def single_pairs(work: Path, budgets, n_draws: int):
    """(model, source, target, simulation rows, srs-exact) of every estimate_transfer pair."""
    from mhaudit.stats.bcts import fit_bcts
    from mhaudit.tables.predictions import scores

    preds = predictions(work)
    for (source, model), block in preds.groupby(["source", "model"], sort=True):
        classes = block["classes"].iat[0].split(",")
        ref = block[block["role"] == "reference"]
        y_ref = pd.Categorical(ref["label"], categories=classes).codes.astype(np.int64)
        for target, tgt in block[block["role"] == "target"].groupby("target"):
            tgt = tgt.reset_index(drop=True)
            probs = fit_bcts(scores(ref, classes), y_ref).probs(scores(tgt, classes))
            pred = scores(tgt, classes).argmax(axis=1)
            y = pd.Categorical(tgt["label"], categories=classes).codes.astype(np.int64)
            rows = simulate_pair(y, pred, {"model": probs}, classes, budgets, n_draws, 0, SINGLE)
            yield model, source, target, rows, srs_exact(y, pred, len(classes))


def ensemble_pairs(folder: Path, budgets, n_draws: int):
    """The same for every transfer folder and certified model, the labels hidden from the design."""
    from mhaudit.tables.predictions import PredictionSet, scores
    from mhaudit.tables.sample_design import pool_of

    for transfer in sorted(p for p in folder.iterdir() if (p / "target.parquet").exists()):
        source, target = transfer.name.split("__", 1)
        reference, scored = pd.read_parquet(transfer / "reference.parquet"), pd.read_parquet(transfer / "target.parquet")
        classes = [c[len("logit_"):] for c in scored.columns if c.startswith("logit_")]
        hidden = PredictionSet(scored.assign(label=None), classes)
        ref_set = PredictionSet(reference, classes)
        for model in CERTIFIED_MODELS:
            if model not in set(scored["model"]):
                continue
            seed = int(scored.loc[scored["model"] == model, "seed"].min())  # run 0
            ens = pool_of(hidden, ref_set, model=model, seed=seed)
            one = pool_of(PredictionSet(hidden.frame[(hidden.frame["model"] == model) & (hidden.frame["seed"] == seed)]
                                        .reset_index(drop=True), classes),
                          PredictionSet(reference[(reference["model"] == model) & (reference["seed"] == seed)]
                                        .reset_index(drop=True), classes))
            assert (one.ids == ens.ids).all() and (one.pred == ens.pred).all()
            runs = {key: run.set_index(run["id"].astype(str)).loc[ens.ids] for key, run in scored.groupby(["model", "seed"])}
            y = pd.Categorical(runs[(model, seed)]["label"], categories=classes).codes.astype(np.int64)
            others = [scores(run, classes).argmax(axis=1) for key, run in runs.items() if key != (model, seed)]
            disagree = np.mean([o != ens.pred for o in others], axis=0)
            rows = simulate_pair(y, ens.pred, {"model": one.probs, "ensemble": ens.probs}, classes, budgets, n_draws, 0,
                                 ENSEMBLE, disagree)
            for row in rows:
                row["runs"] = len(runs)
            yield model, source, target, rows, srs_exact(y, ens.pred, len(classes))


def report(table: pd.DataFrame, exact: pd.Series, work: Path, default: str) -> pd.DataFrame:
    pd.set_option("display.width", 250)
    cov = table.groupby(["design", "budget"])[["coverage_accuracy", "coverage_macro_f1", "coverage_prevalence",
                                               "half_width_macro_f1"]].mean()
    worst = table.groupby(["design", "budget"])[["coverage_macro_f1"]].min().rename(
        columns={"coverage_macro_f1": "worst_pair_coverage_macro_f1"})
    print("\nMean over pairs (coverage of 95% CIs; macro-F1 half-width):")
    print(cov.join(worst).round(3).to_string())
    need = table.groupby(["model", "source", "target", "design"]).apply(labels_needed, include_groups=False).unstack()
    need["srs-exact"] = exact
    for design in [d for d in ("ours", "ens", "ens-ppi", "ens-disagree", "srs+ens") if d in need.columns]:
        need[f"srs/{design}"] = need["srs"] / need[design]
    print("\nLabels needed for a ± 0.05 macro-F1 CI:")
    print(need.round(2).to_string())
    ratios = [c for c in need.columns if c.startswith("srs/")]
    print("\nmedian ratios: " + ", ".join(f"{c} {need[c].median():.2f}" for c in ratios) + f" over {len(need)} pairs; "
          f"srs fitted / srs-exact: median {(need['srs'] / need['srs-exact']).median():.3f}")
    low = table[(table["design"] == default) & (table["budget"] >= 100)]
    print(f"{default}: worst macro-F1 coverage at budgets >= 100: {low['coverage_macro_f1'].min():.3f} "
          f"({(low['coverage_macro_f1'] < 0.93).sum()} of {len(low)} pair-budgets under 0.93)")
    need.to_csv(work / "certify_labels_needed.csv")
    return need


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mhaudit-estimate"))
    parser.add_argument("--ensembles", type=Path, default=None, help="benchmarks/ensemble_transfers.py's --work")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--budgets", default="50,100,200,500")
    args = parser.parse_args()
    if args.ensembles is None and not DATA.exists() and not (args.work / "predictions.parquet").exists():
        print(f"skipped: the shared data sets are not at {DATA}")
        return 0
    budgets = [int(b) for b in args.budgets.split(",")]
    pairs = ensemble_pairs(args.ensembles, budgets, args.draws) if args.ensembles else \
        single_pairs(args.work, budgets, args.draws)
    rows, exact, started = [], {}, time.perf_counter()
    for model, source, target, simulated, need in pairs:
        rows += [{"model": model, "source": source, "target": target, **row} for row in simulated]
        exact[model, source, target] = need
        print(f"{model} {source} -> {target} ({simulated[0]['n_pool']:,} posts): {time.perf_counter() - started:.0f} s",
              flush=True)
    args.work.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.work / "certify_pairs.csv", index=False)
    report(table, pd.Series(exact).rename_axis(["model", "source", "target"]), args.work,
           "ens" if args.ensembles else "ours")
    print(f"({time.perf_counter() - started:.0f} s)")
    (args.work / "certify_run.json").write_text(json.dumps({"draws": args.draws, "budgets": budgets,
                                                            "ensembles": str(args.ensembles or "")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
