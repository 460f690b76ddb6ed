"""The flat token columns read with Doc.to_array equal those read token by token from spaCy's objects, and
`cache_parses` fills the cache so that a later `parse_texts` of any part of the texts parses nothing."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("spacy")

from mhaudit.text.parse import _columns, _join, _parse, cache_parses, load_nlp, parse_texts  # noqa: E402

TEXTS = [
    "I can't sleep.  Exams tomorrow!!! 😅",
    "",
    "   ",
    "ok",
    "Why?\n\nNobody answers... NOUN VERB the",
    'My boss said: "rent is due" -- 3rd time, 100%.',
    "İstanbul naïve café\tcoöperate",
    "a\n",
    "42",
]


def by_token(docs) -> tuple[np.ndarray, dict[str, list]]:
    """The columns as spaCy's Token attributes give them, one token at a time (the reference)."""
    rows = {
        k: []
        for k in (
            "word",
            "lower",
            "tag",
            "pos",
            "dep",
            "head",
            "idx",
            "is_stop",
            "is_punct",
            "is_alpha",
            "like_num",
            "sent_start",
            "space_after",
        )
    }
    offsets, total = [0], 0
    for doc in docs:
        for t in doc:
            for name, value in (
                ("word", t.text),
                ("lower", t.lower_),
                ("tag", t.tag_),
                ("pos", t.pos_),
                ("dep", t.dep_),
                ("head", total + t.head.i),
                ("idx", t.idx),
                ("is_stop", t.is_stop),
                ("is_punct", t.is_punct),
                ("is_alpha", t.is_alpha),
                ("like_num", t.like_num),
                ("sent_start", t.i == 0 or bool(t.is_sent_start)),
                ("space_after", bool(t.whitespace_)),
            ):
                rows[name].append(value)
        total += len(doc)
        offsets.append(total)
    return np.asarray(offsets), rows


def test_columns_equal_token_attributes():
    nlp = load_nlp()
    texts = TEXTS * 3 + [" ".join(TEXTS)]
    offsets, columns = _join([_columns(nlp, nlp.pipe(texts))])
    want_offsets, want = by_token(nlp.pipe(texts))
    np.testing.assert_array_equal(offsets, want_offsets)
    for name, values in want.items():
        assert columns[name].tolist() == values, name
    assert columns["head"].dtype == np.int64 and columns["is_stop"].dtype == bool
    assert columns["word"].dtype == object


def test_no_document_at_all():
    offsets, columns = _join([_columns(load_nlp(), [])])
    assert offsets.tolist() == [0] and all(v.size == 0 for v in columns.values())


def test_worker_processes_parse_as_one_process():
    """Large inputs go to forked workers, in parts: the columns (heads shifted, strings unpacked) are the same."""
    texts = [f"{t} #{i}" for i, t in enumerate(TEXTS * 230)]  # over the 2,000 texts that start workers
    nlp = load_nlp()
    alone, workers = _parse(nlp, texts, 1, 256), _parse(nlp, texts, 2, 256)
    np.testing.assert_array_equal(alone.offsets, workers.offsets)
    for name in alone.columns:
        np.testing.assert_array_equal(alone[name], workers[name])


def test_cache_parses_then_any_part_parses_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MHAUDIT_CACHE", str(tmp_path))
    texts = [f"post number {i}: I feel {'tired' if i % 2 else 'fine'} today" for i in range(30)]
    assert cache_parses(texts + texts[:5]) == 30
    assert cache_parses(texts) == 0
    part = parse_texts(texts[20:5:-1])
    assert part.parsed_now == 0 and len(part) == 15
    fresh = parse_texts(texts[20:5:-1], use_cache=False)
    for name in fresh.columns:
        np.testing.assert_array_equal(part[name], fresh[name])
