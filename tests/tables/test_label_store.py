import sqlite3
import threading

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import LabelStore, read_labels, write_labels


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


@pytest.mark.parametrize(
    "bad, message",
    [
        (label("p1", 2), "label value 2 is not 0, 1 or empty"),
        (label("p1", 1, kind="robot"), "kind 'robot' is not one of"),
        (label("", 1), "column 'item_id' is empty"),
    ],
)
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
        store.add(
            [
                label("p1", 1, labeler="ann1", kind="human", tags=["sarcasm", "news"], note="x, y"),
                label("p2", None, raw_answer="I think 1"),
                label("007", 0),
            ]
        )
        frame = store.frame()
    back = read_labels(write_labels(frame, tmp_path / f"labels{suffix}"))
    pd.testing.assert_frame_equal(back.reset_index(drop=True), frame.reset_index(drop=True), check_dtype=False)


def test_imported_sheet_errors_name_the_row(tmp_path):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("item_id,task,labeler,kind,value\np1,si,ann1,human,1\np2,si,ann1,human,yes\n")
    with pytest.raises(InputError, match=r"sheet.csv row 2: label value 'yes' is not 0, 1 or empty"):
        read_labels(sheet)
    # the same row is row 2 in a Parquet file: the n-th data row, header not counted, whatever the file type
    pd.read_csv(sheet, dtype=str).to_parquet(tmp_path / "sheet.parquet")
    with pytest.raises(InputError, match=r"sheet.parquet row 2: label value 'yes' is not 0, 1 or empty"):
        read_labels(tmp_path / "sheet.parquet")
    sheet.write_text("item_id,task,labeler,kind,value\np1,si,ann1,human,1\np1,si,ann1,human,0\n")
    with pytest.raises(InputError, match="item 'p1' has two labels from 'ann1'"):
        read_labels(sheet)
    sheet.write_text("item_id,task,value\np1,si,1\n")
    with pytest.raises(InputError, match=r"missing column\(s\) labeler, kind"):
        read_labels(sheet)


# --- tags, the shared table reader, and Parquet list columns -------------------------------------------
def test_parse_tags_one_rule_for_every_form():
    import numpy as np

    from mhaudit.tables.label_store import parse_tags

    assert parse_tags(None) == parse_tags(float("nan")) == parse_tags("") == parse_tags("  ") == ()
    assert parse_tags(np.array([], dtype=object)) == parse_tags([]) == parse_tags("[]") == ()
    assert parse_tags(np.array(["news", "hypothetical"], dtype=object)) == ("news", "hypothetical")
    assert parse_tags('["news", "third-person"]') == ("news", "third-person")
    assert parse_tags("news; hypothetical ;") == ("news", "hypothetical")  # ';' separates plain-text tags
    assert parse_tags("sarcasm, humour") == ("sarcasm, humour",)  # a comma belongs to the tag
    assert parse_tags("['news']") == ("news",)  # a Python-style list, as a CSV written from lists shows it
    assert parse_tags('"news"') == ("news",) and parse_tags(["news", "news", " "]) == ("news",)


def test_parquet_list_tags_including_empty_lists(tmp_path):
    """A Parquet round trip turns list tags into NumPy arrays; an empty one used to crash read_labels."""
    path = tmp_path / "labels.parquet"
    pd.DataFrame(
        {
            "item_id": ["p1", "p2", "p3"],
            "task": "si",
            "labeler": "ann1",
            "kind": "human",
            "value": [1, 0, 1],
            "tags": [["news"], [], None],
        }
    ).to_parquet(path)
    frame = read_labels(path)
    assert frame["tags"].fillna("-").tolist() == ['["news"]', "[]", "-"]
    with LabelStore(tmp_path / "labels.sqlite") as store:
        store.add(pd.read_parquet(path).to_dict("records"))
        assert store.frame()["tags"].fillna("-").tolist() == ['["news"]', "[]", "-"]


def test_na_strings_are_text_not_missing(tmp_path):
    """Only an empty cell is missing: an item called "NA" and a note "null" are kept, in every format."""
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        "item_id,task,labeler,kind,value,note\nNA,si,ann1,human,1,null\n007,si,ann1,human,,\n"
        "None,si,ann1,human,1.0,NaN\n"
    )
    frame = read_labels(sheet)
    assert frame["item_id"].tolist() == ["NA", "007", "None"]
    assert frame["note"].fillna("-").tolist() == ["null", "-", "NaN"] and frame["value"].tolist()[0] == 1
    assert pd.isna(frame["value"].iloc[1]) and frame["value"].iloc[2] == 1
    for suffix in (".jsonl", ".parquet"):
        back = read_labels(write_labels(frame, tmp_path / f"again{suffix}"))
        assert back["item_id"].tolist() == ["NA", "007", "None"]
        assert back["note"].fillna("-").tolist() == ["null", "-", "NaN"]


def test_read_table_and_write_table(tmp_path):
    from mhaudit.tables.io import read_table, write_table

    frame = pd.DataFrame(
        {"item_id": ["007", "NA"], "text": ["null", "a, b"], "tags": [["news"], []], "weight": [1 / 3, 2.0]}
    )
    for suffix in (".csv", ".tsv", ".jsonl", ".parquet"):
        back = read_table(write_table(frame, tmp_path / f"t{suffix}"))
        assert back["item_id"].tolist() == ["007", "NA"] and back["text"].tolist() == ["null", "a, b"], suffix
        assert float(back["weight"].iloc[0]) == 1 / 3, suffix  # full precision
        tags = back["tags"].tolist()
        assert [list(t) if not isinstance(t, str) else t for t in tags] in ([["news"], []], ['["news"]', "[]"])
    pd.DataFrame({"item_id": [7, 8]}).to_parquet(tmp_path / "ints.parquet")
    assert read_table(tmp_path / "ints.parquet")["item_id"].tolist() == ["7", "8"]
    with pytest.raises(InputError, match=r"t.xlsx: unknown file type '.xlsx' for the labels; expected \.parquet"):
        read_table(tmp_path / "t.xlsx", what="the labels")
    with pytest.raises(InputError, match="unknown file type '.txt'"):
        write_table(frame, tmp_path / "t.txt")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(InputError, match=r"bad.parquet: cannot read the sample \("):
        read_table(tmp_path / "bad.parquet", what="the sample")
    (tmp_path / "bad.jsonl").write_text('{"item_id": "a"}\n{oops\n')
    with pytest.raises(InputError, match="line 2 of the table is not valid JSON"):
        read_table(tmp_path / "bad.jsonl")
    with pytest.raises(InputError, match="nope.csv: no such file"):
        read_table(tmp_path / "nope.csv")
