"""Priors learned online: alpha per update, eta per pass (empirical Bayes)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import gammaln, psi

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi.lda._dirichlet import (
    _dirichlet_newton_direction,
    _positive_step,
    _symmetric_dirichlet_maximum,
)


def test_newton_steps_find_the_dirichlet_maximum_likelihood():
    rng = np.random.default_rng(0)
    true_prior = np.array([0.1, 0.5, 2.0, 0.05])
    mean_log = np.log(rng.dirichlet(true_prior, 200_000)).mean(axis=0)

    def log_likelihood(prior):
        return gammaln(prior.sum()) - gammaln(prior).sum() + (prior - 1) @ mean_log

    prior = np.full(4, 0.25)
    values = [log_likelihood(prior)]
    for _ in range(30):
        direction = _dirichlet_newton_direction(prior, mean_log)
        prior = _positive_step(prior, direction, 1.0)
        values.append(log_likelihood(prior))
    assert np.all(np.diff(values) > -1e-12)
    assert_allclose(psi(prior.sum()) - psi(prior) + mean_log, 0.0, atol=1e-10)
    assert_allclose(prior, true_prior, rtol=0.03)


def test_symmetric_prior_maximises_the_topics_term():
    rng = np.random.default_rng(0)
    n_topics, n_words = 5, 300
    topic_word = rng.gamma(0.3, 20.0, (n_topics, n_words)) + 0.01
    log_sum = np.sum(psi(topic_word) - psi(topic_word.sum(axis=1, keepdims=True)))

    def term(eta):
        return (
            n_topics * (gammaln(n_words * eta) - n_words * gammaln(eta))
            + (eta - 1) * log_sum
        )

    eta = _symmetric_dirichlet_maximum(0.2, n_topics, n_words, log_sum)
    assert term(eta) > term(eta * 1.01)
    assert term(eta) > term(eta * 0.99)
    assert eta == pytest.approx(
        _symmetric_dirichlet_maximum(5.0, n_topics, n_words, log_sum), rel=1e-9
    )


def test_learned_priors_raise_the_bound_of_batch_variational_bayes(planted_corpus):
    # A minibatch of the whole corpus with a step of one is batch VB: each
    # call is a coordinate ascent pass, then a Newton step for alpha and the
    # maximising eta, so the bound never falls.
    X = planted_corpus[0]
    batch_vb = dict(
        n_components=4,
        local_step="vb",
        batch_size=X.shape[0],
        total_samples=X.shape[0],
        learning_rate=1.0,
        mean_change_tol=1e-8,
        max_doc_update_iter=1000,
        random_state=0,
    )
    model = SmoothedLDA(doc_topic_prior="auto", topic_word_prior="auto", **batch_vb)
    bounds = []
    for _ in range(15):
        model.partial_fit(X)
        bounds.append(model.score(X))
    assert np.all(np.diff(bounds) > -1e-6 * abs(bounds[-1]))
    assert not np.allclose(model.doc_topic_prior_, 0.25)
    assert model.topic_word_prior_ != 0.25
    fixed = SmoothedLDA(**batch_vb)
    for _ in range(15):
        fixed.partial_fit(X)
    assert bounds[-1] > fixed.score(X)


@pytest.mark.parametrize(
    "estimator",
    [
        SmoothedLDA(L=5),
        AnnealedLDA(M=20, M_growth=0),
        FilteredLDA(),
    ],
    ids=["smoothing", "annealing", "filter"],
)
def test_learned_priors_compose_with_every_mechanism(planted_corpus, estimator):
    X = planted_corpus[0]
    params = dict(
        n_components=4,
        doc_topic_prior="auto",
        topic_word_prior="auto",
        batch_size=50,
        total_samples=X.shape[0],
        random_state=0,
    )
    model = estimator.set_params(**params).fit(X)
    assert model.doc_topic_prior_.shape == (4,)
    assert np.all(model.doc_topic_prior_ > 0)
    assert not np.allclose(model.doc_topic_prior_, 0.25)
    assert model.topic_word_prior_ > 0
    assert np.all(np.isfinite(model.components_))

    serial = estimator.set_params(n_jobs=1).fit(X)
    threaded = estimator.set_params(n_jobs=2).fit(X)
    assert_array_equal(serial.components_, threaded.components_)
    assert_array_equal(serial.doc_topic_prior_, threaded.doc_topic_prior_)

    restored = pickle.loads(pickle.dumps(serial))
    serial.partial_fit(X[:50])
    restored.partial_fit(X[:50])
    assert_array_equal(serial.components_, restored.components_)
    assert_array_equal(serial.doc_topic_prior_, restored.doc_topic_prior_)
    assert serial.topic_word_prior_ == restored.topic_word_prior_


def test_fixed_priors_are_reported_as_given(planted_corpus):
    X = planted_corpus[0]
    model = SmoothedLDA(
        n_components=4, doc_topic_prior=0.3, topic_word_prior=0.05, random_state=0
    ).fit(X)
    assert_array_equal(model.doc_topic_prior_, np.full(4, 0.3))
    assert model.topic_word_prior_ == 0.05


def planted_documents(alpha, eta, n_topics, n_features, n_documents, length, seed):
    """Documents of ``length`` tokens drawn from LDA with the priors alpha and eta."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(n_features, eta), n_topics)
    proportions = rng.dirichlet(np.full(n_topics, alpha), n_documents)
    counts = rng.multinomial(length, proportions @ topics)
    return sp.csr_matrix(counts.astype(np.float64))


