"""Gradient attributions for transformer classifiers: saliency and Integrated Gradients (CPFE axis 5).

Works on any Hugging Face sequence-classification model (``model(input_ids=..., attention_mask=...)``
returning ``.logits``) whose ``get_input_embeddings()`` is the word-embedding table, with its WordPiece
tokenizer (BERT, MiniLM, DistilBERT). No mhaudit model class is needed, so a tiny random BERT tests it.

- ``token_saliency``: s_i = ||dP(y=t|x)/dE_i||_2, E_i the word-embedding vector of token i (the output
  of ``get_input_embeddings()``, before position/type embeddings and LayerNorm), P the softmax
  probability of the target class t. Plain autograd (the CPFE paper's eq. 4; Captum's ``Saliency``
  computes the same gradient).
- ``token_integrated_gradients``: Captum ``LayerIntegratedGradients`` on that embedding layer, from a
  baseline with every non-special token replaced by [PAD] (or [MASK]); a token's attribution is the
  sum over the embedding dimension. Its target is the softmax probability by default (``output=
  "logit"`` for the logit), so the attributions of a text sum to P(t|x) - P(t|baseline) up to Captum's
  convergence delta, which is returned too.
- ``merge_subwords``: WordPiece pieces (``##`` continuations) summed into lower-cased words.
- ``attribution_table``: a seeded sample of texts attributed to the true or predicted class, merged into
  words and averaged per (class, word type): the ``class, word, score, count, method`` columns of the
  Attributions table (the caller adds model, seed, platform and dataset).

Special tokens ([CLS], [SEP], <s>, </s>) and padding are never returned; [UNK] is (it is a real input
position), and ``attribution_table`` drops it because it names no word. Inputs are truncated to
``max_length`` tokens, so a word cut by truncation keeps only its first pieces.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import torch

METHODS = ("saliency", "integrated_gradients")
COLUMNS = ["class", "word", "score", "count", "method"]


# --------------------------------------------------------------------------------------------- helpers

def _texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"text {bad[0]} is {type(texts[bad[0]]).__name__}, expected a string")
    return texts


def _n_labels(model) -> int | None:
    return getattr(getattr(model, "config", None), "num_labels", None)


def _targets(target_classes, n: int, n_labels: int | None) -> list[int]:
    if isinstance(target_classes, (int, np.integer)):
        targets = [int(target_classes)] * n
    else:
        targets = [int(t) for t in target_classes]
        if len(targets) != n:
            raise ValueError(f"{len(targets)} target classes for {n} texts; give one per text (or one int)")
    bad = [t for t in targets if t < 0 or (n_labels is not None and t >= n_labels)]
    if bad:
        raise ValueError(f"target class {bad[0]} is outside the model's {n_labels} output classes")
    return targets


def _device(model) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


@contextmanager
def _eval(model) -> Iterator[None]:
    """Eval mode (no dropout) for the duration, then the caller's mode back."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _encode(tokenizer, texts: list[str], max_length: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    if tokenizer.pad_token_id is None:
        raise ValueError("the tokenizer has no padding token; set tokenizer.pad_token first")
    enc = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


def _special_ids(tokenizer) -> set[int]:
    """Ids of the tokens the tokenizer adds around a text, and padding."""
    names = ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id", "pad_token_id")
    return {i for i in (getattr(tokenizer, n, None) for n in names) if i is not None}


