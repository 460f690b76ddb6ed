"""The demo's report.json tables, as a golden file: `python -m tests.golden.demo_tables` rewrites it.

The file changes only in a commit that says which numbers moved and why.
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).with_name("demo_tables.json.gz")


def demo_tables(out: Path) -> dict:
    """Every table of both demo reports (cross-platform and label-source), keyed by report/section/table."""
    from mhaudit.experiments.demo import run_demo, run_divergence_demo

    run_demo(out, seed=0)
    run_divergence_demo(out / "divergence", seed=0)
    tables = {}
    for report in ("report.json", "divergence/report.json"):
        for section in json.loads((out / report).read_text())["sections"]:
            for name, rows in section["tables"].items():
                tables[f"{report}/{section['title']}/{name}"] = rows
    return tables


if __name__ == "__main__":
    # As the tests run (tests/conftest.py): one BLAS thread, so sums are taken in one order.
    import os

    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("MHAUDIT_SECRET", "mhaudit-test-secret")
    with tempfile.TemporaryDirectory() as tmp:
        tables = demo_tables(Path(tmp))
    with gzip.open(GOLDEN, "wt", encoding="utf-8") as handle:
        json.dump(tables, handle, sort_keys=True)
    print(f"wrote {GOLDEN} ({len(tables)} tables)", file=sys.stderr)
