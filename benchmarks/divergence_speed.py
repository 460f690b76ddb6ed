"""Speed of the label-source (divergence) audit's stages (not a test).

1. Featurising: documents/s of the spaCy parse alone (the floor, uncached, n_process=2) and of each
   channel on top of it, on 2,000 short posts (TSS Twitter gold) and on Dreaddit test; channel C's
   cost as a share of the parse (target: at most 30%); parse + A + B + C end to end beside the
   published implementation's ~37 documents/s on Dreaddit (its paper's figure; target: 3x that).
2. Statistics: the 10,000-resample DoD bootstrap over the real data-set sizes (target < 5 s) and the
   whole statistics stage (every table of the audit from predictions; target < 1 minute).
Peak memory of a whole real-data run is measured separately with /usr/bin/time -v (docs/benchmarks.md).

    python benchmarks/divergence_speed.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def corpora(data: Path):
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    dreaddit = import_source("dreaddit", sorted((data / "dreaddit").glob("*.csv"))).corpus.frame
    gold = import_source("tss_gold", [data / "tss_probe" / "Twitter_sample_gold.utf8.csv"],
                         ImportOptions(split="test")).corpus.frame
    return dreaddit, gold


def featurise(name: str, train, texts: list[str]) -> dict:
    from mhaudit.features.lexical import LexicalChannel
    from mhaudit.features.morphosyntax import MorphosyntaxChannel
    from mhaudit.features.style import StyleChannel
    from mhaudit.text.parse import load_nlp, parse_texts

    load_nlp()  # model loading is a one-off, not per document
    train_texts = list(train["text"])
    y = (train["label"].to_numpy() == "stress").astype(int)
    train_parses = parse_texts(train_texts)
    start = time.perf_counter()
    parses = parse_texts(texts, use_cache=False)
    parse_s = time.perf_counter() - start
    row = {"set": name, "docs": len(texts), "tokens": int(parses.n_tokens.sum()), "parse_s": parse_s}
    for letter, channel in (("A", LexicalChannel()), ("B", MorphosyntaxChannel()), ("C", StyleChannel())):
        channel.fit_transform(train_texts, train_parses, y, None)
        start = time.perf_counter()
        channel.transform(texts, parses)
        row[f"{letter}_s"] = time.perf_counter() - start
    row["end_to_end_docs_per_s"] = len(texts) / (parse_s + row["A_s"] + row["B_s"] + row["C_s"])
    return row


def whole_dreaddit(dreaddit) -> dict:
    """The published pipeline's unit: every Dreaddit post parsed and featurised (channels fitted on train)."""
    from mhaudit.features.lexical import LexicalChannel
    from mhaudit.features.morphosyntax import MorphosyntaxChannel
    from mhaudit.features.style import StyleChannel
    from mhaudit.text.parse import parse_texts

    texts = list(dreaddit["text"])
    train = (dreaddit["split"] == "train").to_numpy()
    y = (dreaddit["label"].to_numpy()[train] == "stress").astype(int)
    start = time.perf_counter()
    parses = parse_texts(texts, use_cache=False)
    parse_s = time.perf_counter() - start
    idx_train, idx_test = np.flatnonzero(train), np.flatnonzero(~train)
    for channel in (LexicalChannel(), MorphosyntaxChannel(), StyleChannel()):
        channel.fit_transform([texts[i] for i in idx_train], parses.take(idx_train), y, None)
        channel.transform([texts[i] for i in idx_test], parses.take(idx_test))
    total = time.perf_counter() - start
    return {"docs": len(texts), "parse_s": parse_s, "total_s": total}


