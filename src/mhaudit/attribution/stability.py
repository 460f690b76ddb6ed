"""Attribution stability across platforms (CPFE axis 5) and proxy-clinical retention.

Input is the Attributions table: `model, seed, platform, dataset, class, word, score, count, method`,
one row per word type. A place is a (platform, data set): two data sets on one platform are two places.
A row without a data set (a table without the column, older or hand-made) takes its platform's name as
its data set. Words are ranked by score within (model, seed, place, class); ties go to the alphabetically
first word, so the top-K set never depends on row order. Places are paired only within the same model and
seed; averaging over seeds is the caller's (`mean_sd` helps).
"""

from __future__ import annotations

from importlib.resources import files
from itertools import combinations

import numpy as np
import pandas as pd

GROUP = ["model", "seed", "platform", "dataset", "class"]
REQUIRED = [*GROUP, "word", "score"]


def place_name(platform, dataset) -> str:
    """'platform (data set)', or the platform alone where the data set bears its name."""
    return str(platform) if dataset == platform else f"{platform} ({dataset})"


def with_datasets(attributions: pd.DataFrame, sole: dict | None = None) -> pd.DataFrame:
    """The table with a data set on every row: a row without one takes `sole[platform]` where given (the
    platform's one data set elsewhere, e.g. in the predictions), else its platform's name."""
    if "platform" not in attributions or ("dataset" in attributions and attributions["dataset"].notna().all()):
        return attributions
    named = attributions["dataset"] if "dataset" in attributions else pd.Series(np.nan, index=attributions.index)
    filled = pd.Series([(sole or {}).get(p, p) for p in attributions["platform"]], attributions.index, object)
    return attributions.assign(dataset=named.astype(object).fillna(filled))


def _check(attributions: pd.DataFrame) -> pd.DataFrame:
    attributions = with_datasets(attributions)
    missing = [c for c in REQUIRED if c not in attributions.columns]
    if missing:
        raise ValueError(
            f"attributions table lacks column(s) {', '.join(missing)}; expected "
            "model, seed, platform, dataset, class, word, score, count, method"
        )
    frame = attributions[REQUIRED].copy()
    null = frame.isna().any(axis=1)
    if null.any():
        col = frame.columns[frame[null].iloc[0].isna().to_numpy()][0]
        raise ValueError(
            f"attributions row {frame.index[null][0]!r} has no {col}; every row needs "
            f"{', '.join(REQUIRED)} (a finite score)"
        )
    frame["score"] = pd.to_numeric(frame["score"], errors="raise").astype(float)
    if not np.all(np.isfinite(frame["score"])):
        raise ValueError("attributions hold an infinite score; scores must be finite numbers")
    frame["word"] = frame["word"].astype(str)
    dup = frame.duplicated([*GROUP, "word"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise ValueError(
            f"word '{row['word']}' appears twice for model '{row['model']}', seed {row['seed']}, "
            f"platform '{row['platform']}', data set '{row['dataset']}', class '{row['class']}'; give "
            "one method per data set (filter on the method column first)"
        )
    return frame


def top_k_words(attributions: pd.DataFrame, k: int) -> pd.DataFrame:
    """The k highest-scoring words of each (model, seed, platform, data set, class), rank 1 first.

    Columns: model, seed, platform, dataset, class, rank, word, score. A group with fewer than k words keeps all.
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    frame = _check(attributions).sort_values([*GROUP, "score", "word"], ascending=[True] * len(GROUP) + [False, True])
    frame["rank"] = frame.groupby(GROUP, sort=False).cumcount() + 1
    top = frame[frame["rank"] <= k]
    return top[[*GROUP, "rank", "word", "score"]].reset_index(drop=True)


def _sorted(values) -> list:
    values = list(dict.fromkeys(values))
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def jaccard_stability(attributions: pd.DataFrame, ks=(5, 10, 15, 20)) -> pd.DataFrame:
    """Jaccard similarity |A & B| / |A | B| of the top-k word sets of every unordered pair of places.

    A place is a (platform, data set). Columns: model, seed, class, platform_a, dataset_a, platform_b,
    dataset_b ((platform_a, dataset_a) < (platform_b, dataset_b)), k, jaccard, n_a, n_b (set sizes; below
    k when a place has fewer words), reason. The places and classes of a (model, seed) are those it has
    any attributions for. A place with no words for a class makes the Jaccard NaN with a reason: 0 would
    read as the complete divergence that the audit looks for.
    """
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must be positive integers, got {ks!r}")
    top = top_k_words(attributions, ks[-1])
    ranked = {key: group["word"].tolist() for key, group in top.groupby(GROUP, sort=False)}
    rows = []
    for (model, seed), group in _check(attributions).groupby(["model", "seed"], sort=True):
        places, classes = _sorted(zip(group["platform"], group["dataset"])), _sorted(group["class"])
        for cls in classes:
            for a, b in combinations(places, 2):
                words_a, words_b = ranked.get((model, seed, *a, cls), []), ranked.get((model, seed, *b, cls), [])
                for k in ks:
                    set_a, set_b = set(words_a[:k]), set(words_b[:k])
                    empty = [place_name(*p) for p, s in ((a, set_a), (b, set_b)) if not s]
                    if empty:
                        jaccard = np.nan
                        reason = f"no attributed words for class on platform(s) {', '.join(empty)}: Jaccard undefined"
                    else:
                        jaccard, reason = len(set_a & set_b) / len(set_a | set_b), ""
                    rows.append(
                        {
                            "model": model,
                            "seed": seed,
                            "class": cls,
                            "platform_a": a[0],
                            "dataset_a": a[1],
                            "platform_b": b[0],
                            "dataset_b": b[1],
                            "k": k,
                            "jaccard": jaccard,
                            "n_a": len(set_a),
                            "n_b": len(set_b),
                            "reason": reason,
                        }
                    )
    columns = [
        "model",
        "seed",
        "class",
        "platform_a",
        "dataset_a",
        "platform_b",
        "dataset_b",
        "k",
        "jaccard",
        "n_a",
        "n_b",
        "reason",
    ]
    return pd.DataFrame(rows, columns=columns)


def load_proxy_clinical() -> frozenset[str]:
    """The proxy-clinical vocabulary shipped with mhaudit (see docs/proxy_clinical.md)."""
    text = files("mhaudit.attribution").joinpath("proxy_clinical.txt").read_text(encoding="utf-8")
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    )


def clinical_retention(attributions: pd.DataFrame, vocabulary, k: int = 10) -> pd.DataFrame:
    """How many of each group's top-k words are in `vocabulary` (compared lower-cased, stripped).

    Columns: model, seed, platform, dataset, class, k, retained, n_top (words ranked, k or fewer), share =
    retained / n_top. Only groups with at least one attributed word appear.
    """
    vocab = {str(w).strip().lower() for w in vocabulary}
    top = top_k_words(attributions, k)
    top["hit"] = top["word"].str.strip().str.lower().isin(vocab)
    out = top.groupby(GROUP, sort=True)["hit"].agg(retained="sum", n_top="size").reset_index()
    out.insert(len(GROUP), "k", int(k))
    out["retained"] = out["retained"].astype(int)
    out["share"] = out["retained"] / out["n_top"]
    return out
