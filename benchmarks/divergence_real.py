"""The full label-source audit on the real data (all masks and leave-one-domain-out), cold and warm, beside the
reference pipeline's ~47 minutes and beside the code before issue 17's speed work (not a test).

The corpus is built with the recipe of docs/divergence.md (import, de-duplicate the evaluation sets,
decontaminate Dreaddit train, merge: 17,873 rows) from ../shared/data, read in place. Then, each audit in a
fresh process as a user would run it (`mhaudit audit divergence` with its defaults: 7 channels, 4 masks on C
and BC, LODO on A, C, BC, B = 10,000):

1. cold: a new, empty parse cache (`MHAUDIT_CACHE` in a fresh folder);
2. warm: the same command again, on that cache (--repeats times, alternating with the old code's runs);
3. old: the package as it was at --old-ref (extracted with `git archive`, read-only), warm on the same cache
   (the cache format did not change), for the robustness stage old against new. Its tables are compared
   with the new ones: since the elastic net is solved to convergence (e31923e), the tables of channels with
   B differ; the summary names each differing table with its largest absolute change.

Each run prints its stages (the audit's own progress timings), wall time, peak memory and the load average
(os.getloadavg) at its start and end; a summary closes, also written as JSON to --work.

    python benchmarks/divergence_real.py [--data ../shared/data] [--work /tmp/mhaudit-divergence-real]
                                         [--old-ref 3a30d9e] [--no-old] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE_MINUTES = 47  # the TSS paper's released scripts on this data and kind of machine (issue 17)
OLD_REF = "3a30d9e"  # the last commit before the speed work of issue 17, point 2
ROBUSTNESS = "robustness: leave-one-domain-out, phenotypes, orthogonality, concentration"
HUMAN, AUTO = ("dreaddit", "tss_twitter_gold"), ("tss_twitter_auto", "rastogi_reddit_combi")


def build_corpus(data: Path, work: Path) -> Path:
    """docs/divergence.md's recipe, command by command; returns all.parquet."""
    out = work / "all.parquet"
    if out.exists():
        return out
    d = str(data)
    steps = [
        ["data", "import", "dreaddit", f"{d}/dreaddit/dreaddit-train.csv", f"{d}/dreaddit/dreaddit-test.csv",
         "--out", "dreaddit.parquet"],
        ["data", "import", "tss_gold", f"{d}/tss_probe/Twitter_sample_gold.utf8.csv", "--split", "test",
         "--out", "gold.parquet"],
        ["data", "import", "tss_full", f"{d}/tss_probe/Twitter_Full.csv", "--drop-empty", "--split", "test",
         "--out", "full.parquet"],
        ["data", "import", "rastogi", f"{d}/stress_rastogi2022/Reddit_Combi.csv", "--split", "test",
         "--out", "combi.parquet"],
        ["data", "merge", "gold.parquet", "full.parquet", "combi.parquet", "--out", "evals.parquet"],
        ["data", "clean", "evals.parquet", "--out", "evals_clean.parquet"],
        ["data", "clean", "dreaddit.parquet", "--against", "evals_clean.parquet", "--out", "dreaddit_clean.parquet"],
        ["data", "merge", "dreaddit_clean.parquet", "evals_clean.parquet", "--out", "all.parquet"],
    ]
    for step in steps:
        subprocess.run([sys.executable, "-m", "mhaudit", *step], cwd=work, check=True, stdout=subprocess.DEVNULL)
    return out


def run_audit(corpus: Path, out: Path) -> None:
    """In the child process: the audit with the CLI's defaults; stage timings, tables and resources to `out`."""
    import resource

    load_start, start = os.getloadavg(), time.perf_counter()
    from mhaudit.audits.divergence import DivergenceInputs, DivergenceOptions, audit_divergence
    from mhaudit.core.progress import Progress
    from mhaudit.tables.corpus.schema import merge_corpora

    merged = merge_corpora([corpus])
    progress = Progress()
    result = audit_divergence(DivergenceInputs(merged), DivergenceOptions(human=HUMAN, auto=AUTO), progress=progress)
    wall = time.perf_counter() - start
    tables = {name: table for section in result.sections for name, table in section.tables.items()}
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    with open(out, "wb") as f:
        pickle.dump({"stages": progress.seconds, "wall_s": wall, "peak_rss_mb": peak / 1024, "tables": tables,
                     "load_start": load_start, "load_end": os.getloadavg()}, f)


def audit(label: str, corpus: Path, cache: Path, work: Path, pythonpath: Path | None = None) -> dict:
    out = work / f"{label}.pkl"
    env = dict(os.environ, MHAUDIT_CACHE=str(cache))
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    subprocess.run([sys.executable, __file__, "--_run", str(corpus), str(out)], env=env, check=True)
    with open(out, "rb") as f:
        run = pickle.load(f)
    print(f"\n{label}: {run['wall_s']:.1f} s wall, peak RSS {run['peak_rss_mb']:,.0f} MB, load average "
          f"{fmt_load(run['load_start'])} at the start, {fmt_load(run['load_end'])} at the end")
    for stage, seconds in run["stages"].items():
        print(f"  {seconds:7.1f} s  {stage}")
    return run


