import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus.schema import SCHEMA, Corpus


def frame(**overrides):
    base = {
        "id": ["a", "b", "c"],
        "text": ["one", "two", "three"],
        "label": ["x", "y", "x"],
        "platform": "p",
        "dataset": "d",
        "split": ["train", "test", "calibration"],
    }
    base.update(overrides)
    return pd.DataFrame(base)


def test_round_trip_keeps_rows_classes_and_metadata(tmp_path):
    corpus = Corpus.build(frame(), ["y", "x"], meta={"mapping": "m", "synthetic": True})
    corpus.write(tmp_path / "c.parquet")
    back = Corpus.read(tmp_path / "c.parquet")
    assert back.classes == ["y", "x"]  # mapping order, not first appearance or sorted
    assert back.synthetic and back.meta["mapping"] == "m"
    pd.testing.assert_frame_equal(back.frame, corpus.frame)
    assert list(back.frame.columns) == list(SCHEMA.required)


def test_optional_columns_kept_in_schema_order():
    corpus = Corpus.build(frame(lang="en", domain="z", extra=1), ["x", "y"])
    assert list(corpus.frame.columns) == [*SCHEMA.required, "domain", "lang"]


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(text=["one", "  ", "three"]), "row 2: text is empty or whitespace only"),
        (dict(id=["a", "b", "a"]), "row 3: id 'a' appears more than once"),
        (dict(split=["train", "dev", "test"]), "row 2: split 'dev' is not one of train, val, test, calibration"),
        (dict(label=["x", "y", "z"]), "row 3: label 'z' is not one of the corpus classes (x, y)"),
    ],
)
def test_validation_names_the_row(bad, message):
    with pytest.raises(InputError) as exc:
        Corpus.build(frame(**bad), ["x", "y"], path="c.parquet")
    assert str(exc.value).startswith("c.parquet: ") and message in str(exc.value)


def test_missing_column_and_empty_corpus():
    with pytest.raises(InputError, match="missing column\\(s\\) split"):
        Corpus.build(frame().drop(columns="split"), ["x", "y"])
    with pytest.raises(InputError, match="the corpus is empty"):
        Corpus.build(frame().iloc[:0], ["x", "y"])


def test_reading_a_file_that_is_not_parquet(tmp_path):
    path = tmp_path / "c.parquet"
    path.write_text("text,label\n")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        Corpus.read(path)
    with pytest.raises(InputError, match="no such file"):
        Corpus.read(tmp_path / "missing.parquet")
