"""Several weak labelers of one task combined into one label by a label model (docs/labels.md, "Combining weak
labelers"): `combine_labels` reads the labels table, turns each source's labels into votes, fits
`stats.label_model.combine_votes` and returns the combined labeler's rows (kind `combined`, `value` and
`probability`) with a per-source table of estimates made without any reference label; `save_combined` writes the
rows to a label store or a new label file.

Votes: a source's 1 is a vote for class 1; its 0 is a vote for class 0, except for a lexicon (a 0 there means "no
term matched"), whose 0 is an abstention unless it is named in `zero_votes`. An item a source has no row for, or
a null value, is an abstention. Items no source votes on get no combined label.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.core.threads import thread_budget
from mhaudit.stats.label_model import ABSTAIN, LabelModelFit, combine_votes
from mhaudit.tables.io import TABLE_SUFFIXES
from mhaudit.tables.label_store import COLUMNS, STORE_SUFFIXES, LabelStore, now, write_labels
from mhaudit.tables.labeler_names import full_labeler_name
from mhaudit.tables.reference_labels import task_labels
from mhaudit.weak_supervision.combine_options import ABSTAIN_ON_ZERO, SOURCE_KINDS, CombineOptions

__all__ = ["CombinedLabels", "Source", "combine_labels", "source_votes", "check_destination", "save_combined"]


@dataclass(frozen=True)
class Source:
    """One weak labeler as a source: its name in the labels table, its kind, and whether its 0 is a vote."""

    labeler: str
    kind: str
    zero_votes: bool


@dataclass(frozen=True)
class CombinedLabels:
    """What `combine_labels` made. `labels`: the combined labeler's rows (the labels table's columns and
    `probability`), one per item at least one source voted on; `estimates`: one row per source; `votes`: the vote
    matrix (items x sources: 1, 0 or -1 for an abstention) the label model read; `fit`: the label model's fit."""

    name: str
    task: str
    method: str
    sources: tuple[Source, ...]
    labels: pd.DataFrame
    estimates: pd.DataFrame
    votes: pd.DataFrame
    fit: LabelModelFit
    items_without_votes: int

    @property
    def summary(self) -> str:
        """One line: what was combined and what came out."""
        value = self.labels["value"]
        balance = float(self.fit.class_balance[1])
        run = (
            ""  # majority and the triplet method are closed-form: nothing to converge
            if self.method != "dawid-skene"
            else f" (converged after {self.fit.n_iter} iterations)"
            if self.fit.converged
            else f" (did NOT converge in {self.fit.n_iter} iterations: raise --max-iter)"
        )
        return (
            f"{self.name}: {len(self.labels):,} items of task {self.task} from {len(self.sources)} sources by "
            f"{self.method}{run}; class balance {balance:.3f} of class 1; {int((value == 1).sum()):,} labelled 1, "
            f"{int((value == 0).sum()):,} labelled 0, {int(value.isna().sum()):,} ties (probability 0.5, no label); "
            f"{self.items_without_votes:,} items without any vote left out"
        )


def _resolve_sources(rows: pd.DataFrame, task: str, options: CombineOptions) -> tuple[Source, ...]:
    """The sources' full names and kinds, and their zero-vote setting; one sentence for each bad name."""
    names = [full_labeler_name(rows, name, task, role="--labeler") for name in options.labelers]
    repeated = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if repeated:
        raise InputError(f"--labeler names '{repeated[0]}' twice; give each source once")
    kinds = rows.groupby("labeler")["kind"].first()
    for name in names:
        if kinds[name] in ("human", "adjudicated"):
            raise InputError(
                f"--labeler '{name}' holds people's labels (kind {kinds[name]}), never a source of a combined label: "
                "they are the reference it is judged against (mhaudit audit agreement); combine weak labelers "
                f"({', '.join(SOURCE_KINDS)})"
            )
        if kinds[name] not in SOURCE_KINDS:
            raise InputError(
                f"--labeler '{name}' is of kind {kinds[name]}; the sources of a combined label are weak labelers "
                f"(kinds {', '.join(SOURCE_KINDS)})"
            )
    own = rows[rows["labeler"].isin(names)]
    zero = set()
    for name in options.zero_votes:
        try:
            zero.add(full_labeler_name(own, name, task, role="--zero-votes"))
        except InputError:
            raise InputError(
                f"--zero-votes '{name}' is not one of the sources ({', '.join(names)}); name a --labeler"
            ) from None
    return tuple(Source(n, str(kinds[n]), n in zero or kinds[n] not in ABSTAIN_ON_ZERO) for n in names)


