"""Weak-label validation (Bluesky paper, section on human validation; issue 7): sample, then measure agreement.

Two steps, both reading the labels table (mhaudit.tables.label_store):

1. `sample_for_validation` draws a stratified random sample of items by their weak label (both classes
   present, sizes or shares configurable, seeded) and returns the *validation set*: one row per sampled
   item with `sample_id, item_id, task, text, stratum` and the design columns `weak_labeler, pool_size,
   sample_size, weight, seed`. `stratum` is the weak label the item was drawn under: it stays in the
   file because the report needs it for design weights, but it must never be shown to annotators (they
   label blind to the weak label). Rows are in random order, so position reveals nothing either.
2. `agreement_report` compares the labelers of one task and returns a Result for the shared renderer:
   human-human agreement before adjudication (Cohen's kappa with a bootstrap CI, observed agreement,
   Krippendorff's alpha for more than two annotators), the weak labeler against the reference labels
   (agreement, kappa, precision, recall, F1, macro-F1, confusion matrix, positive rates), optional
   design-weighted estimates for the sampled pool, and the error sources of the weak labeler's false
   positives and negatives by the annotators' tags.

The reference label of an item (docs/validation.md, "The reference"): its adjudicated label (kind
'adjudicated') where there is one (a consensus with raw_answer 'agreed' only while the annotators' current
labels still agree with it); otherwise the annotators' label where every annotator who labelled
it gave the same valid label (one annotator suffices, which covers a data set that carries one expert
consensus label as kind 'human'); items the annotators disagree on and nobody adjudicated are left out
and counted. `reference=LABELER` makes one labeler the reference instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.io import read_table, write_table
from mhaudit.tables.label_store import COLUMNS, KEY, now, parse_tags
from mhaudit.report.render import Result, Section
from mhaudit.stats.agreement import bootstrap_kappa, krippendorff_alpha, weak_vs_reference

__all__ = ["SAMPLE_COLUMNS", "WEAK_KINDS", "sample_for_validation", "write_validation_set", "read_validation_set",
           "labels_from_corpus", "agreement_report", "choose_weak_labeler"]

SAMPLE_COLUMNS = ("sample_id", "item_id", "task", "text", "stratum", "weak_labeler", "pool_size", "sample_size",
                  "weight", "seed")
WEAK_KINDS = ("llm", "lexicon")
NO_TAG = "(no tag)"
AGREED = "agreed"  # raw_answer of a consensus row that records agreement (mhaudit.weak_supervision.annotate.adjudication)


# -------------------------------------------------------------------------------------- helpers
def _task_labels(labels: pd.DataFrame, task: str) -> pd.DataFrame:
    missing = [c for c in (*KEY, "kind", "value") if c not in labels.columns]
    if missing:
        raise InputError(f"the labels table has no '{missing[0]}' column")
    rows = labels[labels["task"].astype(str) == str(task)]
    if rows.empty:
        tasks = sorted(labels["task"].astype(str).unique())
        raise InputError(f"no labels for task '{task}'; the labels have tasks: {', '.join(tasks) or 'none'}")
    rows = rows.assign(item_id=rows["item_id"].astype(str), labeler=rows["labeler"].astype(str))
    duplicated = rows.duplicated(["item_id", "labeler"])
    if duplicated.any():
        first = rows[duplicated].iloc[0]
        raise InputError(f"item '{first['item_id']}' has two labels from '{first['labeler']}' for task '{task}'; "
                         "one labeler writes one label per item")
    return rows


def _labelers(rows: pd.DataFrame) -> str:
    kinds = rows.groupby("labeler")["kind"].first()
    return ", ".join(f"{name} ({kind})" for name, kind in kinds.items())


def choose_weak_labeler(labels: pd.DataFrame, task: str, weak_labeler: str | None = None) -> str:
    """The weak labeler's name: as given (it must have labels for the task), or the only llm/lexicon labeler."""
    rows = _task_labels(labels, task)
    if weak_labeler is not None:
        if weak_labeler not in set(rows["labeler"]):
            raise InputError(f"labeler '{weak_labeler}' has no labels for task '{task}'; labelers: {_labelers(rows)}")
        return weak_labeler
    weak = sorted(rows.loc[rows["kind"].isin(WEAK_KINDS), "labeler"].unique())
    if len(weak) != 1:
        raise InputError(f"{'several' if weak else 'no'} weak labelers (kind llm or lexicon) for task '{task}'"
                         f"{': ' + ', '.join(weak) if weak else ''}; name one with --weak (labelers: {_labelers(rows)})")
    return weak[0]