@pytest.mark.parametrize("local_step", ["vb", "cvb0", "gibbs"])
def test_learned_alpha_recovers_the_planted_prior(local_step):
    # The collapsed step's expected counts look evenly mixed; its alpha step
    # uses counts drawn token by token (with the expected counts, alpha came
    # out at 0.275 here), at the documents' fixed points (after the few
    # sweeps of max_doc_update_iter="auto", 0.37). The sampled step uses
    # the assignments of its last sweep.
    X = planted_documents(0.2, 0.05, 5, 300, 10_000, 30, seed=0)
    model = SmoothedLDA(
        n_components=5,
        L=1,
        local_step=local_step,
        doc_topic_prior="auto",
        topic_word_prior=0.05,
        batch_size=500,
        max_iter=20,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "doc_topic_prior=", UserWarning)
        model.fit(X)
    assert model.doc_topic_prior_.mean() == pytest.approx(0.2, rel=0.2)


@pytest.mark.parametrize(
    "prior, message, quiet_steps",
    [
        ("doc_topic_prior", "lowers the held-out fit", ["vb", "auto", "gibbs"]),
        ("topic_word_prior", "overestimates eta", ["vb"]),
    ],
)
def test_learned_prior_that_costs_the_collapsed_step_warns(
    planted_corpus, prior, message, quiet_steps
):
    """A learned alpha cost only the CVB0 step held-out fit, a learned eta
    is biased under every collapsed step; the other steps fit quietly."""
    model = SmoothedLDA(n_components=4, random_state=0, **{prior: "auto"})
    with pytest.warns(UserWarning, match=message):
        model.set_params(local_step="cvb0").fit(planted_corpus[0])
    for local_step in quiet_steps:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model.set_params(local_step=local_step).fit(planted_corpus[0])


@pytest.mark.parametrize("scale", [1.0, 0.4])
def test_sampled_topic_counts_are_token_draws_from_the_responsibilities(
    planted_corpus, scale
):
    # Each token's topic is drawn from its word's CVB0 responsibilities:
    # integer counts whose mean over draws is the expected counts N_d. A
    # fractional count n_dw holds one more token with probability
    # n_dw - floor(n_dw).
    X = sp.csr_matrix(planted_corpus[0][:20], dtype=np.float64) * scale
    model = SmoothedLDA(
        n_components=4,
        doc_topic_prior="auto",
        local_step="cvb0",
        max_iter=1,
        random_state=0,
    ).fit(planted_corpus[0])
    documents = model._prepare_minibatch(X)
    fits = [
        model._fit_documents(
            documents, start_key=model._start_key(draw), sample_counts=True
        )
        for draw in range(400)
    ]
    sampled = np.array([fit.sampled_counts for fit in fits])
    expected = np.array([fit.doc_topic - model.doc_topic_prior_ for fit in fits])
    assert_array_equal(sampled, np.round(sampled))
    lengths = np.asarray(X.sum(axis=1)).ravel()
    floor_lengths = np.asarray(
        sp.csr_matrix((np.floor(X.data), X.indices, X.indptr)).sum(axis=1)
    ).ravel()
    assert np.all(sampled.sum(axis=2) >= floor_lengths)
    assert np.all(sampled.sum(axis=2) <= floor_lengths + X.getnnz(axis=1))
    standard_error = np.sqrt(lengths / 4 / len(fits))[:, np.newaxis]
    assert np.all(np.abs((sampled - expected).mean(axis=0)) < 5 * standard_error)
    assert_allclose(sampled.sum(axis=2).mean(axis=0), lengths, rtol=0.05)
