import re

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.tables.corpus import mappings
from mhaudit.tables.corpus.label_mapping import MultiLabelPolicy, apply_mapping

GOEMOTIONS = (
    "admiration amusement anger annoyance approval caring confusion curiosity desire disappointment "
    "disapproval disgust embarrassment excitement fear gratitude grief joy love nervousness optimism "
    "pride realization relief remorse sadness surprise neutral"
).split()
DAIR = ["sadness", "joy", "love", "anger", "fear", "surprise"]
KAGGLE = ["Normal", "Depression", "Suicidal", "Anxiety", "Bipolar", "Stress", "Personality disorder"]


def test_every_shipped_mapping_loads_with_a_source_and_summary():
    names = [m.name for m in mappings.available()]
    assert {
        "goemotions-cpfe-text",
        "goemotions-cpfe-code",
        "dair-cpfe-text",
        "dair-cpfe-code",
        "kaggle-cpfe",
        "cpfe-a",
        "cpfe-b",
        "cpfe-c",
        "cpfe-d",
        "cpfe-e",
        "stress-binary",
        "depression-binary",
    } <= set(names)
    for m in mappings.available():
        assert m.summary and m.source and m.classes


@pytest.mark.parametrize(
    "name, vocabulary",
    [
        ("goemotions-cpfe-text", GOEMOTIONS),
        ("goemotions-cpfe-code", GOEMOTIONS),
        ("dair-cpfe-text", DAIR),
        ("dair-cpfe-code", DAIR),
        ("kaggle-cpfe", KAGGLE),
    ],
)
def test_mappings_cover_their_vocabulary_exactly(name, vocabulary):
    m = mappings.load(name)
    assert sorted(set(m.targets) | set(m.dropped)) == sorted(vocabulary)
    assert m.classes == ["normal", "depression", "anxiety", "stress"]


def test_text_and_code_readings_differ_as_documented():
    text, code = mappings.load("goemotions-cpfe-text"), mappings.load("goemotions-cpfe-code")
    assert text.target("embarrassment") == "normal" and code.target("embarrassment") == "anxiety"
    assert text.target("disgust") == "normal" and code.target("disgust") == "stress"
    assert sorted(code.dropped) == ["confusion", "curiosity", "desire", "disapproval", "realization", "surprise"]
    assert mappings.load("dair-cpfe-text").target("surprise") == "normal"
    assert mappings.load("dair-cpfe-code").target("surprise") is None
    kaggle = mappings.load("kaggle-cpfe")
    assert [kaggle.target(s) for s in KAGGLE] == [
        "normal",
        "depression",
        "depression",
        "anxiety",
        "depression",
        "stress",
        "stress",
    ]


def test_coarsenings_chain_after_a_four_class_mapping():
    b = mappings.load("kaggle-cpfe+cpfe-b")
    d = mappings.load("kaggle-cpfe+cpfe-d")
    assert b.classes == ["normal", "condition"] and d.classes == ["normal", "distress"]
    # D as the released code computes it is B under another name: same partition of raw labels
    assert {k: b.classes.index(v) for k, v in b.targets.items()} == {
        k: d.classes.index(v) for k, v in d.targets.items()
    }
    c = mappings.load("dair-cpfe-code+cpfe-c")
    assert c.target("fear") == c.target("anger") == "distress" and c.target("surprise") is None
    e = mappings.load("kaggle-cpfe+cpfe-e")
    assert e.target("Normal") is None and e.target("Stress") == "distress"


def test_unknown_mapping_and_user_mapping_file(tmp_path):
    with pytest.raises(InputError, match="unknown mapping 'nope'"):
        mappings.load("nope")
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\nclasses = ["neg", "pos"]\n[map]\nneg = ["0"]\npos = ["1"]\n')
    assert mappings.load(str(path)).target("1") == "pos"


def records(labels):
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(len(labels))],
            "text": [f"t{i}" for i in range(len(labels))],
            "raw_labels": labels,
        }
    )


CODE = mappings.load("goemotions-cpfe-code")
ROWS = [["sadness"], ["joy", "fear"], ["surprise", "anger"], ["fear", "nervousness"], ["confusion"]]


@pytest.mark.parametrize(
    "policy, ids, labels",
    [
        (MultiLabelPolicy.first, ["r0", "r1", "r3"], ["depression", "normal", "anxiety"]),
        (
            MultiLabelPolicy.expand,
            ["r0", "r1:joy", "r1:fear", "r2:anger", "r3:fear", "r3:nervousness"],
            ["depression", "normal", "anxiety", "stress", "anxiety", "anxiety"],
        ),
        (MultiLabelPolicy.priority, ["r0", "r1", "r2", "r3"], ["depression", "anxiety", "stress", "anxiety"]),
        (MultiLabelPolicy.drop_ambiguous, ["r0", "r2", "r3"], ["depression", "stress", "anxiety"]),
    ],
)
def test_multi_label_policies(policy, ids, labels):
    out = apply_mapping(records(ROWS), CODE, policy)
    assert out.frame["id"].tolist() == ids
    assert out.frame["label"].tolist() == labels


def test_mapping_report_counts_every_assignment():
    out = apply_mapping(records(ROWS), CODE, MultiLabelPolicy.first)
    report = out.report.set_index("raw_label")
    assert report["assignments"].sum() == 8
    assert report.loc["fear", "assignments"] == 2 and report.loc["fear", "class"] == "anxiety"
    assert report.loc["surprise", "outcome"] == "dropped" and "released code" in report.loc["surprise", "reason"]
    assert out.dropped.set_index("reason")["rows"].to_dict() == {"first listed label dropped by the mapping": 2}


def test_label_unknown_to_the_mapping_is_an_error():
    with pytest.raises(InputError, match="label 'grumpy' is not known to mapping 'goemotions-cpfe-code'"):
        apply_mapping(records([["joy"], ["grumpy"]]), CODE)


def test_a_chain_keeps_the_first_mappings_priority():
    chained = mappings.load("goemotions-cpfe-code+cpfe-b")
    assert chained.priority == ["condition", "normal"]
    out = apply_mapping(records([["joy", "sadness"]]), chained, MultiLabelPolicy.priority)
    assert out.frame["label"].tolist() == ["condition"]  # as depression would win under the 4-class mapping


@pytest.mark.parametrize(
    "text, message",
    [
        ('name = "m"\nclasses = "xy"\n[map]\nx = ["1"]\n', "classes must be a list of strings"),
        ('name = "m"\nclasses = ["x"]\nmap = "x"\n', "must be a table"),
        ('name = "m"\nclasses = ["x"]\n[map]\nx = "10"\n', "[map] x must be a list of strings"),
    ],
)
def test_malformed_mapping_files(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(message)):
        mappings.load(str(path))
