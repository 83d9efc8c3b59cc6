"""Smoothed gradients (Mandt & Blei 2014): the window and SmoothedLDA."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.utils import gen_batches

from sklearn_svi import SmoothedLDA
from sklearn_svi._mechanisms import SmoothingWindow, SparseStatistic


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
        probe._topic_totals = probe._natural_store.totals()
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


def test_window_length_one_is_plain_svi(planted_corpus, svi_params):
    # The update writes the minibatch's rows and scales the others, which
    # rounds differently from the dense recursion, by ~1e-15.
    X = planted_corpus[0]
    model = SmoothedLDA(L=1, **svi_params).partial_fit(X)
    assert_allclose(
        model.components_, dense_reference_run(X, 1, **svi_params), rtol=1e-12
    )


@pytest.mark.parametrize("L", [3, 10])
def test_sparse_window_equals_dense_window(planted_corpus, L, svi_params):
    X = planted_corpus[0]
    model = SmoothedLDA(L=L, **svi_params).partial_fit(X)
    assert_allclose(
        model.components_, dense_reference_run(X, L, **svi_params), rtol=1e-9
    )


def test_smoothing_changes_the_result(planted_corpus, svi_params):
    X = planted_corpus[0]
    plain = SmoothedLDA(L=1, **svi_params).partial_fit(X)
    smoothed = SmoothedLDA(L=5, **svi_params).partial_fit(X)
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
    stored_rows = sum(statistic.rows.size for statistic in window.rows.queue)
    assert window.nbytes == stored_rows * (2 * 8 + 8)


@pytest.mark.parametrize("length", [1, 3])
def test_only_a_window_of_one_statistic_lets_it_go_once_kept(length):
    rng = np.random.default_rng(0)
    window = SmoothingWindow(length=length, shape=(30, 3), dtype=np.float64)
    first, second = (sparse_statistic(rng, 30, 7, 3) for _ in range(2))
    window.begin()
    window.push(first)
    window.commit()
    kept = [] if length == 1 else [first]
    assert window.count == len(kept)
    window.begin()
    window.push(second)
    dense = np.zeros((len(kept) + 1, 30, 3))
    for full, statistic in zip(dense, [*kept, second]):
        full[statistic.rows] = statistic.block
    assert_allclose(window_mean(window, (30, 3)), dense.mean(axis=0))
    window.rollback()
    assert window.count == len(kept)


def test_plain_svi_keeps_no_statistic_between_updates(planted_corpus, svi_params):
    model = SmoothedLDA(L=1, **svi_params).partial_fit(planted_corpus[0])
    assert model._update_state.window.count == 0
    assert model._update_state.window.nbytes == 0


def test_window_memory_is_proportional_to_rows_seen():
    rng = np.random.default_rng(0)
    window = SmoothingWindow(length=10, shape=(10_000, 50), dtype=np.float64)
    for _ in range(25):
        window.push(sparse_statistic(rng, 10_000, 100, 50))
    # 10 blocks of 100 x 50 values plus 100 row indices each.
    assert window.nbytes == 10 * (50 * 100 * 8 + 100 * 8)
    assert window.nbytes < 10 * 50 * 10_000 * 8 / 50


def test_smoothing_divides_the_variance_by_about_L(planted_corpus, svi_params):
    """With lambda held fixed, the window mean of L independent minibatch
    statistics has 1/L of the variance of one statistic (Mandt & Blei 2014,
    Sec. 3)."""
    X = planted_corpus[0].astype(np.float64)
    model = SmoothedLDA(**svi_params).partial_fit(X[:100])
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
