"""The data commands end to end on real files: import, describe, clean, split, merge."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.tables.corpus.schema import Corpus
from tests.conftest import data_dir

runner = CliRunner()


def invoke(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def test_import_describe_clean_split_merge(tmp_path):
    dreaddit = data_dir("dreaddit")
    corpus = tmp_path / "dreaddit.parquet"
    shown = invoke(
        "data", "import", "dreaddit", dreaddit / "dreaddit-train.csv", dreaddit / "dreaddit-test.csv", "--out", corpus
    ).stdout
    assert "read 3553 rows; wrote 3553 rows" in shown and "mapping report" in shown
    described = json.loads(invoke("data", "describe", corpus, "--json").stdout)
    rows = pd.DataFrame(described["rows"]).set_index(["split", "label"])["rows"].to_dict()
    assert rows == {
        ("test", "no_stress"): 346,
        ("test", "stress"): 369,
        ("train", "no_stress"): 1350,
        ("train", "stress"): 1488,
    }
    length = described["text_length"][0]
    assert length["n"] == 3553 and 80 < length["mean_words"] < 100
    # Dreaddit's official split: trained here, a model is judged on its 715 test rows; as a target, on all 3,553
    assert described["judged"] == [
        {
            "platform": "reddit",
            "dataset": "dreaddit",
            "rows": 3553,
            "judged_if_trained_here": 715,
            "judged_as_target": 3553,
        }
    ]
    assert "judged on every row it did not train on" in invoke("data", "describe", corpus).stdout

    cleaned = tmp_path / "clean.parquet"
    shown = invoke("data", "clean", corpus, "--out", cleaned).stdout
    frame = Corpus.read(cleaned).frame
    # SOURCE.md: 18 duplicated train texts (3 of them conflicting), 3 texts shared by train and test
    numbers = [int(t) for t in shown.replace("│", " ").split() if t.isdigit()]
    # SOURCE.md: 18 extra train copies, 3 texts with conflicting labels, 3 texts shared by train and test.
    # Removed: 13 consistent extra copies + all 8 copies of the 3 conflicting texts + 3 leaked train rows.
    assert numbers == [3553, 13, 3, 8, 3, 3529]
    assert len(frame) == 3529
    test_ids = Corpus.read(corpus).frame.query("split == 'test'")["id"]
    assert set(frame.loc[frame["split"] == "test", "id"]) == set(test_ids)

    calibrated = tmp_path / "cal.parquet"
    invoke("data", "split", cleaned, "--out", calibrated, "--calibration", "reddit", "--fraction", "0.1")
    cal = Corpus.read(calibrated).frame
    reddit = Corpus.read(cleaned).frame.query("platform == 'reddit'")  # every row of a target: 10% of each label
    assert (cal["split"] == "calibration").sum() == sum(round(0.1 * n) for n in reddit["label"].value_counts())

    tss = data_dir("tss_probe")
    gold = tmp_path / "gold.parquet"
    invoke("data", "import", "tss_gold", tss / "Twitter_sample_gold.utf8.csv", "--split", "test", "--out", gold)
    merged = tmp_path / "all.parquet"
    invoke("data", "merge", calibrated, gold, "--out", merged)
    both = Corpus.read(merged)
    assert both.classes == ["no_stress", "stress"]
    assert both.frame.groupby("dataset").size().to_dict() == {"dreaddit": len(cal), "tss_twitter_gold": 2872}


def test_listing_commands():
    assert "goemotions-cpfe-code" in invoke("data", "mappings").stdout
    shown = invoke("data", "sources").stdout
    for name in (
        "goemotions",
        "dair_emotion",
        "kaggle_mh",
        "dreaddit",
        "tss_gold",
        "tss_full",
        "rastogi",
        "depression_reddit",
        "bluesky_depression",
        "generic",
        "hf",
    ):
        assert name in shown


EVERY_DATA_SET = [  # (source, folder, files, extra flags, rows written) — counts from each SOURCE.md
    (
        "goemotions",
        "goemotions",
        ["train.tsv", "dev.tsv", "test.tsv"],
        ["--mapping", "goemotions-cpfe-text"],
        43410 + 5426 + 5427,
    ),
    ("dair_emotion", "dair_emotion", ["train.txt", "val.txt", "test.txt"], [], 20000),
    ("dreaddit", "dreaddit", ["dreaddit-train.csv", "dreaddit-test.csv"], [], 3553),
    ("tss_gold", "tss_probe", ["Twitter_sample_gold.utf8.csv"], [], 2872),
    ("tss_full", "tss_probe", ["Twitter_Full.csv"], ["--drop-empty"], 8897),
    (
        "rastogi",
        "stress_rastogi2022",
        ["Reddit_Combi.csv", "Reddit_Title.csv", "Twitter_Full.csv", "Twitter_Non-Advert.csv"],
        [],
        3123 + 5556 + 8900 + 2051,
    ),
    ("depression_reddit", "depression_reddit_cleaned", ["depression_dataset_reddit_cleaned.csv"], [], 7731),
    ("bluesky_depression", "bluesky_depression", ["bluesky-depression-dataset.csv"], [], 4568),
]


@pytest.mark.parametrize("source, folder, files, flags, rows", EVERY_DATA_SET, ids=[d[0] for d in EVERY_DATA_SET])
def test_every_shared_data_set_imports_and_describes(tmp_path, source, folder, files, flags, rows):
    base = data_dir(folder)
    corpus = tmp_path / "c.parquet"
    invoke("data", "import", source, *[base / f for f in files], *flags, "--out", corpus)
    described = json.loads(invoke("data", "describe", corpus, "--json").stdout)
    assert sum(r["rows"] for r in described["rows"]) == rows
    assert sum(r["n"] for r in described["text_length"]) == rows
    assert {r["split"] for r in described["rows"]} >= {"train", "test"}
