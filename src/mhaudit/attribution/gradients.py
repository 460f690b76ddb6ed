"""Gradient attributions for transformer classifiers: saliency and Integrated Gradients (CPFE axis 5).

Works on any Hugging Face sequence-classification model (``model(input_ids=..., attention_mask=...)``
returning ``.logits``) whose ``get_input_embeddings()`` is the word-embedding table, with its tokenizer:
WordPiece (BERT, MiniLM, DistilBERT), byte-level BPE (RoBERTa, GPT-2) or SentencePiece (XLM-R, T5,
ALBERT). No mhaudit model class is needed, so a tiny random BERT or RoBERTa tests it.

- ``token_saliency``: plain autograd, the CPFE paper's eq. 4 (Captum's ``Saliency`` computes the same
  gradient), on the output of ``get_input_embeddings()`` (before position/type embeddings and LayerNorm).
- ``token_integrated_gradients``: Captum ``LayerIntegratedGradients`` on that embedding layer.
- ``saliency_pieces``, ``integrated_gradients_pieces``: the same per text as ``(token, score, word)``,
  ``word`` the piece's ``(word index, start, end)`` from a fast tokenizer (None from a slow one), for
  ``mhaudit.attribution.words.merge_words``.

Special tokens ([CLS], [SEP], <s>, </s>) and padding are never returned; [UNK] is (it is a real input
position). Inputs are truncated to ``max_length`` tokens, so a word cut by truncation keeps only its
first pieces.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

# --------------------------------------------------------------------------------------------- helpers


def as_texts(texts) -> list[str]:
    """``texts`` as a list; TypeError for one string or an item that is not a string."""
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"text {bad[0]} is {type(texts[bad[0]]).__name__}, expected a string")
    return texts


def output_count(model) -> int | None:
    """The model's number of outputs (``config.num_labels``), None where it does not say."""
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
    param = next(model.parameters(), None)
    return torch.device("cpu") if param is None else param.device


@contextmanager
def _eval(model) -> Iterator[None]:
    """Eval mode (no dropout) for the duration, then the caller's mode back."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _encode_words(tokenizer, texts: list[str], max_length: int, device):
    """input_ids, attention_mask and, per text, per position, ``(word index, start, end)`` of the word the
    piece belongs to (None for special tokens and padding); the third item is None for a slow tokenizer,
    which has no word ids or offsets."""
    if tokenizer.pad_token_id is None:
        raise ValueError("the tokenizer has no padding token; set tokenizer.pad_token first")
    enc = tokenizer(
        texts,
        padding=True,
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
        return_offsets_mapping=bool(getattr(tokenizer, "is_fast", False)),
    )
    offsets = enc.pop("offset_mapping", None)
    try:
        words = (
            None
            if offsets is None
            else [
                [None if w is None else (int(w), int(a), int(b)) for w, (a, b) in zip(enc.word_ids(i), spans.tolist())]
                for i, spans in enumerate(offsets)
            ]
        )
    except (ValueError, AttributeError):  # not backed by a Rust tokenizer after all
        words = None
    return enc["input_ids"].to(device), enc["attention_mask"].to(device), words


def _fixed(tokenizer, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """True at positions that are never attributed: the tokens the tokenizer adds around a text, and padding."""
    names = ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id", "pad_token_id")
    special = sorted({i for i in (getattr(tokenizer, n, None) for n in names) if i is not None})
    return torch.isin(input_ids, torch.tensor(special, device=input_ids.device)) | (attention_mask == 0)


def _token_rows(tokenizer, input_ids, fixed, scores, words=None) -> list[list[tuple]]:
    """Per text, ``(token, score, word)`` for every position that is not special or padding; ``word`` is
    the position's ``(word index, start, end)`` from ``_encode_words`` or None."""
    spans = words if words is not None else [[None] * input_ids.shape[1]] * len(input_ids)
    return [
        [(tok, float(s), w) for tok, f, s, w in zip(tokenizer.convert_ids_to_tokens(ids), fix, sc, span) if not f]
        for ids, fix, sc, span in zip(input_ids.tolist(), fixed.tolist(), scores.tolist(), spans)
    ]


def _pairs(rows: list[list[tuple]]) -> list[list[tuple[str, float]]]:
    return [[(tok, score) for tok, score, _ in row] for row in rows]


def _batches(n: int, size: int) -> Iterator[slice]:
    if int(size) != size or size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {size!r}")
    for start in range(0, n, int(size)):
        yield slice(start, min(start + int(size), n))


