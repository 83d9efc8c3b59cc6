"""The local steps of workers with two threads: the fit of one machine.

A worker runs a part's local step on all of its threads, as a team that
shares the part's documents; the fit must not depend on it. The tests run
on a LocalCluster of one worker process with two threads, started here.
"""

import numpy as np
import pytest
from _cluster import local_client
from numpy.testing import assert_allclose

import sklearn_svi._threads
from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi._datasets import make_lda_corpus

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def two_thread_client():
    with local_client(n_workers=1, threads_per_worker=2) as client:
        yield client


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
