"""Priors of every topic and word: arrays of eta, and seeded topics."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize_scalar
from scipy.special import gammaln, psi

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi._sources import evenly_spaced_rows
from sklearn_svi.lda import seed_word_indices
from sklearn_svi.lda._dirichlet import _symmetric_dirichlet_maximum

MECHANISMS = [
    SmoothedLDA(),
    SmoothedLDA(L=5, learning_rate=0.3),
    AnnealedLDA(),
    FilteredLDA(),
    FilteredLDA(learning_rate="student-t"),
]
MECHANISM_IDS = ["plain", "smoothing", "annealing", "gaussian-filter", "t-filter"]


@pytest.fixture(scope="module")
def themes():
    """Documents of ten planted topics, and the topics' words by weight."""
    X, topics, _ = make_lda_corpus(
        n_documents=2000,
        n_features=600,
        n_topics=10,
        mean_document_length=50,
        random_state=0,
    )
    return X, np.argsort(-topics, axis=1)


def shared_words(model, topic, planted_words, n_words=10):
    """How many of a fitted topic's top words are among a planted topic's."""
    fitted = np.argsort(-model.components_[topic])[:n_words]
    return len(set(fitted) & set(planted_words[:n_words]))


def best_match(model, topic, ranked_words):
    """The most words a fitted topic shares with any planted topic."""
    return max(shared_words(model, topic, words) for words in ranked_words)


@pytest.mark.parametrize("estimator", MECHANISMS, ids=MECHANISM_IDS)
@pytest.mark.parametrize("local_step", ["auto", "vb"])
def test_seed_words_pull_a_topic_to_their_planted_topic(themes, estimator, local_step):
    X, ranked_words = themes
    params = dict(
        n_components=10,
        batch_size=100,
        max_iter=2,
        local_step=local_step,
        random_state=1,
    )
    unseeded = estimator.set_params(**params).fit(X)
    # Two planted topics that neither fitted topic 0 nor topic 5 found
    # without seeds: five words of each seed them.
    missed = [
        planted
        for planted, words in enumerate(ranked_words)
        if max(shared_words(unseeded, k, words) for k in (0, 5)) < 5
    ]
    assert len(missed) >= 2
    seeded = estimator.set_params(
        seed_topics={0: ranked_words[missed[0], :5], 5: ranked_words[missed[1], :5]}
    ).fit(X)
    assert shared_words(seeded, 0, ranked_words[missed[0]]) >= 8
    assert shared_words(seeded, 5, ranked_words[missed[1]]) >= 8
    # The other topics are still planted topics.
    others = [best_match(seeded, k, ranked_words) for k in range(10) if k not in (0, 5)]
    assert np.median(others) >= 8


def test_seeds_are_pseudo_counts_of_their_topics_prior(themes):
    X, ranked_words = themes
    model = SmoothedLDA(
        n_components=10,
        topic_word_prior=0.02,
        seed_topics={3: [4, 9, 9, 17]},
        seed_strength=0.1,
        max_iter=1,
        random_state=0,
    ).fit(X)
    # The corpus's tokens, from batch_size documents spread over it.
    sample = X[evenly_spaced_rows(X.shape[0], model.batch_size)]
    tokens_per_topic = sample.sum() * X.shape[0] / sample.shape[0] / 10
    expected = np.full((10, X.shape[1]), 0.02)
    # Three distinct words share a tenth of a topic's tokens.
    expected[3, [4, 9, 17]] += 0.1 * tokens_per_topic / 3
    assert_allclose(model.topic_word_prior_, expected, rtol=1e-12)
    # lambda never falls below eta: plain SVI's iterates are eta plus counts.
    assert np.all(model.components_ >= expected * (1 - 1e-12))


@pytest.mark.parametrize("estimator", MECHANISMS, ids=MECHANISM_IDS)
def test_an_array_of_equal_priors_fits_as_the_scalar(themes, estimator):
    X = themes[0][:600]
    params = dict(n_components=6, batch_size=50, max_iter=2, random_state=0)
    scalar = estimator.set_params(topic_word_prior=0.05, **params).fit(X)
    array = estimator.set_params(
        topic_word_prior=np.full((6, X.shape[1]), 0.05), **params
    ).fit(X)
    assert_array_equal(array.components_, scalar.components_)
    assert array.score(X) == scalar.score(X)


def test_annealed_updates_are_projected_onto_an_array_prior(themes):
    X = themes[0][:600]
    rng = np.random.default_rng(0)
    prior = rng.uniform(0.01, 1.0, (6, X.shape[1]))
    model = AnnealedLDA(
        n_components=6,
        topic_word_prior=prior,
        M=5,
        M_growth=0,
        batch_size=100,
        random_state=0,
    ).fit(X)
    assert model.n_projected_ > 0
    assert np.all(model.components_ >= prior.astype(model.components_.dtype))


