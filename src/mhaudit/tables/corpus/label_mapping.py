"""Turn a source's raw records into a corpus: apply the label mapping and the multi-label policy,
and say where every row went (the mapping report)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.mappings import Mapping
from mhaudit.tables.corpus.policies import MultiLabelPolicy
from mhaudit.tables.corpus.schema import SCHEMA

__all__ = ["MultiLabelPolicy", "Labelled", "apply_mapping", "identity_mapping"]


@dataclass
class Labelled:
    frame: pd.DataFrame
    report: pd.DataFrame  # one row per raw label: assignments, class or drop, reason
    dropped: pd.DataFrame  # rows dropped, by reason


def identity_mapping(classes: list[str], name: str = "identity") -> Mapping:
    return Mapping(name, "raw labels kept as classes", "", list(classes), {c: c for c in classes})


def _unknown(records: pd.DataFrame, raws: pd.Series, mapping: Mapping) -> None:
    known = raws.map(mapping.knows)
    if known.all():
        return
    where = SCHEMA.where(records, records.index.get_loc(raws.index[~known.to_numpy()][0]), None)
    expected = sorted(set(mapping.targets) | set(mapping.dropped))
    raise InputError(
        f"{where}: label '{raws[~known].iat[0]}' is not known to mapping '{mapping.name}' "
        f"({int((~known).sum())} such labels); expected one of {', '.join(expected)}"
    )


def apply_mapping(
    records: pd.DataFrame,
    mapping: Mapping,
    policy: MultiLabelPolicy = MultiLabelPolicy.first,
    priority: list[str] | None = None,
) -> Labelled:
    """`records` has `raw_labels` (a list of raw label strings per row); returns labelled rows.

    Every raw label must be known to the mapping (mapped or explicitly dropped).
    """
    records = records.reset_index(drop=True)
    pairs = records["raw_labels"].explode().astype(str).str.strip()
    _unknown(records, pairs, mapping)
    target = pairs.map(mapping.target)
    report = _report(pairs, target, mapping)

    multi = records["raw_labels"].map(len) > 1
    policy = MultiLabelPolicy(policy)  # its value names it too; any other is a ValueError
    if policy is MultiLabelPolicy.expand:
        keep = target.notna()
        out = records.loc[pairs.index[keep]].copy()
        suffix = pairs[keep]
        ids = out["id"].astype(str).to_numpy()
        out["id"] = [f"{i}:{s}" if m else i for i, s, m in zip(ids, suffix, multi.loc[out.index])]
        out["label"] = target[keep].to_numpy()
        out["raw_label"] = suffix.to_numpy()
        reasons = pd.Series("label dropped by the mapping", index=pairs.index[~keep])
        return Labelled(
            out.reset_index(drop=True).drop(columns="raw_labels"), report, _count(reasons, "label assignments")
        )

    if policy is MultiLabelPolicy.first:
        label = target.groupby(level=0).head(1)
        reason = pd.Series("first listed label dropped by the mapping", index=records.index)
    elif policy is MultiLabelPolicy.priority:
        order = priority or mapping.priority or mapping.classes
        missing = set(mapping.classes) - set(order)
        if missing:
            raise InputError(f"priority order {order} leaves out class(es) {', '.join(sorted(missing))}")
        best = target.dropna().map({c: i for i, c in enumerate(order)}).groupby(level=0).min()  # the best rank
        label = best.map(dict(enumerate(order)))
        reason = pd.Series("every label dropped by the mapping", index=records.index)
    else:  # MultiLabelPolicy.drop_ambiguous
        kept = target.dropna()
        n_classes = kept.groupby(level=0).nunique().reindex(records.index, fill_value=0)
        label = kept.groupby(level=0).first().reindex(records.index).where(n_classes == 1)
        reason = pd.Series("every label dropped by the mapping", index=records.index)
        reason[n_classes > 1] = "ambiguous: labels map to more than one class"
    label = label.reindex(records.index)
    keep = label.notna()
    out = records[keep].copy()
    out["label"] = label[keep]
    out["raw_label"] = out["raw_labels"].map(",".join)
    return Labelled(out.reset_index(drop=True).drop(columns="raw_labels"), report, _count(reason[~keep], "rows"))


def _report(pairs: pd.Series, target: pd.Series, mapping: Mapping) -> pd.DataFrame:
    counts = pairs.value_counts(sort=False)
    rows = []
    for raw, n in counts.items():
        cls = mapping.target(raw)
        rows.append(
            {
                "raw_label": raw,
                "assignments": int(n),
                "class": cls or "",
                "outcome": "mapped" if cls else "dropped",
                "reason": "" if cls else mapping.dropped[raw],
            }
        )
    order = {c: i for i, c in enumerate(mapping.classes)}
    return (
        pd.DataFrame(rows)
        .assign(_o=lambda d: d["class"].map(order).fillna(len(order)))
        .sort_values(["_o", "assignments"], ascending=[True, False])
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def _count(reasons: pd.Series, unit: str) -> pd.DataFrame:
    return reasons.value_counts().rename_axis("reason").reset_index(name=unit)
