"""`mhaudit labels combine` on real weak labelers of 400 Bluesky depression posts (the three lexicons, a keyword
rule, a TF-IDF + LR trained on Depression Reddit: tests/weak_supervision/combine_sources.py): the stored rows, the
estimates file, a second run, other commands reading the combined labeler, and each bad input's one sentence with
nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.stats.label_model import ABSTAIN
from mhaudit.tables.label_store import LabelStore, read_labels
from tests.cli_checks import assert_one_sentence_failure
from tests.weak_supervision.combine_sources import ITEMS, LEXICONS, build_sources

runner = CliRunner()
SOURCES = ["--labeler", "si", "--labeler", "mh", "--labeler", "wide", "--labeler", "keywords", "--labeler", "tfidf-lr"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    return build_sources(tmp_path_factory.mktemp("combine-cli"))


@pytest.fixture
def store(sources, tmp_path):
    return shutil.copy(sources.store, tmp_path / "labels.sqlite")


def _run(sources, store, *args, extra=()):
    files = [str(store), str(sources.keywords), str(sources.model), *map(str, extra)]
    return runner.invoke(app, ["labels", "combine", "--labels", *files, "--task", "mh", *args])


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_combine_into_the_store(sources, store, tmp_path):
    estimates = tmp_path / "estimates.csv"
    result = _run(sources, store, *SOURCES, "--zero-votes", "mh", "--into", str(store), "--estimates", str(estimates))
    assert result.exit_code == 0, result.output
    with LabelStore(store) as opened:
        rows = opened.frame(labeler="combined-dawid-skene")
    assert len(rows) == ITEMS and (rows["kind"] == "combined").all() and rows["probability"].between(0, 1).all()
    expected = np.where(rows["probability"] > 0.5, 1, np.where(rows["probability"] < 0.5, 0, -1))
    assert (rows["value"].fillna(-1).astype(int).to_numpy() == expected).all()
    note = json.loads(rows["note"].iat[0])
    assert note["method"] == "dawid-skene"
    assert {s["labeler"]: s["zero_votes"] for s in note["sources"]} == {
        LEXICONS["si"]: False,
        LEXICONS["mh"]: True,
        LEXICONS["wide"]: False,
        "keywords": True,
        "tfidf-lr": True,
    }
    table = pd.read_csv(estimates)
    assert table["labeler"].tolist() == [*LEXICONS.values(), "keywords", "tfidf-lr"]
    assert table["n_votes"].tolist() == [124, ITEMS, 302, 60, ITEMS]  # mh's 0s are votes here
    votes = pd.DataFrame([json.loads(v) for v in rows["raw_answer"]])  # each item's votes, as stored
    for _, source in table.iterrows():
        mine = votes[source["labeler"]].dropna()
        others = votes.drop(columns=source["labeler"]).loc[mine.index]
        conflict = np.mean([(row.dropna() != v).any() for v, (_, row) in zip(mine, others.iterrows())])
        assert source["coverage"] == pytest.approx(len(mine) / ITEMS, abs=1e-12)
        assert source["conflict"] == pytest.approx(conflict, abs=1e-12)
    assert table["converged"].all() and table["class_balance"].nunique() == 1 and table["accuracy"].between(0, 1).all()
    output = _flat(result.output)
    assert "Sources of combined-dawid-skene (task mh, dawid-skene; estimated without labels)" in output
    assert "combined-dawid-skene: 400 items of task mh from 5 sources by dawid-skene (converged after" in output
    assert "wrote 400 labels of combined-dawid-skene (kind combined) to" in output
    # a second run under the same name is refused, the store untouched; --replace makes it anew
    digest = hashlib.sha256(store.read_bytes()).hexdigest()
    again = _run(sources, store, *SOURCES, "--into", str(store))
    assert again.exit_code == 2
    assert (
        f"labeler 'combined-dawid-skene' already has 400 labels for task 'mh' in {store}; give another --name, or "
        "--replace to make it anew"
    ) in _flat(again.output)
    assert hashlib.sha256(store.read_bytes()).hexdigest() == digest
    replaced = _run(sources, store, *SOURCES, "--into", str(store), "--replace")
    assert replaced.exit_code == 0, replaced.output
    with LabelStore(store) as opened:
        remade = opened.frame(labeler="combined-dawid-skene")
    assert len(remade) == ITEMS and remade["prompt_hash"].iat[0] != rows["prompt_hash"].iat[0]  # mh abstains on 0 now
    assert json.loads(remade["note"].iat[0])["sources"][1]["zero_votes"] is False
    nested = _run(sources, store, "--labeler", "combined-dawid-skene", "--labeler", "tfidf-lr", "--out", "x.csv")
    assert_one_sentence_failure(
        nested,
        "--labeler 'combined-dawid-skene' is of kind combined; the sources of a combined label are weak labelers "
        "(kinds llm, lexicon, model)",
    )


def test_other_commands_read_the_combined_labeler(sources, store, tmp_path):
    out = tmp_path / "combined.parquet"
    result = _run(sources, store, *SOURCES, "--method", "majority", "--name", "vote", "--out", str(out))
    assert result.exit_code == 0, result.output
    combined = read_labels(out)
    assert len(combined) == ITEMS and (combined["kind"] == "combined").all() and combined["labeler"].eq("vote").all()
    assert combined["probability"].between(0, 1).all()
    ties = combined["probability"] == 0.5
    assert combined.loc[ties, "value"].isna().all() and combined.loc[~ties, "value"].notna().all()
    report = tmp_path / "report"
    audit = ["audit", "agreement", "--labels", str(store), str(out), "--task", "mh", "--weak-labeler", "vote"]
    result = runner.invoke(app, [*audit, "--reference", "experts", "--n-boot", "50", "--out", str(report)])
    assert result.exit_code == 0, result.output
    tables = {
        name: t for s in json.loads((report / "report.json").read_text())["sections"] for name, t in s["tables"].items()
    }
    experts = (sources.items.set_index("id")["label"] == "depression").astype(int)
    hard = combined.dropna(subset=["value"]).set_index("item_id")["value"].astype(int)
    agreement = {row["metric"]: row["estimate"] for row in tables["weak_vs_reference"]}
    assert agreement["observed_agreement"] == pytest.approx((hard == experts.reindex(hard.index)).mean(), abs=1e-12)
    sample = tmp_path / "sample.parquet"  # a validation sample stratified by the combined label
    sources.items.to_parquet(tmp_path / "items.parquet")
    args = ["--items", str(tmp_path / "items.parquet"), "--task", "mh", "--labels", str(out), "--weak", "vote"]
    result = runner.invoke(app, ["labels", "sample", *args, "--n", "40", "--out", str(sample)])
    assert result.exit_code == 0, result.output
    drawn = pd.read_parquet(sample)
    assert len(drawn) == 40 and drawn["weak_labeler"].eq("vote").all()
    assert set(drawn["item_id"]) <= set(hard.index)  # ties have no label to stratify by


BAD = {
    "one source": (
        ["--labeler", "mh"],
        "combining needs at least two weak labelers, got 1 (--labeler mh); give --labeler once per source",
    ),
    "unknown labeler": (
        ["--labeler", "mh", "--labeler", "tfidf"],
        "--labeler 'tfidf' has no labels for task 'mh' (did you mean 'tfidf-lr'?); labelers: elsewhere (llm),",
    ),
    "people's labels": (
        ["--labeler", "mh", "--labeler", "experts"],
        "--labeler 'experts' holds people's labels (kind human), never a source of a combined label",
    ),
    "unknown task": (["--labeler", "mh", "--labeler", "si"], "no labels for task 'si'; the labels have tasks: mh"),
    "zero votes of another": (
        [*SOURCES, "--zero-votes", "experts"],
        "--zero-votes 'experts' is not one of the sources (lexicon:si@b3e585a49a9b, lexicon:mh@ee7f3c894ccc,",
    ),
    "no overlap": (
        ["--labeler", "si", "--labeler", "elsewhere"],
        "no item has votes from two of the sources (lexicon:si@b3e585a49a9b, elsewhere); a label model learns from "
        "where sources vote together",
    ),
    "label model, two sources": (
        ["--labeler", "keywords", "--labeler", "tfidf-lr", "--method", "label-model"],
        "the label model needs three sources of which each pair votes on common items; these sources do not",
    ),
    "unknown method": ([*SOURCES, "--method", "snorkel"], "method 'snorkel' must be one of majority, dawid-skene,"),
    "neither --into nor --out": (["--labeler", "mh", "--labeler", "si"], "give --into STORE"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_sentence_and_writes_nothing(sources, store, tmp_path, case):
    args, sentence = BAD[case]
    if case == "unknown task":
        args = [*args, "--task", "si"]  # the last --task counts
    where = [] if case == "neither --into nor --out" else ["--out", str(tmp_path / "combined.parquet")]
    elsewhere = tmp_path / "elsewhere.csv"  # an llm labelling 40 other posts: no item in common with the others
    ids = [f"elsewhere-{i}" for i in range(40)]
    pd.DataFrame(
        {"item_id": ids, "task": "mh", "labeler": "elsewhere", "kind": "llm", "value": [i % 2 for i in range(40)]}
    ).to_csv(elsewhere, index=False)
    digest = hashlib.sha256(store.read_bytes()).hexdigest()
    result = _run(sources, store, *args, *where, extra=[elsewhere])
    assert_one_sentence_failure(result, sentence)
    assert result.stdout == ""
    assert not (tmp_path / "combined.parquet").exists() and hashlib.sha256(store.read_bytes()).hexdigest() == digest


def test_a_constant_source_is_refused_by_name(sources, store, tmp_path):
    always = sources.items.assign(item_id=sources.items["id"], task="mh", labeler="always-1", kind="llm", value=1)
    path = tmp_path / "always.csv"
    always[["item_id", "task", "labeler", "kind", "value"]].to_csv(path, index=False)
    result = runner.invoke(
        app,
        ["labels", "combine", "--labels", str(store), str(path), "--task", "mh", "--labeler", "mh"]
        + ["--labeler", "always-1", "--out", str(tmp_path / "out.csv")],
    )
    assert result.exit_code == 2 and not (tmp_path / "out.csv").exists()
    assert (
        "--labeler 'always-1' (llm) gives the label 1 to every one of its 400 items; a source that says the same of "
        "every item tells a label model nothing: leave it out"
    ) in _flat(result.output)
    assert ABSTAIN == -1
