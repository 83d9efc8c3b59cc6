"""SVIMatrixFactorization: the model, its mechanisms and its scikit-learn surface."""

import pickle
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import (
    check_param_validation,
    parametrize_with_checks,
)

from sklearn_svi import SVIMatrixFactorization, load_ratings, split_ratings
from sklearn_svi.factorization import _model as _factorization_model
from sklearn_svi.metrics import ranking_score, ranking_scorer
from sklearn_svi.metrics._ranking import _metric_of_hits


def planted_ratings(n_users=400, n_items=60, rank=3, density=0.3, noise=0.3, seed=0):
    """Ratings u_i^T v_j + 3 + noise of random factors, a share observed."""
    rng = np.random.RandomState(seed)
    users = rng.normal(size=(n_users, rank))
    items = rng.normal(size=(n_items, rank))
    mask = rng.rand(n_users, n_items) < density
    values = users @ items.T + 3.0 + noise * rng.normal(size=mask.shape)
    rows, columns = np.nonzero(mask)
    return sp.csr_matrix((values[mask], (rows, columns)), shape=mask.shape)


PARAMS = dict(n_components=3, batch_size=50, random_state=0)


@parametrize_with_checks(
    [
        SVIMatrixFactorization(n_components=2, max_iter=2, batch_size=16),
        SVIMatrixFactorization(
            n_components=2,
            max_iter=2,
            batch_size=16,
            L=3,
            M=8,
            learning_rate="student-t",
        ),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_param_validation():
    estimator = SVIMatrixFactorization()
    check_param_validation(type(estimator).__name__, estimator)


def test_batch_mode_with_step_one_is_coordinate_ascent():
    X = planted_ratings()
    model = SVIMatrixFactorization(
        learning_rate=1.0,
        max_iter=1,
        warm_start=True,
        **{**PARAMS, "batch_size": X.shape[0]},
    )
    bounds = []
    for _ in range(20):
        bounds.append(model.fit(X).lower_bound(X))
    # Users at their optimum, then items at theirs: the bound never falls.
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[1:]))
    assert bounds[-1] > bounds[0] + 100


def test_planted_factors_predict_held_out_ratings():
    X = planted_ratings(noise=0.3)
    X_train, X_test = split_ratings(X, test_size=0.2, random_state=0)
    model = SVIMatrixFactorization(
        max_iter=30, learning_rate=0.5, noise_variance=0.1, **PARAMS
    ).fit(X_train)
    test = X_test.tocoo()
    predicted = model.predict_pairs(X_train, test.row, test.col)
    rmse = np.sqrt(np.mean((predicted - test.data) ** 2))
    # The noise is 0.3; always predicting the mean misses by the spread.
    assert rmse < 0.45 < np.std(test.data)
    assert_allclose(
        model.predict_ratings(X_train)[test.row, test.col], predicted, rtol=1e-10
    )


def test_learned_noise_variance_biases_and_their_precisions_match_the_truth():
    """Ratings drawn from the model with biases: empirical Bayes recovers the
    noise variance within 10% and the biases' prior precision within 20%,
    and the items' biases follow the planted ones."""
    rng = np.random.RandomState(0)
    n_users, n_items, rank = 600, 80, 3
    users = rng.normal(size=(n_users, rank))
    items = rng.normal(size=(n_items, rank))
    user_biases = rng.normal(scale=0.5, size=n_users)
    item_biases = rng.normal(scale=0.5, size=n_items)
    noise_variance = 0.25
    mask = rng.rand(n_users, n_items) < 0.3
    means = users @ items.T + user_biases[:, None] + item_biases + 3.0
    values = means + np.sqrt(noise_variance) * rng.normal(size=mask.shape)
    rows, columns = np.nonzero(mask)
    X = sp.csr_matrix((values[mask], (rows, columns)), shape=mask.shape)
    model = SVIMatrixFactorization(max_iter=10, **PARAMS).fit(X)
    assert model.noise_variance_ == pytest.approx(noise_variance, rel=0.1)
    bias_precision = 1 / 0.5**2
    assert model.user_prior_precision_[-1] == pytest.approx(bias_precision, rel=0.2)
    assert model.item_prior_precision_[-1] == pytest.approx(bias_precision, rel=0.2)
    # Over eight seeds the correlation was 0.93 to 0.99.
    assert np.corrcoef(model.item_biases_, item_biases)[0, 1] > 0.9


