"""The data-set importers on the real files in ../shared/data (skipped when absent) and on small files written
here. Expected counts are the ones each SOURCE.md states; the GoEmotions mapping x policy counts were measured
once and checked by hand (see docs/sources.md)."""

from __future__ import annotations

from dataclasses import replace

import shutil
import sys

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.privacy import pseudonymise
from mhaudit.tables.corpus.importing import ImportOptions, import_source
from mhaudit.tables.corpus.label_mapping import MultiLabelPolicy as Policy
from mhaudit.tables.corpus.mappings import load
from mhaudit.tables.corpus.sources import ReadOptions, all_sources, get
from mhaudit.tables.corpus.sources.goemotions import EMOTIONS
from tests.conftest import FIXTURES, data_dir


def counts(result, by=("split", "label")) -> dict:
    frame = result.corpus.frame
    return {k: int(v) for k, v in frame.groupby(list(by), observed=True).size().items()}


def per_split(result) -> dict:
    return result.corpus.frame["split"].value_counts().to_dict()


def test_every_source_is_registered():
    assert [s.name for s in all_sources()] == [
        "bluesky_depression",
        "dair_emotion",
        "depression_reddit",
        "dreaddit",
        "generic",
        "goemotions",
        "hf",
        "kaggle_mh",
        "rastogi",
        "tss_full",
        "tss_gold",
    ]
    assert get("goemotions").multi_label and get("goemotions").classes == EMOTIONS


@pytest.mark.parametrize(
    "source, classes",
    [
        ("dreaddit", ["no_stress", "stress"]),
        ("tss_gold", ["no_stress", "stress"]),
        ("tss_full", ["no_stress", "stress"]),
        ("rastogi", ["no_stress", "stress"]),
        ("depression_reddit", ["no_depression", "depression"]),
        ("bluesky_depression", ["no_depression", "depression"]),
        ("kaggle_mh", ["normal", "depression", "anxiety", "stress"]),
        ("goemotions", None),
        ("dair_emotion", None),
        ("generic", None),
        ("hf", None),
    ],
)
def test_default_mapping_classes(source, classes):
    mapping = get(source).default_mapping
    assert (load(mapping).classes if mapping else None) == classes


# --- Dreaddit ---------------------------------------------------------------------------------------------


def test_dreaddit_official_splits():
    folder = data_dir("dreaddit")
    result = import_source("dreaddit", [folder / "dreaddit-train.csv", folder / "dreaddit-test.csv"])
    assert counts(result) == {
        ("test", "no_stress"): 346,
        ("test", "stress"): 369,
        ("train", "no_stress"): 1350,
        ("train", "stress"): 1488,
    }
    assert result.split_note == "official splits kept"


# --- GoEmotions -------------------------------------------------------------------------------------------

TEST_ASSIGNMENTS = dict(
    zip(
        EMOTIONS,
        [
            504,
            264,
            198,
            320,
            351,
            135,
            153,
            284,
            83,
            151,
            267,
            123,
            37,
            103,
            78,
            352,
            6,
            161,
            238,
            23,
            186,
            16,
            145,
            11,
            56,
            156,
            141,
            1787,
        ],
        strict=True,
    )
)


def goemotions(*names):
    folder = data_dir("goemotions")
    return [folder / n for n in names]


def test_goemotions_native_first_and_expand():
    files = goemotions("train.tsv", "dev.tsv", "test.tsv")
    first = import_source("goemotions", files, ImportOptions(multi_label=Policy.first))
    assert per_split(first) == {"train": 43410, "val": 5426, "test": 5427}
    assert first.corpus.classes == EMOTIONS
    frame = first.corpus.frame
    assert frame["raw_label"].str.contains(",").groupby(frame["split"]).sum().to_dict() == {
        "test": 837,
        "train": 7102,
        "val": 878,
    }
    # CSV-quoted in the TSV; unescaped, else unchanged
    elmo = frame.loc[frame["id"] == "goemotions-edtjpv6", "text"].item()
    assert elmo.startswith('Had to watch "Elmo in Grouchland" one time too many')
    expand = import_source("goemotions", files, ImportOptions(multi_label=Policy.expand))
    assert per_split(expand) == {"train": 51103, "val": 6380, "test": 6329}
    test = expand.corpus.frame[expand.corpus.frame["split"] == "test"]
    assert test["label"].value_counts().to_dict() == TEST_ASSIGNMENTS
    assert test["id"].is_unique and (test["id"].str.count(":") <= 1).all()


