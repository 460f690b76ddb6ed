"""The ensemble estimate (agreement-on-the-line) on real transfers, beside CBPE, ATC and DoC, against the truth.

    python benchmarks/ensemble_transfers.py --work /tmp/mhaudit-ensembles        # trains and scores the runs once
    python benchmarks/ensemble_estimate_transfer.py --work /tmp/mhaudit-ensembles [--n-boot 1000] \
        [--per-run-runs 2] [--out table.md]

Each DIR/<source>__<target>/ holds every run's predictions on the source's test split (reference.parquet,
labelled) and on every row of the target (target.parquet, whose labels are hidden from every method here and
used only to score it). Per transfer:

- ALine-S and ALine-D over all runs (`mh.audit_estimate` with `EstimateOptions(per_run=False)`: the product's
  path, trust rule included), and over each model's runs alone;
- CBPE, ATC and DoC (the same audit with `ensemble=False`) for the first `--per-run-runs` runs of each model
  (each run costs a domain classifier: seconds to tens of seconds);

then per method the mean absolute error of accuracy over runs, the 95% CI coverage, the trusted transfers (or
runs) and their error. Writes DIR/ensemble_estimates.csv (one row per run, method and transfer) and prints
Markdown tables for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ensemble_transfers import TRANSFERS  # noqa: E402  (the seven transfers; not the MiniLM extra)


def truth_by_run(target: pd.DataFrame) -> pd.DataFrame:
    classes = [c[len("logit_"):] for c in target.columns if c.startswith("logit_")]
    pred = np.asarray(classes)[target[[f"logit_{c}" for c in classes]].to_numpy().argmax(axis=1)]
    right = pred == target["label"].astype(str).to_numpy()
    return (target.assign(right=right).groupby(["model", "seed"])["right"].mean().rename("truth").reset_index())


def sets(folder: Path):
    from mhaudit.tables.predictions import PredictionSet

    reference, target = pd.read_parquet(folder / "reference.parquet"), pd.read_parquet(folder / "target.parquet")
    classes = [c[len("logit_"):] for c in reference.columns if c.startswith("logit_")]
    hidden = target.assign(label=None)  # the methods never see the target's labels
    return PredictionSet(reference, classes), PredictionSet(hidden, classes), truth_by_run(target)


def ensemble_rows(name: str, reference, targets, truth: pd.DataFrame, n_boot: int, which: str) -> tuple[list, dict]:
    import mhaudit as mh

    started = time.perf_counter()
    result = mh.audit_estimate(mh.EstimateInputs(reference, targets),
                               mh.EstimateOptions(per_run=False, n_boot=n_boot, figures=False))
    seconds = time.perf_counter() - started
    ens = result.tables["ensemble"].merge(truth, on=["model", "seed"])
    line = result.tables["agreement_line"].iloc[0].to_dict()
    rows = [{"transfer": name, "ensemble": which, "model": r["model"], "seed": r["seed"], "method": r["method"],
             "estimate": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "truth": r["truth"],
             "reference": r["reference_value"], "trusted": bool(r["trusted"])} for _, r in ens.iterrows()]
    return rows, {"transfer": name, "ensemble": which, "seconds": seconds, **line}


def per_run_rows(name: str, reference, targets, truth: pd.DataFrame, n_boot: int, runs: int) -> list:
    import mhaudit as mh

    keep = (reference.frame.groupby("model")["seed"].transform(lambda s: s.isin(sorted(s.unique())[:runs])))
    chosen = reference.subset(np.flatnonzero(keep.to_numpy()))
    seeds = set(map(tuple, chosen.frame[["model", "seed"]].drop_duplicates().to_numpy()))
    mask = [(m, s) in seeds for m, s in zip(targets.frame["model"], targets.frame["seed"])]
    result = mh.audit_estimate(mh.EstimateInputs(chosen, targets.subset(np.flatnonzero(mask))),
                               mh.EstimateOptions(ensemble=False, n_boot=n_boot, figures=False))
    est = result.tables["estimates"]
    est = est[est["metric"] == "accuracy"].merge(truth, on=["model", "seed"])
    return [{"transfer": name, "ensemble": "per run", "model": r["model"], "seed": r["seed"], "method": r["method"],
             "estimate": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "truth": r["truth"],
             "reference": r["reference_value"], "trusted": bool(r["trusted"])} for _, r in est.iterrows()]


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.assign(error=(rows["estimate"] - rows["truth"]).abs(),
                       covered=(rows["ci_low"] <= rows["truth"]) & (rows["truth"] <= rows["ci_high"]))
    out = []
    for (ensemble, method), g in rows.groupby(["ensemble", "method"], sort=False):
        t = g[g["trusted"]]
        by_transfer = g.groupby("transfer")["trusted"].all()
        out.append({"ensemble": ensemble, "method": method, "runs": len(g), "MAE": g["error"].mean(),
                    "coverage": g["covered"].mean(), "largest error": g["error"].max(),
                    "trusted transfers": f"{int(by_transfer.sum())} / {len(by_transfer)}",
                    "trusted runs": len(t), "MAE trusted": t["error"].mean() if len(t) else np.nan,
                    "coverage trusted": t["covered"].mean() if len(t) else np.nan,
                    "off > 0.05 yet trusted": int((t["error"] > 0.05).sum())})
    return pd.DataFrame(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--per-run-runs", type=int, default=2, help="runs of each model given CBPE, ATC and DoC")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    rows, lines = [], []
    folders = [args.work / f"{source}__{target}" for source, target in TRANSFERS]
    for folder in folders:
        name = folder.name.replace("__", " → ")
        reference, targets, truth = sets(folder)
        print(f"{name}: {reference.frame.groupby(['model', 'seed']).ngroups} runs, {len(truth)} scored on "
              f"{len(targets.frame) // max(len(truth), 1):,} target rows", flush=True)
        with threadpool_limits(1):  # two cores: one thread per BLAS/OpenMP pool, no oversubscription
            r, line = ensemble_rows(name, reference, targets, truth, args.n_boot, "all runs")
            rows += r
            lines.append(line)
            for model in sorted(reference.frame["model"].unique()):
                pick = lambda s: s.subset(np.flatnonzero((s.frame["model"] == model).to_numpy()))  # noqa: E731
                r, line = ensemble_rows(name, pick(reference), pick(targets), truth, args.n_boot, model)
                rows += r
                lines.append(line)
            if args.per_run_runs:
                started = time.perf_counter()
                rows += per_run_rows(name, reference, targets, truth, args.n_boot, args.per_run_runs)
                print(f"  per-run methods: {time.perf_counter() - started:.0f} s", flush=True)
        print(f"  line over all runs: R² {lines[-3]['r2']:.3f}, residual SD {lines[-3]['residual_sd']:.3f}, "
              f"trusted {lines[-3]['trusted']} {lines[-3]['untrusted_because']}", flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.work / "ensemble_estimates.csv", index=False)
    pd.DataFrame(lines).to_csv(args.work / "agreement_lines.csv", index=False)
    text = ["## Per transfer (all runs, ALine-D)", "",
            _per_transfer(table, pd.DataFrame(lines)), "", "## Per method", "",
            summary(table).to_markdown(index=False, floatfmt=".3f")]
    print("\n".join(text))
    if args.out:
        args.out.write_text("\n".join(text) + "\n")
    return 0


def _per_transfer(table: pd.DataFrame, lines: pd.DataFrame) -> str:
    d = table[(table["ensemble"] == "all runs") & (table["method"] == "aline-d")]
    d = d.assign(error=(d["estimate"] - d["truth"]).abs(),
                 covered=(d["ci_low"] <= d["truth"]) & (d["truth"] <= d["ci_high"]))
    out = []
    for name, g in d.groupby("transfer", sort=False):
        line = lines[(lines["transfer"] == name) & (lines["ensemble"] == "all runs")].iloc[0]
        out.append({"transfer": name, "runs": len(g), "true accuracy": f"{g['truth'].min():.3f}–{g['truth'].max():.3f}",
                    "estimated": f"{g['estimate'].min():.3f}–{g['estimate'].max():.3f}", "MAE": g["error"].mean(),
                    "coverage": g["covered"].mean(), "R²": line["r2"], "residual SD": line["residual_sd"],
                    "trusted (why not)": "yes" if line["trusted"] else f"no: {line['untrusted_because']}"})
    return pd.DataFrame(out).to_markdown(index=False, floatfmt=".3f")


if __name__ == "__main__":
    raise SystemExit(main())
