"""Label-free estimates on real transfers, checked against the hidden labels, beside NannyML's CBPE.

    python benchmarks/estimate_transfer.py --work /tmp/mhaudit-estimate \
        [--nannyml-python /tmp/nml/venv/bin/python] [--n-boot 1000] [--out docs-table.md]

TF-IDF models (word uni+bigrams and char_wb 3-5-grams, logistic regression, fixed seed 0, temperature on
the home val split) are trained on each labelled source's train split and scored on its test split (the
labelled reference) and on every row of each other source with the same classes (the target, labels
hidden from the estimate):

- 4 classes (normal / depression / anxiety / stress, the CPFE released-code mappings): GoEmotions (Reddit)
  <-> dair-ai emotion (Twitter);
- stress: Dreaddit, TSS Twitter gold, Rastogi Reddit_Combi;
- depression: Depression Reddit (cleaned), the Bluesky depression set.

Every pair is reported with the truth, each method's estimate and CI, the trust verdict; then per method and
metric the mean absolute error and the 95% CI coverage over the trusted pairs and over all. NannyML's CBPE
runs on the same predictions in its own venv (benchmarks/estimate_nannyml.py), never in mhaudit's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SOURCES = {  # name: (group, importer, files, mapping)
    "goemotions": ("4-class", "goemotions", ["goemotions/train.tsv", "goemotions/dev.tsv", "goemotions/test.tsv"],
                   "goemotions-cpfe-code"),
    "dair_emotion": ("4-class", "dair_emotion", ["dair_emotion/train.txt", "dair_emotion/val.txt",
                                                 "dair_emotion/test.txt"], "dair-cpfe-code"),
    "dreaddit": ("stress", "dreaddit", ["dreaddit/dreaddit-train.csv", "dreaddit/dreaddit-test.csv"], None),
    "tss_gold": ("stress", "tss_gold", ["tss_probe/Twitter_sample_gold.utf8.csv"], None),
    "rastogi_combi": ("stress", "rastogi", ["stress_rastogi2022/Reddit_Combi.csv"], None),
    "depression_reddit": ("depression", "depression_reddit", ["depression_reddit_cleaned/depression_dataset_reddit_"
                                                              "cleaned.csv"], None),
    "bluesky": ("depression", "bluesky_depression", ["bluesky_depression/bluesky-depression-dataset.csv"], None),
}
MODELS = ("tfidf-lr", "char-tfidf-lr")


def load(name: str):
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    group, importer, files, mapping = SOURCES[name]
    return import_source(importer, [DATA / f for f in files],
                         ImportOptions(mapping=mapping, seed=0, drop_empty=True)).corpus


def predictions(work: Path) -> pd.DataFrame:
    """Train every model on every source, score home test and every same-class target; cached in `work`."""
    from mhaudit.models import create
    from mhaudit.tables.predictions import predict_corpus

    path = work / "predictions.parquet"
    if path.exists():
        return pd.read_parquet(path)
    corpora = {name: load(name) for name in SOURCES}
    frames = []
    for source, corpus in corpora.items():
        group = SOURCES[source][0]
        home = corpus.frame
        for model_name in MODELS:
            started = time.perf_counter()
            model = create(model_name).fit(home[home["split"].isin(["train", "val"])], corpus.classes)
            ref = predict_corpus(model, corpus, model_name=model_name, seed=0, splits=("test",))
            frames.append(ref.assign(source=source, role="reference", target=source))
            for target, other in corpora.items():
                if target == source or SOURCES[target][0] != group:
                    continue
                assert other.classes == corpus.classes, (source, target)
                scored = predict_corpus(model, other, model_name=model_name, seed=0,
                                        splits=tuple(other.frame["split"].unique()))
                frames.append(scored.assign(source=source, role="target", target=target))
            print(f"{model_name} on {source}: trained and scored in {time.perf_counter() - started:.0f} s", flush=True)
    out = pd.concat(frames, ignore_index=True)
    out["classes"] = out["source"].map(lambda s: ",".join(corpora[s].classes))
    work.mkdir(parents=True, exist_ok=True)
    out.to_parquet(path)
    return out


def ours(preds: pd.DataFrame, n_boot: int, tables: dict | None = None) -> pd.DataFrame:
    from mhaudit.audits.estimate import EstimateInputs, EstimateOptions, audit_estimate
    from mhaudit.stats.pair_estimate import reference_metrics
    from mhaudit.tables.predictions import PredictionSet, scores

    rows = []
    for (source, model), block in preds.groupby(["source", "model"], sort=True):
        classes = block["classes"].iat[0].split(",")
        # this group's logits only: the concatenated frame holds every group's (NaN elsewhere)
        keep = [f"logit_{c}" for c in classes] + ["id", "model", "seed", "platform", "dataset", "split", "label"]
        ref = block[block["role"] == "reference"]
        for target, tgt in block[block["role"] == "target"].groupby("target"):
            hidden = tgt[keep].assign(label=None, platform=target, dataset=target)
            started = time.perf_counter()
            inputs = EstimateInputs(PredictionSet(ref[keep].reset_index(drop=True), classes),
                                    PredictionSet(hidden.reset_index(drop=True), classes))
            result = audit_estimate(inputs, EstimateOptions(n_boot=n_boot, figures=False))
            seconds = time.perf_counter() - started
            y = pd.Categorical(tgt["label"], categories=classes).codes.astype(np.int64)
            true = reference_metrics(y, scores(tgt, classes))  # the hidden labels, for scoring only
            shift = result.table("shift").iloc[0]
            if tables is not None:  # the priors and shift diagnostic, kept whole for before/after comparisons
                for name in ("priors", "shift"):
                    tables.setdefault(name, []).append(result.table(name).assign(source=source, target=target))
            for _, e in result.table("estimates").iterrows():
                rows.append({"source": source, "target": target, "model": model, "n_target": len(tgt),
                             "method": e["method"], "metric": e["metric"], "estimate": e["estimate"],
                             "ci_low": e["ci_low"], "ci_high": e["ci_high"], "truth": true[e["metric"]],
                             "reference": e["reference_value"], "trusted": bool(shift["trusted"]),
                             "domain_auc": shift["domain_auc"], "prior_gap": shift["prior_gap"],
                             "assumption_gap": shift["assumption_gap"], "prior_adjusted": bool(shift["prior_adjusted"]),
                             "vanishing_class": shift["vanishing_class"], "seconds": seconds})
            print(f"{model} {source} -> {target}: {seconds:.1f} s, trusted={bool(shift['trusted'])}", flush=True)
    return pd.DataFrame(rows)


def nannyml(preds: pd.DataFrame, work: Path, python: str) -> pd.DataFrame:
    """NannyML's CBPE in its own interpreter (benchmarks/estimate_nannyml.py), usage logging off."""
    script = Path(__file__).with_name("estimate_nannyml.py")
    out = work / "nannyml.parquet"
    env = {"NML_DISABLE_USAGE_LOGGING": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run([python, str(script), str(work / "predictions.parquet"), str(out)], check=True, env=env)
    return pd.read_parquet(out)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    rows = rows.dropna(subset=["estimate"]).assign(error=lambda d: (d["estimate"] - d["truth"]).abs(),
                                                   covered=lambda d: (d["ci_low"] <= d["truth"]) & (d["truth"] <= d["ci_high"]))
    parts = []
    for subset, frame in (("trusted", rows[rows["trusted"]]), ("all", rows)):
        g = frame.groupby(["method", "metric"])
        parts.append(pd.DataFrame({"pairs": g.size(), "mae": g["error"].mean(), "coverage": g["covered"].mean(),
                                   "max_error": g["error"].max()}).assign(over=subset))
    return pd.concat(parts).reset_index()


def markdown(rows: pd.DataFrame, table: pd.DataFrame, shift: list) -> str:
    """Macro-F1 per pair, each method's estimate [95% CI], the trust verdict; then the summary."""
    f1 = rows[rows["metric"] == "macro_f1"]
    why = pd.concat(shift, ignore_index=True).set_index(["model", "source", "target"])["untrusted_because"]
    methods = sorted(f1["method"].unique())
    lines = ["| model | source → target | target rows | true macro-F1 | " + " | ".join(methods) + " | trusted (why not) |",
             "|---|---|---|---|" + "---|" * len(methods) + "---|"]
    for (model, source, target), g in f1.groupby(["model", "source", "target"]):
        by = g.set_index("method")
        cells = [f"{by.at[m, 'estimate']:.3f} [{by.at[m, 'ci_low']:.3f}, {by.at[m, 'ci_high']:.3f}]" if m in by.index
                 else "" for m in methods]
        reason = why.get((model, source, target), "")
        lines.append(f"| {model} | {source} → {target} | {by['n_target'].iat[0]:,} | {by['truth'].iat[0]:.3f} | "
                     + " | ".join(cells) + f" | {'no: ' + reason if isinstance(reason, str) and reason else 'yes'} |")
    lines += ["", "| over | method | metric | pairs | MAE | coverage | largest error |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.over} | {r.method} | {r.metric} | {r.pairs} | {r.mae:.3f} | {r.coverage:.2f} | {r.max_error:.3f} |"
              for r in table.itertuples()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mhaudit-estimate"))
    parser.add_argument("--nannyml-python", default=None)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--boot-seed", type=int, default=None,
                        help="draw each pair's bootstrap from this seed instead (the domain classifier keeps seed 0): "
                             "two runs differing only here show the Monte Carlo noise of the CIs")
    parser.add_argument("--out", type=Path, default=None, help="write the per-pair and summary tables as markdown")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"skipped: the shared data sets are not at {DATA}")
        return 0
    preds = predictions(args.work)
    if args.boot_seed is not None:
        import mhaudit.audits.estimate as audit

        exact = audit.estimate_pair
        audit.estimate_pair = lambda *a, rng, **kw: exact(*a, rng=np.random.default_rng(args.boot_seed), **kw)
    kept, wall, cpu = {}, time.perf_counter(), time.process_time()
    rows = ours(preds, args.n_boot, kept)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"estimates of {rows.groupby(['source', 'target', 'model']).ngroups} pairs: {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU", flush=True)
    for name, frames in kept.items():
        pd.concat(frames, ignore_index=True).to_csv(args.work / f"{name}.csv", index=False)
    if args.nannyml_python:
        known = rows[rows["method"] == "cbpe"][["source", "target", "model", "metric", "truth", "trusted"]]
        nml = nannyml(preds, args.work, args.nannyml_python).merge(known, on=["source", "target", "model", "metric"])
        rows = pd.concat([rows, nml.assign(method="nannyml-cbpe")], ignore_index=True)
    rows.to_csv(args.work / "pairs.csv", index=False)
    pd.set_option("display.width", 200)
    wide = rows[rows["metric"] == "macro_f1"].pivot_table(index=["model", "source", "target", "trusted"],
                                                          columns="method", values="estimate").reset_index()
    truth_f1 = rows[(rows["metric"] == "macro_f1") & (rows["method"] == "cbpe")][[
        "model", "source", "target", "truth", "domain_auc", "prior_gap", "assumption_gap", "vanishing_class",
        "prior_adjusted"]]
    print(wide.merge(truth_f1, on=["model", "source", "target"]).round(3).to_string(index=False))
    table = summary(rows)
    print(table.round(3).to_string(index=False))
    table.to_csv(args.work / "summary.csv", index=False)
    (args.work / "run.json").write_text(json.dumps({"n_boot": args.n_boot, "estimate_wall_s": wall,
                                                    "estimate_cpu_s": cpu}))
    if args.out:
        args.out.write_text(markdown(rows, table, kept["shift"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