# Test split only (5,427 rows; 6,329 label assignments). Checked by hand: cpfe-text maps every emotion, so
# first/priority keep all rows and expand gives 6,329; cpfe-code drops 1,073 assignments (confusion 153,
# curiosity 284, desire 83, realization 145, surprise 141, disapproval 267): expand 6,329 - 1,073 = 5,256.
GOEMOTIONS_TEST = {
    ("goemotions-cpfe-text", Policy.first): {"normal": 4567, "depression": 287, "anxiety": 90, "stress": 483},
    ("goemotions-cpfe-text", Policy.expand): {"normal": 5341, "depression": 369, "anxiety": 101, "stress": 518},
    ("goemotions-cpfe-text", Policy.priority): {"normal": 4522, "depression": 345, "anxiety": 94, "stress": 466},
    ("goemotions-cpfe-text", Policy.drop_ambiguous): {"normal": 4522, "depression": 257, "anxiety": 80, "stress": 351},
    ("goemotions-cpfe-code", Policy.first): {"normal": 3586, "depression": 287, "anxiety": 120, "stress": 567},
    ("goemotions-cpfe-code", Policy.expand): {"normal": 4108, "depression": 369, "anxiety": 138, "stress": 641},
    ("goemotions-cpfe-code", Policy.priority): {"normal": 3641, "depression": 345, "anxiety": 128, "stress": 560},
    ("goemotions-cpfe-code", Policy.drop_ambiguous): {"normal": 3641, "depression": 277, "anxiety": 111, "stress": 499},
}
GOEMOTIONS_TEST_ROWS = {key: sum(v.values()) for key, v in GOEMOTIONS_TEST.items()}


@pytest.mark.parametrize("mapping, policy", list(GOEMOTIONS_TEST))
def test_goemotions_test_split_under_cpfe_mappings(mapping, policy):
    result = import_source("goemotions", goemotions("test.tsv"), ImportOptions(mapping=mapping, multi_label=policy))
    assert result.corpus.classes == ["normal", "depression", "anxiety", "stress"]
    assert result.corpus.frame["label"].value_counts().to_dict() == GOEMOTIONS_TEST[mapping, policy]
    assert len(result.corpus.frame) == GOEMOTIONS_TEST_ROWS[mapping, policy]


def test_goemotions_test_rows_measured():
    assert GOEMOTIONS_TEST_ROWS == {
        ("goemotions-cpfe-text", Policy.first): 5427,
        ("goemotions-cpfe-text", Policy.expand): 6329,
        ("goemotions-cpfe-text", Policy.priority): 5427,
        ("goemotions-cpfe-text", Policy.drop_ambiguous): 5210,
        ("goemotions-cpfe-code", Policy.first): 4560,
        ("goemotions-cpfe-code", Policy.expand): 5256,
        ("goemotions-cpfe-code", Policy.priority): 4674,
        ("goemotions-cpfe-code", Policy.drop_ambiguous): 4528,
    }


def test_goemotions_6257_is_text_mapping_without_remorse_and_pride(tmp_path):
    """The reading SOURCE.md infers for the CPFE paper's n = 6,257: expand, remorse and pride dropped."""
    text = load("goemotions-cpfe-text").targets
    lines = ['name = "text-minus-2"', 'classes = ["normal", "depression", "anxiety", "stress"]', "[map]"]
    for cls in ("normal", "depression", "anxiety", "stress"):
        raws = [r for r, c in text.items() if c == cls and r not in ("remorse", "pride")]
        lines.append(f"{cls} = {raws!r}".replace("'", '"'))
    lines += ["[drop]", 'labels = ["remorse", "pride"]']
    (tmp_path / "m.toml").write_text("\n".join(lines))
    result = import_source(
        "goemotions", goemotions("test.tsv"), ImportOptions(mapping=str(tmp_path / "m.toml"), multi_label=Policy.expand)
    )
    assert len(result.corpus.frame) == 6257