def test_annealed_updates_hold_the_learned_hyperparameters():
    """SVI+'s weights perturb the items by design: while they are drawn, the
    noise variance and the precisions stay at their start."""
    X = planted_ratings()
    annealed = SVIMatrixFactorization(M=10, max_iter=3, **PARAMS).fit(X)
    start = np.mean((X.data - X.data.mean()) ** 2)
    assert annealed.noise_variance_ == pytest.approx(start, rel=1e-12)
    assert_array_equal(annealed.item_prior_precision_, 1.0)
    assert_array_equal(annealed.user_prior_precision_, 1.0)
    plain = SVIMatrixFactorization(max_iter=3, **PARAMS).fit(X)
    assert plain.noise_variance_ < 0.5 * start


def test_transform_gives_user_factors_and_a_user_without_ratings_the_prior():
    # A user without ratings keeps the prior: factor and bias 0, so its
    # predicted ratings are the offset plus the items' biases.
    X = planted_ratings()
    model = SVIMatrixFactorization(**PARAMS).fit(X)
    empty = sp.csr_matrix((2, X.shape[1]))
    assert_array_equal(model.transform(empty), 0.0)
    assert model.transform(X).shape == (X.shape[0], 3)
    assert_allclose(
        model.predict_ratings(empty),
        np.tile(model.rating_offset_ + model.item_biases_, (2, 1)),
    )


def test_an_item_never_rated_stays_at_the_prior():
    X = planted_ratings().tolil()
    X[:, 5] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    model = SVIMatrixFactorization(
        learning_rate=1.0, max_iter=3, **{**PARAMS, "batch_size": X.shape[0]}
    ).fit(X)
    assert_allclose(model.components_[:, 5], 0.0, atol=1e-12)
    assert_allclose(model.item_biases_[5], 0.0, atol=1e-12)
    assert_allclose(
        model.component_covariances_[5],
        np.diag(1 / model.item_prior_precision_[:3]),
        atol=1e-12,
    )


def test_explicit_zeros_are_ratings():
    X = planted_ratings()
    with_zero = X.copy()
    with_zero.data[:50] = 0.0
    model = SVIMatrixFactorization(**PARAMS)
    zeros_kept = model.fit(with_zero).components_.copy()
    stripped = with_zero.copy()
    stripped.eliminate_zeros()
    assert not np.allclose(model.fit(stripped).components_, zeros_kept)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"L": 4},
        {"M": 10, "M_growth": 5.0},
        {"learning_rate": "student-t", "prior_variance": 1.0},
        {"learning_rate": "gaussian", "prior_variance": 1.0, "L": 3, "M": 20},
    ],
)
def test_resuming_from_a_pickle_and_any_n_jobs_give_the_same_model(params):
    X = planted_ratings()
    first, second = X[:200], X[200:]
    reference = SVIMatrixFactorization(total_samples=400, **params, **PARAMS)
    reference.partial_fit(first).partial_fit(second)
    resumed = SVIMatrixFactorization(total_samples=400, **params, **PARAMS)
    resumed = pickle.loads(pickle.dumps(resumed.partial_fit(first)))
    resumed.partial_fit(second)
    assert_array_equal(resumed._natural, reference._natural)
    threaded = SVIMatrixFactorization(total_samples=400, n_jobs=2, **params, **PARAMS)
    threaded.partial_fit(first).partial_fit(second)
    assert_array_equal(threaded._natural, reference._natural)