# ------------------------------------------------------------------------------------------ token level


def token_saliency(
    model, tokenizer, texts, target_classes, max_length: int = 64, batch_size: int = 16
) -> list[list[tuple[str, float]]]:
    """Gradient saliency per token: s_i = ||dP(y=target|x)/dE_i||_2.

    ``target_classes`` is one class index per text (or one int for all). Returns, per text, the
    ``(token, s_i)`` pairs of its non-special tokens in order. E_i is the output of the model's input
    (word) embedding layer; P is computed in float32 from the logits. Texts are batched with padding,
    which the attention mask keeps from changing any text's gradient.

    >>> token_saliency(model, tokenizer, ["i feel sad"], [1])  # doctest: +SKIP
    [[('i', 0.0123), ('feel', 0.0201), ('sad', 0.0377)]]
    """
    return _pairs(saliency_pieces(model, tokenizer, texts, target_classes, max_length, batch_size))


def saliency_pieces(model, tokenizer, texts, target_classes, max_length: int, batch_size: int) -> list[list[tuple]]:
    """``token_saliency`` as ``(token, score, word)`` per piece (see the module docstring)."""
    texts = as_texts(texts)
    targets = _targets(target_classes, len(texts), output_count(model))
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


def baseline_ids(
    tokenizer, input_ids: torch.Tensor, attention_mask: torch.Tensor, baseline: str = "pad"
) -> torch.Tensor:
    """The IG baseline: the same length, special tokens and padding kept, every other id [PAD]/[MASK]."""
    if baseline not in ("pad", "mask"):
        raise ValueError(f"baseline must be 'pad' or 'mask', got {baseline!r}")
    fill = tokenizer.pad_token_id if baseline == "pad" else tokenizer.mask_token_id
    if fill is None:
        raise ValueError(f"the tokenizer has no {baseline} token for the Integrated Gradients baseline")
    return torch.where(_fixed(tokenizer, input_ids, attention_mask), input_ids, torch.full_like(input_ids, fill))


# tokens of interpolated inputs run at once by default: 16 texts x 50 steps x 64 tokens (a 512-token batch at once
# was killed for memory with MiniLM on a 24 GiB machine)
IG_TOKENS = 16 * 50 * 64


def token_integrated_gradients(
    model,
    tokenizer,
    texts,
    target_classes,
    max_length: int = 64,
    n_steps: int = 50,
    baseline: str = "pad",
    *,
    output: str = "probability",
    batch_size: int = 8,
    internal_batch_size: int | None = None,
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
    text. ``internal_batch_size`` bounds how many interpolated inputs Captum runs at once; by default as many as
    hold ``IG_TOKENS`` tokens (a batch of 16 texts of 64 tokens at 50 steps in one go; 512-token texts, as a
    Hugging Face folder takes, in chunks of 100), so memory does not grow with the texts' length.
    """
    rows, deltas = integrated_gradients_pieces(
        model, tokenizer, texts, target_classes, max_length, n_steps, baseline, output, batch_size, internal_batch_size
    )
    return _pairs(rows), deltas


def integrated_gradients_pieces(
    model, tokenizer, texts, target_classes, max_length, n_steps, baseline, output, batch_size, internal_batch_size
) -> tuple[list[list[tuple]], list[float]]:
    """``token_integrated_gradients`` as ``(token, score, word)`` per piece, and the deltas."""
    from captum.attr import LayerIntegratedGradients

    if output not in ("probability", "logit"):
        raise ValueError(f"output must be 'probability' or 'logit', got {output!r}")
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}")
    texts = as_texts(texts)
    targets = _targets(target_classes, len(texts), output_count(model))
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
                attr = ig.attribute(
                    inputs=input_ids,
                    baselines=base,
                    additional_forward_args=(attention_mask,),
                    target=targets[part],
                    n_steps=int(n_steps),
                    internal_batch_size=internal_batch_size or max(1, IG_TOKENS // input_ids.shape[1]),
                )
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


def predicted_classes(model, tokenizer, texts: list[str], max_length: int, batch_size: int) -> np.ndarray:
    """The model's predicted class index per text (its largest logit)."""
    device, preds = _device(model), []
    with _eval(model), torch.no_grad():
        for part in _batches(len(texts), batch_size):
            input_ids, attention_mask, _ = _encode_words(tokenizer, texts[part], max_length, device)
            preds.append(model(input_ids=input_ids, attention_mask=attention_mask).logits.argmax(-1).cpu().numpy())
    return np.concatenate(preds) if preds else np.zeros(0, dtype=int)