def test_goemotions_pooled_released_code_reading():
    """The released code's reading (cpfe-code, first listed label) over all three splits, before its re-split."""
    result = import_source(
        "goemotions",
        goemotions("train.tsv", "dev.tsv", "test.tsv"),
        ImportOptions(mapping="goemotions-cpfe-code", multi_label=Policy.first),
    )
    assert len(result.corpus.frame) == 45881


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_goemotions_hf_layout_matches_tsv(tmp_path, fmt):
    tsv = pd.read_csv(
        goemotions("test.tsv")[0],
        sep="\t",
        header=None,
        names=["text", "labels", "id"],
        dtype=str,
        keep_default_na=False,
    )
    hf = tsv.assign(labels=tsv["labels"].map(lambda s: [int(x) for x in s.split(",")]))
    path = tmp_path / f"test-00000-of-00001.{fmt}"
    if fmt == "parquet":
        hf.to_parquet(path)
    elif fmt == "jsonl":
        hf.to_json(path, orient="records", lines=True)
    else:
        hf.assign(labels=hf["labels"].map(str)).to_csv(path, index=False)  # "[3, 27]"-style strings
    got = import_source("goemotions", [path], ImportOptions(multi_label=Policy.expand)).corpus.frame
    want = import_source("goemotions", goemotions("test.tsv"), ImportOptions(multi_label=Policy.expand)).corpus.frame
    assert got[["id", "text", "label", "split"]].equals(want[["id", "text", "label", "split"]])


def test_goemotions_builtin_names_and_bad_ids(tmp_path):
    (tmp_path / "train.tsv").write_text("so happy\t17,27\ta1\nmeh\t27\ta2\n")
    frame = import_source("goemotions", [tmp_path / "train.tsv"], ImportOptions(multi_label=Policy.expand)).corpus.frame
    assert frame["label"].tolist() == ["joy", "neutral", "neutral"] and set(frame["split"]) == {"train"}
    (tmp_path / "test.tsv").write_text("ok\t27\tb1\nbad\t28\tb2\n")
    with pytest.raises(InputError, match=r"test.tsv: row 2: label ids '28'"):
        import_source("goemotions", [tmp_path / "test.tsv"])


# --- dair-ai/emotion --------------------------------------------------------------------------------------

DAIR = {
    "train": {"joy": 5362, "sadness": 4666, "anger": 2159, "fear": 1937, "love": 1304, "surprise": 572},
    "val": {"joy": 704, "sadness": 550, "anger": 275, "fear": 212, "love": 178, "surprise": 81},
    "test": {"joy": 695, "sadness": 581, "anger": 275, "fear": 224, "love": 159, "surprise": 66},
}


def test_dair_emotion_official_splits():
    folder = data_dir("dair_emotion")
    result = import_source("dair_emotion", [folder / "train.txt", folder / "val.txt", folder / "test.txt"])
    assert counts(result) == {(s, k): v for s, labels in DAIR.items() for k, v in labels.items()}
    assert result.corpus.classes == ["sadness", "joy", "love", "anger", "fear", "surprise"]
    frame = result.corpus.frame
    assert set(frame["platform"]) == {"twitter"} and set(frame["label_source"]) == {"distant"}
    assert frame["id"].iat[0] == "dair_emotion-train-1"
    code = import_source("dair_emotion", [folder / "test.txt"], ImportOptions(mapping="dair-cpfe-code"))
    assert code.corpus.frame["label"].value_counts().to_dict() == {
        "normal": 695 + 159,
        "depression": 581,
        "stress": 275,
        "anxiety": 224,
    }  # surprise (66) dropped


def test_dair_emotion_hf_layout_ids(tmp_path):
    text = pd.read_csv(data_dir("dair_emotion") / "test.txt", sep=";", header=None, names=["text", "label"])
    ids = {"sadness": 0, "joy": 1, "love": 2, "anger": 3, "fear": 4, "surprise": 5}
    text.assign(label=text["label"].map(ids)).to_parquet(tmp_path / "test.parquet")
    result = import_source("dair_emotion", [tmp_path / "test.parquet"])
    assert counts(result) == {("test", k): v for k, v in DAIR["test"].items()}


# --- Kaggle Combined Data (fixture written by hand) ---------------------------------------------------------


