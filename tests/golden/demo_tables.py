"""The demo's report.json tables, as a golden file: `python -m tests.golden.demo_tables` rewrites it.

The file changes only in a commit that says which numbers moved and why. It also stores the numerical
environment it was written in (library versions, BLAS kernel, torch CPU capability): iterative solvers
(L-BFGS, temperature scaling) land on other last digits under another BLAS kernel or release, so the
1e-12 comparison holds only in the same environment (tests/test_golden_demo.py).
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path

GOLDEN = Path(__file__).with_name("demo_tables.json.gz")
NUMERICAL_PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "torch", "spacy")


REPORTS = ("cross-platform", "label-source", "validation")


def demo_tables(out: Path) -> dict:
    """Every table and the verdicts of the demo's three audit reports (cross-platform, label source,
    validation) in `out`, a folder `run_trust_demo` wrote; keyed by report/section/table (report/verdicts)."""
    tables = {}
    for folder in REPORTS:
        report = f"{folder}/report.json"
        written = json.loads((out / report).read_text())
        tables[f"{report}/verdicts"] = written["verdicts"]
        for section in written["sections"]:
            for name, rows in section["tables"].items():
                tables[f"{report}/{section['title']}/{name}"] = rows
    return tables


def numerical_environment() -> dict:
    """What decides the last digits: library versions, the BLAS kernels in use and torch's CPU capability."""
    import numpy  # noqa: F401  (loads its BLAS, so threadpoolctl sees it)
    import scipy.linalg  # noqa: F401
    import sklearn  # noqa: F401
    import threadpoolctl
    import torch

    versions = {name: metadata.version(name) for name in NUMERICAL_PACKAGES}
    blas = sorted(
        {
            f"{i['internal_api']} {i.get('version')} {i.get('architecture')}"
            for i in threadpoolctl.threadpool_info()
            if i.get("user_api") == "blas"
        }
    )
    return {**versions, "blas": blas, "torch_cpu": torch.backends.cpu.get_cpu_capability()}


def read_golden() -> dict:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as handle:
        return json.load(handle)


if __name__ == "__main__":
    # As the tests run (tests/conftest.py): one BLAS thread, so sums are taken in one order.
    import os

    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("MHAUDIT_SECRET", "mhaudit-test-secret")
    from mhaudit.experiments.demo import run_trust_demo

    with tempfile.TemporaryDirectory() as tmp:
        run_trust_demo(Path(tmp), seed=0)
        tables = demo_tables(Path(tmp))
    with gzip.open(GOLDEN, "wt", encoding="utf-8") as handle:
        json.dump({"environment": numerical_environment(), "tables": tables}, handle, sort_keys=True)
    print(f"wrote {GOLDEN} ({len(tables)} tables)", file=sys.stderr)