# -------------------------------------------------------------------------------------- sampling
def _allocate(n: int | None, pool: Mapping[int, int], positive_share: float | None,
              sizes: Mapping[int, int] | None) -> dict[int, int]:
    total = pool[0] + pool[1]
    if positive_share is not None and sizes is not None:
        raise InputError("give either a positive share or stratum sizes, not both")
    if sizes is not None:
        sizes = {int(k): int(v) for k, v in sizes.items()}
        if set(sizes) != {0, 1}:
            raise InputError(f"stratum sizes must name the weak labels 0 and 1, got {sorted(sizes)}")
        if n is not None and n != sum(sizes.values()):
            raise InputError(f"the stratum sizes add up to {sum(sizes.values())}, not n = {n}")
        n = sum(sizes.values())
    if n is None:
        raise InputError("give the sample size n (or stratum sizes)")
    if n > total:
        raise InputError(f"a sample of {n} is larger than the pool: {total} items have a valid weak label and a text "
                         f"({pool[1]} weak positive, {pool[0]} weak negative)")
    if n < 2:
        raise InputError(f"a sample of {n} cannot hold both classes; n must be at least 2")
    if sizes is None:
        if positive_share is not None:
            if not 0 < positive_share < 1:
                raise InputError(f"the positive share {positive_share} must lie strictly between 0 and 1")
            n1 = int(round(n * positive_share))
        else:  # proportional allocation: the sample keeps the pool's weak positive rate
            n1 = int(round(n * pool[1] / total))
        sizes = {0: n - n1, 1: n1}
        if positive_share is None:  # at least one item per stratum, within what each stratum holds
            sizes[1] = min(max(sizes[1], 1), n - 1, pool[1])
            sizes[0] = n - sizes[1]
    for value, word in ((0, "negative"), (1, "positive")):
        if sizes[value] < 1:
            raise InputError(f"the sample has no weak {word} item; both classes must be present "
                             f"(sizes {sizes[0]} negative / {sizes[1]} positive)")
        if sizes[value] > pool[value]:
            raise InputError(f"the sample asks for {sizes[value]} weak {word} items but the pool has only "
                             f"{pool[value]}")
    return sizes


def sample_for_validation(labels: pd.DataFrame, items: pd.DataFrame, task: str, n: int | None = None, *,
                          weak_labeler: str | None = None, positive_share: float | None = None,
                          sizes: Mapping[int, int] | None = None, seed: int = 0) -> pd.DataFrame:
    """A stratified random sample of items by weak label: the validation set for human annotation.

    The pool is every item with a valid (0/1) label from the weak labeler for `task` and a text in
    `items` (columns `id` or `item_id`, and `text`). Allocation: `sizes` {0: n0, 1: n1}; or
    `positive_share` of n drawn from the weak positives; by default proportional to the pool (the
    sample keeps the pool's weak positive rate; at least one item per class). Within each stratum a
    simple random sample without replacement (numpy Generator seeded with `seed`, items sorted by id
    first, so the input order does not matter); the rows are then shuffled.

    `weight` = pool_size / sample_size of the item's stratum: the design weight that turns sample
    counts into estimates for the pool. `agreement_report(validation_set=...)` spreads each stratum's
    pool over the stratum's items it could score (pool_size / n_scored), so items that drop out of
    scoring (unresolved, no valid weak label) do not bias the pool estimates.
    """
    weak = choose_weak_labeler(labels, task, weak_labeler)
    rows = _task_labels(labels, task)
    rows = rows[(rows["labeler"] == weak) & rows["value"].notna()]
    id_col = "id" if "id" in items.columns else "item_id" if "item_id" in items.columns else None
    if id_col is None or "text" not in items.columns:
        raise InputError(f"the items need an 'id' (or 'item_id') and a 'text' column; got {', '.join(map(str, items.columns))}")
    texts = items.assign(_id=items[id_col].astype(str)).drop_duplicates("_id").set_index("_id")["text"]
    texts = texts[texts.map(lambda t: isinstance(t, str) and bool(t.strip()))]
    rows = rows[rows["item_id"].isin(texts.index)]
    if rows.empty:
        raise InputError(f"none of the items labelled by '{weak}' for task '{task}' has a text in the items table; "
                         "are the ids the same?")
    values = rows["value"].astype(int)
    pool = {v: int((values == v).sum()) for v in (0, 1)}
    for value, word in ((0, "negative"), (1, "positive")):
        if pool[value] == 0:
            raise InputError(f"the pool has no weak {word} item ({pool[1 - value]} items, all labelled {1 - value} "
                             f"by '{weak}'); a stratified sample needs both classes")
    alloc = _allocate(n, pool, positive_share, sizes)
    rng = np.random.default_rng(seed)
    chosen = []
    for value in (0, 1):
        ids = np.sort(rows.loc[values == value, "item_id"].to_numpy(dtype=str))
        picked = rng.choice(ids, size=alloc[value], replace=False)
        chosen.append(pd.DataFrame({"item_id": picked, "stratum": value, "pool_size": pool[value],
                                    "sample_size": alloc[value]}))
    frame = pd.concat(chosen, ignore_index=True)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    width = max(4, len(str(len(frame))))
    frame["sample_id"] = [f"{task}-{seed}-{i + 1:0{width}d}" for i in range(len(frame))]
    frame["task"] = task
    frame["text"] = texts.reindex(frame["item_id"]).to_numpy()
    frame["weak_labeler"] = weak
    frame["weight"] = frame["pool_size"] / frame["sample_size"]
    frame["seed"] = seed
    return frame.loc[:, list(SAMPLE_COLUMNS)]


