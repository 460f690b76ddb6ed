"""Recall of the built-in collection filters on the labelled sets, and the packaged table the runtime reads.

For each built-in filter (mh, si, si+mh, wide, si+mh+wide) on every labelled set found under --data
(weak_supervision.lexicons.labelled_sets: the Bluesky depression set whole and in its two halves, the stress
sets, GoEmotions as a general stream): recall on the positive posts, keep share, precision and base rate,
each with its Wilson 95% CI. Prints one Markdown table per set (docs/collect.md, "Recall of the collection")
and writes `src/mhaudit/weak_supervision/lexicons/recall.toml`: per filter, its lexicons' SHA-256 and its
row on the Bluesky set (all posts and the held-out half) and on GoEmotions, which `mhaudit collect` and the
monitor's report quote (weak_supervision.lexicons.measured). Rerun it whenever a lexicon file changes.

With --model it also measures a model-based filter for comparison (not offered by `mhaudit collect`): TF-IDF
(words and word pairs) and a class-balanced logistic regression trained on the tuning half, its threshold the
15th percentile of the depressive posts' 5-fold cross-validated scores there (aiming at recall 0.85), judged on
the held-out half and on GoEmotions.

    python benchmarks/lexicon_recall.py [--data ../shared/data] [--no-write] [--model]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from mhaudit.weak_supervision.lexicons.labelled_sets import DEFAULT_FILTERS, recall_tables
from mhaudit.weak_supervision.lexicons.measured import TABLE
from mhaudit.weak_supervision.lexicons.recall import load_filter

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "mhaudit" / "weak_supervision" / "lexicons" / TABLE
SETS = {"bluesky_depression": "bluesky_depression", "bluesky_depression_held_out":
        "bluesky_depression (held-out half)", "general_stream": "goemotions test (general stream)"}
NUMBERS = ("recall", "keep_share", "precision", "base_rate")


def interval(row, name: str) -> str:
    """"0.914 (0.887–0.936)", or "—" where the row has no such proportion or it is undefined."""
    if name not in row or row[name] != row[name]:
        return "—"
    return f"{row[name]:.3f} ({row[name + '_ci_low']:.3f}–{row[name + '_ci_high']:.3f})"


def markdown(name: str, table) -> str:
    positives = f", {table['n_positive'].iat[0]:,} positive" if "n_positive" in table else ", no target"
    lines = [f"**{name}** ({table['n_posts'].iat[0]:,} posts{positives})", "",
             "| filter | recall (95% CI) | keep share (95% CI) | precision (95% CI) |", "|---|---|---|---|"]
    for _, row in table.iterrows():
        cells = [interval(row, k) for k in ("recall", "keep_share", "precision")]
        lines.append(f"| {row['filter']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _value(value) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def toml(table: dict) -> str:
    """The packaged table as TOML (flat tables of strings and numbers only; the standard library reads TOML but
    does not write it)."""
    lines = ["# Written by benchmarks/lexicon_recall.py from the labelled sets; do not edit, rerun it.",
             f"script = {_value(table['script'])}", "", "[sets]"]
    lines += [f'{key} = {_value(name)}' for key, name in table["sets"].items()]
    for entry in table["filters"]:
        lines += ["", "[[filters]]", f"filter = {_value(entry['filter'])}"]
        for key in ("lexicons", "versions"):
            lines.append(f"{key} = {{ " + ", ".join(f"{k} = {_value(v)}" for k, v in entry[key].items()) + " }")
        for key in table["sets"]:
            lines += ["", f"[filters.{key}]"] + [f"{k} = {_value(v)}" for k, v in entry[key].items()]
    return "\n".join(lines) + "\n"


def packaged(tables) -> dict:
    filters = []
    for spec in DEFAULT_FILTERS:
        lexicons = load_filter(spec)
        entry = {"filter": spec, "lexicons": {lex.name: lex.sha256 for lex in lexicons},
                 "versions": {lex.name: lex.version for lex in lexicons}}
        for key, name in SETS.items():
            row = tables[name].set_index("filter").loc[spec]
            entry[key] = {k: int(row[k]) for k in ("n_posts", "n_positive", "n_kept") if k in row} | {
                f"{k}{s}": round(float(row[k + s]), 6) for k in NUMBERS for s in ("", "_ci_low", "_ci_high")
                if k + s in row and row[k + s] == row[k + s]}
        filters.append(entry)
    return {"script": "benchmarks/lexicon_recall.py", "sets": SETS, "filters": filters}


def model_filter(data: Path) -> str:
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    from mhaudit.weak_supervision.lexicons.labelled_sets import LABELLED_SETS, read_set
    from mhaudit.weak_supervision.lexicons.recall import filter_recall

    tune, held, general = (read_set(data, spec) for spec in (LABELLED_SETS[1], LABELLED_SETS[2], LABELLED_SETS[-1]))
    vectoriser = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    x, y = vectoriser.fit_transform(tune["text"]), tune["positive"].to_numpy()
    model = LogisticRegression(C=4.0, class_weight="balanced", max_iter=2000)
    threshold = np.quantile(cross_val_predict(model, x, y, cv=5, method="predict_proba")[:, 1][y], 0.15)
    model.fit(x, y)
    row = filter_recall(model.predict_proba(vectoriser.transform(held["text"]))[:, 1] >= threshold,
                        held["positive"]).row()
    keep = float((model.predict_proba(vectoriser.transform(general["text"]))[:, 1] >= threshold).mean())
    cells = [interval(row, k) for k in ("recall", "keep_share", "precision")]
    return (f"model filter (TF-IDF + LR on the tuning half, threshold {threshold:.3f}), held-out half: recall "
            f"{cells[0]}, keep share {cells[1]}, precision {cells[2]}; GoEmotions keep share {keep:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("MHAUDIT_SHARED_DATA",
                                                                         ROOT.parent / "shared" / "data")))
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    parser.add_argument("--model", action="store_true", help="also measure a model-based filter, for comparison")
    args = parser.parse_args()
    if args.model:
        print(model_filter(args.data), end="\n\n")
    tables, absent = recall_tables(args.data)
    for name, table in tables.items():
        print(markdown(name, table), end="\n\n")
    if absent:
        print("absent: " + ", ".join(absent))
    missing = [name for name in SETS.values() if name not in tables]
    if args.no_write or missing:
        print("not written" + (f": {', '.join(missing)} absent" if missing else ""))
        return
    OUT.write_text(toml(packaged(tables)), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