def test_annealing_projects_the_precisions_back():
    X = planted_ratings()
    model = SVIMatrixFactorization(M=2, learning_rate=0.9, **PARAMS).fit(X)
    side = 4  # the factor and the bias
    excess = model._natural[:, side:].reshape(-1, side, side)
    assert model.n_projected_ > 0
    assert np.linalg.eigvalsh(excess).min() >= -1e-10


def test_pipeline_and_grid_search_over_rank_and_the_mechanisms():
    X = planted_ratings(n_users=300)
    pipeline = Pipeline(
        [
            ("identity", FunctionTransformer(accept_sparse=True)),
            ("mf", SVIMatrixFactorization(max_iter=5, **PARAMS)),
        ]
    )
    search = GridSearchCV(
        pipeline,
        {
            "mf__n_components": [1, 3],
            "mf__L": [1, 5],
            "mf__M": [None, 25],
            "mf__learning_rate": ["robbins-monro", "student-t"],
            "mf__prior_variance": [0.0, 1.0],
        },
        cv=3,
    ).fit(X)
    # The planted rank is 3: a rank-1 model completes ratings worse.
    assert search.best_params_["mf__n_components"] == 3
    assert search.best_score_ < 0


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.nan, "NaN"),
        (np.inf, "infinity"),
    ],
)
def test_bad_values_raise_and_leave_the_model_unchanged(bad, message):
    X = planted_ratings()
    model = SVIMatrixFactorization(**PARAMS).fit(X)
    before = model._natural.copy()
    broken = X.copy()
    broken.data[3] = bad
    for method in (
        model.partial_fit,
        model.transform,
        model.predict_ratings,
        model.score,
    ):
        with pytest.raises(ValueError, match=message):
            method(broken)
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(X[:, :10])
    with pytest.raises(ValueError, match="same length"):
        model.predict_pairs(X, [0, 1], [2])
    with pytest.raises(ValueError, match=r"lie in \[0, 60\)"):
        model.predict_pairs(X, [0], [60])
    assert_array_equal(model._natural, before)


def test_score_needs_a_user_with_two_ratings():
    X = planted_ratings()
    model = SVIMatrixFactorization(**PARAMS).fit(X)
    single = sp.csr_matrix(([4.0], ([0], [3])), shape=(1, X.shape[1]))
    with pytest.raises(ValueError, match="two ratings"):
        model.score(single)


def test_load_ratings_reads_a_file_and_a_zip_member(tmp_path):
    lines = "".join(
        "\t".join(fields) + "\n"
        for fields in [
            ("user", "item", "rating", "ts"),
            ("u1", "i2", "4", "9"),
            ("u2", "i1", "3", "9"),
            ("u1", "i1", "5", "9"),
            ("u1", "i1", "2", "10"),
        ]
    )
    (tmp_path / "r.tsv").write_text(lines)
    with zipfile.ZipFile(tmp_path / "r.zip", "w") as archive:
        archive.writestr("data/r.tsv", lines)
    for X, users, items in (
        load_ratings(tmp_path / "r.tsv"),
        load_ratings(tmp_path / "r.zip", member="data/r.tsv"),
    ):
        assert users.tolist() == ["u1", "u2"] and items.tolist() == ["i1", "i2"]
        # The later rating of a pair wins.
        assert_array_equal(X.toarray(), [[2.0, 4.0], [3.0, 0.0]])
    (tmp_path / "bad.tsv").write_text("just text\n")
    with pytest.raises(ValueError, match="separated by tabs"):
        load_ratings(tmp_path / "bad.tsv")


def test_split_ratings_keeps_every_rating_once():
    X = planted_ratings()
    X_train, X_test = split_ratings(X, test_size=0.25, random_state=0)
    assert X_test.nnz == round(0.25 * X.nnz)
    assert_allclose((X_train + X_test).toarray(), X.toarray())
    with pytest.raises(ValueError, match="test_size"):
        split_ratings(X, test_size=1.0)