def write_validation_set(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write the validation set atomically as Parquet, CSV or JSONL (by suffix)."""
    return write_table(frame, path, what="the validation set")


def read_validation_set(path: str | Path) -> pd.DataFrame:
    """A validation set written by `write_validation_set` (needs item_id, stratum and weight)."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file; expected a validation set from `mhaudit validate sample`", path=path)
    frame = read_table(path, what="the validation set")
    missing = [c for c in ("item_id", "stratum", "weight") if c not in frame.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}'; a validation set has {', '.join(SAMPLE_COLUMNS)}", path=path)
    weights = pd.to_numeric(frame["weight"], errors="coerce")
    if frame["item_id"].isna().any() or frame["item_id"].duplicated().any() or weights.isna().any() \
            or (weights <= 0).any():
        raise InputError("item ids must be present and unique and weights positive numbers", path=path)
    if frame["stratum"].isna().any():
        raise InputError("every item needs its stratum (the weak label it was drawn under)", path=path)
    frame = frame.assign(weight=weights)
    for column in ("stratum", "pool_size", "sample_size", "seed"):  # numbers, when a CSV brought them as text
        if column in frame.columns:
            numbers = pd.to_numeric(frame[column], errors="coerce")
            if numbers.notna().all():
                frame[column] = numbers.astype(int) if (numbers % 1 == 0).all() else numbers
    return frame


# ------------------------------------------------------------------------------ corpus -> labels
def labels_from_corpus(corpus: pd.DataFrame, task: str, labeler: str, *, kind: str = "human",
                       positive: str | None = None, classes: Sequence[str] | None = None) -> pd.DataFrame:
    """A binary corpus's labels as a labels table: value 1 where `label` is the positive class.

    `positive` defaults to the last of `classes` (binary mappings put the positive class last, e.g.
    depression-binary: no_depression, depression). Used to enter a data set's own (expert) labels as a
    human reference.
    """
    for column in ("id", "label"):
        if column not in corpus.columns:
            raise InputError(f"the corpus has no '{column}' column")
    observed = sorted(corpus["label"].dropna().astype(str).unique())
    classes = list(classes) if classes else observed
    if positive is None:
        if len(classes) != 2:
            raise InputError(f"the corpus has {len(classes)} classes ({', '.join(classes)}); name the positive "
                             "class with --positive")
        positive = classes[-1]
    if positive not in classes and positive not in observed:
        raise InputError(f"positive class '{positive}' is not a class of the corpus ({', '.join(classes)})")
    values = (corpus["label"].astype(str) == positive).astype(int)
    frame = pd.DataFrame({"item_id": corpus["id"].astype(str), "task": task, "labeler": labeler, "kind": kind,
                          "value": values.astype("Int64"), "raw_answer": corpus["label"].astype(str),
                          "prompt_hash": None, "latency_ms": None, "tags": None, "note": None, "created_at": now()})
    return frame.loc[:, list(COLUMNS)]


