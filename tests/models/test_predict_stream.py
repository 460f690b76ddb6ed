"""`predict_to_file` (`mhaudit predict`) writes the predictions chunk by chunk: on 3,500 real Depression Reddit rows
scored by a TF-IDF model trained here, the table is the one `predict_corpus` makes in memory, whatever the chunk
size, in Parquet, CSV and JSONL; a fault in a late chunk leaves nothing written."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from mhaudit.core.errors import InputError
from mhaudit.models import load_model
from mhaudit.models.seeds import predict_to_file, train_platform
from mhaudit.tables.corpus.schema import Corpus
from mhaudit.tables.io import write_table
from mhaudit.tables.predictions import MODELS_KEY, predict_corpus
from mhaudit.weak_supervision.collect.scoring import model_digest
from tests.conftest import data_dir

ROWS = 3500
ALL_SPLITS = ("train", "val", "test", "calibration")


@pytest.fixture(scope="module")
def reddit(tmp_path_factory):
    """3,500 rows of Depression Reddit as `mhaudit data import` writes it, and a TF-IDF model trained on them."""
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    csv = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    whole = import_source("depression_reddit", [csv], ImportOptions(seed=0)).corpus
    corpus = Corpus.build(whole.frame.sample(ROWS, random_state=0), whole.classes, meta=whole.meta)
    folder = tmp_path_factory.mktemp("reddit")
    corpus.write(folder / "corpus.parquet")
    (model,) = train_platform(corpus, None, "tfidf-lr", [0], folder / "model")
    return folder / "corpus.parquet", model


def in_memory(corpus_path, model_folder, splits):
    """The table as `mhaudit predict` made it before it streamed: the whole corpus scored at once."""
    corpus = Corpus.read(corpus_path)
    return predict_corpus(load_model(model_folder), corpus, model_name="tfidf-lr", seed=0, splits=splits)


@pytest.mark.parametrize("splits", [ALL_SPLITS, None])
def test_chunks_of_1000_give_the_in_memory_table(reddit, tmp_path, splits):
    corpus, model = reddit
    write_table(in_memory(corpus, model, splits), tmp_path / "whole.parquet")
    for rows in (1000, 10_000):
        scored = predict_to_file([model], corpus, tmp_path / f"{rows}.parquet", splits, chunk_rows=rows)
        expected = ROWS if splits else int((pd.read_parquet(corpus)["split"] == "test").sum())
        assert scored.rows == expected
    whole, chunked, one = (pq.read_table(tmp_path / f"{n}.parquet") for n in ("whole", 1000, 10_000))
    assert chunked.num_rows == ROWS if splits else chunked.num_rows < 1000
    assert chunked.equals(whole) and one.equals(whole)  # columns, types and rows, in order
    assert chunked.schema.metadata[b"pandas"] == whole.schema.metadata[b"pandas"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "1000.parquet"), pd.read_parquet(tmp_path / "whole.parquet")
    )
    if splits:  # four chunks, four row groups
        assert pq.ParquetFile(tmp_path / "1000.parquet").num_row_groups == 4


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_text_tables_are_byte_for_byte_the_in_memory_ones(reddit, tmp_path, suffix):
    corpus, model = reddit
    write_table(in_memory(corpus, model, ALL_SPLITS), tmp_path / f"whole{suffix}")
    predict_to_file([model], corpus, tmp_path / f"chunked{suffix}", ALL_SPLITS, chunk_rows=1000)
    whole = (tmp_path / f"whole{suffix}").read_bytes()
    assert (tmp_path / f"chunked{suffix}").read_bytes() == whole and whole.count(b"\n") >= ROWS


def test_the_footer_names_each_model_its_source_and_digest(reddit, tmp_path):
    corpus, model = reddit
    predict_to_file([model], corpus, tmp_path / "p.parquet", ("test",), chunk_rows=1000)
    models = json.loads(pq.read_metadata(tmp_path / "p.parquet").metadata[MODELS_KEY.encode()])
    assert models == [{"model": "tfidf-lr", "seed": 0, "source": "mhaudit", "sha256": model_digest(model)}]


def test_a_fault_in_a_late_chunk_writes_nothing_and_keeps_the_old_file(reddit, tmp_path):
    """Row 3,001 repeats row 2's id: found in the fourth chunk, after three were written to the temporary file."""
    corpus, model = reddit
    frame = pd.read_parquet(corpus)
    frame.loc[3000, "id"] = frame.loc[1, "id"]
    bad = tmp_path / "bad.parquet"
    frame.to_parquet(bad, index=False)
    pq.write_table(pq.read_table(bad).replace_schema_metadata(pq.read_schema(corpus).metadata), bad)
    out = tmp_path / "p.parquet"
    out.write_text("the earlier file")
    with pytest.raises(InputError) as caught:
        predict_to_file([model], bad, out, ALL_SPLITS, chunk_rows=1000)
    assert str(caught.value) == (
        f"{bad}: row 3001: id '{frame.loc[1, 'id']}' appears more than once (first on row 2); ids must be unique"
    )
    assert out.read_text() == "the earlier file" and sorted(p.name for p in tmp_path.iterdir()) == [
        "bad.parquet",
        "p.parquet",
    ]


