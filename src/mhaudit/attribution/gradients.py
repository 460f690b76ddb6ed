"""Gradient attributions for transformer classifiers: saliency and Integrated Gradients (CPFE axis 5).

Works on any Hugging Face sequence-classification model (``model(input_ids=..., attention_mask=...)``
returning ``.logits``) whose ``get_input_embeddings()`` is the word-embedding table, with its tokenizer:
WordPiece (BERT, MiniLM, DistilBERT), byte-level BPE (RoBERTa, GPT-2) or SentencePiece (XLM-R, T5,
ALBERT). No mhaudit model class is needed, so a tiny random BERT or RoBERTa tests it.

- ``token_saliency``: s_i = ||dP(y=t|x)/dE_i||_2, E_i the word-embedding vector of token i (the output
  of ``get_input_embeddings()``, before position/type embeddings and LayerNorm), P the softmax
  probability of the target class t. Plain autograd (the CPFE paper's eq. 4; Captum's ``Saliency``
  computes the same gradient).
- ``token_integrated_gradients``: Captum ``LayerIntegratedGradients`` on that embedding layer, from a
  baseline with every non-special token replaced by [PAD] (or [MASK]); a token's attribution is the
  sum over the embedding dimension. Its target is the softmax probability by default (``output=
  "logit"`` for the logit), so the attributions of a text sum to P(t|x) - P(t|baseline) up to the
  convergence delta, which is returned too (computed along the path actually integrated, which keeps
  the text's position ids: see ``_path_change``).
- ``merge_subwords``: pieces summed into lower-cased words by the tokenizer's piece convention: WordPiece
  ``##`` continuations, byte-level BPE ``Ġ`` word starts (bytes decoded back to text), SentencePiece
  ``▁`` word starts.
- ``attribution_table``: a seeded sample of texts attributed to the true or predicted class, merged into
  words and averaged per (class, word type): the ``class, word, score, count, method`` columns of the
  Attributions table (the caller adds model, seed, platform and dataset). With a fast tokenizer the
  words come from the tokenizer itself, whatever its kind: ``word_ids()`` says which pieces form a word
  and the offset mapping gives its text (the span of the original text the pieces cover, lower-cased);
  a slow tokenizer falls back to ``merge_subwords``'s piece conventions.

Special tokens ([CLS], [SEP], <s>, </s>) and padding are never returned; [UNK] is (it is a real input
position). Inputs are truncated to ``max_length`` tokens, so a word cut by truncation keeps only its
first pieces.
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
    input_ids, attention_mask, _ = _encode_words(tokenizer, texts, max_length, device)
    return input_ids, attention_mask


def _encode_words(tokenizer, texts: list[str], max_length: int, device):
    """input_ids, attention_mask and, per text, per position, ``(word index, start, end)`` of the word the
    piece belongs to (None for special tokens and padding); the third item is None for a slow tokenizer,
    which has no word ids or offsets."""
    if tokenizer.pad_token_id is None:
        raise ValueError("the tokenizer has no padding token; set tokenizer.pad_token first")
    fast = bool(getattr(tokenizer, "is_fast", False))
    enc = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt",
                    return_offsets_mapping=fast)
    words = None
    offsets = enc.pop("offset_mapping", None) if fast else None
    if offsets is not None:
        try:
            word_ids = [enc.word_ids(i) for i in range(len(texts))]
        except (ValueError, AttributeError):  # not backed by a Rust tokenizer after all
            word_ids = None
        if word_ids is not None:
            words = [[None if w is None else (int(w), int(a), int(b)) for w, (a, b) in zip(ids, spans.tolist())]
                     for ids, spans in zip(word_ids, offsets)]
    return enc["input_ids"].to(device), enc["attention_mask"].to(device), words


def _special_ids(tokenizer) -> set[int]:
    """Ids of the tokens the tokenizer adds around a text, and padding."""
    names = ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id", "pad_token_id")
    return {i for i in (getattr(tokenizer, n, None) for n in names) if i is not None}


def _fixed(tokenizer, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """True at positions that are never attributed: special tokens and padding."""
    special = torch.tensor(sorted(_special_ids(tokenizer)), device=input_ids.device)
    return torch.isin(input_ids, special) | (attention_mask == 0)


def _token_rows(tokenizer, input_ids, fixed, scores, words=None) -> list[list[tuple]]:
    """Per text, ``(token, score, word)`` for every position that is not special or padding; ``word`` is
    the position's ``(word index, start, end)`` from ``_encode_words`` or None."""
    rows = []
    for r, (ids, fix, sc) in enumerate(zip(input_ids.tolist(), fixed.tolist(), scores.tolist())):
        tokens = tokenizer.convert_ids_to_tokens(ids)
        spans = words[r] if words is not None else [None] * len(ids)
        rows.append([(tok, float(s), w) for tok, f, s, w in zip(tokens, fix, sc, spans) if not f])
    return rows


