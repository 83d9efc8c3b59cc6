"""The shared online update and the smoothing window."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils import gen_batches

from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    make_lda_corpus,
    match_topics,
)
from sklearn_svi._mechanisms import (
    ConstantStepSize,
    RobbinsMonroStepSize,
    SmoothingWindow,
    SparseStatistic,
)
from sklearn_svi._threads import thread_pool

PARAMS = dict(
    n_components=4,
    batch_size=50,
    total_samples=5000,
    learning_offset=5.0,
    learning_decay=0.6,
    random_state=0,
)


def dense_reference_run(X, L, **params):
    """Smoothed SVI written directly from Mandt & Blei (2014), Alg. 1.

    Keeps every minibatch statistic as a dense K x V array and averages the
    last L with ``np.mean``; uses the estimator only for its local step.
    """
    probe = SmoothedLDA(L=1, **params)
    X = probe._check_training_data(X, reset=True)
    probe._initialize_online(X, params["total_samples"], probe._mechanism_settings())
    topic_word = probe._natural.copy()
    eta = 1 / params["n_components"]
    statistics = []
    for t, batch in enumerate(gen_batches(X.shape[0], params["batch_size"]), start=1):
        probe._natural = topic_word
        probe._topic_totals = probe._sum_topics()
        statistic = probe._local_statistic(probe._prepare_minibatch(X[batch]), draw=t)
        dense = np.zeros_like(topic_word)
        dense[statistic.rows] = statistic.block
        statistics.append(dense)
        smoothed = np.mean(statistics[-L:], axis=0)
        rho = (params["learning_offset"] + t) ** -params["learning_decay"]
        topic_word = (1 - rho) * topic_word + rho * (
            eta + params["total_samples"] * smoothed
        )
    return topic_word.T


def test_window_length_one_is_plain_svi_bit_for_bit(planted_corpus):
    X = planted_corpus[0]
    model = SmoothedLDA(L=1, **PARAMS).partial_fit(X)
    assert_array_equal(model.components_, dense_reference_run(X, 1, **PARAMS))


@pytest.mark.parametrize("L", [3, 10])
def test_sparse_window_equals_dense_window(planted_corpus, L):
    X = planted_corpus[0]
    model = SmoothedLDA(L=L, **PARAMS).partial_fit(X)
    assert_allclose(model.components_, dense_reference_run(X, L, **PARAMS), rtol=1e-9)


def test_smoothing_changes_the_result(planted_corpus):
    X = planted_corpus[0]
    plain = SmoothedLDA(L=1, **PARAMS).partial_fit(X)
    smoothed = SmoothedLDA(L=5, **PARAMS).partial_fit(X)
    assert not np.allclose(plain.components_, smoothed.components_)


def sparse_statistic(rng, n_params, n_rows, n_components):
    rows = np.sort(rng.choice(n_params, size=n_rows, replace=False))
    return SparseStatistic(rows, rng.random((n_rows, n_components)))


def window_mean(window, shape):
    """The window's mean statistic as a dense array."""
    mean = np.zeros(shape)
    mean[window.sum.rows] = window.sum.block / window.count
    return mean


def test_window_warm_up_mean_and_running_sum():
    rng = np.random.default_rng(0)
    window = SmoothingWindow(length=4, shape=(30, 3), dtype=np.float64)
    dense = []
    for t in range(1, 12):
        statistic = sparse_statistic(rng, 30, 7, 3)
        window.push(statistic)
        full = np.zeros((30, 3))
        full[statistic.rows] = statistic.block
        dense.append(full)
        assert window.count == min(t, 4)
        # During warm-up the mean is over the statistics stored so far. The
        # running sum leaves rounding residue of order 1e-17 on rows that
        # left the window.
        assert_allclose(
            window_mean(window, (30, 3)), np.mean(dense[-4:], axis=0), atol=1e-14
        )