def source_votes(rows: pd.DataFrame, sources: tuple[Source, ...]) -> pd.DataFrame:
    """The vote matrix: one row per item any source has a label row for (sorted by id), one column per source;
    1, 0, or ABSTAIN (-1) where the source has no row, a null value, or a 0 that is not a vote."""
    names = [s.labeler for s in sources]
    mine = rows[rows["labeler"].isin(names)]
    values = mine.pivot(index="item_id", columns="labeler", values="value").reindex(columns=names).sort_index()
    votes = values.astype("Float64").fillna(ABSTAIN).astype(int)
    for source in sources:
        if not source.zero_votes:
            votes.loc[votes[source.labeler] == 0, source.labeler] = ABSTAIN
    votes.columns.name = None
    return votes


def _check_sources(rows: pd.DataFrame, sources: tuple[Source, ...], votes: pd.DataFrame, method: str) -> None:
    """One sentence for a source that says the same of every item, no overlap, or too few sources for the method."""
    for source in sources:
        given = rows.loc[(rows["labeler"] == source.labeler) & rows["value"].notna(), "value"].astype(int)
        if given.empty:
            raise InputError(f"--labeler '{source.labeler}' has no 0/1 label for this task (every value is null)")
        if given.nunique() == 1:
            raise InputError(
                f"--labeler '{source.labeler}' ({source.kind}) gives the label {given.iat[0]} to every one of its "
                f"{len(given):,} items; a source that says the same of every item tells a label model nothing: "
                "leave it out"
            )
    voted = votes.to_numpy() != ABSTAIN
    if not (voted.sum(axis=1) >= 2).any():
        raise InputError(
            "no item has votes from two of the sources (" + ", ".join(s.labeler for s in sources) + "); a label "
            "model learns from where sources vote together (a lexicon's 0 is no vote unless --zero-votes names it)"
        )
    if method == "label-model":
        together = voted.T.astype(int) @ voted.astype(int) > 0  # sources voting on a common item
        np.fill_diagonal(together, False)
        triangle = (together.astype(int) @ together.astype(int) * together).any()
        if not triangle:
            raise InputError(
                "the label model needs three sources of which each pair votes on common items; these sources do not "
                "(use --method dawid-skene or majority, or add a source)"
            )