def _fixed(tokenizer, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """True at positions that are never attributed: special tokens and padding."""
    special = torch.tensor(sorted(_special_ids(tokenizer)), device=input_ids.device)
    return torch.isin(input_ids, special) | (attention_mask == 0)


def _token_rows(tokenizer, input_ids, fixed, scores) -> list[list[tuple[str, float]]]:
    rows = []
    for ids, fix, sc in zip(input_ids.tolist(), fixed.tolist(), scores.tolist()):
        tokens = tokenizer.convert_ids_to_tokens(ids)
        rows.append([(tok, float(s)) for tok, f, s in zip(tokens, fix, sc) if not f])
    return rows


def _batches(n: int, size: int) -> Iterator[slice]:
    if int(size) != size or size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {size!r}")
    for start in range(0, n, int(size)):
        yield slice(start, min(start + int(size), n))


# ------------------------------------------------------------------------------------------ token level

def token_saliency(model, tokenizer, texts, target_classes, max_length: int = 64,
                   batch_size: int = 16) -> list[list[tuple[str, float]]]:
    """Gradient saliency per token: s_i = ||dP(y=target|x)/dE_i||_2.

    ``target_classes`` is one class index per text (or one int for all). Returns, per text, the
    ``(token, s_i)`` pairs of its non-special tokens in order. E_i is the output of the model's input
    (word) embedding layer; P is computed in float32 from the logits. Texts are batched with padding,
    which the attention mask keeps from changing any text's gradient.

    >>> token_saliency(model, tokenizer, ["i feel sad"], [1])  # doctest: +SKIP
    [[('i', 0.0123), ('feel', 0.0201), ('sad', 0.0377)]]
    """
    texts = _texts(texts)
    targets = _targets(target_classes, len(texts), _n_labels(model))
    layer, device, out = model.get_input_embeddings(), _device(model), []
    with _eval(model):
        for part in _batches(len(texts), batch_size):
            input_ids, attention_mask = _encode(tokenizer, texts[part], max_length, device)
            captured = {}

            def leaf(module, inputs, output):  # the embeddings, as a leaf we take the gradient against
                captured["e"] = output.detach().requires_grad_(True)
                return captured["e"]

            handle = layer.register_forward_hook(leaf)
            try:
                with torch.enable_grad():
                    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
                    probs = torch.softmax(logits.float(), dim=-1)
                    rows = torch.arange(len(probs), device=probs.device)
                    chosen = probs[rows, torch.tensor(targets[part], device=probs.device)]
                    # texts do not interact, so the gradient of the sum is each text's own gradient
                    (grad,) = torch.autograd.grad(chosen.sum(), captured["e"])
            finally:
                handle.remove()
            scores = grad.float().norm(dim=-1)
            out += _token_rows(tokenizer, input_ids, _fixed(tokenizer, input_ids, attention_mask), scores)
    return out


def baseline_ids(tokenizer, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 baseline: str = "pad") -> torch.Tensor:
    """The IG baseline: the same length, special tokens and padding kept, every other id [PAD]/[MASK]."""
    if baseline not in ("pad", "mask"):
        raise ValueError(f"baseline must be 'pad' or 'mask', got {baseline!r}")
    fill = tokenizer.pad_token_id if baseline == "pad" else tokenizer.mask_token_id
    if fill is None:
        raise ValueError(f"the tokenizer has no {baseline} token for the Integrated Gradients baseline")
    return torch.where(_fixed(tokenizer, input_ids, attention_mask), input_ids, torch.full_like(input_ids, fill))


def token_integrated_gradients(model, tokenizer, texts, target_classes, max_length: int = 64,
                               n_steps: int = 50, baseline: str = "pad", *, output: str = "probability",
                               batch_size: int = 8, internal_batch_size: int | None = None
                               ) -> tuple[list[list[tuple[str, float]]], list[float]]:
    """Integrated Gradients per token on the word-embedding layer (Captum ``LayerIntegratedGradients``).

    The path runs from the baseline (``baseline_ids``: [PAD] or [MASK] in place of every non-special
    token, [CLS]/[SEP] and padding kept) to the text's embeddings in ``n_steps`` Gauss-Legendre steps.
    A token's attribution is the sum over the embedding dimension; the function attributed is the
    softmax probability of the target class (``output="probability"``, the default, as for saliency) or
    its logit (``output="logit"``). Completeness: per text, the sum of the returned attributions equals
    f(text) - f(baseline) + delta, where delta is Captum's convergence delta (special tokens and padding
    equal their baseline, so their attribution is exactly 0 and leaving them out changes no sum).

    Returns ``(attributions, deltas)``: per text its ``(token, attribution)`` pairs, and one delta per
    text. ``internal_batch_size`` bounds how many interpolated inputs Captum runs at once.
    """
    from captum.attr import LayerIntegratedGradients

    if output not in ("probability", "logit"):
        raise ValueError(f"output must be 'probability' or 'logit', got {output!r}")
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}")
    texts = _texts(texts)
    targets = _targets(target_classes, len(texts), _n_labels(model))
    device = _device(model)

    def forward(input_ids, attention_mask):
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits.float()
        return torch.softmax(logits, dim=-1) if output == "probability" else logits

    ig = LayerIntegratedGradients(forward, model.get_input_embeddings())
    out, deltas = [], []
    with _eval(model):
        for part in _batches(len(texts), batch_size):
            input_ids, attention_mask = _encode(tokenizer, texts[part], max_length, device)
            base = baseline_ids(tokenizer, input_ids, attention_mask, baseline)
            with torch.enable_grad():
                attr, delta = ig.attribute(inputs=input_ids, baselines=base, additional_forward_args=(attention_mask,),
                                           target=targets[part], n_steps=int(n_steps),
                                           internal_batch_size=internal_batch_size, return_convergence_delta=True)
            scores = attr.detach().float().sum(dim=-1)
            out += _token_rows(tokenizer, input_ids, _fixed(tokenizer, input_ids, attention_mask), scores)
            deltas += [float(d) for d in delta.detach().reshape(-1)]
    return out, deltas


