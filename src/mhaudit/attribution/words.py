"""Sub-word pieces into words, for word-level attributions (any tokenizer): from a fast tokenizer's own word
ids and offsets (``merge_words``), else by the tokenizer's piece convention (``merge_subwords``)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

SCHEMES = ("wordpiece", "byte-bpe", "sentencepiece")
_BYTE_START, _SP_START = "\u0120", "\u2581"  # 'Ġ' (a space byte in GPT-2's byte alphabet), '▁'


# GPT-2's byte-to-unicode table inverted: the character a byte-level BPE piece shows for each byte (a printable
# byte shows as itself, the others as 256, 257, ... in byte order)
_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
_BYTES = {
    **{chr(b): b for b in _PRINTABLE},
    **{chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _PRINTABLE)},
}


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
    return _guess_scheme([str(p) for p in tokenizer.tokenize("hello world overthinking")])


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
    out = []
    for _, group in groupby(pieces, key=lambda piece: piece[2][0]):  # the consecutive pieces of one word index
        tokens, scores, spans = zip(*group)
        word = text[min(s[1] for s in spans) : max(s[2] for s in spans)].strip()
        if not word:  # no span (an added token): name it by its pieces
            word = " ".join(w for w, _ in merge_subwords(tokens, [0.0] * len(tokens), scheme))
        out.append((word.lower(), sum(float(score) for score in scores)))
    return out