def _recipe(task: str, method: str, sources: tuple[Source, ...], options: CombineOptions, rows: pd.DataFrame):
    """How the combined labeler was made: the note (JSON) and its SHA-256 with the input labels (prompt_hash)."""
    recipe = {
        "method": method,
        "task": task,
        "sources": [{"labeler": s.labeler, "kind": s.kind, "zero_votes": s.zero_votes} for s in sources],
        "max_iter": options.max_iter,
        "tol": options.tol,
    }
    inputs = rows.loc[rows["labeler"].isin([s.labeler for s in sources]), ["item_id", "labeler", "value"]]
    text = inputs.sort_values(["labeler", "item_id"]).astype(str).to_csv(index=False, sep="\t")
    recipe_json = json.dumps(recipe, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256((recipe_json + "\n" + text).encode()).hexdigest()
    return json.dumps(recipe), digest


def _combined_rows(name: str, task: str, votes: pd.DataFrame, fit: LabelModelFit, note: str, digest: str):
    """The combined labeler's rows: value 1 where P(class 1) > 0.5, 0 where < 0.5, null at exactly 0.5."""
    probability = fit.probabilities[:, 1]
    value = pd.array(np.where(probability > 0.5, 1, 0), dtype="Int64")
    value[probability == 0.5] = pd.NA
    raw = [
        json.dumps({s: (None if v == ABSTAIN else int(v)) for s, v in zip(votes.columns, row)})
        for row in votes.to_numpy()
    ]
    frame = pd.DataFrame(
        {"item_id": votes.index.astype(str), "task": task, "labeler": name, "kind": "combined", "value": value}
    )
    frame = frame.assign(raw_answer=raw, prompt_hash=digest, note=note, created_at=now(), probability=probability)
    return frame.reindex(columns=[*COLUMNS, "probability"])


def _estimates(sources: tuple[Source, ...], votes: pd.DataFrame, fit: LabelModelFit, n_items: int) -> pd.DataFrame:
    """One row per source. coverage: the share of all `n_items` (every item any source has a row for, voted on or
    not) the source votes on; conflict and accuracy are the label model's (stats.label_votes)."""
    array = votes.to_numpy()
    n_votes = (array != ABSTAIN).sum(axis=0)
    ones = (array == 1).sum(axis=0)
    return pd.DataFrame(
        {
            "source": range(len(sources)),
            "labeler": [s.labeler for s in sources],
            "kind": [s.kind for s in sources],
            "zero_votes": [s.zero_votes for s in sources],
            "n_votes": n_votes,
            "votes_for_1": np.divide(ones, n_votes, out=np.full(len(sources), np.nan), where=n_votes > 0),
            "coverage": n_votes / n_items,
            "conflict": fit.conflict,
            "accuracy": fit.accuracy,
            "method": fit.method,
            "class_balance": float(fit.class_balance[1]),
            "converged": fit.converged,
            "n_iter": fit.n_iter,
        }
    )


def combine_labels(labels: pd.DataFrame, task: str, options: CombineOptions) -> CombinedLabels:
    """Combine `options.labelers` (weak labelers of `task` in `labels`, a labels table) into one labeler.

    An unknown task or labeler, people's labels as a source, a source that gives every item the same label, no
    item with two votes, or the label model without three co-voting sources is one InputError sentence.
    """
    rows = task_labels(labels, task)
    sources = _resolve_sources(rows, task, options)
    name = options.labeler_name
    taken = rows.loc[rows["labeler"] == name, "kind"]
    if not taken.empty and taken.iat[0] != "combined":
        raise InputError(
            f"--name '{name}' is a {taken.iat[0]} labeler of task '{task}'; name the combined one otherwise"
        )
    all_votes = source_votes(rows, sources)
    _check_sources(rows, sources, all_votes, options.method)
    votes = all_votes[(all_votes.to_numpy() != ABSTAIN).any(axis=1)]
    try:
        with thread_budget(1):  # the fit works on the distinct vote rows (at most 3^sources): one thread
            fit = combine_votes(votes.to_numpy(), 2, options.method, max_iter=options.max_iter, tol=options.tol)
    except ValueError as exc:  # what the label model cannot fit, said by it
        raise InputError(f"{options.method} cannot combine these sources: {exc}") from None
    note, digest = _recipe(task, options.method, sources, options, rows)
    return CombinedLabels(
        name=name,
        task=task,
        method=options.method,
        sources=sources,
        labels=_combined_rows(name, task, votes, fit, note, digest),
        estimates=_estimates(sources, votes, fit, len(all_votes)),
        votes=votes,
        fit=fit,
        items_without_votes=len(all_votes) - len(votes),
    )


def check_destination(
    task: str, name: str, *, into: Path | None, out: Path | None, replace: bool, estimates: Path | None = None
) -> None:
    """Before any work: exactly one of a label store (`into`) and a new label file (`out`); the combined labeler
    not yet in the store (or `replace`); the file not there yet (or `replace`); the estimates' file type."""
    if (into is None) == (out is None):
        raise InputError(
            "give --into STORE (add the combined labeler to a label store) or --out FILE (a new labels file), "
            + ("not both" if into else "got neither")
        )
    if estimates is not None and estimates.suffix.lower() not in TABLE_SUFFIXES:
        raise InputError(f"--estimates: expected a .parquet, .csv, .tsv or .jsonl file, got '{estimates.suffix}'")
    if into is not None:
        if into.suffix.lower() not in STORE_SUFFIXES:
            raise InputError(f"--into is a label store ({', '.join(STORE_SUFFIXES)}); for a labels file use --out")
        if into.exists() and not replace:
            with LabelStore(into) as store:
                stored = store.labelled(task, name)
            if stored:
                raise InputError(
                    f"labeler '{name}' already has {len(stored):,} labels for task '{task}' in {into}; "
                    "give another --name, or --replace to make it anew"
                )
    elif out is not None:
        if out.suffix.lower() not in TABLE_SUFFIXES or out.suffix.lower() == ".tsv":
            raise InputError(f"--out is a labels file (.parquet, .csv or .jsonl), got '{out.suffix}'")
        if out.exists() and not replace:
            raise InputError(f"{out} exists; give another --out, or --replace to write over it")


def save_combined(combined: CombinedLabels, *, into: Path | None = None, out: Path | None = None) -> Path:
    """Write the combined labeler's rows: into a label store (replacing that labeler's earlier labels for the task,
    in one transaction; `check_destination` refuses that unless asked), or as a new labels file, atomically."""
    records = combined.labels.to_dict("records")
    if into is not None:
        with LabelStore(into) as store:
            store.replace_labeler(combined.task, combined.name, records)
        return into
    if out is None:
        raise ValueError("save_combined needs into or out")
    return write_labels(combined.labels, out)