def planted_groups(n_users=500, n_items=60, seed=0):
    """Ratings whose items fall in three groups, one factor direction each."""
    rng = np.random.RandomState(seed)
    groups = np.arange(n_items) % 3
    items = 2.0 * np.eye(3)[groups] + 0.1 * rng.normal(size=(n_items, 3))
    users = rng.normal(size=(n_users, 3))
    mask = rng.rand(n_users, n_items) < 0.3
    values = users @ items.T + 3 + 0.3 * rng.normal(size=mask.shape)
    rows, columns = np.nonzero(mask)
    X = sp.csr_matrix((values[mask], (rows, columns)), shape=mask.shape)
    return X, users @ items.T + 3, groups


def test_recommend_gives_the_best_unseen_items_of_planted_ratings():
    X, truth, _ = planted_groups()
    model = SVIMatrixFactorization(max_iter=20, **PARAMS).fit(X)
    items, ratings = model.recommend(X[:50], 5)
    assert items.shape == ratings.shape == (50, 5)
    assert np.all(np.diff(ratings, axis=1) <= 0)
    # No item a user rated, and items as good as the five best of the
    # others (items of one planted group are nearly alike, so which five of
    # the best group come first is a toss-up).
    assert not np.any(X[:50].toarray()[np.arange(50)[:, None], items])
    unseen = np.where(X[:50].toarray() != 0, -np.inf, truth[:50])
    best = -np.sort(-unseen, axis=1)[:, :5]
    chosen = np.take_along_axis(truth[:50], items, axis=1)
    assert np.mean(best - chosen) < 0.1
    assert np.mean(chosen) > np.mean(truth[:50]) + 1.5
    assert_allclose(
        ratings, model.predict_ratings(X[:50])[np.arange(50)[:, None], items]
    )
    seen_too, _ = model.recommend(X[:50], 5, exclude_seen=False)
    assert_array_equal(
        seen_too, np.argsort(-model.predict_ratings(X[:50]), axis=1)[:, :5]
    )


def test_recommend_refuses_more_items_than_a_user_can_get():
    X, _, _ = planted_groups()
    model = SVIMatrixFactorization(max_iter=2, **PARAMS).fit(X)
    full = X[:2].toarray() + 1.0  # every item rated
    with pytest.raises(ValueError, match="has rated 60 of the 60 items"):
        model.recommend(full, 1)
    with pytest.raises(ValueError, match=r"n_items must lie in \[1, 60\]"):
        model.recommend(X[:2], 0)
    with pytest.raises(TypeError, match="n_items must be an integer"):
        model.recommend(X[:2], 2.5)


def test_similar_items_are_the_items_of_the_same_planted_group():
    X, _, groups = planted_groups()
    model = SVIMatrixFactorization(max_iter=20, **PARAMS).fit(X)
    similar, similarities = model.similar_items(np.arange(60), 5)
    assert np.all(similar != np.arange(60)[:, None])
    assert np.all(groups[similar] == groups[:, None])
    assert np.all(np.diff(similarities, axis=1) <= 0)
    assert np.all(similarities <= 1 + 1e-12)
    with pytest.raises(ValueError, match="items must lie in"):
        model.similar_items([60])


def test_predictive_std_covers_held_out_ratings():
    """The posterior predictive spread is calibrated: about 95% of held-out
    ratings of data drawn from the model lie within 1.96 of it."""
    X, _, _ = planted_groups()
    X_train, X_test = split_ratings(X, test_size=0.2, random_state=0)
    model = SVIMatrixFactorization(max_iter=20, **PARAMS)
    model.fit(X_train)
    test = X_test.tocoo()
    means, std = model.predict_pairs(X_train, test.row, test.col, return_std=True)
    assert_array_equal(means, model.predict_pairs(X_train, test.row, test.col))
    assert np.all(std > np.sqrt(model.noise_variance_))
    covered = np.mean(np.abs(test.data - means) < 1.96 * std)
    assert 0.92 < covered < 0.98