def _pairs(rows: list[list[tuple]]) -> list[list[tuple[str, float]]]:
    return [[(tok, score) for tok, score, _ in row] for row in rows]


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
    return _pairs(_saliency_rows(model, tokenizer, texts, target_classes, max_length, batch_size))


def _saliency_rows(model, tokenizer, texts, target_classes, max_length: int, batch_size: int) -> list[list[tuple]]:
    texts = _texts(texts)
    targets = _targets(target_classes, len(texts), _n_labels(model))
    layer, device, out = model.get_input_embeddings(), _device(model), []
    with _eval(model):
        for part in _batches(len(texts), batch_size):
            input_ids, attention_mask, words = _encode_words(tokenizer, texts[part], max_length, device)
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
            out += _token_rows(tokenizer, input_ids, _fixed(tokenizer, input_ids, attention_mask), scores, words)
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
    f(text) - f(baseline) + delta, where delta is the convergence delta (Captum's definition; special
    tokens and padding equal their baseline, so their attribution is exactly 0 and leaving them out
    changes no sum). The path changes the word embeddings only, so f(baseline) is the model on the
    input's ids with the baseline's word embeddings: for BERT-like models that is the model on the
    baseline ids; for RoBERTa-like ones, which place [PAD] tokens at the padding position, it keeps the
    text's positions (see ``_path_change``).

    Returns ``(attributions, deltas)``: per text its ``(token, attribution)`` pairs, and one delta per
    text. ``internal_batch_size`` bounds how many interpolated inputs Captum runs at once.
    """
    rows, deltas = _integrated_gradients_rows(model, tokenizer, texts, target_classes, max_length, n_steps, baseline,
                                              output, batch_size, internal_batch_size)
    return _pairs(rows), deltas


def _integrated_gradients_rows(model, tokenizer, texts, target_classes, max_length, n_steps, baseline, output,
                               batch_size, internal_batch_size) -> tuple[list[list[tuple]], list[float]]:
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

    layer = model.get_input_embeddings()
    ig = LayerIntegratedGradients(forward, layer)
    out, deltas = [], []
    with _eval(model):
        for part in _batches(len(texts), batch_size):
            input_ids, attention_mask, words = _encode_words(tokenizer, texts[part], max_length, device)
            base = baseline_ids(tokenizer, input_ids, attention_mask, baseline)
            with torch.enable_grad():
                attr = ig.attribute(inputs=input_ids, baselines=base, additional_forward_args=(attention_mask,),
                                    target=targets[part], n_steps=int(n_steps),
                                    internal_batch_size=internal_batch_size)
            change = _path_change(forward, layer, input_ids, attention_mask, base, targets[part])
            scores = attr.detach().float().sum(dim=-1)
            out += _token_rows(tokenizer, input_ids, _fixed(tokenizer, input_ids, attention_mask), scores, words)
            deltas += (scores.sum(dim=-1).double() - change).tolist()
    return out, deltas


def _path_change(forward, layer, input_ids, attention_mask, base, targets) -> torch.Tensor:
    """f(end of the path) - f(start of the path), per text: the quantity IG attributions sum to.

    The path replaces only the word-embedding layer's output; everything else the model computes from
    ``input_ids`` (position ids included) stays that of the input. The start is therefore the model run
    on the input's ids with the baseline's word embeddings patched in, not the model run on the baseline
    ids: the two differ for models that derive position ids from padding (RoBERTa and its relatives put
    every [PAD] at the padding position), and Captum's own convergence delta, which runs the baseline
    ids, would then report a gap that is not the integration error.
    """
    rows = torch.arange(len(input_ids), device=input_ids.device)
    target = torch.as_tensor(targets, device=input_ids.device)
    with torch.no_grad():
        patched = layer(base)
        handle = layer.register_forward_hook(lambda module, inputs, output: patched)
        try:
            start = forward(input_ids, attention_mask)[rows, target]
        finally:
            handle.remove()
        end = forward(input_ids, attention_mask)[rows, target]
    return (end - start).double()


# ------------------------------------------------------------------------------------------- word level

SCHEMES = ("wordpiece", "byte-bpe", "sentencepiece")
_BYTE_START, _SP_START = "\u0120", "\u2581"  # 'Ġ' (a space byte in GPT-2's byte alphabet), '▁'


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-unicode table inverted: the character a byte-level BPE piece shows for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


_BYTES = _byte_decoder()


def _decode_byte_level(text: str) -> str:
    if not all(c in _BYTES for c in text):  # an added or special token written as itself
        return text
    return bytes(_BYTES[c] for c in text).decode("utf-8", errors="replace")


def _guess_scheme(tokens: Sequence[str]) -> str:
    if any(t.startswith(_BYTE_START) for t in tokens):
        return "byte-bpe"
    if any(t.startswith(_SP_START) for t in tokens):
        return "sentencepiece"
    return "wordpiece"


def merge_subwords(tokens: Sequence[str], scores: Sequence[float], scheme: str = "auto") -> list[tuple[str, float]]:
    """Merge sub-word pieces into lower-cased words, summing their scores.

    ``scheme`` names the tokenizer's piece convention:

    - ``"wordpiece"`` (BERT, MiniLM): a piece starting with ``##`` continues the word before it; a leading
      ``##`` piece (after truncation or a dropped special token) starts a word of its own, without ``##``.
    - ``"byte-bpe"`` (RoBERTa, GPT-2): a piece starting with ``Ġ`` (an encoded space) starts a word, any
      other piece continues the word before it (the first piece starts one); the word's bytes are decoded
      back to text (``Ã©`` is ``é``). Punctuation without a space before it joins the word before.
    - ``"sentencepiece"`` (XLM-R, T5, ALBERT): a piece starting with ``▁`` starts a word; others continue.
    - ``"auto"`` (the default): byte-level BPE if a piece starts with ``Ġ``, else SentencePiece if one
      starts with ``▁``, else WordPiece. A one-word byte-level text shows no ``Ġ``: pass the scheme
      when you know the tokenizer (``attribution_table`` does, and prefers the tokenizer's own word ids).

    Summing is exact for Integrated Gradients (a word's attribution is its pieces' total, so completeness
    carries over to words). For saliency the sum is the l1 norm over pieces of the per-piece l2 gradient
    norms: a word split into more pieces can score higher than the same gradient in one piece (it is at
    least the l2 norm of the word's concatenated gradient, and at most sqrt(pieces) times it).

    >>> merge_subwords(["[UNK]", "over", "##thi", "##nk", "##ing", "Sad"], [0.5, 1.0, 0.25, 0.5, 0.125, 2.0])
    [('[unk]', 0.5), ('overthinking', 1.875), ('sad', 2.0)]
    >>> merge_subwords(["I", "Ġover", "thinking", "Ġcaf", "Ã©"], [1.0, 0.5, 0.25, 2.0, 1.0])
    [('i', 1.0), ('overthinking', 0.75), ('café', 3.0)]
    """
    tokens, scores = [str(t) for t in tokens], list(scores)
    if len(tokens) != len(scores):
        raise ValueError(f"{len(tokens)} tokens but {len(scores)} scores")
    if scheme == "auto":
        scheme = _guess_scheme(tokens)
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be 'auto' or one of {', '.join(SCHEMES)}, got {scheme!r}")
    words: list[list] = []
    for token, score in zip(tokens, scores):
        if scheme == "wordpiece":
            starts = not (token.startswith("##") and words)
            piece = token[2:] if token.startswith("##") and (words or len(token) > 2) else token
        else:
            starts = not words or token.startswith(_BYTE_START if scheme == "byte-bpe" else _SP_START)
            piece = token
        if starts:
            words.append([piece, float(score)])
        else:
            words[-1][0] += piece
            words[-1][1] += float(score)
    out = []
    for word, score in words:
        if scheme == "byte-bpe":
            word = _decode_byte_level(word)
        elif scheme == "sentencepiece":
            word = word.replace(_SP_START, " ")
        out.append(((word.strip() or word).lower(), float(score)))
    return out


def piece_scheme(tokenizer) -> str:
    """The tokenizer's piece convention (see ``merge_subwords``), read from how it splits a probe text."""
    pieces = [str(p) for p in tokenizer.tokenize("hello world overthinking")]
    return _guess_scheme(pieces)


def merge_words(text: str, pieces: Sequence[tuple], scheme: str = "auto") -> list[tuple[str, float]]:
    """One text's ``(token, score, word)`` pieces (``word`` = ``(word index, start, end)`` from a fast
    tokenizer's ``word_ids()`` and offset mapping, or None) summed into words.

    With word information on every piece, consecutive pieces of one word index form a word whose name is
    the text they cover, ``text[first start:last end]``, stripped and lower-cased: tokenizer-agnostic, and
    the word as written (a piece the vocabulary lacks, [UNK] or ``<unk>``, is still named by its text).
    Without it, ``merge_subwords`` with ``scheme``.
    """
    if not pieces:
        return []
    if any(p[2] is None for p in pieces):
        return merge_subwords([p[0] for p in pieces], [p[1] for p in pieces], scheme)
    words: list[list] = []  # [index, start, end, score, tokens]
    for token, score, (index, start, end) in pieces:
        if words and words[-1][0] == index:
            last = words[-1]
            last[1], last[2] = min(last[1], start), max(last[2], end)
            last[3] += float(score)
            last[4].append(token)
        else:
            words.append([index, start, end, float(score), [token]])
    out = []
    for _, start, end, score, tokens in words:
        word = text[start:end].strip()
        if not word:  # no span (an added token): name it by its pieces
            word = " ".join(w for w, _ in merge_subwords(tokens, [0.0] * len(tokens), scheme))
        out.append((word.lower(), score))
    return out


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
    class are not attributed). Tokens are merged into words and a word's score is the sum of its pieces'
    (``merge_words``): with a fast tokenizer (any kind: WordPiece, byte-level BPE, SentencePiece) by its
    ``word_ids()``, each word named by the text span its pieces cover, lower-cased; with a slow one by the
    piece convention (``merge_subwords`` with ``piece_scheme(tokenizer)``), where a word that is only the
    unknown token ([UNK]) is dropped because it names no word.

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
        per_text = _saliency_rows(model, tokenizer, chosen, targets, max_length, batch_size)
    else:
        per_text, deltas = _integrated_gradients_rows(model, tokenizer, chosen, targets, max_length, n_steps,
                                                      baseline, "probability", batch_size, None)
        delta_max = float(np.max(np.abs(deltas)))

    scheme = piece_scheme(tokenizer)
    unk = (tokenizer.unk_token or "").lower()
    totals: dict[tuple[int, str], list] = {}
    spans_used = False
    for text, t, pieces in zip(chosen, targets, per_text):
        by_span = bool(pieces) and all(p[2] is not None for p in pieces)
        spans_used |= by_span
        for word, score in merge_words(text, pieces, scheme):
            if not by_span and unk and word == unk:
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
                        "words": ("word_ids" if spans_used else f"pieces ({scheme})") if chosen else None,
                        "convergence_delta_max": delta_max})
    return frame
