"""A labeler named by the user, resolved to its name in the labels table. A lexicon labeler writes its full name
(`lexicon:mh@ee7f3c894ccc`: kind, lexicon, hash of the lexicon); `mh` or `lexicon:mh` names it where that names
one labeler of the task. Every audit that takes labeler names resolves them here, so each route accepts both."""

from __future__ import annotations

import difflib
from dataclasses import replace

import pandas as pd

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import KINDS

__all__ = ["full_labeler_name", "with_full_labeler_names"]


def _short_names(labeler: str) -> set[str]:
    """'lexicon:mh@ee7f…' -> {'lexicon:mh', 'mh'}: the part before '@', and that part after a 'kind:' prefix."""
    if "@" not in labeler:
        return set()
    stem = labeler.split("@", 1)[0]
    kind, _, rest = stem.partition(":")
    return {stem, rest} if kind in KINDS and rest else {stem}


def full_labeler_name(labels: pd.DataFrame, name: str, task: str | None = None, *, role: str = "labeler") -> str:
    """`name` as the labels table writes it: itself where a labeler of `task` (any task when None) has it, else the
    one labeler it is a short name of; none or several is an InputError naming the candidates."""
    rows = labels if task is None else labels[labels["task"].astype(str) == str(task)]
    kinds = rows.assign(labeler=rows["labeler"].astype(str)).groupby("labeler")["kind"].first()
    if name in kinds.index:
        return name
    matches = [labeler for labeler in kinds.index if name in _short_names(labeler)]
    if len(matches) == 1:
        return matches[0]
    where = f" for task '{task}'" if task is not None else ""
    if matches:
        raise InputError(f"{role} '{name}' names several labelers{where} ({', '.join(matches)}); give its full name")
    spellings = {short: labeler for labeler in kinds.index for short in (labeler, *_short_names(labeler))}
    near = difflib.get_close_matches(name, list(spellings), n=1)
    raise InputError(
        f"{role} '{name}' has no labels{where}"
        + (f" (did you mean '{near[0]}'?)" if near else "")
        + "; labelers: "
        + ", ".join(f"{labeler} ({kind})" for labeler, kind in kinds.items())
    )


def with_full_labeler_names(options, labels: pd.DataFrame, task: str, **roles: str):
    """`options` (a dataclass) with each of its fields in `roles` (field -> the role named in errors) resolved by
    `full_labeler_name`: a name, or a tuple of names; None stays None."""

    def full(value, role: str):
        if value is None or isinstance(value, str):
            return value if value is None else full_labeler_name(labels, value, task, role=role)
        return tuple(full_labeler_name(labels, v, task, role=role) for v in value)

    return replace(options, **{field: full(getattr(options, field), role) for field, role in roles.items()})
