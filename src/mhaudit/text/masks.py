"""The masking suite: text interventions applied before featurising (TSS paper section 4.6).

A mask rewrites each text from its parse; every channel then featurises the masked text (re-parsed for channels B
and C), so no feature of a masked run sees the unmasked words. The masks (none, pos_only, content_only,
function_only, random_pos, the negative control) are described in docs/divergence.md; content words are tokens
whose universal POS is in CONTENT_POS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # an annotation only: the label-source audit's options import MASKS without the parser
    from mhaudit.text.parse import Parses

__all__ = ["MASKS", "CONTENT_POS", "apply_mask"]

MASKS = ("none", "pos_only", "content_only", "function_only", "random_pos")
CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM", "INTJ")


def apply_mask(texts, parses: Parses, mask: str, *, seed: int = 0) -> list[str]:
    """The masked texts, one per document of `parses` (which must be the parse of `texts`)."""
    if mask not in MASKS:
        raise ValueError(f"unknown mask '{mask}'; choose from {', '.join(MASKS)}")
    texts = [str(t) for t in texts]
    if mask == "none":
        return texts
    content = np.isin(parses["pos"], CONTENT_POS)
    words = parses["word"].astype(object).copy()
    keep = {"content_only": content, "function_only": ~content}.get(mask, np.ones(words.size, dtype=bool))
    if mask == "pos_only":
        words[content] = parses["pos"][content]
    elif mask == "random_pos":
        rng = np.random.default_rng(seed)
        words[content] = np.asarray(CONTENT_POS, dtype=object)[rng.integers(len(CONTENT_POS), size=int(content.sum()))]
    offsets = parses.offsets
    return [
        " ".join(w for w, k in zip(words[lo:hi], keep[lo:hi]) if k and not w.isspace())
        for lo, hi in zip(offsets[:-1], offsets[1:])
    ]
