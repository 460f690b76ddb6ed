"""Label models (stats.label_model): majority vote, Dawid–Skene and the triplet label model.

References: crowd-kit's `DawidSkene` and `MajorityVote` (same initialisation, iteration for iteration),
a brute-force sum over every label assignment for the log-likelihood, and snorkel's `LabelModel` for the
label model's accuracies. Planted votes are SYNTHETIC (`planted_votes`): each source votes on a share of
the items (its coverage) and is right with a fixed probability whatever the class (its accuracy).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from mhaudit.stats.label_model import (
    ABSTAIN,
    combine_votes,
    dawid_skene,
    log_likelihood,
    majority_vote,
    triplet_label_model,
)

ACCURACIES = np.array([0.55, 0.62, 0.70, 0.77, 0.84, 0.90])
COVERAGES = np.array([0.30, 0.45, 0.60, 0.75, 0.90, 1.00])


def planted_votes(n_items: int, accuracies, coverages, prevalence: float, seed: int):
    """SYNTHETIC binary votes: true labels, votes (ABSTAIN where a source skips) and each source's realised
    accuracy (its share of correct votes), the number a method should recover."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < prevalence).astype(int)
    correct = rng.random((n_items, len(accuracies))) < accuracies
    votes = np.where(correct, truth[:, None], 1 - truth[:, None])
    voted = rng.random(votes.shape) < coverages
    return truth, np.where(voted, votes, ABSTAIN), (correct & voted).sum(axis=0) / voted.sum(axis=0)


@pytest.fixture(scope="module")
def planted():
    """SYNTHETIC: 20,000 items, 6 sources with accuracies 0.55-0.9 and coverages 0.3-1.0, prevalence 0.2."""
    return planted_votes(20_000, ACCURACIES, COVERAGES, 0.2, seed=0)


def random_votes(n_items: int, n_sources: int, n_classes: int, seed: int) -> np.ndarray:
    """SYNTHETIC votes drawn uniformly (ABSTAIN included); every item keeps at least one vote."""
    rng = np.random.default_rng(seed)
    votes = rng.integers(ABSTAIN, n_classes, (n_items, n_sources))
    votes[(votes == ABSTAIN).all(axis=1), 0] = 0
    return votes


def crowdkit_frame(votes: np.ndarray) -> pd.DataFrame:
    items, sources = np.nonzero(votes != ABSTAIN)
    return pd.DataFrame({"task": items, "worker": sources, "label": votes[items, sources]})


