"""Peak memory of `mhaudit predict` on a corpus of N and of 4N rows (issue 46; not a test).

`mhaudit predict` streams: it reads the corpus a chunk of rows at a time (tables.corpus.chunks, 4,096 rows),
scores the chunk and appends its predictions to the output (tables.table_appender), so its memory should not grow
with the corpus. Measured against the way it worked before, kept here as the "whole" route: the corpus read whole
(`Corpus.read`), every row scored at once (`predict_corpus`), one table written at the end (`write_table`).

Data: the real Depression Reddit posts (../shared/data/depression_reddit_cleaned, 7,731 posts as `mhaudit data
import` reads them), a TF-IDF + logistic regression model (`tfidf-lr`) trained on them; the corpora of --rows N
and 4N rows are those real rows REPEATED (row k is real row k mod 7,731, id suffixed `#<copy>`; the corpus's meta
says so), every split scored, Parquet out. Each route runs in a child process of its own; its peak resident memory
is the child's `ru_maxrss` (resource.getrusage), in MiB. The stream is measured twice: on the corpus as
`Corpus.write` writes it (one Parquet row group, whose compressed columns pyarrow reads whole) and on the same rows
in row groups of 4,096.

    python benchmarks/predict_memory.py [--rows 25000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
CSV = REPO.parent / "shared" / "data" / "depression_reddit_cleaned" / "depression_dataset_reddit_cleaned.csv"
SPLITS = "train,val,test,calibration"
WHOLE = """
import sys
from pathlib import Path
from mhaudit.models.seeds import model_folders, predict_folders
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.io import write_table
corpus, model, out = sys.argv[1:4]
table = predict_folders(model_folders(Path(model)), Corpus.read(corpus), tuple(sys.argv[4].split(",")))
write_table(table, out)
"""


def repeated_corpus(corpus, rows: int, path: Path) -> Path:
    """`rows` rows made by repeating the real rows in order, each copy's ids suffixed `#<copy>`, written as
    `Corpus.write` writes (one row group) at `path`; returned: the same file in row groups of 4,096 rows."""
    import pyarrow.parquet as pq

    from mhaudit.tables.corpus.schema import Corpus

    frame = corpus.frame
    copies = [frame.assign(id=frame["id"] + f"#{k}") for k in range(-(-rows // len(frame)))]
    repeated = pd.concat(copies, ignore_index=True).head(rows)
    meta = {**corpus.meta, "repeated": f"{rows} rows: {len(frame)} real posts repeated (benchmarks/predict_memory.py)"}
    Corpus.build(repeated, corpus.classes, meta=meta).write(path)
    grouped = path.with_suffix(".groups.parquet")
    pq.write_table(pq.read_table(path), grouped, row_group_size=4096)
    return grouped


# The child is started by a small launcher: a child forked straight from this process would count this process's
# memory (the corpora built here) in its peak until its exec.
LAUNCHER = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_mib(command: list[str]) -> tuple[float, float]:
    """The command's peak resident memory (MiB: `ru_maxrss` of the launcher's one child) and its wall seconds."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *command], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{command[:4]} failed: {done.stderr}")
    return int(done.stdout.split()[-1]) / 1024, seconds  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=25_000, help="N: the smaller corpus's rows (the other is 4N)")
    args = parser.parse_args()
    from mhaudit.models.seeds import train_platform
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    corpus = import_source("depression_reddit", [CSV], ImportOptions(seed=0)).corpus
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (model,) = train_platform(corpus, None, "tfidf-lr", [0], work / "model")
        print(f"{len(corpus.frame):,} real posts; tfidf-lr trained on their train rows; threads 1 (OMP)")
        print(f"{'rows':>8} {'route':>24} {'peak RSS MiB':>13} {'seconds':>8} {'corpus MiB':>11}")
        for rows in (args.rows, 4 * args.rows):
            path = work / f"corpus-{rows}.parquet"
            grouped = repeated_corpus(corpus, rows, path)
            size = path.stat().st_size / 2**20
            stream = [sys.executable, "-m", "mhaudit", "predict", "--model", str(model), "--splits", SPLITS]
            whole = [sys.executable, "-c", WHOLE, str(path), str(model), str(work / "whole.parquet"), SPLITS]
            routes = {
                "stream": [*stream, "--corpus", str(path), "--out", str(work / "stream.parquet")],
                "stream, groups of 4,096": [*stream, "--corpus", str(grouped), "--out", str(work / "grouped.parquet")],
                "whole": whole,
            }
            for route, command in routes.items():
                mib, seconds = peak_mib(command)
                print(f"{rows:>8,} {route:>24} {mib:>13.0f} {seconds:>8.1f} {size:>11.1f}", flush=True)
            tables = [pd.read_parquet(work / f"{name}.parquet") for name in ("stream", "grouped", "whole")]
            same = tables[0].equals(tables[2]) and tables[1].equals(tables[2])
            print(f"{'':>8} the two tables are {'equal' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
