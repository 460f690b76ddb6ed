"""One task's rows of the labels table, and the reference label of each item (docs/validation.md, "The reference").

`task_labels` checks the table and keeps one task (one label per labeler and item). The agreement and the
certify audits both judge against the reference labels, so the rule lives here, once. A consensus with
raw_answer 'agreed' counts as adjudicated only while the annotators' current labels still agree with it; a
named reference labeler replaces the rule.
"""

from __future__ import annotations

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import KEY

__all__ = ["AGREED", "task_labels", "reference_labels"]

# raw_answer of a consensus row that records agreement (mhaudit.weak_supervision.annotate.adjudication)
AGREED = "agreed"


def task_labels(labels: pd.DataFrame, task: str) -> pd.DataFrame:
    """The rows of `task`, ids and labeler names as text; an error when a labeler labels an item twice."""
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
        raise InputError(
            f"item '{first['item_id']}' has two labels from '{first['labeler']}' for task '{task}'; "
            "one labeler writes one label per item"
        )
    return rows


def reference_labels(
    rows: pd.DataFrame, annotators: list[str], reference: str | None
) -> tuple[pd.Series, pd.DataFrame, str]:
    """Reference value per item, the composition table, and a one-line description."""
    if reference is not None:
        ref = rows[(rows["labeler"] == reference) & rows["value"].notna()].set_index("item_id")["value"].astype(int)
        invalid = int(((rows["labeler"] == reference) & rows["value"].isna()).sum())
        comp = pd.DataFrame(
            [
                {"source": f"labeler {reference}", "items": len(ref)},
                {"source": "invalid (no 0/1 label), left out", "items": invalid},
            ]
        )
        return ref, comp, f"the labels of '{reference}'"
    adjudicated = rows[rows["kind"] == "adjudicated"]
    adjudicators = sorted(adjudicated["labeler"].unique())
    if len(adjudicators) > 1:
        raise InputError(
            f"several adjudicated labelers ({', '.join(adjudicators)}); name the reference with --reference"
        )
    valid = rows[rows["labeler"].isin(annotators) & rows["value"].notna()]  # the annotators' valid labels
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
    comp = pd.DataFrame(
        [
            {"source": "adjudicated" + (f" ({adjudicators[0]})" if adjudicators else ""), "items": len(adj) - n_agreed},
            *(
                [{"source": f"consensus recording agreement ({adjudicators[0]})", "items": n_agreed}]
                if n_agreed
                else []
            ),
            *(
                [
                    {
                        "source": f"outdated 'agreed' consensus ({adjudicators[0]}): "
                        "an annotator changed their label since; "
                        "ignored",
                        "items": len(outdated),
                    }
                ]
                if len(outdated)
                else []
            ),
            {"source": "annotators agree (2 or more labels)", "items": int(several.sum())},
            {"source": "one annotator's label only", "items": int((~several).sum())},
            {"source": "annotators disagree, not adjudicated: left out", "items": len(unresolved)},
        ]
    )
    if adjudicators and not len(from_agreement):
        desc = f"the adjudicated labels of '{adjudicators[0]}'"
    elif adjudicators:
        desc = f"the adjudicated labels of '{adjudicators[0]}', else the annotators' agreed label"
    elif len(annotators) == 1:
        desc = f"the labels of the single human label source '{annotators[0]}'"
    else:
        desc = "the annotators' label where they agree (no adjudication recorded: disagreements are left out)"
    return ref.rename("reference"), comp, desc
