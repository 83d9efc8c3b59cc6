"""The local steps of workers with two threads: the fit of one machine.

A worker runs a part's local step on all of its threads (LDA's as a team
that shares the part's documents); the fit must not depend on it. The tests run
on a LocalCluster of one worker process with two threads, started here.
"""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
from _cluster import local_client
from numpy.testing import assert_allclose

import sklearn_svi._threads
from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
)
from sklearn_svi._datasets import make_lda_corpus

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def two_thread_client():
    with local_client(n_workers=1, threads_per_worker=2) as client:
        yield client


@pytest.fixture
def worker_shares_all_work(two_thread_client):
    """The worker's row passes on both of its threads however few their
    entries, as a large model's are."""

    defaults = next(iter(two_thread_client.run(_set_thresholds, 1, 1).values()))
    yield
    two_thread_client.run(_set_thresholds, *defaults)


def _set_thresholds(block_entries, team_entries):
    """Set the worker's least entries of a shared row pass and of a team's
    pass; return the ones they replace."""
    threads = sklearn_svi._threads
    replaced = (threads.MIN_BLOCK_ENTRIES, threads.MIN_TEAM_ENTRIES)
    threads.MIN_BLOCK_ENTRIES, threads.MIN_TEAM_ENTRIES = block_entries, team_entries
    return replaced


def _forget_teams():
    sklearn_svi._threads._team_started = False


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("estimator", [SmoothedLDA, AnnealedLDA, FilteredLDA])
def test_every_default_on_a_worker_of_two_threads_is_the_fit_of_one_machine(
    two_thread_client, estimator, partitioned
):
    # Short documents, which the default samples, and some long ones, which
    # its collapsed step sweeps: the team claims both kinds.
    short, long = (
        make_lda_corpus(
            n_documents=n_documents,
            n_features=300,
            n_topics=5,
            mean_document_length=length,
            random_state=seed,
        )[0]
        for n_documents, length, seed in [(900, 4, 0), (100, 120, 1)]
    )
    order = np.random.default_rng(0).permutation(1000)
    X = np.vstack([short.toarray(), long.toarray()])[order]
    settings = dict(n_components=6, batch_size=128, max_iter=2, random_state=0)
    alone = estimator(**settings).fit(X)
    two_thread_client.run(_forget_teams)
    with dask.config.set({"sklearn-svi.partition-model": partitioned}):
        on_worker = estimator(**settings).fit(
            da.from_array(X, chunks=(250, X.shape[1]))
        )
    assert on_worker.n_batch_iter_ == alone.n_batch_iter_
    assert_allclose(on_worker.components_, alone.components_, rtol=1e-10)
    assert_allclose(
        on_worker.step_size_history_["step_size"],
        alone.step_size_history_["step_size"],
        rtol=1e-10,
    )
    # The worker's local steps ran on a team of two threads.
    started = two_thread_client.run(lambda: sklearn_svi._threads._team_started)
    assert list(started.values()) == [True]


def _ratings():
    rng = np.random.RandomState(0)
    users, items = rng.randn(600, 3), rng.randn(80, 3)
    observed = rng.rand(600, 80) < 0.2
    return sp.csr_matrix(np.where(observed, users @ items.T + 3, 0))


def _samples():
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    return np.vstack([rng.randn(600, 2) + center for center in centers])


@pytest.mark.parametrize(
    "estimator, data, settings, fitted",
    [
        # A fit on a Dask collection starts from a sample of its rows; a
        # fixed offset and noise variance make the start the same as from
        # all of them.
        (
            SVIMatrixFactorization,
            _ratings,
            dict(n_components=3, batch_size=64, rating_offset=3.0, noise_variance=1.0),
            "components_",
        ),
        (SVIGaussianMixture, _samples, dict(n_components=3, batch_size=100), "means_"),
    ],
)
def test_the_other_models_on_a_worker_of_two_threads_are_the_fit_of_one_machine(
    two_thread_client, worker_shares_all_work, estimator, data, settings, fitted
):
    # Only LDA's lambda is ever held by the workers.
    X = data()
    started = estimator(**settings, random_state=0, total_samples=X.shape[0])
    started.partial_fit(X[::6])
    alone = copy.deepcopy(started).partial_fit(X)
    on_worker = copy.deepcopy(started).partial_fit(
        da.from_array(X, chunks=(250, X.shape[1]), asarray=False)
    )
    assert on_worker.n_batch_iter_ == alone.n_batch_iter_
    assert_allclose(getattr(on_worker, fitted), getattr(alone, fitted), rtol=1e-10)
