import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import softmax

from mhaudit.stats.label_shift import bbse_priors, em_priors, prior_corrected_probs

# Class-conditional model: x | y=k ~ N(mean_k, I) in 2-D. With equal covariances the Bayes posterior
# is a softmax of linear functions (a calibrated multinomial logistic model) for any prior.
MEANS = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
SOURCE = np.array([0.6, 0.3, 0.1])
TARGET = np.array([0.1, 0.25, 0.65])


def draw(priors, n, rng):
    y = rng.choice(len(priors), size=n, p=priors)
    return MEANS[y] + rng.standard_normal((n, MEANS.shape[1])), y


def posterior(x, priors):
    return softmax(x @ MEANS.T - 0.5 * (MEANS**2).sum(axis=1) + np.log(priors), axis=1)


@pytest.fixture(scope="module")
def shifted():
    rng = np.random.default_rng(20240611)
    x_src, y_src = draw(SOURCE, 20_000, rng)
    x_tgt, y_tgt = draw(TARGET, 20_000, rng)
    return posterior(x_src, SOURCE), y_src, posterior(x_tgt, SOURCE), y_tgt


def test_em_recovers_the_target_priors(shifted):
    _, _, probs_tgt, _ = shifted
    naive = probs_tgt.mean(axis=0)
    assert np.abs(naive - TARGET).max() > 0.1  # the uncorrected average is far off
    est = em_priors(probs_tgt, SOURCE)
    assert np.abs(est.priors - TARGET).max() < 0.03
    assert est.priors.sum() == pytest.approx(1)
    assert 1 < est.n_iter < 1000


def test_bbse_recovers_the_target_priors(shifted):
    probs_src, y_src, probs_tgt, _ = shifted
    est = bbse_priors(y_src, probs_src.argmax(1), probs_tgt.argmax(1), 3)
    assert est.note == ""
    assert np.abs(est.priors - TARGET).max() < 0.03
    pi_src = np.bincount(y_src, minlength=3) / len(y_src)
    assert est.priors == pytest.approx(est.weights * pi_src / (est.weights * pi_src).sum())
    assert est.weights == pytest.approx(TARGET / SOURCE, rel=0.15)


def test_em_is_a_fixed_point(shifted):
    _, _, probs_tgt, _ = shifted
    est = em_priors(probs_tgt, SOURCE, tol=1e-10)
    again = prior_corrected_probs(probs_tgt, SOURCE, est.priors)
    assert again.mean(axis=0) == pytest.approx(est.priors, abs=1e-8)
    assert est.probs == pytest.approx(again)
    assert est.probs.sum(axis=1) == pytest.approx(np.ones(len(probs_tgt)))
    restarted = em_priors(est.probs, est.priors, tol=1e-10)  # already adjusted: nothing left to move
    assert restarted.priors == pytest.approx(est.priors, abs=1e-7)
    assert restarted.n_iter <= 3


def test_em_is_the_maximum_likelihood_estimate(shifted):
    """Independent check: maximise sum_i log sum_k p(k|x_i) q_k / pi_k over the simplex directly."""
    _, _, probs_tgt, _ = shifted
    ratio = probs_tgt / SOURCE

    def nll(theta):
        q = softmax(np.append(theta, 0.0))
        return -np.log(ratio @ q).sum()

    fit = minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-8})
    assert em_priors(probs_tgt, SOURCE).priors == pytest.approx(softmax(np.append(fit.x, 0.0)), abs=1e-4)


def test_no_shift_gives_back_the_source_priors():
    rng = np.random.default_rng(5)
    x_src, y_src = draw(SOURCE, 20_000, rng)
    x_tgt, _ = draw(SOURCE, 20_000, rng)
    probs_src, probs_tgt = posterior(x_src, SOURCE), posterior(x_tgt, SOURCE)
    assert np.abs(em_priors(probs_tgt, SOURCE).priors - SOURCE).max() < 0.03
    bbse = bbse_priors(y_src, probs_src.argmax(1), probs_tgt.argmax(1), 3)
    assert np.abs(bbse.priors - SOURCE).max() < 0.03
    assert bbse.weights == pytest.approx(np.ones(3), abs=0.1)


def test_bbse_by_hand():
    # Source: 4 of each class, one of each misclassified: C = [[3/8, 1/8], [1/8, 3/8]], pi_src = (.5, .5).
    y_src = [0, 0, 0, 0, 1, 1, 1, 1]
    pred_src = [0, 0, 0, 1, 1, 1, 1, 0]
    # mu = (3/8, 5/8): 3 w0 + w1 = 3, w0 + 3 w1 = 5  ->  w = (0.5, 1.5), q = (0.25, 0.75)
    est = bbse_priors(y_src, pred_src, [0, 0, 0, 1, 1, 1, 1, 1], 2)
    assert est.weights == pytest.approx([0.5, 1.5]) and est.priors == pytest.approx([0.25, 0.75])
    assert est.note == ""
    # mu = (1/8, 7/8): w = (-0.5, 2.5); the negative weight is clipped, so q = (0, 1)
    est = bbse_priors(y_src, pred_src, [0, 1, 1, 1, 1, 1, 1, 1], 2)
    assert est.weights == pytest.approx([0.0, 2.5]) and est.priors == pytest.approx([0.0, 1.0])
    assert est.note == "negative weight(s) for class(es) 0 clipped to 0"


def test_bbse_singular_confusion_matrix_says_so():
    # The classifier always predicts 0: C = [[.5, .5], [0, 0]] has rank 1.
    est = bbse_priors([0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 1], 2)
    assert "singular (rank 1 of 2)" in est.note and "least-squares" in est.note
    # minimum-norm solution of .5 w0 + .5 w1 = .75 (the second equation, 0 = .25, cannot hold): w = (.75, .75)
    assert est.weights == pytest.approx([0.75, 0.75]) and est.priors == pytest.approx([0.5, 0.5])
    absent = bbse_priors([0, 0, 1, 1], [0, 1, 1, 1], [0, 1, 2], 3)
    assert "class(es) 2 absent from the source" in absent.note and absent.priors[2] == 0


def test_prior_corrected_probs_by_hand():
    p = np.array([[0.5, 0.5], [0.8, 0.2]])
    out = prior_corrected_probs(p, [0.5, 0.5], [0.2, 0.8])
    # row 2: (0.8 * 0.4, 0.2 * 1.6) = (0.32, 0.32) -> (0.5, 0.5)
    assert out == pytest.approx(np.array([[0.2, 0.8], [0.5, 0.5]]))
    assert prior_corrected_probs(p, [0.3, 0.7], [0.3, 0.7]) == pytest.approx(p)
    assert np.isnan(prior_corrected_probs([[1.0, 0.0]], [0.5, 0.5], [0.0, 1.0])).all()
    with pytest.raises(ValueError, match="zero prior"):
        prior_corrected_probs(p, [1.0, 0.0], [0.5, 0.5])
    with pytest.raises(ValueError, match="sum"):
        prior_corrected_probs([[0.5, 0.6]], [0.5, 0.5], [0.5, 0.5])


def test_em_warns_when_it_runs_out_of_iterations(shifted):
    _, _, probs_tgt, _ = shifted
    with pytest.warns(RuntimeWarning, match="did not converge in 2 iterations"):
        est = em_priors(probs_tgt, SOURCE, max_iter=2)
    assert est.n_iter == 2