# ------------------------------------------------------------------------------ agreement report
def _reference(rows: pd.DataFrame, annotators: list[str], reference: str | None) -> tuple[pd.Series, pd.DataFrame, str]:
    """Reference value per item, the composition table, and a one-line description."""
    if reference is not None:
        ref = rows[(rows["labeler"] == reference) & rows["value"].notna()].set_index("item_id")["value"].astype(int)
        invalid = int(((rows["labeler"] == reference) & rows["value"].isna()).sum())
        comp = pd.DataFrame([{"source": f"labeler {reference}", "items": len(ref)},
                             {"source": "invalid (no 0/1 label), left out", "items": invalid}])
        return ref, comp, f"the labels of '{reference}'"
    adjudicated = rows[rows["kind"] == "adjudicated"]
    adjudicators = sorted(adjudicated["labeler"].unique())
    if len(adjudicators) > 1:
        raise InputError(f"several adjudicated labelers ({', '.join(adjudicators)}); name the reference with --reference")
    human = rows[rows["labeler"].isin(annotators)]
    valid = human[human["value"].notna()]
    stats = valid.groupby("item_id")["value"].agg(["min", "max", "count"])
    adj_rows = adjudicated[adjudicated["value"].notna()].set_index("item_id")
    adj = adj_rows["value"].astype(int)
    # The annotation app's consensus rows say in raw_answer whether they settle a disagreement ('adjudicated') or
    # record agreement ('agreed'). An 'agreed' row only records what the annotators said when it was written: once
    # an annotator has changed their label it no longer holds, and the item counts by the annotators' current labels.
    raw = adj_rows["raw_answer"] if "raw_answer" in adj_rows else pd.Series(None, index=adj_rows.index, dtype=object)
    records_agreement = raw.astype(str).eq(AGREED)
    current = stats.reindex(adj.index)
    holds = current["count"].isna() | ((current["min"] == current["max"]) & (current["min"] == adj))
    outdated = adj.index[records_agreement & ~holds]
    adj = adj.drop(outdated)
    n_agreed = int((records_agreement & holds).sum())
    agreed = stats[stats["min"] == stats["max"]]
    unresolved = stats.index[(stats["min"] != stats["max"])].difference(adj.index)
    from_agreement = agreed.index.difference(adj.index)
    several = agreed.loc[from_agreement, "count"] >= 2
    ref = pd.concat([adj, agreed.loc[from_agreement, "min"].astype(int)]).sort_index()
    comp = pd.DataFrame([
        {"source": "adjudicated" + (f" ({adjudicators[0]})" if adjudicators else ""), "items": len(adj) - n_agreed},
        *([{"source": f"consensus recording agreement ({adjudicators[0]})", "items": n_agreed}] if n_agreed else []),
        *([{"source": f"outdated 'agreed' consensus ({adjudicators[0]}): an annotator changed their label since; "
                      "ignored", "items": len(outdated)}] if len(outdated) else []),
        {"source": "annotators agree (2 or more labels)", "items": int(several.sum())},
        {"source": "one annotator's label only", "items": int((~several).sum())},
        {"source": "annotators disagree, not adjudicated: left out", "items": len(unresolved)},
    ])
    if adjudicators and not len(from_agreement):
        desc = f"the adjudicated labels of '{adjudicators[0]}'"
    elif adjudicators:
        desc = f"the adjudicated labels of '{adjudicators[0]}', else the annotators' agreed label"
    elif len(annotators) == 1:
        desc = f"the labels of the single human label source '{annotators[0]}'"
    else:
        desc = "the annotators' label where they agree (no adjudication recorded: disagreements are left out)"
    return ref.rename("reference"), comp, desc


