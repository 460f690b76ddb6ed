"""Ensembles of runs on real transfers, for the agreement-on-the-line validation benchmark.

    python benchmarks/ensemble_transfers.py --work /tmp/mhaudit-ensembles [--runs 8] [--data ../shared/data] \
        [--minilm [--minilm-rows 600] [--minilm-epochs 2] [--threads 1]]

For each source of TRANSFERS (the sources and their importers are benchmarks/estimate_transfer.py's), `--runs`
runs each of tfidf-lr and char-tfidf-lr (`mhaudit.models.runs.train_runs`: bootstrap resamples of the train
rows, C drawn log-uniformly in [1, 100]; base seed 0 for tfidf-lr, 100 for char-tfidf-lr, so no two runs share
a resample) are trained on the source's train split, its val split fitting the temperature. Dreaddit ships no
val split: 15% of its train rows (stratified, seed 0) become val.
Then, per transfer, into DIR/<source>__<target>/:

- reference.parquet: every run's predictions on the source's test split, labelled;
- target.parquet: every run's predictions on every row of the target, its true labels kept in `label` (the
  benchmark that reads it hides them from the methods and scores with them).

Both are predictions tables (`mhaudit.tables.predictions`), one group per (model, seed): a run's seed is
base + k, so tfidf-lr has seeds 0..runs-1 and char-tfidf-lr 100..99+runs. Every run lists the same ids in the
same order. DIR/cost.json holds the training seconds of every run (from the run manifests, so a rerun keeps the
first measurement) and the scoring seconds; DIR/summary.csv the per-run accuracies. Everything is cached:
trained runs are kept, a transfer whose two files exist is not scored again.

`--minilm` adds 5 `transformer` runs (checkpoint minilm, seeds 0-4, a stratified subsample of Dreaddit's
train rows) for dreaddit -> tss_gold only, in DIR/dreaddit__tss_gold_minilm/.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import estimate_transfer  # noqa: E402  (the sources, their files and mappings)
from estimate_transfer import MODELS, load  # noqa: E402

TRANSFERS = (("depression_reddit", "bluesky"), ("bluesky", "depression_reddit"), ("dreaddit", "tss_gold"),
             ("dreaddit", "rastogi_combi"), ("tss_gold", "dreaddit"), ("goemotions", "dair_emotion"),
             ("dair_emotion", "goemotions"))
VAL_SHARE = 0.15  # of the train rows, for a source without a val split (Dreaddit)
# each model's own base seed, so run k of the two models draws its own resample and C (no shared bootstrap)
BASE_SEEDS = {"tfidf-lr": 0, "char-tfidf-lr": 100, "transformer": 0}


def corpus_of(name: str):
    """The source as estimate_transfer imports it; without a val split, 15% of train (stratified) becomes val."""
    from mhaudit.tables.corpus.schema import Corpus
    from mhaudit.tables.corpus.splits import stratified_assign

    corpus = load(name)
    frame = corpus.frame
    if (frame["split"] == "val").any():
        return corpus
    frame = frame.copy()
    train = frame["split"] == "train"
    frame.loc[train, "split"] = stratified_assign(frame.loc[train, "label"],
                                                  {"train": 1 - VAL_SHARE, "val": VAL_SHARE}, seed=0)
    return Corpus.build(frame, corpus.classes, meta=corpus.meta)


def printer():
    from mhaudit.core.progress import Progress

    def announce(event):
        if event.kind == "note":
            print(f"  {event.name}", flush=True)
    return Progress(announce)


def train(work: Path, source: str, corpus, model: str, runs: int, options: dict | None = None) -> list[Path]:
    from mhaudit.models.runs import train_runs

    return train_runs(corpus, None, model, runs, work / "models" / source / model, base_seed=BASE_SEEDS[model],
                      options=options, progress=printer())


def score(folders: list[Path], corpus, splits: tuple[str, ...]) -> tuple[pd.DataFrame, float]:
    from mhaudit.models.seeds import predict_folders

    started = time.perf_counter()
    table = predict_folders(folders, corpus, splits)
    return table, time.perf_counter() - started


def check_pairs(table: pd.DataFrame, what: str) -> None:
    """Every run scores the same ids in the same order, so runs pair by id."""
    ids = [g["id"].to_numpy() for _, g in table.groupby(["model", "seed"], sort=True)]
    assert all(len(i) == len(ids[0]) and (i == ids[0]).all() for i in ids), f"{what}: runs list other rows"


def accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """Accuracy of every (model, seed) run, from its logits and labels."""
    classes = [c[len("logit_"):] for c in table.columns if c.startswith("logit_")]
    logits = table[[f"logit_{c}" for c in classes]].to_numpy()
    right = np.asarray(classes)[logits.argmax(axis=1)] == table["label"].astype(str).to_numpy()
    return (table.assign(right=right).groupby(["model", "seed"], sort=True)["right"].mean()
            .rename("accuracy").reset_index())


def write_transfer(work: Path, name: str, make) -> tuple[pd.DataFrame, pd.DataFrame, float | None]:
    """DIR/<name>/reference.parquet and target.parquet, made by `make()` unless both exist."""
    from mhaudit.tables.io import write_table

    folder = work / name
    ref_path, tgt_path = folder / "reference.parquet", folder / "target.parquet"
    if ref_path.exists() and tgt_path.exists():
        return pd.read_parquet(ref_path), pd.read_parquet(tgt_path), None
    started = time.perf_counter()
    reference, target = make()
    for table, what in ((reference, "reference"), (target, "target")):
        check_pairs(table, f"{name} {what}")
    folder.mkdir(parents=True, exist_ok=True)
    write_table(reference, ref_path)
    write_table(target, tgt_path)
    return reference, target, time.perf_counter() - started


def summarize(name: str, reference: pd.DataFrame, target: pd.DataFrame) -> list[dict]:
    acc = accuracy(reference).merge(accuracy(target), on=["model", "seed"], suffixes=("_reference", "_target"))
    rows = []
    for model, block in acc.groupby("model", sort=True):
        rows.append({"transfer": name, "model": model, "runs": len(block),
                     "rows_reference": int((reference["model"] == model).sum() // len(block)),
                     "rows_target": int((target["model"] == model).sum() // len(block)),
                     "ref_acc_min": block["accuracy_reference"].min(), "ref_acc_max": block["accuracy_reference"].max(),
                     "tgt_acc_min": block["accuracy_target"].min(), "tgt_acc_max": block["accuracy_target"].max(),
                     "ref_acc_sd": block["accuracy_reference"].std(), "tgt_acc_sd": block["accuracy_target"].std()})
    return rows


def recipes_cost(folders: list[Path]) -> dict:
    from mhaudit.models.runs import read_recipes

    recipes = read_recipes(folders)
    return {"runs": len(recipes), "n_train": int(recipes["n_train"].iat[0]),
            "seconds_per_run": round(float(recipes["seconds"].mean()), 2),
            "seconds_min": float(recipes["seconds"].min()), "seconds_max": float(recipes["seconds"].max()),
            "seconds": recipes["seconds"].tolist()}


def ensembles(work: Path, runs: int, cost: dict) -> list[dict]:
    corpora, folders, summary = {}, {}, []
    for source in dict.fromkeys(s for s, _ in TRANSFERS):
        corpora[source] = corpus_of(source)
        for model in MODELS:
            print(f"{model} x {runs} runs on {source}", flush=True)
            folders[source, model] = train(work, source, corpora[source], model, runs)
            cost["train"].setdefault(source, {})[model] = recipes_cost(folders[source, model])
    for source, target in TRANSFERS:
        name = f"{source}__{target}"
        every = [f for model in MODELS for f in folders[source, model]]

        def make(source=source, target=target, every=every):
            other = corpora[target] if target in corpora else corpus_of(target)
            assert other.classes == corpora[source].classes, (source, target)
            reference, ref_s = score(every, corpora[source], ("test",))
            scored, tgt_s = score(every, other, tuple(other.frame["split"].unique()))
            cost["score"][name] = {"reference_seconds": round(ref_s, 2), "target_seconds": round(tgt_s, 2),
                                   "runs": len(every)}
            return reference, scored

        reference, target_table, seconds = write_transfer(work, name, make)
        print(f"{name}: {'scored in %.0f s' % seconds if seconds is not None else 'kept'}", flush=True)
        summary += summarize(name, reference, target_table)
    return summary


def minilm(work: Path, rows: int, epochs: int, cost: dict) -> list[dict]:
    """5 transformer runs (minilm, seeds 0-4) on a stratified subsample of Dreaddit's train rows -> TSS gold."""
    from mhaudit.models.seeds import subsample_training, training_rows
    from mhaudit.tables.corpus.schema import Corpus

    source = corpus_of("dreaddit")
    picked = subsample_training(training_rows(source, "dreaddit"), rows, seed=0)
    small = Corpus.build(picked, source.classes, meta=source.meta)
    options = {"checkpoint": "minilm", "epochs": epochs, "patience": epochs}
    folders = train(work, "dreaddit-minilm", small, "transformer", 5, options)
    cost["train"]["dreaddit"]["transformer"] = {**recipes_cost(folders), "epochs": epochs,
                                                "n_val": int((picked["split"] == "val").sum())}
    name = "dreaddit__tss_gold_minilm"

    def make():
        target = corpus_of("tss_gold")
        reference, ref_s = score(folders, source, ("test",))
        scored, tgt_s = score(folders, target, tuple(target.frame["split"].unique()))
        cost["score"][name] = {"reference_seconds": round(ref_s, 2), "target_seconds": round(tgt_s, 2), "runs": 5}
        return reference, scored

    reference, target, seconds = write_transfer(work, name, make)
    print(f"{name}: {'scored in %.0f s' % seconds if seconds is not None else 'kept'}", flush=True)
    return summarize(name, reference, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/mhaudit-ensembles"))
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--data", type=Path, default=estimate_transfer.DATA,
                        help="the shared data sets (default: ../shared/data beside the project)")
    parser.add_argument("--minilm", action="store_true")
    parser.add_argument("--minilm-rows", type=int, default=600)
    parser.add_argument("--minilm-epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for --minilm (1 on a shared CPU)")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"skipped: the shared data sets are not at {args.data}")
        return 0
    estimate_transfer.DATA = args.data  # `load` reads the module's DATA
    args.work.mkdir(parents=True, exist_ok=True)
    cost_path = args.work / "cost.json"
    cost = json.loads(cost_path.read_text()) if cost_path.exists() else {}
    cost.setdefault("train", {}), cost.setdefault("score", {})
    cost["machine"] = {"nproc": os.cpu_count(), "load_average_start": os.getloadavg()}
    summary = ensembles(args.work, args.runs, cost)
    if args.minilm:
        import torch

        torch.set_num_threads(args.threads)
        cost["machine"]["torch_threads"] = args.threads
        summary += minilm(args.work, args.minilm_rows, args.minilm_epochs, cost)
    cost["machine"]["load_average_end"] = os.getloadavg()
    cost_path.write_text(json.dumps(cost, indent=2))
    table = pd.DataFrame(summary)
    table.to_csv(args.work / "summary.csv", index=False)
    pd.set_option("display.width", 220)
    print(table.round(3).to_string(index=False))
    for source, models in cost["train"].items():
        for model, c in models.items():
            print(f"train {model} on {source}: {c['n_train']:,} rows, {c['seconds_per_run']:.1f} s per run "
                  f"({c['seconds_min']:.1f}-{c['seconds_max']:.1f}) over {c['runs']} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
