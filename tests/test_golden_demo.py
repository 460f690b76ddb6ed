"""Golden check: `mhaudit demo`'s report tables (both audits, seed 0) equal the stored file to 1e-12.

A refactor must not move a number. When a change means to, regenerate the file
(`python -m tests.golden.demo_tables`) in a commit that lists which numbers moved and why.
"""

import gzip
import json
import math

from tests.golden.demo_tables import GOLDEN, demo_tables


def _differences(name: str, want: list[dict], got: list[dict]) -> list[str]:
    if len(want) != len(got):
        return [f"{name}: {len(got)} rows, golden has {len(want)}"]
    found = []
    for i, (w, g) in enumerate(zip(want, got)):
        if list(w) != list(g):
            found.append(f"{name} row {i}: columns {list(g)}, golden {list(w)}")
            continue
        for column, value in w.items():
            other = g[column]
            if isinstance(value, float) and isinstance(other, (int, float)):
                same = (math.isnan(value) and math.isnan(other)) or math.isclose(value, other, rel_tol=1e-12,
                                                                                    abs_tol=1e-12)
            else:
                same = value == other
            if not same:
                found.append(f"{name} row {i} {column}: {other!r}, golden {value!r}")
    return found


def test_demo_tables_match_the_golden_file(tmp_path):
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as handle:
        golden = json.load(handle)
    tables = json.loads(json.dumps(demo_tables(tmp_path), sort_keys=True))  # the same JSON round trip
    assert sorted(tables) == sorted(golden)
    differences = [d for name in golden for d in _differences(name, golden[name], tables[name])]
    assert not differences, "\n".join(differences[:20])