def test_kaggle_fixture_mapped():
    result = import_source("kaggle_mh", [FIXTURES / "kaggle_combined_small.csv"])
    frame = result.corpus.frame
    assert len(frame) == 21 and result.corpus.classes == ["normal", "depression", "anxiety", "stress"]
    assert frame["label"].value_counts().to_dict() == {"depression": 9, "stress": 6, "normal": 3, "anxiety": 3}
    assert frame["raw_label"].value_counts().to_dict() == {s: 3 for s in get("kaggle_mh").classes}
    assert set(frame["id"]) == {f"kaggle_mh-{i}" for i in range(21)}
    by_id = frame.set_index("id")["text"]
    assert by_id["kaggle_mh-7"] == "I wrote a goodbye note last night.\nI did not send it."
    assert by_id["kaggle_mh-16"] == "Rent is due, the car broke down, and I have two exams."
    assert set(frame["platform"]) == {"kaggle"} and "no official split" in result.split_note


def test_kaggle_empty_statement_is_an_error(tmp_path):
    path = tmp_path / "Combined Data.csv"
    path.write_text((FIXTURES / "kaggle_combined_small.csv").read_text() + "21,,Anxiety\n")
    with pytest.raises(InputError, match=r"Combined Data.csv: row 22: text is empty"):
        import_source("kaggle_mh", [path])


# --- TSS probe --------------------------------------------------------------------------------------------


def test_tss_gold_utf8():
    result = import_source("tss_gold", [data_dir("tss_probe") / "Twitter_sample_gold.utf8.csv"])
    assert result.corpus.frame["label"].value_counts().to_dict() == {"no_stress": 1899, "stress": 973}
    frame = result.corpus.frame
    assert set(frame["dataset"]) == {"tss_twitter_gold"} and set(frame["label_source"]) == {"human"}
    assert set(frame["id"]) == {f"tss_twitter_gold-{i}" for i in range(1, 2873)}


def test_tss_gold_raw_encodings():
    raw = [data_dir("tss_probe") / "Twitter_sample_gold.csv"]
    with pytest.raises(InputError, match=r"line 983 .* not valid utf-8; pass --encoding .*latin-1"):
        import_source("tss_gold", raw)
    with pytest.raises(InputError, match=r"not valid cp1252; .*--encoding latin-1"):  # byte 0x9D
        import_source("tss_gold", raw, ImportOptions(encoding="cp1252"))
    result = import_source("tss_gold", raw, ImportOptions(encoding="latin-1"))
    assert result.corpus.frame["label"].value_counts().to_dict() == {"no_stress": 1899, "stress": 973}


def test_tss_full_reads_8900_but_three_texts_are_empty():
    path = data_dir("tss_probe") / "Twitter_Full.csv"
    raw = get("tss_full").read([path], ReadOptions())
    assert len(raw) == 8900 and raw["raw_labels"].str[0].value_counts().to_dict() == {"1": 4534, "0": 4366}
    assert list(raw.columns[:3]) == ["id", "text", "raw_labels"] and "hashtags" not in raw.columns
    with pytest.raises(InputError, match=r"Twitter_Full.csv: row 1078: text is empty .*\(3 such rows\).*--drop-empty"):
        import_source("tss_full", [path])
    result = import_source("tss_full", [path], ImportOptions(drop_empty=True, split="test"))
    assert result.empty_rows_dropped == 3 and result.rows_read == 8900 and len(result.corpus.frame) == 8897
    assert set(result.corpus.frame["dataset"]) == {"tss_twitter_auto"}


# --- Rastogi 2022 -----------------------------------------------------------------------------------------


def test_rastogi_four_files():
    folder = data_dir("stress_rastogi2022")
    files = [folder / f"{n}.csv" for n in ("Reddit_Combi", "Reddit_Title", "Twitter_Full", "Twitter_Non-Advert")]
    result = import_source("rastogi", files, ImportOptions(split="test"))
    assert counts(result, ("dataset", "platform", "label")) == {
        ("rastogi_reddit_combi", "reddit", "stress"): 2745,
        ("rastogi_reddit_combi", "reddit", "no_stress"): 378,
        ("rastogi_reddit_title", "reddit", "stress"): 2745,
        ("rastogi_reddit_title", "reddit", "no_stress"): 2811,
        ("rastogi_twitter_full", "twitter", "stress"): 4534,
        ("rastogi_twitter_full", "twitter", "no_stress"): 4366,
        ("rastogi_twitter_non_advert", "twitter", "stress"): 1268,
        ("rastogi_twitter_non_advert", "twitter", "no_stress"): 783,
    }
    frame = result.corpus.frame
    assert frame["id"].iat[0] == "rastogi_reddit_combi-1" and set(frame["label_source"]) == {"auto"}
    with pytest.raises(InputError, match="is not one of the Rastogi 2022 files"):
        import_source("rastogi", [data_dir("tss_probe") / "Twitter_sample_gold.utf8.csv"])


