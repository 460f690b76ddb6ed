"""The benchmark protocol on real data: the Bluesky depression set, weak lexicon labels vs expert labels.

../shared/data/bluesky_depression (4,568 posts, `depressive` by two clinical psychologists, consensus;
read in place) is imported with the bluesky_depression source. Weak labels: the built-in MH lexicon
(`Lexicon.load("mh").matches_any(text)`, fixed before any scoring; its SHA-256 is printed and stored) as
a labels table. Two label directions, each under a 70/30 stratified holdout and stratified 5-fold CV
(seed 0; folds identical for every model of a tier):

  A. train on the weak lexicon labels, score against them and against the expert labels;
  B. train on the expert labels, score against them and against the weak labels.

Two tiers, because MiniLM and the hybrids do not fit the full set in 45 minutes on 2 shared cores:

  full    every post: word and character TF-IDF + LR (no validation rows: they train on all of a fold's
          training rows, the protocol's default for them);
  sub800  a stratified 800-post subsample, drawn per direction by that direction's training labels
          (seed 0), so A and B score different posts (all models of one direction the same ones): the
          same two baselines, MiniLM (1 epoch, max length 64, batch 16, AdamW lr 2e-5, no validation
          rows) and both BERT+LSTM hybrids (MiniLM encoder frozen; paper settings: Adam lr 1e-3, wd 1e-4,
          batch 16, early stopping with patience 3 over at most 5 epochs on 10% validation rows; max
          length 64).

`--minilm-si` adds, for direction B only, MiniLM with the paper's SI transformer settings (`--preset si`:
3 epochs, batch 16, AdamW lr 2e-5, all epochs run) on the same 800 posts and folds as sub800 (about
13 min here); the same run as

    mhaudit audit model-selection --corpus OUT/corpus.parquet --model minilm:epochs=3,label=minilm-3ep --preset si \
        --subsample 800 --labels OUT/labels.parquet --reference-labeler lexicon-mh --out OUT/B_train_expert/sub800-minilm-si

`--neural-corpus 0` puts every model on the full set in one tier (about 2 h of CPU here). `--only
tfidf-lr,char-tfidf-lr` runs only the models with those labels, on the same posts and folds as the whole
run (to refresh the cheap rows into another OUT). One torch thread (the machine is shared). Finished fold
jobs are cached under OUT/<run>/<tier>/jobs, so a re-run resumes.

    nice python benchmarks/bluesky_protocol.py --out runs/bluesky_protocol [--neural-corpus 800] [--minilm-si]
        [--only LABEL,LABEL] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd  # noqa: E402

from mhaudit.audits.model_selection.options import ModelSelectionOptions, ModelSpec  # noqa: E402
from mhaudit.audits.model_selection import ModelSelectionInputs, audit_model_selection  # noqa: E402
from mhaudit.audits.model_selection.tables import summary_lines  # noqa: E402
from mhaudit.report import write_report  # noqa: E402
from mhaudit.tables.corpus.importing import ImportOptions, import_source  # noqa: E402
from mhaudit.tables.io import write_table  # noqa: E402
from mhaudit.tables.label_store import now, write_labels  # noqa: E402
from mhaudit.weak_supervision.lexicons import Lexicon  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MHAUDIT_SHARED_DATA", REPO.parent / "shared" / "data")) / "bluesky_depression"
WEAK = "lexicon-mh"
EXPERT = "corpus"


BASELINES = ["tfidf-lr", "char-tfidf-lr"]
NEURAL = ["minilm:epochs=1,max_length=64,batch_size=16,eval_batch_size=64,val=false",
          "bert-lstm:max_length=64", "bert-lstm-attention:max_length=64"]
QUICK = ["tfidf-lr", "minilm:epochs=1,max_length=32,val=false,subsample=60",
         "bert-lstm-attention:max_length=32,epochs=2,subsample=60"]


def tiers(neural_corpus: int, quick: bool) -> dict[str, tuple[list[str], int | None]]:
    """Tier name -> (model specs, corpus subsample or None)."""
    if quick:  # a chain check: few rows, few models
        return {"quick": (QUICK, 300)}
    if not neural_corpus:
        return {"full": (BASELINES + NEURAL, None)}
    return {"full": (BASELINES, None), f"sub{neural_corpus}": (BASELINES + NEURAL, neural_corpus)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bluesky_protocol")
    parser.add_argument("--neural-corpus", type=int, default=800,
                        help="posts in the stratified subsample for MiniLM and the hybrids (0: the full set)")
    parser.add_argument("--minilm-si", action="store_true",
                        help="also MiniLM with the SI preset (3 epochs) on the sub800 posts, direction B only")
    parser.add_argument("--quick", action="store_true", help="a 300-row corpus subsample, to check the chain")
    parser.add_argument("--only", type=lambda text: {x.strip() for x in text.split(",") if x.strip()},
                        help="run only the models with these labels (comma-separated), same posts and folds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"{DATA} is absent (../shared/data); nothing to run")
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    started = time.perf_counter()
    corpus = import_source("bluesky_depression", [DATA / "bluesky-depression-dataset.csv"], ImportOptions(split="train")).corpus
    frame = corpus.frame
    args.out.mkdir(parents=True, exist_ok=True)
    corpus.write(args.out / "corpus.parquet")  # for `mhaudit audit model-selection --corpus` on the same rows
    lexicon = Lexicon.load("mh")
    weak = [int(lexicon.matches_any(t)) for t in frame["text"].astype(str)]
    labels = pd.DataFrame({"item_id": frame["id"].astype(str), "task": "mh", "labeler": WEAK, "kind": "lexicon",
                           "value": pd.array(weak, dtype="Int64"), "created_at": now()})
    write_labels(labels, args.out / "labels.parquet")
    expert = frame["label"].astype(str).to_numpy() == corpus.classes[-1]
    print(f"{len(frame):,} posts; classes {corpus.classes}; expert positives {expert.sum():,} ({expert.mean():.1%}); "
          f"lexicon {lexicon.name} {lexicon.version} sha256 {lexicon.sha256[:12]}: {sum(weak):,} positive "
          f"({sum(weak) / len(weak):.1%})", flush=True)
    neg, pos = corpus.classes
    weak_series = pd.Series([pos if w else neg for w in weak], index=frame["id"].astype(str))
    expert_series = pd.Series(frame["label"].astype(str).to_numpy(), index=frame["id"].astype(str))
    summary = {"rows": len(frame), "expert_positive": int(expert.sum()), "weak_positive": int(sum(weak)),
               "lexicon": {"name": lexicon.name, "version": lexicon.version, "sha256": lexicon.sha256},
               "load_average_start": os.getloadavg(), "runs": {}}
    runs = {"A_train_weak": (WEAK, weak_series, EXPERT, expert_series),
            "B_train_expert": (EXPERT, expert_series, WEAK, weak_series)}
    plan = [(tier, specs, subsample, None, list(runs)) for tier, (specs, subsample) in
            tiers(args.neural_corpus, args.quick).items()]
    if args.minilm_si and not args.quick:
        plan.append((f"sub{args.neural_corpus or len(frame)}-minilm-si", ["minilm:epochs=3,label=minilm-3ep"],
                     args.neural_corpus or None, "si", ["B_train_expert"]))
    if args.only:
        plan = [(tier, kept, subsample, preset, directions) for tier, specs, subsample, preset, directions in plan
                if (kept := [s for s in specs if ModelSpec.parse(s).label in args.only])]
        summary["only"] = sorted(args.only)
    for tier, specs, subsample, preset, directions in plan:
        for run_name in directions:
            train_name, train, ref_name, ref = runs[run_name]
            t0 = time.perf_counter()
            where = args.out / run_name / tier
            options = ModelSelectionOptions(models=tuple(specs),
                                            protocols=(("holdout",) if args.quick else ("holdout", "cv")),
                                            folds=5, seed=args.seed, subsample=subsample, preset=preset,
                                            cache_dir=where / "jobs")
            print(f"\n== {run_name} / {tier}: train on {train_name}, also scored against {ref_name}", flush=True)
            inputs = ModelSelectionInputs(corpus, train, train_name, {ref_name: ref},
                                          title=f"Bluesky depression ({tier}): trained on {train_name}")
            run = audit_model_selection(inputs, options)
            write_report(run, where)
            write_table(run.outputs["predictions"], where / "predictions.parquet")
            wall = time.perf_counter() - t0
            print(summary_lines(run.table("summary")).to_string(index=False), flush=True)
            effect = run.table("protocol_effect")
            if not effect.empty:
                print(effect[effect["metric"] == "f1"][["model", "scored_against", "holdout_value", "cv_mean",
                                                        "difference"]].to_string(index=False), flush=True)
            print(run.table("training_vs_reference")[["training_source", "reference", "n", "precision",
                                                              "recall", "f1", "kappa"]].to_string(index=False))
            print(f"{run_name} / {tier}: {wall / 60:.1f} min wall, load average {os.getloadavg()}", flush=True)
            summary["runs"][f"{run_name}/{tier}"] = {
                "wall_seconds": wall, "rows": subsample or len(frame),
                "summary": run.table("summary").to_dict("records"),
                "training_vs_reference": run.table("training_vs_reference").to_dict("records")}
    summary["wall_seconds"] = time.perf_counter() - started
    summary["load_average_end"] = os.getloadavg()
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    print(f"\ntotal {summary['wall_seconds'] / 60:.1f} min wall; load average at start "
          f"{summary['load_average_start']}, "
          f"at end {summary['load_average_end']}")


if __name__ == "__main__":
    main()