def _human_agreement(matrix: pd.DataFrame, annotators: list[str], n_boot: int, alpha: float, rng) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(annotators, 2):
        both = matrix[[a, b]].dropna()
        if both.empty:
            rows.append({"annotator_a": a, "annotator_b": b, "n": 0, "observed_agreement": np.nan, "kappa": np.nan,
                         "ci_low": np.nan, "ci_high": np.nan, "se": np.nan, "n_boot": 0, "n_failed": 0,
                         "status": "undefined", "reason": "no item labelled by both"})
            continue
        r = bootstrap_kappa(both[a].astype(int).to_numpy(), both[b].astype(int).to_numpy(), labels=[0, 1],
                            n_boot=n_boot, alpha=alpha, rng=rng)
        rows.append({"annotator_a": a, "annotator_b": b, "n": r["n"], "observed_agreement": r["observed_agreement"],
                     "kappa": r["estimate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "se": r["se"],
                     "n_boot": r["n_boot"], "n_failed": r["n_failed"],
                     "status": "ok" if r["reason"] is None else "undefined", "reason": r["reason"]})
    return pd.DataFrame(rows).fillna({"reason": ""})


def _error_sources(cells: pd.Series, tags: pd.Series) -> pd.DataFrame:
    """Items per tag within each outcome (false positive, false negative, correct)."""
    rows = []
    for outcome in ("false_positive", "false_negative", "correct"):
        ids = cells.index[cells == outcome]
        if not len(ids):
            continue
        item_tags = tags.reindex(ids)
        item_tags = item_tags.map(lambda t: t if isinstance(t, list) and t else [NO_TAG])
        counts = item_tags.explode().value_counts()
        for tag, count in sorted(counts.items(), key=lambda kv: (kv[0] == NO_TAG, -kv[1], kv[0])):
            rows.append({"outcome": outcome, "tag": tag, "items": int(count), "outcome_items": len(ids),
                         "share": count / len(ids)})
    return pd.DataFrame(rows, columns=["outcome", "tag", "items", "outcome_items", "share"])


def _weighted(validation_set: pd.DataFrame, scored: pd.DataFrame, ref: pd.Series, weak_rows: pd.Series, weak: str,
              n_boot: int, alpha: float, rng) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Design-weighted estimates for the sampled pool, the per-stratum design table, and a note.

    A stratum's pool is its `pool_size` column, or else the sum of its sampled items' design weights
    (pool_size / sample_size each); it is spread over the stratum's *scored* items: weight = pool_size /
    n_scored. Sampled items that drop out of scoring then no longer shrink their stratum's share of the pool.
    """
    vs = validation_set.assign(item_id=validation_set["item_id"].astype(str)).set_index("item_id")
    inside = scored.index.isin(vs.index)
    if not inside.any():
        raise InputError("none of the scored items is in the validation set; is it the sample of this task?")
    sub = scored[inside]
    has_weak = vs.index.isin(weak_rows.index[weak_rows.notna()])
    design = pd.DataFrame({"stratum": vs["stratum"], "weight": vs["weight"], "scored": vs.index.isin(sub.index),
                           "no_reference": ~vs.index.isin(ref.index),
                           "no_weak": vs.index.isin(ref.index) & ~has_weak})
    strata = design.groupby("stratum", sort=True).agg(
        pool_size=("weight", "sum"), design_weight=("weight", "first"), sampled=("weight", "size"),
        scored=("scored", "sum"), no_reference=("no_reference", "sum"), no_valid_weak_label=("no_weak", "sum"))
    pool_column = pd.to_numeric(vs["pool_size"], errors="coerce") if "pool_size" in vs.columns else None
    if pool_column is not None and pool_column.notna().all():  # the pool sizes as drawn (exact)
        strata["pool_size"] = pool_column.groupby(vs["stratum"]).first()
    strata["pool_size"] = strata["pool_size"].round(6)
    strata["dropped"] = strata["sampled"] - strata["scored"]
    strata["weight"] = (strata["pool_size"] / strata["scored"]).where(strata["scored"] > 0)
    strata = strata.reset_index()[["stratum", "pool_size", "sampled", "scored", "dropped", "no_reference",
                                   "no_valid_weak_label", "design_weight", "weight"]]
    item_strata = vs.loc[sub.index, "stratum"]
    weights = item_strata.map(strata.set_index("stratum")["weight"]).to_numpy(dtype=float)
    metrics_w, _ = weak_vs_reference(sub["reference"].to_numpy(), sub["weak"].to_numpy(), n_boot=n_boot, alpha=alpha,
                                     rng=rng, weights=weights, strata=item_strata.to_numpy())
    weighted = metrics_w.assign(pool=float(weights.sum()), reason=metrics_w["reason"].fillna(""))
    notes = []
    if (~inside).any():
        notes.append(f" {int((~inside).sum())} scored items are not in the validation set and are left out of the "
                     "weighted estimates.")
    dropped = int(strata["dropped"].sum())
    if dropped:
        notes.append(f" {dropped} of the {len(vs)} sampled items were not scored; their strata's pools are spread over "
                     "the scored items of the same stratum (see design_strata).")
    empty = strata[strata["scored"] == 0]
    for row in empty.itertuples():
        notes.append(f" Stratum {row.stratum} has no scored item: its pool of {row.pool_size:g} items is not "
                     "covered by the weighted estimates.")
    if "weak_labeler" in vs.columns and (vs["weak_labeler"].astype(str) != weak).any():
        notes.append(f" The sample was stratified by '{vs['weak_labeler'].iloc[0]}', not by '{weak}'; the weights "
                     "still follow the sampling design.")
    return weighted, strata, "".join(notes)


def _fmt_ci(row) -> str:
    if not np.isfinite(row["estimate"]):
        return f"n/a ({row['reason']})"
    if np.isfinite(row["ci_low"]):
        return f"{row['estimate']:.3f} [95% CI {row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    return f"{row['estimate']:.3f}"


def agreement_report(labels: pd.DataFrame, task: str, *, weak_labeler: str | None = None,
                     annotators: Sequence[str] | None = None, reference: str | None = None,
                     validation_set: pd.DataFrame | None = None, n_boot: int = 2000, alpha: float = 0.05,
                     seed: int = 0) -> Result:
    """The agreement report of one task: human-human agreement and the weak labeler against the reference.

    `annotators`: the human labelers whose independent labels are compared (default: every labeler of
    kind 'human' for the task). `reference`: a labeler whose labels are the reference (default: the
    adjudicated labels, else the annotators' agreed labels; see the module docstring).
    `validation_set`: the sample the items came from (`sample_for_validation`); adds design-weighted
    estimates for the sampled pool. Bootstraps: `n_boot` item resamples, percentile (1 - alpha) CIs,
    seeded with `seed`.
    """
    if n_boot < 0:
        raise InputError(f"the number of bootstrap resamples must be non-negative, got {n_boot}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha {alpha} must lie strictly between 0 and 1")
    rows = _task_labels(labels, task)
    weak = choose_weak_labeler(labels, task, weak_labeler)
    names = set(rows["labeler"])
    if annotators is None:
        annotators = sorted(rows.loc[(rows["kind"] == "human") & (rows["labeler"] != reference), "labeler"].unique())
    else:
        annotators = list(dict.fromkeys(annotators))
        unknown = [a for a in annotators if a not in names]
        if unknown:
            raise InputError(f"annotator '{unknown[0]}' has no labels for task '{task}'; labelers: {_labelers(rows)}")
    if reference is not None and reference not in names:
        raise InputError(f"reference labeler '{reference}' has no labels for task '{task}'; labelers: {_labelers(rows)}")
    if weak in annotators or weak == reference:
        raise InputError(f"'{weak}' cannot be both the weak labeler and an annotator or the reference")
    rng = np.random.default_rng(seed)

    # ---- human-human agreement, before adjudication (kind 'human' rows are the independent labels)
    human = rows[rows["labeler"].isin(annotators)]
    matrix = human.pivot(index="item_id", columns="labeler", values="value").reindex(columns=annotators)
    matrix = matrix.astype("float")  # NaN: not labelled, or an invalid answer
    invalid_human = human.groupby("labeler")["value"].apply(lambda v: int(v.isna().sum()))
    alpha_table = pd.DataFrame()
    if len(annotators) >= 2:
        pairs = _human_agreement(matrix, annotators, n_boot, alpha, rng)
        if (pairs["n"] == 0).all():
            who = " and ".join(annotators) if len(annotators) == 2 else "any two of " + ", ".join(annotators)
            raise InputError(f"annotators {who} have no labelled item in common; agreement needs items labelled by "
                             "both (give them overlapping items)")
        if len(annotators) > 2:
            k = krippendorff_alpha(matrix.to_numpy().T, n_boot=n_boot, alpha=alpha, rng=rng)
            alpha_table = pd.DataFrame([{"annotators": ", ".join(annotators), "level": "nominal",
                                         "alpha": k["estimate"], "ci_low": k["ci_low"], "ci_high": k["ci_high"],
                                         "se": k["se"], "n_items": k["n_items"], "n_values": k["n_values"],
                                         "n_boot": k["n_boot"], "n_failed": k["n_failed"],
                                         "status": "ok" if k["reason"] is None else "undefined",
                                         "reason": k["reason"]}])
    else:
        source = f"'{annotators[0]}'" if annotators else "none"
        pairs = pd.DataFrame([{"annotator_a": annotators[0] if annotators else None, "annotator_b": None, "n": 0,
                               "observed_agreement": np.nan, "kappa": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                               "se": np.nan, "n_boot": 0, "n_failed": 0, "status": "unavailable",
                               "reason": f"one human label source only ({source}); human-human agreement needs "
                                         "two annotators' independent labels before adjudication"}])

    # ---- the reference and the weak labels
    ref, composition, ref_desc = _reference(rows, annotators, reference)
    if ref.empty:
        raise InputError(f"no reference labels for task '{task}': no adjudicated label, no agreed human label"
                         + (f" and no valid label from '{reference}'" if reference else "")
                         + f" (labelers: {_labelers(rows)})")
    weak_rows = rows[rows["labeler"] == weak].set_index("item_id")["value"]
    joined = pd.DataFrame({"reference": ref}).join(weak_rows.rename("weak"), how="left")
    no_weak = int((~joined.index.isin(weak_rows.index)).sum())
    invalid_weak = int(joined.index.isin(weak_rows.index[weak_rows.isna()]).sum())
    scored = joined.dropna(subset=["weak"]).astype(int)
    if scored.empty:
        raise InputError(f"the weak labeler '{weak}' has no valid label on any of the {len(ref)} reference items")
    composition = pd.concat([composition, pd.DataFrame([
        {"source": f"reference items without a label from {weak}: left out", "items": no_weak},
        {"source": f"reference items with an invalid label from {weak}: left out", "items": invalid_weak},
        {"source": "items scored (reference and weak label)", "items": len(scored)}])], ignore_index=True)

    metrics, table = weak_vs_reference(scored["reference"].to_numpy(), scored["weak"].to_numpy(), n_boot=n_boot,
                                       alpha=alpha, rng=rng)
    metrics["reason"] = metrics["reason"].fillna("")
    confusion = pd.DataFrame({"reference": ["0 (negative)", "1 (positive)", "total"],
                              "weak_0": [int(table[0, 0]), int(table[1, 0]), int(table[:, 0].sum())],
                              "weak_1": [int(table[0, 1]), int(table[1, 1]), int(table[:, 1].sum())],
                              "total": [int(table[0].sum()), int(table[1].sum()), int(table.sum())]})
    rates = [{"labeler": weak, "role": "weak labeler", "n": len(scored), "positives": int(scored["weak"].sum()),
              "positive_rate": scored["weak"].mean()},
             {"labeler": "reference", "role": "reference", "n": len(scored),
              "positives": int(scored["reference"].sum()), "positive_rate": scored["reference"].mean()}]
    for a in annotators:
        vals = matrix[a].reindex(scored.index).dropna()
        rates.append({"labeler": a, "role": "annotator", "n": len(vals), "positives": int(vals.sum()),
                      "positive_rate": vals.mean() if len(vals) else np.nan})
    rates = pd.DataFrame(rates)

    # ---- design-weighted estimates for the pool the sample was drawn from
    weighted, strata_table, design_note = pd.DataFrame(), pd.DataFrame(), ""
    if validation_set is not None:
        weighted, strata_table, design_note = _weighted(validation_set, scored, ref, weak_rows, weak, n_boot, alpha,
                                                        rng)
    # ---- error sources: tags that annotators (and the adjudicator) gave to the weak labeler's errors
    taggers = [*annotators, *([reference] if reference else [])]
    tag_rows = rows[rows["labeler"].isin(taggers) | (rows["kind"] == "adjudicated")]
    item_tags = tag_rows["tags"].map(parse_tags) if "tags" in tag_rows else pd.Series([[]] * len(tag_rows),
                                                                                        index=tag_rows.index)
    tags = (tag_rows.assign(_tags=item_tags).groupby("item_id")["_tags"]
            .agg(lambda lists: sorted({t for ts in lists for t in ts})))
    outcome = pd.Series(np.where(scored["weak"] == scored["reference"], "correct",
                                 np.where(scored["weak"] == 1, "false_positive", "false_negative")), index=scored.index)
    errors = _error_sources(outcome, tags)

    # ---- text
    m = metrics.set_index("metric")
    lines = [f"Task '{task}': the weak labeler '{weak}' against {ref_desc}, on {len(scored):,} items.",
             f"Agreement {_fmt_ci(m.loc['observed_agreement'])}; Cohen's kappa {_fmt_ci(m.loc['kappa'])}; "
             f"precision {_fmt_ci(m.loc['precision'])}; recall {_fmt_ci(m.loc['recall'])}; "
             f"F1 {_fmt_ci(m.loc['f1'])}; macro-F1 {_fmt_ci(m.loc['macro_f1'])}.",
             f"The weak labels are positive for {rates.loc[0, 'positive_rate']:.1%} of the items, the reference for "
             f"{rates.loc[1, 'positive_rate']:.1%}."]
    ok_pairs = pairs[pairs["status"] != "unavailable"]
    if ok_pairs.empty:
        lines.append(f"Human-human agreement: unavailable ({pairs['reason'].iat[0]}).")
    else:
        for _, p in ok_pairs.iterrows():
            lines.append(f"Human-human ({p['annotator_a']} vs {p['annotator_b']}, {p['n']} items, before "
                         f"adjudication): agreement {p['observed_agreement']:.3f}, Cohen's kappa "
                         + (_fmt_ci({'estimate': p['kappa'], 'ci_low': p['ci_low'], 'ci_high': p['ci_high'],
                                     'reason': p['reason']})) + ".")
    if not alpha_table.empty:
        a = alpha_table.iloc[0]
        lines.append(f"Krippendorff's alpha over {len(annotators)} annotators: "
                     + _fmt_ci({"estimate": a["alpha"], "ci_low": a["ci_low"], "ci_high": a["ci_high"],
                                "reason": a["reason"]}) + ".")
    unresolved = int(composition.loc[composition["source"].str.startswith("annotators disagree"), "items"].sum())
    if unresolved:
        lines.append(f"{unresolved} items on which the annotators disagree have no adjudicated label and are left out "
                     "of the reference: the weak-labeler scores then favour the easier, agreed items.")
    summary = " ".join(lines)

    sections = [
        Section("Summary", summary, {"reference": composition}),
        Section("Human-human agreement (before adjudication)",
                "Cohen's kappa per pair of annotators on the items both labelled with a valid 0/1 label, with an "
                f"item-bootstrap percentile {1 - alpha:.0%} CI ({n_boot} resamples); observed agreement is the share "
                "of those items with the same label. Krippendorff's alpha (nominal, missing labels allowed) when "
                "there are more than two annotators. Invalid human answers: "
                + (", ".join(f"{k}: {v}" for k, v in invalid_human.items()) or "none") + ".",
                {"human_agreement": pairs, **({"krippendorff_alpha": alpha_table} if not alpha_table.empty else {})}),
        Section("Weak labeler against the reference",
                f"Positive class = 1. Precision = weak positives that the reference confirms; recall = reference "
                "positives the weak labeler finds; macro-F1 = mean of the F1 of class 1 and class 0; kappa from the "
                f"2 x 2 table. {1 - alpha:.0%} item-bootstrap percentile CIs ({n_boot} resamples). A metric whose "
                "denominator is zero is undefined (reason given). Estimates describe the scored items as they were "
                "drawn; for a sample that over-represents a stratum see the design-weighted table.",
                {"weak_vs_reference": metrics, "confusion_matrix": confusion, "positive_rates": rates}),
    ]
    if not weighted.empty:
        sections.append(Section(
            "Design-weighted estimates for the sampled pool",
            "Each scored item counts pool_size / (scored items of its stratum), the stratum being the weak label it "
            "was drawn under, so these estimate the metrics on the whole pool the sample came from; CIs resample "
            "items within strata. Sampled items that could not be scored (no reference label, e.g. an unresolved "
            "disagreement, or no valid weak label) are counted per stratum in `design_strata`; the estimates treat "
            "them as missing at random within their stratum. Precision is the same as unweighted when the strata are "
            "the weak labels." + design_note,
            {"weak_vs_reference_weighted": weighted, "design_strata": strata_table}))
    sections.append(Section(
        "Error sources of the weak labeler",
        "Error-source tags the annotators and the adjudicator gave to each item, counted for the weak labeler's false "
        "positives, false negatives and correct items (an item counts once per tag; share = items with the tag / "
        "items with that outcome)." + ("" if (errors["tag"] != NO_TAG).any() else " No tags were recorded."),
        {"error_sources": errors}))
    options = {"task": task, "weak_labeler": weak, "annotators": list(annotators), "reference": reference,
               "reference_rule": ref_desc, "n_boot": n_boot, "alpha": alpha, "seed": seed,
               "validation_set": validation_set is not None}
    return Result(title=f"Weak-label validation: task {task}, weak labeler {weak}", sections=sections, options=options)