# --- Depression Reddit (cleaned) ----------------------------------------------------------------------------


def test_depression_reddit():
    path = data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"
    result = import_source("depression_reddit", [path])
    assert result.corpus.frame["label"].value_counts().to_dict() == {"no_depression": 3900, "depression": 3831}
    assert set(result.corpus.frame["label_source"]) == {"subreddit"}


def test_depression_reddit_kaggle_header(tmp_path):
    (tmp_path / "d.csv").write_text("clean_text,is_depression\nfeel low,1\nnice day,0\nsad again,1\nfine,0\n")
    result = import_source("depression_reddit", [tmp_path / "d.csv"], ImportOptions(split="train"))
    assert result.corpus.frame["label"].tolist() == ["depression", "no_depression", "depression", "no_depression"]


# --- Bluesky depression -----------------------------------------------------------------------------------


def test_bluesky_depression():
    path = data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"
    raw = get("bluesky_depression").read([path], ReadOptions())
    assert "link" not in raw.columns
    result = import_source("bluesky_depression", [path])
    frame = result.corpus.frame
    assert len(frame) == 4568 and frame["label"].value_counts().to_dict() == {"no_depression": 4054, "depression": 514}
    assert frame["text"].str.contains("\n").sum() == 1760  # quoted multi-line texts survive
    assert frame["text"].iat[0].startswith("you are worthy even if you:\n\nare battling depression")
    assert str(frame["created_at"].dt.tz) == "UTC"
    assert frame["created_at"].min().date().isoformat() == "2019-01-15"
    assert frame["created_at"].max().date().isoformat() == "2025-03-25"
    assert frame["created_at"].dt.year.value_counts().loc[[2023, 2024, 2025]].tolist() == [388, 2108, 2029]
    assert set(frame["platform"]) == {"bluesky"} and frame["id"].iat[0] == "bluesky_depression-0"


# --- generic ----------------------------------------------------------------------------------------------

GENERIC = pd.DataFrame(
    {
        "body": ["first, with a comma", "two\nlines", "three", "four"],
        "y": ["0", "1", "0", "1"],
        "split": ["train", "train", "test", "test"],
        "author": ["a", "b", "c", "d"],
        "created_at": ["2024-01-01T10:00:00Z", "", "2024-02-01", "2024-03-01T10:00:00+01:00"],
    }
)


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "parquet"])
def test_generic_formats(tmp_path, ext):
    path = tmp_path / f"posts.{ext}"
    {
        "csv": lambda: GENERIC.to_csv(path, index=False),
        "tsv": lambda: GENERIC.to_csv(path, sep="\t", index=False),
        "jsonl": lambda: GENERIC.to_json(path, orient="records", lines=True),
        "parquet": lambda: GENERIC.to_parquet(path),
    }[ext]()
    options = ImportOptions(mapping="stress-binary", platform="reddit", text_col="body", label_col="y", split="auto")
    result = import_source("generic", [path], options)
    frame = result.corpus.frame
    assert frame["id"].tolist() == ["posts-1", "posts-2", "posts-3", "posts-4"]
    assert frame["text"].tolist() == GENERIC["body"].tolist()
    assert frame["label"].tolist() == ["no_stress", "stress", "no_stress", "stress"]
    assert frame["split"].tolist() == ["train", "train", "test", "test"]
    assert set(frame["dataset"]) == {"posts"} and set(frame["platform"]) == {"reddit"}
    assert frame["author"].tolist() == pseudonymise(["a", "b", "c", "d"])  # raw ids never kept
    assert frame["created_at"].isna().tolist() == [False, True, False, False]


def test_generic_errors(tmp_path):
    path = tmp_path / "posts.csv"
    GENERIC.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"posts.csv: missing column\(s\) text; found body, y, split, author"):
        import_source("generic", [path], ImportOptions(platform="reddit", label_col="y"))
    with pytest.raises(InputError, match=r"posts.csv: has no 'platform' column; pass --platform"):
        import_source("generic", [path], ImportOptions(text_col="body", label_col="y"))
    (tmp_path / "bad.jsonl").write_text('{"text": "a", "label": "0"}\n{"text": "b", "label": \n')
    with pytest.raises(InputError, match=r"bad.jsonl: line 2 of the table is not valid JSON"):
        import_source("generic", [tmp_path / "bad.jsonl"], ImportOptions(platform="reddit"))
    (tmp_path / "posts.xml").write_text("<a/>")
    with pytest.raises(InputError, match=r"unknown file type '.xml' for the table; expected .* \(or pass --sep"):
        import_source("generic", [tmp_path / "posts.xml"], ImportOptions(platform="reddit"))


