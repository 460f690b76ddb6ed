import sqlite3
import threading

import pandas as pd
import pytest

from mhaudit.errors import InputError
from mhaudit.labels import LabelStore, read_labels, write_labels


def label(item, value, labeler="smollm2", kind="llm", **extra):
    return {"item_id": item, "task": "si", "labeler": labeler, "kind": kind, "value": value, **extra}


def test_add_keeps_first_label_unless_replace(tmp_path):
    with LabelStore(tmp_path / "labels.sqlite") as store:
        assert store.add([label("p1", 1), label("p2", None, raw_answer="maybe")]) == 2
        assert store.add([label("p1", 0)]) == 0
        assert store.frame(item_id="p1")["value"].tolist() == [1]
        assert store.add([label("p1", 0)], replace=True) == 1
        assert store.frame(item_id="p1")["value"].tolist() == [0]
        assert store.labelled("si", "smollm2") == {"p1", "p2"}
        assert store.labelled("mh", "smollm2") == set()
        invalid = store.frame(item_id="p2").iloc[0]
        assert pd.isna(invalid["value"]) and invalid["raw_answer"] == "maybe"


def test_reopen_keeps_labels_and_threads_can_write(tmp_path):
    path = tmp_path / "labels.sqlite"
    with LabelStore(path) as store:
        threads = [threading.Thread(target=lambda i=i: store.add([label(f"p{i}", i % 2)])) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    with LabelStore(path) as store:
        frame = store.frame(task="si")
    assert len(frame) == 20 and frame["value"].sum() == 10


@pytest.mark.parametrize("bad, message", [
    (label("p1", 2), "label value 2 is not 0, 1 or empty"),
    (label("p1", 1, kind="robot"), "kind 'robot' is not one of"),
    (label("", 1), "column 'item_id' is empty"),
])
def test_bad_labels_are_refused_whole(tmp_path, bad, message):
    with LabelStore(tmp_path / "labels.sqlite") as store:
        with pytest.raises(InputError, match=message):
            store.add([label("ok", 1), bad])
        assert store.frame().empty  # nothing half-written


def test_not_a_label_store(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("hello")
    with pytest.raises(InputError, match="not an SQLite file"):
        LabelStore(text)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(InputError, match="not an mhaudit label store"):
        LabelStore(other)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_round_trip_through_files(tmp_path, suffix):
    with LabelStore(tmp_path / "labels.sqlite") as store:
        store.add([label("p1", 1, labeler="ann1", kind="human", tags=["sarcasm", "news"], note="x, y"),
                   label("p2", None, raw_answer="I think 1"), label("007", 0)])
        frame = store.frame()
    back = read_labels(write_labels(frame, tmp_path / f"labels{suffix}"))
    pd.testing.assert_frame_equal(back.reset_index(drop=True), frame.reset_index(drop=True), check_dtype=False)


def test_imported_sheet_errors_name_the_row(tmp_path):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("item_id,task,labeler,kind,value\np1,si,ann1,human,1\np2,si,ann1,human,yes\n")
    with pytest.raises(InputError, match=r"sheet.csv row 3: label value 'yes' is not 0, 1 or empty"):
        read_labels(sheet)
    sheet.write_text("item_id,task,labeler,kind,value\np1,si,ann1,human,1\np1,si,ann1,human,0\n")
    with pytest.raises(InputError, match="item 'p1' has two labels from 'ann1'"):
        read_labels(sheet)
    sheet.write_text("item_id,task,value\np1,si,1\n")
    with pytest.raises(InputError, match="missing column 'labeler'"):
        read_labels(sheet)