def statistics_stage(sizes: dict[str, int]) -> dict:
    import pandas as pd

    from mhaudit.audits.divergence import tables as T
    from mhaudit.stats.divergence import degree_of_divergence

    rng = np.random.default_rng(0)
    y = {d: rng.integers(0, 2, n).astype(np.int8) for d, n in sizes.items()}
    side = {d: ("human" if i < 2 else "auto") for i, d in enumerate(sizes)}
    platform = {d: ("twitter" if "twitter" in d else "reddit") for d in sizes}
    channels = ["A", "B", "C", "AB", "AC", "BC", "ABC"]
    keys = channels + [f"{c}/{m}" for c in ("C", "BC") for m in ("pos_only", "content_only", "function_only",
                                                                  "random_pos")]

    def noisy(v, acc):
        return np.where(rng.random(v.size) < acc, v, 1 - v).astype(np.int8)

    preds = {d: np.vstack([noisy(y[d], 0.6 + 0.02 * j) for j in range(len(keys))]) for d in sizes}
    probs = {d: np.clip(p + rng.normal(0, 0.3, p.shape), 0, 1) for d, p in preds.items()}
    groups = {d: (y[d], preds[d][2], preds[d][0]) for d in sizes}
    start = time.perf_counter()
    degree_of_divergence(groups, [d for d in sizes if side[d] == "human"], [d for d in sizes if side[d] == "auto"],
                         n_boot=10_000, rng=0)
    dod_s = time.perf_counter() - start
    start = time.perf_counter()
    s = T.Scored(keys, y, preds, probs, side, platform, 10_000, 0)
    tables = {"channel_scores": T.channel_scores(s, channels), "interference": T.interference(s),
              "dod": T.dod(s, channels), "dod_by_dataset": T.dod_by_dataset(s, channels),
              "dod_platform_stratified": T.dod_platform_stratified(s, channels),
              "masking": T.masking(s, ["C", "BC"], ["none", "pos_only", "content_only", "function_only", "random_pos"],
                                   [d for d in sizes if side[d] == "human"], {}),
              "mcnemar": T.mcnemar_table(s, T.mcnemar_pairs(keys, channels))}
    n_tests = T.apply_fdr(tables, {k: "p" for k in ("interference", "dod", "dod_platform_stratified", "masking",
                                                     "mcnemar")})
    stage_s = time.perf_counter() - start
    assert all(isinstance(t, pd.DataFrame) for t in tables.values())
    return {"instances": sum(sizes.values()), "dod_bootstrap_s": dod_s, "statistics_stage_s": stage_s,
            "prediction_vectors": len(keys), "tests_in_family": n_tests}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    os.environ.setdefault("MHAUDIT_CACHE", tempfile.mkdtemp(prefix="mhaudit-bench-"))
    dreaddit, gold = corpora(args.data)
    train = dreaddit[dreaddit["split"] == "train"]
    rows = [featurise("2,000 short posts (TSS Twitter gold)", train, list(gold["text"])[:2000]),
            featurise("Dreaddit test", train, list(dreaddit.loc[dreaddit["split"] == "test", "text"]))]
    print("featurising (seconds; parse uncached with 2 processes; channels fitted on Dreaddit train)")
    for r in rows:
        print(f"  {r['set']}: {r['docs']} docs, {r['tokens']:,} tokens | parse {r['parse_s']:.1f} s "
              f"({r['docs'] / r['parse_s']:.0f} docs/s) | A {r['A_s']:.2f} s, B {r['B_s']:.2f} s, C {r['C_s']:.2f} s | "
              f"C/parse {r['C_s'] / r['parse_s']:.1%} | end to end {r['end_to_end_docs_per_s']:.0f} docs/s "
              f"= {r['end_to_end_docs_per_s'] / 37:.1f}x the published ~37 docs/s")
    whole = whole_dreaddit(dreaddit)
    rate = whole["docs"] / whole["total_s"]
    print(f"  all of Dreaddit ({whole['docs']:,} posts: parse, fit A/B/C on train, transform test): "
          f"{whole['total_s']:.1f} s, parse {whole['parse_s']:.1f} s | {rate:.0f} docs/s = {rate / 37:.1f}x the "
          "published ~37 docs/s")
    stats = statistics_stage({"dreaddit": 715, "tss_twitter_gold": 2809, "tss_twitter_auto": 8412,
                              "rastogi_reddit_combi": 3123})
    print(f"statistics on {stats['instances']:,} instances: DoD bootstrap (B = 10,000) {stats['dod_bootstrap_s']:.2f} s "
          f"(published ~90 s); whole statistics stage ({stats['prediction_vectors']} prediction vectors, "
          f"{stats['tests_in_family']} tests) {stats['statistics_stage_s']:.1f} s (published ~13.5 min)")


if __name__ == "__main__":
    main()
