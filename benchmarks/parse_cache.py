"""The per-text parse cache on the label-source audit's real texts: cold parse, warm read, reorder, subset.

The texts of the run in issue 17 (Dreaddit train and test, TSS Twitter gold and Twitter_Full, Rastogi
Reddit_Combi), read with mhaudit's importers from ../shared/data; duplicates kept, as an audit would
pass them. A fresh cache folder each run (under --cache, default a temporary folder); the cold parse
fills it, then every other step must parse nothing (`parsed_now` is printed and checked) and is timed
as the best of --repeat. Issue 17's goal: a warm read of the ~17,900 texts in at most 5 s.

    python benchmarks/parse_cache.py [--data ../shared/data] [--repeat 3] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

FILES = (("dreaddit", ("dreaddit/dreaddit-train.csv", "dreaddit/dreaddit-test.csv")),
         ("tss_gold", ("tss_probe/Twitter_sample_gold.utf8.csv",)),
         ("tss_full", ("tss_probe/Twitter_Full.csv",)),
         ("rastogi", ("stress_rastogi2022/Reddit_Combi.csv",)))


def texts_of(data: Path) -> list[str]:
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    texts: list[str] = []
    for source, files in FILES:
        corpus = import_source(source, [data / f for f in files], ImportOptions(drop_empty=True)).corpus
        texts += corpus.frame["text"].astype(str).tolist()
    return texts


def timed(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None)
    a = parser.parse_args()
    os.environ["MHAUDIT_CACHE"] = str(a.cache or tempfile.mkdtemp(prefix="mhaudit-parse-cache-"))
    from mhaudit.text.parse import parse_texts
    from mhaudit.text.parse_cache import cache_report

    texts = texts_of(a.data)
    print(f"{len(texts):,} texts ({len(set(texts)):,} distinct); load average {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    cold = parse_texts(texts)
    print(f"cold: parsed {cold.parsed_now:,} in {time.perf_counter() - t0:.1f} s")
    report = cache_report()
    print(f"cache: {report['texts']:,} texts, {report['tokens']:,} tokens, {report['bytes'] / 2**20:.1f} MiB")
    cases = {"warm, same order": texts, "warm, reversed": texts[::-1], "warm, every other text": texts[::2],
             "warm, one text removed": texts[1:]}
    for name, case in cases.items():
        parses, seconds = timed(lambda case=case: parse_texts(case), a.repeat)
        assert parses.parsed_now == 0 and len(parses) == len(case), name
        print(f"{name}: {len(case):,} texts in {seconds:.2f} s (parsed {parses.parsed_now})")
    print(f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