def test_generic_columns_and_id_col(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        '{"uid": "p1", "text": "hi", "label": "x", "platform": "reddit", "dataset": "d1"}\n'
        '{"uid": "p2", "text": "yo", "label": "y", "platform": "twitter", "dataset": "d2"}\n'
    )
    frame = import_source("generic", [path], ImportOptions(id_col="uid", split="test")).corpus.frame
    assert frame[["id", "platform", "dataset", "label"]].values.tolist() == [
        ["p1", "reddit", "d1", "x"],
        ["p2", "twitter", "d2", "y"],
    ]


# --- Hugging Face datasets --------------------------------------------------------------------------------


@pytest.fixture
def hf_datasets(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return pytest.importorskip("datasets", reason="the hf source needs `datasets` (pip install 'mhaudit[hf]')")


def test_hf_local_parquet_folder_and_file(hf_datasets, tmp_path):
    ds = hf_datasets
    features = ds.Features(
        {
            "text": ds.Value("string"),
            "label": ds.ClassLabel(names=["sadness", "joy", "love", "anger", "fear", "surprise"]),
        }
    )
    folder = tmp_path / "emotion"
    folder.mkdir()
    for split, n in (("train", 24), ("validation", 12), ("test", 12)):
        ds.Dataset.from_dict(
            {"text": [f"{split} text {i}" for i in range(n)], "label": [i % 6 for i in range(n)]}, features=features
        ).to_parquet(folder / f"{split}.parquet")
    options = ImportOptions(platform="twitter")
    result = import_source("hf", [folder], replace(options, mapping="dair-cpfe-text"))
    assert per_split(result) == {"train": 24, "val": 12, "test": 12}
    assert counts(result)[("test", "normal")] == 6  # joy, love, surprise: ClassLabel ids became names
    single = import_source("hf", [folder / "test.parquet"], options).corpus.frame
    assert single["raw_label"].value_counts().to_dict() == {n: 2 for n in features["label"].names}
    assert set(single["split"]) == {"test"} and single["id"].iat[0] == "test-test-1"


def test_hf_multilabel_and_errors(hf_datasets, tmp_path):
    ds = hf_datasets
    features = ds.Features(
        {"text": ds.Value("string"), "labels": ds.Sequence(ds.ClassLabel(names=EMOTIONS)), "id": ds.Value("string")}
    )
    ds.Dataset.from_dict(
        {"text": ["a", "b", "c"], "labels": [[17, 27], [25], [27]], "id": ["x", "y", "z"]}, features=features
    ).to_parquet(tmp_path / "go-test.parquet")
    options = ImportOptions(platform="reddit", id_col="id")
    frame = import_source(
        "hf",
        [tmp_path / "go-test.parquet"],
        replace(options, mapping="goemotions-cpfe-code", multi_label=Policy.expand),
    ).corpus.frame
    assert frame[["id", "label"]].values.tolist() == [
        ["x:joy", "normal"],
        ["x:neutral", "normal"],
        ["y", "depression"],
        ["z", "normal"],
    ]
    with pytest.raises(InputError, match="needs --platform"):
        import_source("hf", [tmp_path / "go-test.parquet"])
    with pytest.raises(InputError, match=r"go-test.parquet\[test\]: missing column\(s\) body; found text, labels"):
        import_source("hf", [tmp_path / "go-test.parquet"], ImportOptions(platform="reddit", text_col="body"))
    with pytest.raises(InputError, match="no such file"):
        import_source("hf", [tmp_path / "absent.csv"], options)


def test_hf_without_datasets_installed(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` raise ImportError
    shutil.copy(FIXTURES / "kaggle_combined_small.csv", tmp_path / "k.csv")
    with pytest.raises(InputError, match=r"install mhaudit\[hf\]"):
        import_source("hf", [tmp_path / "k.csv"], ImportOptions(platform="kaggle"))
