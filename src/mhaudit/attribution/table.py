"""Word-type attributions per class: the ``class, word, score, count, method`` part of the Attributions table
(``attribution_table``; the caller adds model, seed, platform and dataset)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mhaudit.attribution.gradients import (
    as_texts,
    integrated_gradients_pieces,
    output_count,
    predicted_classes,
    saliency_pieces,
)
from mhaudit.attribution.words import merge_words, piece_scheme

METHODS = ("saliency", "integrated_gradients")
COLUMNS = ["class", "word", "score", "count", "method"]


def attribution_table(
    model,
    tokenizer,
    texts,
    classes,
    *,
    method: str = "saliency",
    target: str | None = None,
    labels=None,
    max_length: int = 64,
    sample: int | None = 200,
    seed: int = 0,
    only=None,
    batch_size: int = 16,
    n_steps: int = 50,
    baseline: str = "pad",
) -> pd.DataFrame:
    """Word-type attributions per class: the ``class, word, score, count, method`` part of the table.

    ``classes`` names the model's outputs in logit order. At most ``sample`` texts (all when None) are drawn with
    ``numpy.random.default_rng(seed)`` and each is attributed (``method`` "saliency" or "integrated_gradients") to
    its target class: the true label (``target="true"``, ``labels`` class names or indices aligned with ``texts``;
    the default when labels are given) or the predicted class; ``only`` keeps some classes. Pieces are merged into
    words, a word's score the sum of its pieces' (``merge_words``; with a slow tokenizer ``merge_subwords``).
    Per (class, word): ``score`` is the mean attribution over the word's occurrences, ``count`` their number;
    rows by class (logit order), score descending, then word. ``frame.attrs`` records the method, target, sampled
    positions and, for Integrated Gradients, the largest absolute convergence delta. docs/attributions.md
    ("Merging and aggregation") gives the rules in full.
    """
    target = _checked_target(method, target, labels)
    texts = as_texts(texts)
    classes, keep = _checked_classes(model, classes, only)
    picked = _sample(len(texts), sample, seed)
    chosen = [texts[i] for i in picked]
    if target == "true":
        targets = np.asarray(_label_index(labels, classes, len(texts)), dtype=int)[picked]
    else:
        targets = predicted_classes(model, tokenizer, chosen, max_length, batch_size)
    wanted = [j for j, t in enumerate(targets) if classes[t] in keep]
    chosen, targets = [chosen[j] for j in wanted], [int(targets[j]) for j in wanted]

    delta_max = None
    if not chosen:
        per_text = []
    elif method == "saliency":
        per_text = saliency_pieces(model, tokenizer, chosen, targets, max_length, batch_size)
    else:
        per_text, deltas = integrated_gradients_pieces(
            model, tokenizer, chosen, targets, max_length, n_steps, baseline, "probability", batch_size, None
        )
        delta_max = float(np.max(np.abs(deltas)))

    scheme = piece_scheme(tokenizer)
    totals, spans_used = _word_totals(chosen, targets, per_text, scheme, (tokenizer.unk_token or "").lower())
    frame = _frame(totals, classes, method)
    frame.attrs.update(
        {
            "method": method,
            "target": target,
            "seed": int(seed),
            "max_length": int(max_length),
            "sample_index": [int(i) for i in picked],
            "n_attributed": len(chosen),
            "words": ("word_ids" if spans_used else f"pieces ({scheme})") if chosen else None,
            "convergence_delta_max": delta_max,
        }
    )
    return frame


def _checked_target(method: str, target: str | None, labels) -> str:
    """The target ('true' with labels, else 'predicted' by default); ValueError on a bad method or target."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if target is None:
        target = "predicted" if labels is None else "true"
    if target not in ("true", "predicted"):
        raise ValueError(f"target must be 'true' or 'predicted', got {target!r}")
    if target == "true" and labels is None:
        raise ValueError("target='true' needs labels (one per text); use target='predicted' without them")
    return target


def _checked_classes(model, classes, only) -> tuple[list[str], set[str]]:
    """The class names (one per model output, none repeated) and the set of them the table keeps."""
    classes = [str(c) for c in classes]
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes repeat a name: {classes}")
    n_labels = output_count(model)
    if n_labels is not None and n_labels != len(classes):
        raise ValueError(f"{len(classes)} class names for a model with {n_labels} outputs; name every output in order")
    keep = set(classes) if only is None else {str(c) for c in only}
    unknown = sorted(keep - set(classes))
    if unknown:
        raise ValueError(f"only names class(es) {', '.join(unknown)} that are not among {', '.join(classes)}")
    return classes, keep


def _sample(n: int, sample: int | None, seed: int) -> np.ndarray:
    """Sorted positions of the sampled texts: all of them when `sample` is None or not below `n`."""
    if sample is not None and (int(sample) != sample or sample < 1):
        raise ValueError(f"sample must be a positive integer or None, got {sample!r}")
    if sample is None or sample >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=int(sample), replace=False))


def _label_index(labels, classes: list[str], n: int) -> list[int]:
    labels = list(labels)
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} texts; give one label per text")
    index = {str(c): i for i, c in enumerate(classes)}
    out = []
    for i, label in enumerate(labels):
        if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
            if not 0 <= int(label) < len(classes):
                raise ValueError(f"label {label} of text {i} is outside classes 0..{len(classes) - 1}")
            out.append(int(label))
        elif str(label) in index:
            out.append(index[str(label)])
        else:
            raise ValueError(f"label {label!r} of text {i} is not one of the classes {', '.join(map(str, classes))}")
    return out


def _word_totals(texts: list[str], targets: list[int], per_text, scheme: str, unk: str):
    """Per (target, word), [summed score, occurrences]; and whether any text's words came from word ids.
    A word that is only the unknown token names no word and is dropped when words come from pieces."""
    totals: dict[tuple[int, str], list] = {}
    spans_used = False
    for text, t, pieces in zip(texts, targets, per_text):
        by_span = bool(pieces) and all(p[2] is not None for p in pieces)
        spans_used |= by_span
        for word, score in merge_words(text, pieces, scheme):
            if not by_span and unk and word == unk:
                continue
            entry = totals.setdefault((t, word), [0.0, 0])
            entry[0] += score
            entry[1] += 1
    return totals, spans_used


def _frame(totals: dict[tuple[int, str], list], classes: list[str], method: str) -> pd.DataFrame:
    """The table's rows: mean score and count per (class, word), by class (logit order), score, word."""
    rows = [
        {"class": classes[t], "word": w, "score": s / c, "count": c, "method": method, "_t": t}
        for (t, w), (s, c) in totals.items()
    ]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, "_t"])
    frame = frame.sort_values(["_t", "score", "word"], ascending=[True, False, True], kind="mergesort")
    return frame.drop(columns="_t").reset_index(drop=True).astype({"count": int, "score": float})
