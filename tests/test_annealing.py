"""Tuneable stochastic annealing (SVI+) and AnnealedLDA."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_svi import AnnealedLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi._mechanisms import AnnealingWeights
from sklearn_svi._store import StoredRows

COMMON = dict(n_components=4, learning_offset=5.0, learning_decay=0.6, random_state=0)


def local_statistic(model, X_batch, sample_weight=None):
    """The model's minibatch statistic of ``X_batch`` at its current lambda."""
    return model._local_statistic(model._prepare_minibatch(X_batch), sample_weight)


def dense(statistic, shape):
    values = np.zeros(shape)
    values[statistic.rows] = statistic.block
    return values.ravel()


@pytest.fixture(scope="module")
def per_document_statistics(planted_corpus):
    """A model with lambda held fixed and each document's statistic s_n."""
    X = planted_corpus[0][:200].astype(np.float64)
    model = SmoothedLDA(**COMMON).partial_fit(X)
    shape = model._natural.shape
    statistics = np.array(
        [dense(local_statistic(model, X[[n]]), shape) for n in range(200)]
    )
    return model, X, statistics


def test_weights_multiply_each_documents_statistic(per_document_statistics):
    model, X, statistics = per_document_statistics
    rng = np.random.RandomState(0)
    batch = rng.choice(X.shape[0], size=40)
    weights = AnnealingWeights(8, 0.0)(40, 1, rng)
    weighted = local_statistic(model, X[batch], weights)
    expected = weights @ statistics[batch] / 40
    assert_allclose(dense(weighted, model._natural.shape), expected, atol=1e-12)


def test_annealed_statistic_is_unbiased_with_the_variance_of_batch_size_M(
    per_document_statistics,
):
    """Paisley et al., eq. 14-15: E[S] is the corpus mean and Var[S] that of
    plain SVI with minibatches of M documents, with lambda held fixed."""
    _, _, statistics = per_document_statistics
    rng = np.random.RandomState(1)
    n_draws, batch_size, M = 3000, 40, 8
    annealing = AnnealingWeights(M, 0.0)
    annealed = np.empty((n_draws, statistics.shape[1]))
    plain = np.empty_like(annealed)
    for draw in range(n_draws):
        batch = rng.randint(0, len(statistics), size=batch_size)
        annealed[draw] = annealing(batch_size, 1, rng) @ statistics[batch] / batch_size
        plain[draw] = statistics[rng.randint(0, len(statistics), size=M)].mean(axis=0)

    population_mean = statistics.mean(axis=0)
    varying = statistics.std(axis=0) > 0
    standard_error = annealed.std(axis=0)[varying] / np.sqrt(n_draws)
    z = (annealed.mean(axis=0)[varying] - population_mean[varying]) / standard_error
    # A few hundred coordinates: |z| beyond 5 has odds below 1e-4 if unbiased.
    assert np.max(np.abs(z)) < 5

    # The total variance of 3000 draws has a relative standard error of about
    # 3%; theory gives a ratio of (1/40 + 4 * 39/1600) * 8 = 0.98.
    ratio = annealed.var(axis=0).sum() / plain.var(axis=0).sum()
    assert 0.85 < ratio < 1.12, ratio
    # Plain minibatches of 40 have about five times less variance: the check
    # can tell the two apart.
    plain_40 = np.array(
        [
            statistics[rng.randint(0, len(statistics), size=batch_size)].mean(axis=0)
            for _ in range(1000)
        ]
    )
    assert plain_40.var(axis=0).sum() < 0.3 * annealed.var(axis=0).sum()


def test_no_noise_when_the_minibatch_is_at_most_M():
    annealing = AnnealingWeights(10, 5.0)
    rng = np.random.RandomState(0)
    assert annealing(10, 1, rng) is None
    assert annealing(7, 1, rng) is None
    weights = annealing(40, 1, rng)
    assert weights.shape == (40,) and abs(weights.mean() - 1) < 1e-12
    # M_t = 10 + 5 (t - 1) reaches 40 at t = 7.
    assert annealing(40, 6, rng) is not None
    assert annealing(40, 7, rng) is None


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_M_equal_to_batch_size_is_plain_svi_bit_for_bit(planted_corpus, method):
    X = planted_corpus[0]
    params = dict(COMMON, batch_size=64, max_iter=2, total_samples=1000)
    annealed = getattr(AnnealedLDA(M=64, **params), method)(X)
    plain = getattr(SmoothedLDA(L=1, **params), method)(X)
    assert_array_equal(annealed.components_, plain.components_)
    assert annealed.n_projected_ == 0


def test_annealing_changes_the_fit(planted_corpus):
    X = planted_corpus[0]
    params = dict(COMMON, batch_size=64, max_iter=2)
    annealed = AnnealedLDA(M=8, **params).fit(X)
    plain = SmoothedLDA(L=1, **params).fit(X)
    assert not np.allclose(annealed.components_, plain.components_)


def test_projection_keeps_lambda_feasible_at_M_1():
    X, _, _ = make_lda_corpus(n_documents=2500, n_features=200, random_state=0)
    model = AnnealedLDA(
        n_components=5, batch_size=1000, M=1, max_iter=3, random_state=0
    ).fit(X)
    eta = 1 / 5
    assert np.all(np.isfinite(model.components_))
    assert model.components_.min() >= eta
    # At M = 1 the weights have standard deviation sqrt(999): the projection
    # acts, and is counted.
    assert model.n_projected_ > 0
    assert np.all(np.isfinite(model.transform(X[:10])))