@settings(max_examples=50, deadline=None)
@given(
    length=st.integers(1, 6),
    n_statistics=st.integers(1, 15),
    n_params=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_window_mean_property(length, n_statistics, n_params, seed):
    """Whatever the rows each statistic covers, the window holds the mean of
    the last min(t, L) statistics and stores only their rows."""
    rng = np.random.default_rng(seed)
    window = SmoothingWindow(length=length, shape=(n_params, 2), dtype=np.float64)
    dense = []
    for _ in range(n_statistics):
        statistic = sparse_statistic(
            rng, n_params, int(rng.integers(0, n_params + 1)), 2
        )
        window.push(statistic)
        full = np.zeros((n_params, 2))
        full[statistic.rows] = statistic.block
        dense.append(full)
    kept = dense[-length:]
    assert window.count == len(kept)
    assert_allclose(
        window_mean(window, (n_params, 2)), np.mean(kept, axis=0), atol=1e-12
    )
    stored_rows = sum(statistic.rows.size for statistic in window.queue)
    assert window.nbytes == stored_rows * (2 * 8 + 8)


def test_window_memory_is_proportional_to_rows_seen():
    rng = np.random.default_rng(0)
    window = SmoothingWindow(length=10, shape=(10_000, 50), dtype=np.float64)
    for _ in range(25):
        window.push(sparse_statistic(rng, 10_000, 100, 50))
    # 10 blocks of 100 x 50 values plus 100 row indices each.
    assert window.nbytes == 10 * (50 * 100 * 8 + 100 * 8)
    assert window.nbytes < 10 * 50 * 10_000 * 8 / 50


def test_step_sizes():
    schedule = RobbinsMonroStepSize(offset=10.0, decay=0.7)
    assert schedule(1, None, None) == pytest.approx(11.0**-0.7)
    assert schedule(90, None, None) == pytest.approx(100.0**-0.7)
    assert ConstantStepSize(1e-3)(7, None, None) == 1e-3


def test_pickled_model_resumes_exactly(planted_corpus):
    X = planted_corpus[0]
    first, second = X[:330], X[330:]
    uninterrupted = SmoothedLDA(L=4, **PARAMS).partial_fit(first).partial_fit(second)
    interrupted = SmoothedLDA(L=4, **PARAMS).partial_fit(first)
    resumed = pickle.loads(pickle.dumps(interrupted)).partial_fit(second)
    assert_array_equal(resumed.components_, uninterrupted.components_)
    n_updates = int(np.ceil(330 / 50) + np.ceil((X.shape[0] - 330) / 50))
    assert resumed.n_batch_iter_ == uninterrupted.n_batch_iter_ == n_updates
    assert resumed.n_iter_ == 2
    assert resumed.n_samples_seen_ == X.shape[0]


def test_fit_is_reproducible_and_shuffles(planted_corpus):
    X = planted_corpus[0]
    params = dict(PARAMS, max_iter=2)
    first = SmoothedLDA(**params).fit(X)
    second = SmoothedLDA(**params).fit(X)
    assert_array_equal(first.components_, second.components_)
    # The same updates in the stored order differ: fit shuffles.
    in_order = SmoothedLDA(**dict(params, total_samples=X.shape[0]))
    in_order.partial_fit(X).partial_fit(X)
    assert not np.allclose(in_order.components_, first.components_)
    assert first.n_iter_ == 2
    assert first.n_batch_iter_ == 2 * int(np.ceil(X.shape[0] / params["batch_size"]))


def test_batch_mode_increases_the_bound_every_step(planted_corpus):
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


def test_evaluation_history_and_perp_tol(planted_corpus):
    X = planted_corpus[0]
    X_train, X_val = X[:500], X[500:]
    model = SmoothedLDA(**dict(PARAMS, evaluate_every=5, max_iter=50, perp_tol=1.0))
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


def test_no_evaluation_by_default(planted_corpus):
    model = SmoothedLDA(**dict(PARAMS, max_iter=3)).fit(planted_corpus[0])
    assert model.evaluation_history_["score"] == []
    assert model.n_iter_ == 3


def test_smoothing_divides_the_variance_by_about_L(planted_corpus):
    """With lambda held fixed, the window mean of L independent minibatch
    statistics has 1/L of the variance of one statistic (Mandt & Blei 2014,
    Sec. 3)."""
    X = planted_corpus[0].astype(np.float64)
    model = SmoothedLDA(**PARAMS).partial_fit(X[:100])
    rng = np.random.default_rng(0)
    L, n_draws = 5, 400
    window = SmoothingWindow(L, model._natural.shape, np.float64)
    single, smoothed = [], []
    for t in range(n_draws):
        statistic = model._local_statistic(
            model._prepare_minibatch(X[rng.choice(X.shape[0], size=10)])
        )
        window.push(statistic)
        dense = np.zeros(model._natural.shape)
        dense[statistic.rows] = statistic.block
        single.append(dense)
        if t >= L - 1:
            smoothed.append(window_mean(window, model._natural.shape))
    ratio = np.var(smoothed, axis=0).sum() / np.var(single, axis=0).sum()
    # Summed over all coordinates, the estimate is within a few percent of
    # 1/L; the interval leaves room for the overlap of successive windows.
    assert 0.8 / L < ratio < 1.2 / L, ratio


@pytest.mark.parametrize(
    "make_model",
    [
        lambda: SmoothedLDA(L=3, **PARAMS),
        # Small effective batches give negative weights and projections.
        lambda: AnnealedLDA(M=2, **PARAMS),
        lambda: FilteredLDA(
            **{k: v for k, v in PARAMS.items() if not k.startswith("learning")}
        ),
    ],
    ids=["smoothed", "annealed", "filtered"],
)
def test_update_keeps_the_sums_of_lambda(planted_corpus, make_model):
    # The update sums the rows of lambda as it writes them; the local step
    # of the next minibatch uses these sums instead of a pass of its own.
    model = make_model().partial_fit(planted_corpus[0])
    if isinstance(model, AnnealedLDA):
        assert model.n_projected_ > 0
    assert_allclose(
        model._topic_totals,
        model._natural.sum(axis=0, dtype=np.float64),
        rtol=1e-12,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_initial_topics_are_scikit_learns_whatever_n_jobs(dtype):
    """lambda starts at Gamma(100, 1/100) draws (Hoffman et al. 2013), the
    values scikit-learn's LatentDirichletAllocation draws for the same seed."""
    X = np.ones((5, 300), dtype=dtype)
    expected = np.random.RandomState(0).gamma(100.0, 0.01, (20, 300)).T
    for n_jobs in (1, 2):
        model = SmoothedLDA(n_components=20, random_state=0)
        with thread_pool(n_jobs):
            model._initialize_online(X, 5, model._mechanism_settings())
        assert model._natural.dtype == dtype
        assert model._natural.flags.c_contiguous
        assert_array_equal(model._natural, expected.astype(dtype))
