"""The shared online update: schedules, persistence, batch mode, recovery."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import BaseEstimator
from sklearn.utils import gen_batches

from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    make_lda_corpus,
    match_topics,
)
from sklearn_svi._mechanisms import (
    ConstantStepSize,
    FilteredStepSize,
    Mechanisms,
    RobbinsMonroStepSize,
)
from sklearn_svi._online import OnlineUpdateMixin
from sklearn_svi._threads import thread_pool


def test_step_sizes():
    schedule = RobbinsMonroStepSize(offset=10.0, decay=0.7)
    assert schedule(1, None, None) == pytest.approx(11.0**-0.7)
    assert schedule(90, None, None) == pytest.approx(100.0**-0.7)
    assert ConstantStepSize(1e-3)(7, None, None) == 1e-3


def test_pickled_model_resumes_exactly(planted_corpus, svi_params):
    X = planted_corpus[0]
    first, second = X[:330], X[330:]
    uninterrupted = (
        SmoothedLDA(L=4, **svi_params).partial_fit(first).partial_fit(second)
    )
    interrupted = SmoothedLDA(L=4, **svi_params).partial_fit(first)
    resumed = pickle.loads(pickle.dumps(interrupted)).partial_fit(second)
    assert_array_equal(resumed.components_, uninterrupted.components_)
    n_updates = int(np.ceil(330 / 50) + np.ceil((X.shape[0] - 330) / 50))
    assert resumed.n_batch_iter_ == uninterrupted.n_batch_iter_ == n_updates
    assert resumed.n_iter_ == 2
    assert resumed.n_samples_seen_ == X.shape[0]


def test_fit_is_reproducible_and_shuffles(planted_corpus, svi_params):
    X = planted_corpus[0]
    params = dict(svi_params, max_iter=2)
    first = SmoothedLDA(**params).fit(X)
    second = SmoothedLDA(**params).fit(X)
    assert_array_equal(first.components_, second.components_)
    # The same updates in the stored order differ: fit shuffles.
    in_order = SmoothedLDA(**dict(params, total_samples=X.shape[0]))
    in_order.partial_fit(X).partial_fit(X)
    assert not np.allclose(in_order.components_, first.components_)
    assert first.n_iter_ == 2
    assert first.n_batch_iter_ == 2 * int(np.ceil(X.shape[0] / params["batch_size"]))


def test_batch_mode_increases_the_bound_every_step(planted_corpus, svi_params):
    X = planted_corpus[0][:300]
    model = SmoothedLDA(
        n_components=4,
        L=1,
        batch_size=X.shape[0],
        total_samples=X.shape[0],
        learning_rate=1.0,
        mean_change_tol=1e-9,
        max_doc_update_iter=2000,
        random_state=0,
    )
    scores = []
    for _ in range(15):
        model.partial_fit(X)
        scores.append(model.score(X))
    steps = np.diff(scores)
    assert np.all(steps > -1e-9 * np.abs(scores[1:])), steps
    assert scores[-1] - scores[0] > 100


@pytest.mark.parametrize("L", [1, 10])
@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_planted_topics(L, seed):
    """A single SVI run can end in a local optimum (about one run in four
    here); of three random starts, the one with the highest ELBO on the
    training documents recovers the planted topics."""
    X, topics, _ = make_lda_corpus(
        n_documents=1000,
        n_features=100,
        n_topics=4,
        mean_document_length=80,
        doc_topic_prior=0.2,
        topic_word_prior=0.05,
        random_state=seed,
    )
    starts = [
        SmoothedLDA(
            n_components=4,
            L=L,
            batch_size=20,
            max_iter=10,
            learning_offset=1.0,
            learning_decay=0.5,
            random_state=10 * seed + start,
        ).fit(X)
        for start in range(3)
    ]
    model = max(starts, key=lambda start: start.score(X))
    overlap = match_topics(model.components_, topics)[2]
    assert overlap.min() > 0.95, overlap
    # Random topics match far worse: the check can fail.
    random_topics = np.random.default_rng(seed).gamma(100, 0.01, topics.shape)
    assert match_topics(random_topics, topics)[2].max() < 0.6


def test_evaluation_history_and_perp_tol(planted_corpus, svi_params):
    X = planted_corpus[0]
    X_train, X_val = X[:500], X[500:]
    model = SmoothedLDA(**dict(svi_params, evaluate_every=5, max_iter=50, perp_tol=1.0))
    model.fit(X_train, X_val=X_val)
    history = model.evaluation_history_
    assert history["n_batch_iter"][:2] == [5, 10]
    assert len(history["score"]) == len(history["n_samples_seen"]) >= 2
    # The held-out per-word bound improves as the fit goes on.
    assert history["score"][-1] > history["score"][0]
    # fit stopped early by perp_tol, after a whole pass.
    assert model.n_iter_ < 50
    assert model.n_batch_iter_ == model.n_iter_ * 10
    perplexities = np.exp(-np.array(history["score"][-2:]))
    assert abs(perplexities[0] - perplexities[1]) < 1.0


def test_no_evaluation_by_default(planted_corpus, svi_params):
    model = SmoothedLDA(**dict(svi_params, max_iter=3)).fit(planted_corpus[0])
    assert model.evaluation_history_["score"] == []
    assert model.n_iter_ == 3


@pytest.mark.parametrize(
    "make_model",
    [
        lambda params: SmoothedLDA(L=3, **params),
        # Small effective batches give negative weights and projections.
        lambda params: AnnealedLDA(M=2, **params),
        lambda params: FilteredLDA(**params),
    ],
    ids=["smoothed", "annealed", "filtered"],
)
def test_update_keeps_the_sums_of_lambda(planted_corpus, svi_params, make_model):
    # The update sums the rows of lambda as it writes them; the local step
    # of the next minibatch uses these sums instead of a pass of its own.
    model = make_model(svi_params).partial_fit(planted_corpus[0])
    if isinstance(model, AnnealedLDA):
        assert model.n_projected_ > 0
    assert_allclose(
        model._topic_totals,
        model._natural.sum(axis=0, dtype=np.float64),
        rtol=1e-12,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("topics_per_batch", [1, 7, 20])
def test_initial_topics_are_scikit_learns_whatever_n_jobs(
    dtype, topics_per_batch, monkeypatch
):
    """lambda starts at Gamma(100, 1/100) draws (Hoffman et al. 2013), the
    values scikit-learn's LatentDirichletAllocation draws for the same seed,
    whether they are drawn in one batch of topics or in several."""
    from sklearn_svi.lda import _model

    monkeypatch.setattr(_model, "INITIAL_BATCH_BYTES", topics_per_batch * 8 * 300)
    X = np.ones((5, 300), dtype=dtype)
    random_state = np.random.RandomState(0)
    expected = random_state.gamma(100.0, 0.01, (20, 300)).T
    # The seed of the documents' starts is drawn after all the topics.
    start_seed = int(random_state.randint(2**63, dtype=np.int64))
    for n_jobs in (1, 2):
        model = SmoothedLDA(n_components=20, random_state=0)
        with thread_pool(n_jobs):
            model._initialize_online(X, 5, model._mechanism_settings())
        assert model._natural.dtype == dtype
        assert model._natural.flags.c_contiguous
        assert_array_equal(model._natural, expected.astype(dtype))
        assert model._start_seed == start_seed


def test_a_model_must_implement_the_whole_contract():
    class MechanismsOnly(OnlineUpdateMixin, BaseEstimator):
        def _mechanism_settings(self):
            return Mechanisms()

    with pytest.raises(TypeError, match="abstract"):
        MechanismsOnly()


@pytest.mark.parametrize(
    "estimator, expected",
    [
        (SmoothedLDA(L=7, learning_rate=0.2), dict(window_length=7, learning_rate=0.2)),
        (
            AnnealedLDA(M=16, M_growth=3.0),
            dict(effective_batch_size=16, effective_batch_growth=3.0),
        ),
        (
            FilteredLDA(learning_rate="student-t", prior_dof=5.0),
            dict(learning_rate="student-t", prior_dof=5.0),
        ),
        (
            SVIGaussianMixture(L=4, M=8, learning_rate="gaussian"),
            dict(window_length=4, effective_batch_size=8, learning_rate="gaussian"),
        ),
    ],
    ids=["smoothed", "annealed", "filtered", "mixture"],
)
def test_each_estimator_states_its_mechanisms(estimator, expected):
    settings = estimator._mechanism_settings()
    assert {name: getattr(settings, name) for name in expected} == expected


@pytest.mark.parametrize("preset", [SmoothedLDA, AnnealedLDA, FilteredLDA])
def test_the_lda_presets_combine_every_mechanism(preset):
    """The LDA classes differ only in their defaults: each of them smooths,
    anneals and filters when asked to, as the mixture does."""
    estimator = preset(L=3, M=16, M_growth=0.0, learning_rate="student-t")
    settings = estimator._mechanism_settings()
    assert settings.window_length == 3
    assert settings.effective_batch_size == 16
    assert settings.learning_rate == "student-t"
    X = make_lda_corpus(n_documents=120, n_features=40, random_state=0)[0]
    params = dict(n_components=3, batch_size=32, random_state=0)
    combined = preset(
        L=3, M=16, M_growth=0.0, learning_rate="student-t", **params
    ).partial_fit(X)
    state = combined._update_state
    assert state.window.length == 3
    assert state.annealing.effective_size(combined.n_batch_iter_) == 16
    assert isinstance(state.step_size, FilteredStepSize)
    alone = preset(**params).partial_fit(X)
    assert not np.allclose(combined.components_, alone.components_)


def test_unknown_step_size_names_are_refused():
    with pytest.raises(ValueError, match="learning_rate"):
        FilteredLDA(learning_rate="kalman").fit(np.ones((4, 3)))
    with pytest.raises(KeyError):
        Mechanisms(learning_rate="unknown").build_step_size((3, 2), np.float64)


def test_warm_start_continues_an_lda_fit():
    """With ``warm_start``, a second ``fit`` continues from the fitted topics
    (the parameter every estimator now shares), exactly like one longer fit
    of the same passes."""
    X = make_lda_corpus(n_documents=120, n_features=40, random_state=0)[0]
    params = dict(n_components=3, batch_size=40, random_state=0)
    warm = SmoothedLDA(warm_start=True, max_iter=1, **params).fit(X).fit(X)
    assert warm.n_batch_iter_ == 6 and warm.n_iter_ == 2
    longer = SmoothedLDA(max_iter=2, perp_tol=0.0, **params).fit(X)
    np.testing.assert_array_equal(warm.components_, longer.components_)
    cold = SmoothedLDA(max_iter=1, **params).fit(X).fit(X)
    assert cold.n_batch_iter_ == 3


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_callback_follows_the_updates_and_can_stop_the_fit(method):
    """The callback sees every update, with the evaluation score where one
    was recorded, and returning True ends the fit after that update."""
    X = make_lda_corpus(n_documents=400, n_features=40, random_state=0)[0]
    seen = []

    def follow(estimator, progress):
        seen.append(progress)
        assert estimator.n_batch_iter_ == progress.n_batch_iter
        return progress.n_batch_iter == 5

    params = dict(n_components=3, batch_size=50, evaluate_every=2, random_state=0)
    model = SmoothedLDA(max_iter=3, callback=follow, **params)
    getattr(model, method)(X)
    assert [progress.n_batch_iter for progress in seen] == [1, 2, 3, 4, 5]
    assert model.n_batch_iter_ == 5 and model.n_samples_seen_ == 250
    assert [progress.score is not None for progress in seen] == [
        False,
        True,
        False,
        True,
        False,
    ]
    assert seen[3].score == model.evaluation_history_["score"][-1]
    assert seen[-1].step_size == model.step_size_history_["step_size"][-1]
    assert all(b.elapsed >= a.elapsed >= 0 for a, b in zip(seen, seen[1:]))
    if method == "partial_fit":
        # The updates made are those of the first five minibatches alone.
        alone = SmoothedLDA(**params).partial_fit(X[:250])
        assert_array_equal(model.components_, alone.components_)


def test_a_mixture_stopped_by_its_callback_does_not_warn():
    rng = np.random.RandomState(0)
    X = np.vstack([rng.randn(300, 2), rng.randn(300, 2) + 6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SVIGaussianMixture(
            n_components=2, batch_size=100, callback=lambda estimator, p: True
        ).fit(X)
    assert model.n_batch_iter_ == 1 and not model.converged_


@pytest.mark.parametrize("n_samples", [1, 2, 3, 7, 8, 9, 1023, 1024, 1025, 60_153])
@pytest.mark.parametrize("key", [0, 1, 2**63 - 1])
def test_a_keyed_order_visits_every_sample_once(n_samples, key):
    from sklearn_svi._permutation import KeyedPermutation

    order = KeyedPermutation(n_samples, key)
    visited = np.concatenate(
        [order[span] for span in gen_batches(n_samples, 100)]
        + [np.empty(0, dtype=np.intp)]
    )
    assert_array_equal(np.sort(visited), np.arange(n_samples))
    assert_array_equal(order[np.arange(n_samples)], visited)
    # The inverse map: each sample's position, where a worker finds its own.
    assert_array_equal(order.positions_of(visited), np.arange(n_samples))


def test_keyed_orders_are_spread_evenly():
    """Over many keys every sample takes every place about equally often,
    and one order's places do not follow the samples' numbers."""
    from sklearn_svi._permutation import KeyedPermutation

    n_samples, n_keys = 50, 20_000
    counts = np.zeros((n_samples, n_samples))
    for key in range(n_keys):
        counts[np.arange(n_samples), KeyedPermutation(n_samples, key)[:]] += 1
    expected = n_keys / n_samples
    # Binomial standard deviation about 20; 50 x 50 places.
    assert np.abs(counts - expected).max() < 6 * np.sqrt(expected)
    order = KeyedPermutation(100_000, 5)[:]
    assert abs(np.corrcoef(np.arange(100_000), order)[0, 1]) < 0.02
    assert np.mean(np.abs(np.diff(order)) == 1) < 1e-3