def test_learned_eta_keeps_the_seeds_and_maximises_the_topics_term():
    rng = np.random.default_rng(0)
    n_topics, n_words = 4, 200
    topic_word = rng.gamma(0.3, 20.0, (n_topics, n_words)) + 0.01
    log_sum = np.sum(psi(topic_word) - psi(topic_word.sum(axis=1, keepdims=True)))
    seeds = np.zeros((n_topics, n_words))
    seeds[0, [3, 5]] = 40.0
    seeds[2, 7] = 15.0

    # The topics' term as a function of the symmetric part eta: the
    # normalisers of Dirichlet(eta + seeds) plus eta sum_kw E[log beta_kw]
    # (the rest does not depend on eta).
    def negative_term(eta):
        prior = eta + seeds
        return -(
            np.sum(gammaln(prior.sum(axis=1)) - gammaln(prior).sum(axis=1))
            + eta * log_sum
        )

    expected = minimize_scalar(
        negative_term, bounds=(1e-4, 10.0), method="bounded", options={"xatol": 1e-12}
    ).x
    eta = _symmetric_dirichlet_maximum(0.3, n_topics, n_words, log_sum, seeds)
    assert eta == pytest.approx(expected, rel=1e-6)
    assert negative_term(eta) < min(
        negative_term(eta * 1.01), negative_term(eta * 0.99)
    )
    # Without seeds, the same as the symmetric maximum of before.
    assert _symmetric_dirichlet_maximum(
        0.3, n_topics, n_words, log_sum, np.zeros_like(seeds)
    ) == pytest.approx(_symmetric_dirichlet_maximum(0.3, n_topics, n_words, log_sum))


@pytest.mark.parametrize("estimator", MECHANISMS[1:], ids=MECHANISM_IDS[1:])
def test_seeds_compose_with_learned_priors(themes, estimator):
    X, ranked_words = themes
    seeds = {0: ranked_words[2, :5]}
    model = estimator.set_params(
        n_components=10,
        doc_topic_prior="auto",
        topic_word_prior="auto",
        local_step="vb",
        seed_topics=seeds,
        batch_size=100,
        max_iter=2,
        random_state=0,
    ).fit(X)
    prior = model.topic_word_prior_
    symmetric = prior[1, 0]
    assert symmetric != pytest.approx(0.1)
    sample = X[evenly_spaced_rows(X.shape[0], model.batch_size)]
    tokens_per_topic = sample.sum() * X.shape[0] / sample.shape[0] / 10
    pseudo_counts = model.seed_strength * tokens_per_topic / 5
    assert_allclose(prior[0, seeds[0]], symmetric + pseudo_counts, rtol=1e-6)
    unseeded = np.ones_like(prior, dtype=bool)
    unseeded[0, seeds[0]] = False
    assert np.all(prior[unseeded] == symmetric)
    assert shared_words(model, 0, ranked_words[2]) >= 8
    assert not np.allclose(model.doc_topic_prior_, 0.1)

    restored = pickle.loads(pickle.dumps(model))
    model.partial_fit(X[:100])
    restored.partial_fit(X[:100])
    assert_array_equal(model.components_, restored.components_)
    assert_array_equal(model.topic_word_prior_, restored.topic_word_prior_)


def test_seeded_fit_survives_a_refused_update(themes):
    X = themes[0][:400]
    model = SmoothedLDA(
        n_components=6, seed_topics={1: [0, 1]}, batch_size=50, random_state=0
    ).fit(X)
    prior, components = model.topic_word_prior_.copy(), model.components_.copy()
    bad = X[:50].toarray().astype(np.float64)
    bad[3, 2] = np.nan
    with pytest.raises(ValueError):
        model.partial_fit(bad)
    assert_array_equal(model.topic_word_prior_, prior)
    assert_array_equal(model.components_, components)


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(topic_word_prior=np.full((6, 5), 0.1)), "expected \\(6, 600\\)"),
        (dict(topic_word_prior=np.zeros((6, 600))), "positive, finite"),
        (dict(seed_topics={6: [1]}), "keys must be topics, integers from 0 to 5"),
        (dict(seed_topics={"a": [1]}), "keys must be topics"),
        (dict(seed_topics={0: [600]}), "the feature indices \\[600\\]"),
        (dict(seed_topics={0: ["fever"]}), "seed_word_indices"),
        (dict(seed_topics={0: []}), "must list feature indices"),
    ],
)
def test_bad_priors_and_seeds_are_refused_clearly(themes, params, message):
    X = themes[0][:100]
    model = SmoothedLDA(n_components=6, **params)
    with pytest.raises(ValueError, match=message):
        model.fit(X)
    fitted = SmoothedLDA(n_components=6, random_state=0).fit(X)
    before = fitted.components_.copy()
    with pytest.raises(ValueError, match=message):
        fitted.set_params(warm_start=False, **params).fit(X)
    assert_array_equal(fitted.components_, before)


def test_seed_word_indices_names_the_missing_words():
    vocabulary = np.array(["cough", "fever", "flu", "rash"])
    assert seed_word_indices({2: ["flu", "cough"]}, vocabulary) == {2: [2, 0]}
    with pytest.raises(ValueError, match="\\['ache'\\] of topic 0"):
        seed_word_indices({0: ["fever", "ache"]}, vocabulary)