def test_a_chunk_without_rows_to_score_calls_no_model(reddit, tmp_path):
    """Scoring only a split no row has: an empty table with the columns, as before."""
    corpus, model = reddit
    scored = predict_to_file([model], corpus, tmp_path / "p.parquet", ("nothing",), chunk_rows=1000)
    table = pd.read_parquet(tmp_path / "p.parquet")
    assert scored.rows == 0 and table.empty
    assert list(table.columns) == list(in_memory(corpus, model, ("nothing",)).columns)


def test_ctrl_c_while_writing_leaves_no_file(reddit, tmp_path):
    """SIGINT to `mhaudit predict` once its first chunks are in the temporary file (the child stopped meanwhile, so
    it cannot finish first on a busy machine): the temporary file goes, no table is published."""
    import os
    import re
    import signal
    import subprocess
    import sys

    corpus, model = reddit
    whole = Corpus.read(corpus)
    copies = [whole.frame.assign(id=whole.frame["id"] + f"#{k}") for k in range(20)]  # 70,000 rows: seconds to score
    Corpus.build(pd.concat(copies, ignore_index=True), whole.classes).write(tmp_path / "big.parquet")
    out = tmp_path / "out" / "p.parquet"
    command = [
        sys.executable,
        "-m",
        "mhaudit",
        "predict",
        "--model",
        str(model),
        "--corpus",
        str(tmp_path / "big.parquet"),
    ]
    child = subprocess.Popen(
        [*command, "--out", str(out), "--splits", ",".join(ALL_SPLITS)],
        stderr=subprocess.PIPE,
        # as a command in the foreground gets Ctrl-C: a suite started as a background job ('&') ignores SIGINT, and a
        # Python child that inherits the ignore never raises KeyboardInterrupt (it ran to the end, exit 0)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stderr is not None
    seen = []
    for line in child.stderr:  # the event: the progress line of the first chunks scored and written
        seen.append(line.decode())
        if (done := re.search(r"([\d,]+)/70,000", seen[-1])) and done.group(1) != "70,000":
            break
    else:
        raise AssertionError("the command ended before it reported a chunk: " + "".join(seen))
    os.kill(child.pid, signal.SIGSTOP)  # frozen: it cannot finish the other chunks before the interrupt arrives
    assert [p.name for p in out.parent.glob(".p.parquet.*.part")] != []  # the chunks so far, in the temporary file
    os.kill(child.pid, signal.SIGINT)
    os.kill(child.pid, signal.SIGCONT)
    _, errors = child.communicate(timeout=120)
    assert child.returncode == 130, errors.decode()
    assert list(out.parent.iterdir()) == []