def test_ranking_scores_prefer_the_fitted_model_and_drive_a_grid_search():
    X, _, _ = planted_groups()
    fitted = SVIMatrixFactorization(max_iter=20, **PARAMS).fit(X)
    barely = SVIMatrixFactorization(**PARAMS).partial_fit(X[:1])
    for metric in ("precision", "recall", "ndcg"):
        score = ranking_score(fitted, X, metric=metric, k=5, min_rating=4)
        assert 0 < ranking_score(barely, X, metric=metric, k=5, min_rating=4) < score
    search = GridSearchCV(
        SVIMatrixFactorization(batch_size=50, max_iter=5, random_state=0),
        {"n_components": [1, 3]},
        scoring=ranking_scorer(k=5, min_rating=4),
        cv=3,
    ).fit(X)
    assert search.best_params_ == {"n_components": 3}
    with pytest.raises(ValueError, match="No user of X has a held-out rating"):
        ranking_score(fitted, X, min_rating=100)
    with pytest.raises(ValueError, match="metric must be one of"):
        ranking_scorer(metric="map")


def test_ranking_metrics_of_a_known_ranking():
    # Two users; the first has relevant items at ranks 1 and 3 of 3, with
    # 2 relevant in all; the second none of its 4 relevant items.
    hits = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    n_relevant = np.array([2, 4])
    assert_allclose(_metric_of_hits("precision", hits, n_relevant), [2 / 3, 0])
    assert_allclose(_metric_of_hits("recall", hits, n_relevant), [1.0, 0])
    ideal = 1 + 1 / np.log2(3)
    assert_allclose(
        _metric_of_hits("ndcg", hits, n_relevant), [(1 + 1 / np.log2(4)) / ideal, 0]
    )


def test_a_copy_cut_to_the_rated_items_gives_the_same_statistic():
    # What travels to a worker of a cluster: the rows of lambda of the
    # items the minibatch rates, from which it forms their posteriors.
    X = planted_ratings(density=0.05)
    model = SVIMatrixFactorization(**PARAMS).fit(X)
    minibatch = X[:10]
    rows = model._rows_read(minibatch)
    assert_array_equal(rows, np.unique(minibatch.indices))
    assert len(rows) < X.shape[1]
    local = model._local_copy(rows)
    assert local._natural.shape[0] == len(rows)
    full, cut = model._local_statistic(minibatch), local._local_statistic(minibatch)
    assert_array_equal(cut.rows, full.rows)
    assert_allclose(cut.block, full.block, rtol=1e-12)
    assert_allclose(cut.sample_mean, full.sample_mean, rtol=1e-12)


def test_the_fitted_attributes_are_every_item_at_the_end_of_a_pass():
    X = planted_ratings()
    model = SVIMatrixFactorization(**PARAMS).partial_fit(X[:200])
    means, covariances = model._item_posteriors()
    assert_allclose(model.components_, means[:, :3].T, rtol=1e-12)
    assert_allclose(model.component_covariances_, covariances[:, :3, :3], rtol=1e-12)
    assert_allclose(model.item_biases_, means[:, 3], rtol=1e-12)


def test_a_sample_of_the_items_learns_their_prior_precision(monkeypatch):
    # Beyond _ITEM_MOMENT_SAMPLE items, the items' mean E[w_jk^2] of each
    # update is that of a uniform sample of them.
    X = planted_ratings(n_items=120)
    exact = SVIMatrixFactorization(**PARAMS).fit(X)
    monkeypatch.setattr(_factorization_model, "_ITEM_MOMENT_SAMPLE", 40)
    sampled = SVIMatrixFactorization(**PARAMS).fit(X)
    assert not np.allclose(sampled.components_, exact.components_)
    assert_allclose(
        sampled.item_prior_precision_, exact.item_prior_precision_, rtol=0.1
    )
