"""The measured recall of the built-in filters, packaged (`recall.toml`), for users without the labelled sets.

`benchmarks/lexicon_recall.py` measures each built-in filter and writes `recall.toml` here (docs/collect.md,
"Recall of the collection"). `measured_recall` looks a filter up by its lexicons' SHA-256: an edited or a custom
lexicon has no measured recall, and says so. `collection_filters` reads which filters a post store's runs used.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import resources

__all__ = ["TABLE", "collection_filters", "measured_recall", "recall_sentence"]

TABLE = "recall.toml"


@cache
def _entries() -> tuple[dict, ...]:
    return tuple(tomllib.loads(resources.files(__package__).joinpath(TABLE).read_text(encoding="utf-8"))["filters"])


def measured_recall(lexicons: Mapping[str, str]) -> dict | None:
    """The packaged entry of the filter made of exactly these lexicons (name -> SHA-256, in any order), or None."""
    wanted = dict(lexicons)
    return next((entry for entry in _entries() if entry["lexicons"] == wanted), None)


def recall_sentence(lexicons: Mapping[str, str]) -> str:
    """One sentence: the share of the Bluesky depression set's depressive posts the filter keeps (95% CI), its
    precision there and the share of a general stream it keeps; or that its recall was never measured."""
    name = "+".join(lexicons)
    entry = measured_recall(lexicons)
    if entry is None:
        return (
            f"the collection's filter ({name}) has no measured recall (a custom or edited lexicon: run "
            "`mhaudit collect recall --lexicon FILE` on labelled data)"
        )
    full, held = entry["bluesky_depression"], entry["bluesky_depression_held_out"]
    # the wide lexicon was written looking at half the set: its honest recall is the other half's
    tuned = f"{held['recall']:.3f} on the half it was not tuned on; " if "wide" in lexicons else ""
    return (
        f"the collection's filter ({entry['filter']}) keeps an estimated {full['recall']:.3f} (95% CI "
        f"{full['recall_ci_low']:.3f}–{full['recall_ci_high']:.3f}) of the depressive posts of the Bluesky "
        f"depression set ({tuned}precision {full['precision']:.3f} at a base rate of {full['base_rate']:.3f}; "
        f"it keeps {entry['general_stream']['keep_share']:.1%} of a general stream, GoEmotions)"
    )


def collection_filters(store) -> list[dict[str, str]]:
    """The distinct filters (lexicon name -> SHA-256) of a post store's recorded runs, in the order first used."""
    found: list[dict[str, str]] = []
    for (lexicons,) in store.read("SELECT lexicons FROM runs ORDER BY started_at"):
        value = json.loads(lexicons) if lexicons else {}
        if value and value not in found:
            found.append(value)
    return found
