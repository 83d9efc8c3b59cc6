"""dask-ml's wrappers and searches (an optional library) with every estimator.

dask-ml feeds the blocks of a Dask array to ``partial_fit`` on the workers
and reads ``score``; each estimator must work with them unchanged.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone

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
distributed = pytest.importorskip("distributed")
dask_ml = pytest.importorskip("dask_ml")

N_SAMPLES = 600
BLOCK_ROWS = 150


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def documents():
    X = make_lda_corpus(
        n_documents=N_SAMPLES, n_features=200, n_topics=4, random_state=0
    )
    return X[0].toarray()


def clusters():
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    return np.vstack([rng.randn(N_SAMPLES // 3, 2) + center for center in centers])


def ratings():
    """Every user rates every item (a dense array's entries are all
    observed): two taste groups, with noise."""
    rng = np.random.RandomState(0)
    taste = np.where(rng.rand(N_SAMPLES, 1) < 0.5, 1.0, -1.0)
    items = rng.choice([-1.0, 1.0], size=(1, 30))
    return np.clip(3.0 + taste * items + 0.3 * rng.randn(N_SAMPLES, 30), 1.0, 5.0)


# Each estimator, its data and the grid of its mechanism's parameter.
CASES = [
    (SmoothedLDA(n_components=4, batch_size=50), documents, {"L": [1, 3]}),
    (AnnealedLDA(n_components=4, batch_size=50), documents, {"M": [10, 25]}),
    (
        FilteredLDA(n_components=4, batch_size=50),
        documents,
        {"learning_rate": ["gaussian", "student-t"]},
    ),
    (SVIGaussianMixture(n_components=3, batch_size=50), clusters, {"L": [1, 3]}),
    (SVIMatrixFactorization(n_components=2, batch_size=50), ratings, {"L": [1, 3]}),
]
IDS = [type(estimator).__name__ for estimator, _, _ in CASES]


def blocks(X):
    return da.from_array(X, chunks=(BLOCK_ROWS, X.shape[1]))


@pytest.mark.parametrize(("estimator", "data", "grid"), CASES, ids=IDS)
def test_incremental_gives_partial_fit_over_the_blocks(client, estimator, data, grid):
    """``Incremental`` calls ``partial_fit`` on each block in turn, and its
    score is the model's."""
    from dask_ml.wrappers import Incremental

    X = data()
    estimator = clone(estimator).set_params(random_state=0, total_samples=N_SAMPLES)
    incremental = Incremental(clone(estimator), shuffle_blocks=False)
    incremental.fit(blocks(X))
    alone = clone(estimator)
    for start in range(0, N_SAMPLES, BLOCK_ROWS):
        alone.partial_fit(X[start : start + BLOCK_ROWS])
    fitted = incremental.estimator_
    assert fitted.n_batch_iter_ == alone.n_batch_iter_ == N_SAMPLES // 50
    assert_allclose(fitted.transform(X), alone.transform(X), rtol=1e-10)
    assert_allclose(
        incremental.score(blocks(X), None), alone.score(blocks(X)), rtol=1e-12
    )


def incremental_search_works():
    """Whether dask-ml's incremental searches run with this Dask: dask-ml
    2025.1 persists collections with ``dask.persist`` inside the client's
    event loop, which Dask refuses from 2025.3 on, for every estimator."""
    from packaging.version import Version

    return Version(dask.__version__) < Version("2025.3")


@pytest.mark.skipif(
    not incremental_search_works(),
    reason="dask-ml's incremental searches fail with this Dask for any estimator",
)
@pytest.mark.parametrize(("estimator", "data", "grid"), CASES, ids=IDS)
def test_hyperband_search_tunes_the_mechanism(client, estimator, data, grid):
    """``HyperbandSearchCV`` trains each candidate by ``partial_fit`` on the
    blocks and picks one of the grid by its ``score``."""
    from dask_ml.model_selection import HyperbandSearchCV

    X = data()
    search = HyperbandSearchCV(
        clone(estimator).set_params(random_state=0, total_samples=N_SAMPLES),
        grid,
        max_iter=3,
        random_state=0,
    )
    # dask-ml's searches split a y with X; the estimators ignore it.
    y = da.zeros(len(X), chunks=BLOCK_ROWS)
    search.fit(blocks(X), y)
    scores = np.asarray(search.cv_results_["test_score"], dtype=float)
    assert len(scores) >= 2
    assert np.isfinite(scores).all()
    assert search.best_score_ == scores.max()
    best = search.best_estimator_
    assert best.get_params()[next(iter(grid))] == search.best_params_[next(iter(grid))]
    assert best.n_batch_iter_ > 0
    assert np.isfinite(best.transform(X[:10])).all()
