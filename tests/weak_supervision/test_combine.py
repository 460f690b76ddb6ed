"""`combine_labels` on real weak labelers of 400 Bluesky depression posts (tests/weak_supervision/combine_sources.py):
the votes each source gives (a lexicon's 0 abstains unless --zero-votes names it; no row or a null value abstains),
the per-source estimates against a brute-force count, the combined rows and how they record their making."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.stats.label_model import ABSTAIN
from mhaudit.tables.label_store import read_label_files
from mhaudit.weak_supervision.combine import combine_labels
from mhaudit.weak_supervision.combine_options import CombineOptions
from tests.weak_supervision.combine_sources import ITEMS, LEXICONS, build_sources

SOURCES = ("si", "mh", "wide", "keywords", "tfidf-lr")


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    return read_label_files(build_sources(tmp_path_factory.mktemp("combine")).files)


def _combine(labels, **options):
    return combine_labels(labels, "mh", CombineOptions(labelers=options.pop("labelers", SOURCES), **options))


def test_votes_abstain_on_a_lexicons_zero_and_count_an_llms_and_a_models(labels):
    combined = _combine(labels)
    votes = combined.votes
    assert list(votes.columns) == [*LEXICONS.values(), "keywords", "tfidf-lr"] and len(votes) == ITEMS
    given = labels.pivot(index="item_id", columns="labeler", values="value").reindex(votes.index)
    for lexicon in LEXICONS.values():  # 1 where a term matched, else no vote
        assert set(votes[lexicon]) == {1, ABSTAIN}
        assert (votes[lexicon] == 1).sum() == (given[lexicon] == 1).sum()
    assert [(votes[name] == 1).sum() for name in LEXICONS.values()] == [124, 113, 302]
    assert (votes["keywords"] != ABSTAIN).sum() == 60 and given["keywords"].notna().sum() == 60  # no row: no vote
    assert (votes["keywords"] == 0).sum() == (given["keywords"] == 0).sum() > 0  # an llm's 0 is a vote
    assert set(votes["tfidf-lr"]) == {0, 1} and (votes["tfidf-lr"] == given["tfidf-lr"]).all()
    zero = _combine(labels, zero_votes=("mh",))
    mh = LEXICONS["mh"]
    assert (zero.votes[mh] == 0).sum() == ITEMS - 113 and (zero.votes[mh] == ABSTAIN).sum() == 0
    assert zero.votes.drop(columns=mh).equals(votes.drop(columns=mh))  # only the named source changes
    assert zero.estimates.set_index("labeler")["zero_votes"].to_dict() == {
        **dict.fromkeys(LEXICONS.values(), False),
        LEXICONS["mh"]: True,
        "keywords": True,
        "tfidf-lr": True,
    }
    assert zero.labels["prompt_hash"].iat[0] != combined.labels["prompt_hash"].iat[0]


def _brute_force(votes: pd.DataFrame) -> pd.DataFrame:
    """Coverage and conflict item by item: conflict = share of a source's votes where another source voted the
    other class."""
    rows = []
    for name in votes.columns:
        mine = votes[votes[name] != ABSTAIN]
        others = mine.drop(columns=name)
        disagree = [(row != ABSTAIN).values & (row.values != v) for v, (_, row) in zip(mine[name], others.iterrows())]
        rows.append(
            {
                "labeler": name,
                "n_votes": len(mine),
                "coverage": len(mine) / len(votes),
                "conflict": np.mean([d.any() for d in disagree]),
                "votes_for_1": (mine[name] == 1).mean(),
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("zero_votes", [(), ("si", "mh", "wide")])
def test_estimates_against_a_brute_force_count(labels, zero_votes):
    combined = _combine(labels, zero_votes=zero_votes)
    expected = _brute_force(combined.votes)
    got = combined.estimates
    assert got["labeler"].tolist() == expected["labeler"].tolist()
    assert got["n_votes"].tolist() == expected["n_votes"].tolist()
    for column in ("coverage", "conflict", "votes_for_1"):
        np.testing.assert_allclose(got[column], expected[column], rtol=0, atol=1e-12)
    assert got["accuracy"].between(0, 1).all() and got["converged"].all()
    if not zero_votes:
        assert got["n_votes"].tolist() == [124, 113, 302, 60, ITEMS]
        assert got["coverage"].round(4).tolist() == [0.31, 0.2825, 0.755, 0.15, 1.0]


def test_the_combined_rows_and_their_recipe(labels):
    combined = _combine(labels)
    rows = combined.labels
    assert (
        len(rows) == ITEMS and (rows["kind"] == "combined").all() and (rows["labeler"] == "combined-dawid-skene").all()
    )
    assert rows["probability"].between(0, 1).all()
    np.testing.assert_array_equal(rows["probability"], combined.fit.probabilities[:, 1])
    expected = np.where(rows["probability"] > 0.5, 1, np.where(rows["probability"] < 0.5, 0, -1))
    assert (rows["value"].fillna(-1).astype(int).to_numpy() == expected).all()
    first = rows.iloc[0]
    assert json.loads(first["raw_answer"]) == {
        name: (None if v == ABSTAIN else int(v)) for name, v in combined.votes.iloc[0].items()
    }
    note = json.loads(first["note"])
    assert note["method"] == "dawid-skene" and [s["labeler"] for s in note["sources"]] == list(combined.votes.columns)
    assert [s["zero_votes"] for s in note["sources"]] == [False, False, False, True, True]
    assert rows["prompt_hash"].nunique() == 1 and len(first["prompt_hash"]) == 64
    again = _combine(labels)
    assert again.labels["prompt_hash"].iat[0] == first["prompt_hash"]  # the same recipe and inputs: the same hash
    assert again.labels["probability"].equals(rows["probability"])
    assert "400 items of task mh from 5 sources by dawid-skene (converged after" in combined.summary


def test_under_dawid_skene_a_source_voting_one_class_adds_nothing_to_the_likelihood(labels):
    """An abstention carries no information in Dawid-Skene, so a lexicon whose 0 abstains (it votes only 1) has the
    confusion rows [0, 1] for both classes and leaves the maximum log-likelihood where the other sources put it. It
    still changes EM's start (the majority vote), and these sources' likelihood has a ridge of equal maxima, so the
    probabilities move a little (measured: at most 0.039). Read as votes (--zero-votes) it moves them much more."""
    base = ("keywords", "tfidf-lr", "wide")
    with_lexicon = _combine(labels, labelers=(*base, "mh"))
    without = _combine(labels, labelers=base)
    assert with_lexicon.fit.confusion is not None
    np.testing.assert_array_equal(with_lexicon.fit.confusion[-1], [[0.0, 1.0], [0.0, 1.0]])
    assert with_lexicon.fit.log_likelihood == pytest.approx(without.fit.log_likelihood, abs=1e-5)
    moved = np.abs(with_lexicon.labels["probability"] - without.labels["probability"]).max()
    assert 0 < moved < 0.05
    voting = _combine(labels, labelers=(*base, "mh"), zero_votes=("mh",))
    assert np.abs(voting.labels["probability"] - without.labels["probability"]).max() > 0.1


def test_items_no_source_votes_on_get_no_label(labels):
    combined = _combine(labels, labelers=("si", "mh", "keywords"))
    voted = (combined.votes != ABSTAIN).any(axis=1)
    assert voted.all() and len(combined.labels) == len(combined.votes)
    raw = labels[labels["labeler"].isin([LEXICONS["si"], LEXICONS["mh"], "keywords"])]
    any_vote = raw[raw["value"].eq(1) | (raw["labeler"].eq("keywords") & raw["value"].notna())]["item_id"].nunique()
    assert len(combined.labels) == any_vote and combined.items_without_votes == ITEMS - any_vote


def test_bad_combinations_are_one_sentence(labels):
    with pytest.raises(InputError, match="combining needs at least two weak labelers, got 1 \\(--labeler mh\\)"):
        _combine(labels, labelers=("mh",))
    with pytest.raises(InputError, match="--labeler 'experts' holds people's labels \\(kind human\\)"):
        _combine(labels, labelers=("mh", "experts"))
    with pytest.raises(
        InputError, match="--labeler 'tfidf' has no labels for task 'mh' \\(did you mean 'tfidf-lr'\\?\\)"
    ):
        _combine(labels, labelers=("mh", "tfidf"))
    with pytest.raises(InputError, match="no labels for task 'si'; the labels have tasks: mh"):
        combine_labels(labels, "si", CombineOptions(labelers=SOURCES))
    with pytest.raises(InputError, match="--zero-votes 'experts' is not one of the sources"):
        _combine(labels, zero_votes=("experts",))
    with pytest.raises(InputError, match="method 'snorkel' must be one of majority, dawid-skene, label-model"):
        _combine(labels, method="snorkel")


def test_a_null_value_abstains_even_from_a_model(labels):
    """An invalid LLM answer or a model's missing prediction is stored as a null value: no vote."""
    nulled = labels.copy()
    gone = nulled["labeler"].eq("tfidf-lr") & nulled["item_id"].isin(nulled["item_id"].unique()[:25])
    nulled.loc[gone, "value"] = pd.NA
    combined = _combine(nulled)
    # 25 items without the model's vote: 11 of them voted on by no other source, left out (measured)
    assert (combined.votes["tfidf-lr"] == ABSTAIN).sum() + combined.items_without_votes == 25
    assert combined.items_without_votes == 11 and len(combined.labels) == ITEMS - 11
    assert combined.estimates.set_index("labeler").loc["tfidf-lr", "n_votes"] == ITEMS - 25