def fmt_load(load) -> str:
    return " / ".join(f"{x:.2f}" for x in load)


def old_package(ref: str, work: Path) -> Path:
    """The package's source at `ref`, extracted read-only (git archive never touches the checkout or the index)."""
    folder = work / f"old-{ref}"
    if not (folder / "src" / "mhaudit").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", ref, "src"], cwd=REPO, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def equal_tables(a: dict, b: dict) -> list[str]:
    """Names of the tables that differ (exactly: values, dtypes, order)."""
    import pandas as pd

    differ = sorted(set(a) ^ set(b))
    for name in sorted(set(a) & set(b)):
        try:
            pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)
        except AssertionError:
            differ.append(name)
    return differ


def largest_change(a, b) -> str:
    """The largest absolute difference between two tables' numeric cells, or why they cannot be compared."""
    import numpy as np

    if a.shape != b.shape or list(a.columns) != list(b.columns):
        return f"shape {b.shape} vs {a.shape}"
    numeric = a.select_dtypes("number").columns
    if numeric.empty:
        return "text cells differ"
    gap = np.nanmax(np.abs(a[numeric].to_numpy(float, na_value=np.nan) - b[numeric].to_numpy(float, na_value=np.nan)),
                    initial=0.0)
    return f"largest change {gap:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mhaudit-divergence-real")
    parser.add_argument("--old-ref", default=OLD_REF, help="git commit of the code to compare with")
    parser.add_argument("--no-old", action="store_true", help="skip the run of the old code")
    parser.add_argument("--repeats", type=int, default=1,
                        help="warm and old runs, alternating, this many times each (the robustness ratio is taken "
                             "between their medians: on a shared 2-core machine one pair can be off by 40%%)")
    parser.add_argument("--_run", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args._run:
        return run_audit(*args._run)
    if not (args.data / "dreaddit").is_dir() or not (args.data / "tss_probe").is_dir():
        print(f"skipped: the real data is not at {args.data} (../shared/data is absent); nothing was run")
        return
    args.work.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    print(f"{os.cpu_count()} CPUs; load average {fmt_load(load_start)} at the start")
    corpus = build_corpus(args.data, args.work)
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=args.work))  # empty: the cold run parses everything
    try:
        runs = {"cold": audit("cold", corpus, cache, args.work), "warm": [], "old": []}
        for r in range(args.repeats):
            runs["warm"].append(audit(f"warm {r + 1}", corpus, cache, args.work))
            if not args.no_old:
                runs["old"].append(audit(f"old ({args.old_ref}), warm {r + 1}", corpus, cache, args.work,
                                         old_package(args.old_ref, args.work)))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    summary(runs, load_start, args.work)


def summary(runs: dict, load_start, work: Path) -> None:
    import statistics

    reference = REFERENCE_MINUTES * 60
    cold, warm, old = runs["cold"], runs["warm"][0], runs["old"]
    warm_s = statistics.median(run["wall_s"] for run in runs["warm"])
    new_robustness = [run["stages"][ROBUSTNESS] for run in runs["warm"]]
    result = {"cold_s": cold["wall_s"], "warm_s": warm_s, "reference_s": reference,
              "cold_vs_reference": reference / cold["wall_s"], "robustness_new_s": new_robustness,
              "load_start": load_start, "load_end": os.getloadavg()}
    print(f"\nsummary (load average {fmt_load(load_start)} at the start, {fmt_load(result['load_end'])} at the end)")
    print(f"  cold {cold['wall_s']:.0f} s = {result['cold_vs_reference']:.1f}x faster than the reference's "
          f"~{REFERENCE_MINUTES} min (goal: 10x, at most {reference / 10:.0f} s); warm {warm_s:.0f} s, median of "
          f"{len(runs['warm'])} (goal: under 120 s)")
    print(f"  cold and warm tables equal: {not equal_tables(cold['tables'], warm['tables'])}")
    if old:
        old_robustness = [run["stages"][ROBUSTNESS] for run in old]
        ratio = statistics.median(old_robustness) / statistics.median(new_robustness)
        result |= {"old_warm_s": statistics.median(run["wall_s"] for run in old), "robustness_old_s": old_robustness,
                   "robustness_ratio": ratio, "tables_differing_from_old": equal_tables(old[0]["tables"], warm["tables"])}
        print(f"  robustness stage: old {', '.join(f'{t:.1f}' for t in old_robustness)} s, new "
              f"{', '.join(f'{t:.1f}' for t in new_robustness)} s: medians {ratio:.2f}x (goal: 4x); whole warm run "
              f"old {result['old_warm_s']:.0f} s")
        differ = result["tables_differing_from_old"]
        print(f"  tables equal to the old code's, exactly: {not differ}")
        for name in differ:
            if name in old[0]["tables"] and name in warm["tables"]:
                print(f"    {name}: {largest_change(old[0]['tables'][name], warm['tables'][name])}")
            else:
                print(f"    {name}: only in the {'old' if name in old[0]['tables'] else 'new'} code's tables")
    (work / "summary.json").write_text(json.dumps(result, indent=2, default=list))


if __name__ == "__main__":
    main()