def crowdkit_probabilities(model, votes: np.ndarray, n_classes: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # crowd-kit 1.4.2 uses pandas' deprecated inplace= and copy=
        probas = model.fit(crowdkit_frame(votes)).probas_
    return probas.reindex(columns=range(n_classes), fill_value=0.0).sort_index().to_numpy()


# ----------------------------------------------------------------------------------------- references
@pytest.mark.parametrize(("n_classes", "n_iter"), [(2, 1), (2, 10), (2, 80), (3, 5), (3, 80)])
def test_dawid_skene_equals_crowdkit_iteration_for_iteration(n_classes, n_iter):
    """Same start (majority vote), same EM steps: crowd-kit's n_iter = ours + 1 (its loop begins with the
    E-step ours does before iterating). tol=-inf keeps crowd-kit from stopping early. The only difference
    is crowd-kit's clipping of probabilities at 1e-10, which moves nothing here beyond rounding."""
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    votes = random_votes(300, 5, n_classes, seed=n_classes)
    reference = crowdkit_probabilities(crowdkit.DawidSkene(n_iter=n_iter, tol=-np.inf), votes, n_classes)
    ours = dawid_skene(votes, n_classes, max_iter=n_iter - 1, tol=0.0)
    np.testing.assert_allclose(ours.probabilities, reference, rtol=0, atol=1e-12)
    assert ours.n_iter == n_iter - 1


def test_dawid_skene_equals_crowdkit_on_planted_votes(planted):
    """SYNTHETIC planted votes, 60 iterations: posteriors agree; crowd-kit's prior and confusion matrices
    come from one more M-step after its last posteriors, which is ours with one more iteration."""
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    _, votes, _ = planted
    votes = votes[:4000]
    votes = votes[(votes != ABSTAIN).any(axis=1)]  # crowd-kit drops items without votes
    model = crowdkit.DawidSkene(n_iter=60, tol=-np.inf)
    reference = crowdkit_probabilities(model, votes, 2)
    np.testing.assert_allclose(dawid_skene(votes, 2, max_iter=59, tol=0.0).probabilities, reference, atol=1e-10)
    ours = dawid_skene(votes, 2, max_iter=60, tol=0.0)
    np.testing.assert_allclose(ours.class_balance, model.priors_.reindex([0, 1]).to_numpy(), rtol=0, atol=1e-10)
    for source in range(votes.shape[1]):  # crowd-kit: rows (worker, observed label), columns the true label
        table = model.errors_.loc[source].reindex(index=[0, 1], columns=[0, 1]).to_numpy()
        np.testing.assert_allclose(ours.confusion[source], table.T, rtol=0, atol=1e-10)


def test_dawid_skene_equals_crowdkit_with_many_sources():
    """40 sources x 3 classes: rows too wide for one int64 code are compared whole (np.unique(axis=0))."""
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    votes = random_votes(150, 40, 3, seed=5)
    reference = crowdkit_probabilities(crowdkit.DawidSkene(n_iter=6, tol=-np.inf), votes, 3)
    np.testing.assert_allclose(dawid_skene(votes, 3, max_iter=5, tol=0.0).probabilities, reference, atol=1e-12)


def test_majority_vote_equals_crowdkit(planted):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    votes = random_votes(500, 4, 3, seed=7)
    reference = crowdkit_probabilities(crowdkit.MajorityVote(), votes, 3)
    np.testing.assert_array_equal(majority_vote(votes, 3).probabilities, reference)


def brute_force_log_likelihood(votes, prior, confusion) -> float:
    """log of the sum over every assignment of true classes to the items (k ** n terms)."""
    n_items, n_sources = votes.shape
    total = 0.0
    for classes in itertools.product(range(len(prior)), repeat=n_items):
        term = 1.0
        for item, true in enumerate(classes):
            term *= prior[true]
            for source in range(n_sources):
                if votes[item, source] != ABSTAIN:
                    term *= confusion[source, true, votes[item, source]]
        total += term
    return float(np.log(total))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_log_likelihood_equals_the_brute_force_sum(n_classes):
    """6 items x 3 sources, abstentions included, at arbitrary parameters and at Dawid–Skene's fit."""
    rng = np.random.default_rng(n_classes)
    votes = random_votes(6, 3, n_classes, seed=10 + n_classes)
    prior = rng.dirichlet(np.ones(n_classes))
    confusion = rng.dirichlet(np.ones(n_classes), size=(3, n_classes))
    expected = brute_force_log_likelihood(votes, prior, confusion)
    assert log_likelihood(votes, prior, confusion) == pytest.approx(expected, abs=1e-10)
    fit = dawid_skene(votes, n_classes)
    expected = brute_force_log_likelihood(votes, fit.class_balance, fit.confusion)
    assert fit.log_likelihood == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_em_never_lowers_the_log_likelihood(seed, planted):
    _, planted_matrix, _ = planted
    for votes, n_classes in [(random_votes(400, 6, 3, seed), 3), (planted_matrix[seed::3], 2)]:
        fit = dawid_skene(votes, n_classes, max_iter=100, tol=0.0)
        trace = fit.log_likelihood_trace
        assert len(trace) == fit.n_iter + 1 and trace[-1] == fit.log_likelihood
        assert (np.diff(trace) >= -1e-12 * np.abs(trace[1:])).all()  # rounding only


def test_snorkel_label_model_gives_the_same_accuracies(planted):
    """snorkel's LabelModel (matrix completion by SGD) told the planted class balance, as it assumes a
    uniform one otherwise: its accuracies within 0.02 of the triplet method's (both estimate the same
    numbers; snorkel's converge only as far as its 500 epochs go)."""
    model_module = pytest.importorskip("snorkel.labeling.model")
    _, votes, _ = planted
    reference = model_module.LabelModel(cardinality=2, verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference.fit(votes, n_epochs=500, seed=0, class_balance=[0.8, 0.2], progress_bar=False)
    ours = triplet_label_model(votes, 2)
    np.testing.assert_allclose(ours.accuracy, reference.get_weights(), rtol=0, atol=0.02)


# ----------------------------------------------------------------------------------------- recovery
def test_planted_accuracies_are_recovered(planted):
    """SYNTHETIC: Dawid–Skene and the label model recover each source's realised accuracy within 0.02 and the
    prevalence within 0.01; majority vote flatters the weakest source and underrates the strongest."""
    truth, votes, realised = planted
    for method in ("dawid-skene", "label-model"):
        fit = combine_votes(votes, 2, method)
        np.testing.assert_allclose(fit.accuracy, realised, rtol=0, atol=0.02, err_msg=method)
        assert fit.class_balance[1] == pytest.approx(truth.mean(), abs=0.01)
        assert (fit.labels == truth).mean() > 0.93
        assert fit.converged and not fit.notes
    # the triplets' mean instead of their median: pulled further by the triplets whose M_jk is small (0.020 here)
    by_mean = triplet_label_model(votes, 2, average="mean")
    np.testing.assert_allclose(by_mean.accuracy, realised, rtol=0, atol=0.03)
    given = triplet_label_model(votes, 2, class_balance=[0.8, 0.2])  # the balance moves posteriors, not accuracies
    assert given.class_balance.tolist() == [0.8, 0.2]
    np.testing.assert_array_equal(given.accuracy, combine_votes(votes, 2, "label-model").accuracy)
    majority = combine_votes(votes, 2, "majority")
    assert majority.accuracy[0] > realised[0] + 0.04  # its own vote and the noisy majority pull it up
    assert majority.accuracy[-1] < realised[-1] - 0.005
    np.testing.assert_allclose(majority.coverage, (votes != ABSTAIN).mean(axis=0), rtol=0, atol=0)


def test_a_source_worse_than_chance_is_recognised():
    """SYNTHETIC: one source right 30% of the time among better ones; the label model's signs and
    Dawid–Skene's confusion matrices both read it as 0.3, not 0.7."""
    accuracies = np.array([0.3, 0.7, 0.75, 0.8, 0.85])
    truth, votes, realised = planted_votes(20_000, accuracies, np.full(5, 0.8), 0.3, seed=4)
    majority_right = (combine_votes(votes, 2, "majority").labels == truth).mean()
    for method in ("dawid-skene", "label-model"):
        fit = combine_votes(votes, 2, method)
        np.testing.assert_allclose(fit.accuracy, realised, rtol=0, atol=0.02, err_msg=method)
        assert (fit.labels == truth).mean() > majority_right + 0.02  # the contrary source's votes count reversed


# ----------------------------------------------------------------------------------------- definitions
def test_coverage_conflict_ties_and_no_vote_items_on_a_small_matrix():
    votes = np.array([[0, 0, ABSTAIN], [0, 1, ABSTAIN], [1, ABSTAIN, ABSTAIN], [ABSTAIN] * 3])
    fit = majority_vote(votes, 2)
    np.testing.assert_array_equal(fit.coverage, [0.75, 0.5, 0.0])
    np.testing.assert_array_equal(fit.conflict[:2], [1 / 3, 1 / 2])  # source 0: item 1 of its 3 votes
    assert np.isnan(fit.conflict[2]) and np.isnan(fit.accuracy[2]) and "never vote" in fit.notes[0]
    np.testing.assert_array_equal(fit.class_balance, [3 / 5, 2 / 5])  # shares of all votes
    np.testing.assert_array_equal(fit.probabilities, [[1, 0], [0.5, 0.5], [0, 1], [0.6, 0.4]])
    np.testing.assert_array_equal(fit.labels, [0, 0, 1, 0])  # the tie goes to the lower class
    np.testing.assert_array_equal(fit.accuracy[:2], [1.0, 0.5])
    assert np.isnan(fit.log_likelihood) and fit.confusion is None


def test_nothing_voted_gives_undefined_probabilities():
    fit = combine_votes(np.full((3, 2), ABSTAIN), 2, "dawid-skene")
    assert np.isnan(fit.probabilities).all() and (fit.labels == ABSTAIN).all()
    assert np.isnan(fit.accuracy).all() and fit.coverage.tolist() == [0.0, 0.0]
    assert fit.method == "dawid-skene" and fit.notes


def test_dawid_skene_accuracy_is_the_expected_share_of_correct_votes(planted):
    """At the fixed point, sum_c q_sc confusion[s, c, c] with q_s the mean posterior over s's items."""
    _, votes, _ = planted
    fit = dawid_skene(votes, 2, tol=1e-12, max_iter=500)
    voted = votes != ABSTAIN
    share = (fit.probabilities[:, None, :] * voted[:, :, None]).sum(axis=0) / voted.sum(axis=0)[:, None]
    np.testing.assert_allclose(fit.accuracy, (share * np.diagonal(fit.confusion, axis1=1, axis2=2)).sum(1), atol=1e-8)


@pytest.mark.parametrize("method", ["majority", "dawid-skene", "label-model"])
def test_order_of_items_and_sources_does_not_matter(method, planted):
    _, votes, _ = planted
    rng = np.random.default_rng(3)
    rows, columns = rng.permutation(len(votes)), rng.permutation(votes.shape[1])
    fit = combine_votes(votes, 2, method)
    moved = combine_votes(votes[rows][:, columns], 2, method)
    np.testing.assert_allclose(moved.probabilities, fit.probabilities[rows], rtol=0, atol=1e-12)
    np.testing.assert_allclose(moved.accuracy, fit.accuracy[columns], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(moved.labels, fit.labels[rows])


# ----------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("votes", "n_classes", "message"),
    [
        (np.zeros(4, dtype=int), 2, "2-D"),
        (np.zeros((0, 3), dtype=int), 2, "at least one item"),
        (np.array([[0, 2]]), 2, r"votes\[0, 1\] = 2"),
        (np.array([[0, -2]]), 2, "abstain"),
        (np.array([[0.5, 1.0]]), 2, "whole class indices"),
        (np.array([["a", "b"]]), 2, "integer class indices"),
        (np.zeros((2, 2), dtype=int), 1, "n_classes"),
    ],
)
def test_bad_votes_are_refused(votes, n_classes, message):
    with pytest.raises(ValueError, match=message):
        combine_votes(votes, n_classes)


def test_the_label_model_needs_three_co_voting_sources_and_two_classes():
    two_sources = random_votes(50, 2, 2, seed=1)
    with pytest.raises(ValueError, match="three sources"):
        triplet_label_model(two_sources, 2)
    disjoint = np.full((6, 3), ABSTAIN)
    disjoint[:2, 0], disjoint[2:4, 1], disjoint[4:, 2] = 1, 0, 1
    with pytest.raises(ValueError, match="three sources"):
        triplet_label_model(disjoint, 2)
    with pytest.raises(ValueError, match="two classes"):
        combine_votes(random_votes(50, 4, 3, seed=1), 3, "label-model")
    with pytest.raises(ValueError, match="method must be one of"):
        combine_votes(two_sources, 2, "snorkel")
    with pytest.raises(ValueError, match="class_balance must be one share per class"):
        log_likelihood(two_sources, 0.5, np.full((2, 2, 2), 0.5))
    with pytest.raises(ValueError, match="confusion must have shape"):
        log_likelihood(two_sources, [0.5, 0.5], np.full((3, 2, 2), 0.5))