# ------------------------------------------------------------------------------------------- word level

def merge_subwords(tokens: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    """Merge WordPiece pieces into lower-cased words, summing their scores.

    A piece starting with ``##`` continues the word before it; a leading ``##`` piece (after truncation
    or a dropped special token) starts a word of its own, without the ``##``. Summing is exact for
    Integrated Gradients (a word's attribution is its pieces' total, so completeness carries over to
    words). For saliency the sum is the l1 norm over pieces of the per-piece l2 gradient norms: a word
    split into more pieces can score higher than the same gradient in one piece (it is at least the l2
    norm of the word's concatenated gradient, and at most sqrt(pieces) times it).

    >>> merge_subwords(["[UNK]", "over", "##thi", "##nk", "##ing", "Sad"], [0.5, 1.0, 0.25, 0.5, 0.125, 2.0])
    [('[unk]', 0.5), ('overthinking', 1.875), ('sad', 2.0)]
    """
    tokens, scores = list(tokens), list(scores)
    if len(tokens) != len(scores):
        raise ValueError(f"{len(tokens)} tokens but {len(scores)} scores")
    words: list[list] = []
    for token, score in zip(tokens, scores):
        token = str(token)
        if token.startswith("##") and words:
            words[-1][0] += token[2:]
            words[-1][1] += float(score)
        else:
            words.append([token[2:] if token.startswith("##") and len(token) > 2 else token, float(score)])
    return [(word.lower(), float(score)) for word, score in words]


def _is_wordpiece(tokenizer) -> bool:
    pieces = tokenizer.tokenize("hello world overthinking")
    return not any(p.startswith(("\u0120", "\u2581")) for p in pieces)  # byte-level BPE / SentencePiece


def _predict(model, tokenizer, texts: list[str], max_length: int, batch_size: int) -> np.ndarray:
    device, preds = _device(model), []
    with _eval(model), torch.no_grad():
        for part in _batches(len(texts), batch_size):
            input_ids, attention_mask = _encode(tokenizer, texts[part], max_length, device)
            preds.append(model(input_ids=input_ids, attention_mask=attention_mask).logits.argmax(-1).cpu().numpy())
    return np.concatenate(preds) if preds else np.zeros(0, dtype=int)


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


def attribution_table(model, tokenizer, texts, classes, *, method: str = "saliency", target: str | None = None,
                      labels=None, max_length: int = 64, sample: int | None = 200, seed: int = 0,
                      only=None, batch_size: int = 16, n_steps: int = 50, baseline: str = "pad") -> pd.DataFrame:
    """Word-type attributions per class: the ``class, word, score, count, method`` part of the table.

    ``classes`` names the model's outputs in logit order (its length must equal the number of logits).
    At most ``sample`` texts are drawn without replacement with ``numpy.random.default_rng(seed)``
    (all when ``sample`` is None or not smaller than the number of texts) and each is attributed
    (``method`` "saliency" or "integrated_gradients") to its target class: the true label
    (``target="true"``; ``labels`` are class names or indices, aligned by position with ``texts``) or
    the model's predicted class (``target="predicted"``); the default is "true" when labels are given,
    else "predicted". ``only`` restricts the output to those class names (texts whose target is another
    class are not attributed). Tokens are merged into words (``merge_subwords``); [UNK] is dropped.

    Per (class, word): ``score`` = mean attribution of the word over its occurrences in that class's
    sampled texts, ``count`` = number of occurrences. Rows come ordered by class (logit order), score
    descending, then word. ``frame.attrs`` records the method, target, the sampled text positions and,
    for Integrated Gradients, the largest absolute convergence delta.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if target is None:
        target = "predicted" if labels is None else "true"
    if target not in ("true", "predicted"):
        raise ValueError(f"target must be 'true' or 'predicted', got {target!r}")
    if target == "true" and labels is None:
        raise ValueError("target='true' needs labels (one per text); use target='predicted' without them")
    if not _is_wordpiece(tokenizer):
        raise ValueError("attribution_table merges WordPiece sub-words ('##' pieces); this tokenizer uses "
                         "byte-level BPE or SentencePiece pieces, which merge_subwords does not handle")
    texts = _texts(texts)
    classes = [str(c) for c in classes]
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes repeat a name: {classes}")
    n_labels = _n_labels(model)
    if n_labels is not None and n_labels != len(classes):
        raise ValueError(f"{len(classes)} class names for a model with {n_labels} outputs; name every output in order")
    keep = set(classes) if only is None else {str(c) for c in only}
    unknown = sorted(keep - set(classes))
    if unknown:
        raise ValueError(f"only names class(es) {', '.join(unknown)} that are not among {', '.join(classes)}")

    n = len(texts)
    if sample is not None and (int(sample) != sample or sample < 1):
        raise ValueError(f"sample must be a positive integer or None, got {sample!r}")
    if sample is None or sample >= n:
        picked = np.arange(n)
    else:
        picked = np.sort(np.random.default_rng(seed).choice(n, size=int(sample), replace=False))
    chosen = [texts[i] for i in picked]
    if target == "true":
        targets = np.asarray(_label_index(labels, classes, n), dtype=int)[picked]
    else:
        targets = _predict(model, tokenizer, chosen, max_length, batch_size)
    wanted = [j for j, t in enumerate(targets) if classes[t] in keep]
    chosen, targets = [chosen[j] for j in wanted], [int(targets[j]) for j in wanted]

    delta_max = None
    if not chosen:
        per_text = []
    elif method == "saliency":
        per_text = token_saliency(model, tokenizer, chosen, targets, max_length=max_length, batch_size=batch_size)
    else:
        per_text, deltas = token_integrated_gradients(model, tokenizer, chosen, targets, max_length=max_length,
                                                      n_steps=n_steps, baseline=baseline, batch_size=batch_size)
        delta_max = float(np.max(np.abs(deltas)))

    unk = (tokenizer.unk_token or "").lower()
    totals: dict[tuple[int, str], list] = {}
    for t, pairs in zip(targets, per_text):
        tokens, scores = zip(*pairs) if pairs else ((), ())
        for word, score in merge_subwords(tokens, scores):
            if unk and word == unk:
                continue
            entry = totals.setdefault((t, word), [0.0, 0])
            entry[0] += score
            entry[1] += 1
    rows = [{"class": classes[t], "word": w, "score": s / c, "count": c, "method": method, "_t": t}
            for (t, w), (s, c) in totals.items()]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, "_t"])
    frame = frame.sort_values(["_t", "score", "word"], ascending=[True, False, True], kind="mergesort")
    frame = frame.drop(columns="_t").reset_index(drop=True)
    frame["count"] = frame["count"].astype(int)
    frame["score"] = frame["score"].astype(float)
    frame.attrs.update({"method": method, "target": target, "seed": int(seed), "max_length": int(max_length),
                        "sample_index": [int(i) for i in picked], "n_attributed": len(chosen),
                        "convergence_delta_max": delta_max})
    return frame