@pytest.mark.parametrize("window_length", [1, 3])
def test_projection_runs_only_while_the_window_holds_negative_weights(
    planted_corpus, monkeypatch, window_length
):
    # M_t = 8 + 28 (t - 1) reaches the minibatch size at t = 3: updates 1
    # and 2 are annealed, and their statistics stay in a window of L for
    # L - 1 more updates; after that every iterate is feasible as in plain
    # SVI and the projection's pass over lambda is skipped.
    from sklearn_svi import SVIGaussianMixture

    X = planted_corpus[0]
    projected_at = []
    if window_length == 1:
        model = AnnealedLDA(**dict(COMMON, batch_size=64, M=8, M_growth=28.0))
        data = X[: 64 * 8]
    else:
        model = SVIGaussianMixture(
            n_components=3,
            batch_size=64,
            L=window_length,
            M=8,
            M_growth=28.0,
            random_state=0,
        )
        data = np.random.RandomState(0).normal(size=(64 * 8, 2))
    project = StoredRows.project

    def counted(rows, projection, prior):
        projected_at.append(model.n_batch_iter_)
        return project(rows, projection, prior)

    monkeypatch.setattr(StoredRows, "project", counted)
    for start in range(0, data.shape[0], 64):
        model.partial_fit(data[start : start + 64])
    assert model.n_batch_iter_ == 8
    assert projected_at == list(range(1, 3 + window_length - 1))


def test_growing_M_ends_as_plain_svi(planted_corpus):
    X = planted_corpus[0]
    model = AnnealedLDA(**dict(COMMON, batch_size=100, M=10, M_growth=45.0))
    model.fit(X)
    assert model._update_state.annealing.effective_size(model.n_batch_iter_) >= 100


def test_M_above_batch_size_is_a_clear_error(planted_corpus):
    X = planted_corpus[0]
    with pytest.raises(ValueError, match="M=200 must not exceed batch_size=100"):
        AnnealedLDA(M=200, batch_size=100).fit(X)
    model = AnnealedLDA(**dict(COMMON, M=20, batch_size=100)).fit(X)
    before = pickle.dumps(model)
    model.set_params(M=500)
    with pytest.raises(ValueError, match="must not exceed"):
        model.partial_fit(X)
    model.set_params(M=20)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match="'M' parameter"):
        AnnealedLDA(M=0).fit(X)


def test_grid_search_over_M_in_a_pipeline():
    X, _, _ = make_lda_corpus(n_documents=300, n_features=40, random_state=0)
    texts = [
        " ".join(np.repeat([f"w{i:02d}" for i in row.indices], row.data)) for row in X
    ]
    pipeline = Pipeline(
        [
            ("counts", CountVectorizer()),
            (
                "lda",
                AnnealedLDA(n_components=3, batch_size=50, max_iter=2, random_state=0),
            ),
        ]
    )
    search = GridSearchCV(pipeline, {"lda__M": [5, 50]}, cv=2).fit(texts)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert search.best_params_["lda__M"] == [5, 50][int(np.argmax(scores))]


def test_batch_mode_with_annealing_ends_as_batch_vb(planted_corpus):
    """The paper's batch-with-annealing mode: each update is a full batch VB
    step plus noise; once M_t reaches the data size the noise stops and the
    bound rises at every step, as in batch variational Bayes."""
    X = planted_corpus[0][:300]
    n = X.shape[0]
    model = AnnealedLDA(
        n_components=4,
        batch_size=n,
        total_samples=n,
        learning_rate=1.0,
        M=30,
        M_growth=54.0,
        mean_change_tol=1e-9,
        max_doc_update_iter=2000,
        random_state=0,
    )
    scores, noisy = [], []
    for step in range(1, 13):
        model.partial_fit(X)
        scores.append(model.score(X))
        noisy.append(model._update_state.annealing.effective_size(step) < n)
    # M_t = 30 + 54 (t - 1) reaches 300 at t = 6.
    assert noisy == [True] * 5 + [False] * 7
    assert model.n_projected_ > 0
    quiet = np.array(scores[5:])
    assert np.all(np.diff(quiet) > -1e-9 * np.abs(quiet[1:]))


@pytest.mark.parametrize("batch_size", [128, 256, 1024])
def test_default_schedule_anneals_three_updates_then_is_plain_svi(batch_size):
    # The default, M_t = (batch_size // 4) t: the first update gets the noise
    # of a quarter of the minibatch (weights of variance 3), the next two
    # less, and from the fourth on there is none. A fixed M would keep the
    # noise of M documents to the end.
    model = AnnealedLDA(batch_size=batch_size)
    annealing = model._mechanism_settings().build_annealing()
    rng = np.random.RandomState(0)
    weights = annealing(batch_size, 1, rng)
    assert weights is not None and weights.var() == pytest.approx(3.0, rel=0.3)
    assert all(annealing(batch_size, step, rng) is not None for step in (2, 3))
    assert all(annealing(batch_size, step, rng) is None for step in range(4, 200))
    assert model.get_params()["M"] == "auto"
