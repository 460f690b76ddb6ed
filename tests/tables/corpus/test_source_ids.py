"""Every registered importer names its ids after the data set (`--dataset`), so two imports of the same file
under different data-set names merge without a duplicate id. Each source reads a tiny file in its real
format, written here (the layouts are those its reader and SOURCE.md describe)."""

from __future__ import annotations

import sys
import types

import pandas as pd
import pytest

from mhaudit.tables.corpus.importing import ImportOptions, import_source
from mhaudit.tables.corpus.schema import merge_corpora
from mhaudit.tables.corpus.sources import all_sources


def write(folder, name, text):
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def fake_datasets():
    """Just enough of `datasets` for the hf source to read a local CSV (the real package is optional)."""

    def load_dataset(builder, data_files, **_):
        return {
            split: types.SimpleNamespace(to_pandas=lambda p=path: pd.read_csv(p, dtype=str), features={})
            for split, path in data_files.items()
        }

    return types.SimpleNamespace(load_dataset=load_dataset)


# source -> (files it reads, extra options). Two data rows per file, both classes, the default mapping's labels.
FILES = {
    "bluesky_depression": (
        {
            "bluesky-depression-dataset.csv": ",text,repostCount,replyCount,likeCount,link,image,createdAt,depressive\n"
            '0,"so tired\nof all of it",0,1,2,,,2024-05-01T10:00:00Z,1\n'
            "1,lovely walk today,0,0,5,,,2024-05-02T10:00:00Z,0\n"
        },
        {},
    ),
    "dair_emotion": (
        {
            "train.txt": "i feel so alone;sadness\ni feel great;joy\n",
            "test.txt": "i feel scared;fear\ni feel loved;love\n",
        },
        {},
    ),
    "depression_reddit": (
        {"depression_dataset_reddit_cleaned.csv": "text,is_depressive\nfeel empty,1\nnice day,0\n"},
        {},
    ),
    "dreaddit": (
        {
            "dreaddit-train.csv": "subreddit,post_id,sentence_range,text,id,label,confidence\n"
            'ptsd,8601tu,"(15, 20)",I cannot sleep again,33181,1,0.8\n'
            'relationships,8lbrx9,"(0, 5)",We had a nice dinner,2606,0,1.0\n',
            "dreaddit-test.csv": "id,subreddit,post_id,sentence_range,text,label,confidence\n"
            '896,anxiety,8ua5ue,"[0, 5]",My chest is tight,1,0.8\n'
            '19548,homeless,8ub9v2,"[5, 10]",Found a shelter bed,0,0.6\n',
        },
        {},
    ),
    "generic": ({"posts.csv": "text,label\nhello there,a\nbye now,b\n"}, {"platform": "reddit"}),
    "goemotions": (
        {"train.tsv": "so happy\t17,27\teecwqtt\nmeh\t27\t\n", "test.tsv": "sad day\t25\ted5f85d\nok\t27\tx\n"},
        {},
    ),
    "hf": ({"test.csv": "text,label\nhello there,a\nbye now,b\n"}, {"platform": "twitter"}),
    "kaggle_mh": ({"Combined Data.csv": ",statement,status\n0,I am fine,Normal\n1,I cannot cope,Stress\n"}, {}),
    "rastogi": (
        {
            "Reddit_Combi.csv": "title,body,Body_Title,label\nt1,b1,t1 b1,1\nt2,b2,t2 b2,0\n",
            "Twitter_Full.csv": "text,hashtags,labels\nso stressed,#exam,1\ncalm morning,,0\n",
        },
        {},
    ),
    "tss_full": ({"Twitter_Full.csv": "text;hashtags;labels;;\r\nso stressed;#exam;1;;\r\ncalm morning;;0;;\r\n"}, {}),
    "tss_gold": ({"Twitter_sample_gold.utf8.csv": "text,label\nso stressed,1\ncalm morning,0\n"}, {}),
}


def test_every_registered_source_has_a_file_here():
    assert sorted(FILES) == [s.name for s in all_sources()]


@pytest.mark.parametrize("source", sorted(FILES))
def test_ids_follow_the_data_set_and_two_names_merge(source, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", fake_datasets())
    texts, extra = FILES[source]
    paths = [write(tmp_path, name, text) for name, text in texts.items()]
    default = import_source(source, paths, ImportOptions(split="test", **extra)).corpus.frame
    assert all(i.startswith(f"{d}-") for i, d in zip(default["id"], default["dataset"], strict=True))
    written, rest = [], []
    for name in ("alpha", "beta"):
        corpus = import_source(source, paths, ImportOptions(split="test", dataset=name, **extra)).corpus
        assert set(corpus.frame["dataset"]) == {name}
        assert corpus.frame["id"].str.startswith(f"{name}-").all(), corpus.frame["id"].tolist()
        rest.append(corpus.frame["id"].str.removeprefix(f"{name}-").tolist())  # the same file: the same ids after it
        corpus.write(tmp_path / f"{name}.parquet")
        written.append(tmp_path / f"{name}.parquet")
    assert rest[0] == rest[1]
    merged = merge_corpora(written).frame  # raises on a duplicate id
    assert len(merged) == 2 * len(default) and merged["id"].is_unique


def test_a_named_data_set_over_several_rastogi_files_keeps_ids_apart(tmp_path):
    texts, _ = FILES["rastogi"]
    paths = [write(tmp_path, name, text) for name, text in texts.items()]
    frame = import_source("rastogi", paths, ImportOptions(split="test", dataset="stress")).corpus.frame
    assert frame["id"].tolist() == [
        "stress-Reddit_Combi-1",
        "stress-Reddit_Combi-2",
        "stress-Twitter_Full-1",
        "stress-Twitter_Full-2",
    ]
    default = import_source("rastogi", paths, ImportOptions(split="test")).corpus.frame  # without --dataset: unchanged
    assert default["id"].tolist() == [
        "rastogi_reddit_combi-1",
        "rastogi_reddit_combi-2",
        "rastogi_twitter_full-1",
        "rastogi_twitter_full-2",
    ]


def test_native_ids_keep_their_value_after_the_prefix(tmp_path):
    texts, _ = FILES["dreaddit"]
    paths = [write(tmp_path, name, text) for name, text in texts.items()]
    assert import_source("dreaddit", paths).corpus.frame["id"].tolist() == [
        "dreaddit-33181",
        "dreaddit-2606",
        "dreaddit-896",
        "dreaddit-19548",
    ]
    texts, _ = FILES["goemotions"]
    paths = [write(tmp_path, name, text) for name, text in texts.items()]
    ids = import_source("goemotions", paths, ImportOptions(split="test")).corpus.frame["id"].tolist()
    assert ids == ["goemotions-eecwqtt", "goemotions-train-2", "goemotions-ed5f85d", "goemotions-x"]
