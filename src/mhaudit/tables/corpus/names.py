"""Naming a platform or a data set: one check, one sentence, for every place that takes such a name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from mhaudit.core.errors import InputError


def check_place(
    name: str, platforms: Iterable[str], datasets: Iterable[str], *, what: str, where: str = "here", hint: str = ""
) -> None:
    """`name` is one of the `platforms` or `datasets`, else an InputError: `what` (e.g. "reference platform") and the
    name, the nearest known name where one is close (a typo), then the platforms and the data sets, each apart (no
    platforms: data sets alone)."""
    platforms, datasets = sorted(set(map(str, platforms))), sorted(set(map(str, datasets)))
    if name in platforms or name in datasets:
        return
    near = difflib.get_close_matches(name, platforms + datasets, n=1)
    lists = (f"platforms: {', '.join(platforms)}; " if platforms else "") + f"data sets: {', '.join(datasets)}"
    raise InputError(
        f"{what} '{name}' is {'neither a platform nor' if platforms else 'not'} a data set {where}"
        + (f" (did you mean '{near[0]}'?)" if near else "")
        + f"; {lists}{hint}"
    )
