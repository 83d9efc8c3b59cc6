"""SVIGaussianMixture: batch equivalence, mechanisms, conventions, errors."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.datasets import load_iris, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_svi import SVIGaussianMixture
from sklearn_svi.mixture._model import _log_normalised
from sklearn_svi.mixture._normal_wishart import SCALES

COVARIANCE_TYPES = ["full", "tied", "diag", "spherical"]
WEIGHT_PRIORS = ["dirichlet_process", "dirichlet_distribution"]


@pytest.fixture(scope="module")
def iris():
    return StandardScaler().fit_transform(load_iris().data)


@pytest.fixture(scope="module")
def blobs():
    """Three well separated clusters in 4 dimensions."""
    X, y = make_blobs(
        n_samples=3000, n_features=4, centers=3, cluster_std=0.6, random_state=0
    )
    return StandardScaler().fit_transform(X), y


@parametrize_with_checks(
    [
        SVIGaussianMixture(n_components=2, max_iter=3, batch_size=16),
        SVIGaussianMixture(
            n_components=2,
            max_iter=3,
            batch_size=16,
            covariance_type="diag",
            L=3,
            M=8,
            learning_rate="student-t",
        ),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("covariance_type", COVARIANCE_TYPES)
@pytest.mark.parametrize("weight_prior", WEIGHT_PRIORS)
def test_batch_mode_is_bayesian_gaussian_mixture(iris, covariance_type, weight_prior):
    # One minibatch of all the data and step size 1: each pass is one
    # iteration of variational EM from the same k-means initialisation.
    common = dict(
        n_components=4,
        covariance_type=covariance_type,
        weight_concentration_prior_type=weight_prior,
        max_iter=300,
        tol=1e-8,
        random_state=0,
    )
    reference = BayesianGaussianMixture(**common).fit(iris)
    # The same rule: our tol applies to the bound per sample.
    ours = SVIGaussianMixture(
        batch_size=len(iris),
        learning_rate=1.0,
        **{**common, "tol": common["tol"] / len(iris)},
    ).fit(iris)
    assert ours.converged_ and reference.converged_
    assert ours.n_iter_ == reference.n_iter_
    reference_bound = float(np.ravel(reference.lower_bound_)[0])
    assert ours.lower_bound_ == pytest.approx(reference_bound, rel=1e-10)
    for name in (
        "weights_",
        "means_",
        "covariances_",
        "precisions_cholesky_",
        "mean_precision_",
        "degrees_of_freedom_",
    ):
        assert_allclose(getattr(ours, name), getattr(reference, name), atol=1e-10)
    assert_allclose(
        np.ravel(ours.weight_concentration_),
        np.ravel(reference.weight_concentration_),
        atol=1e-10,
    )
    assert_allclose(ours.score_samples(iris), reference.score_samples(iris), atol=1e-10)
    assert_array_equal(ours.predict(iris), reference.predict(iris))


def test_log_normalised_is_logsumexp_over_the_components():
    rng = np.random.RandomState(0)
    # Rows far below zero, whose exponentials underflow unless shifted.
    weighted = rng.normal(size=(50, 4)) * 5 - np.linspace(0, 2000, 50)[:, None]
    log_norm, log_resp = _log_normalised(weighted)
    assert_allclose(log_norm, logsumexp(weighted, axis=1), rtol=1e-14)
    assert_allclose(log_resp, weighted - logsumexp(weighted, axis=1)[:, None])
    assert_allclose(np.exp(log_resp).sum(axis=1), 1.0)


@pytest.mark.parametrize("covariance_type", ["full", "tied"])
@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_a_covariance_not_positive_definite_is_refused(covariance_type, bad):
    covariances = np.array([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, bad]]])
    if covariance_type == "tied":
        covariances = covariances[1]
    with pytest.raises(ValueError, match="not finite or not positive definite"):
        SCALES[covariance_type]().precisions_cholesky(covariances)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_easy_data_converge_without_a_warning_to_the_batch_fit(seed):
    """Three blobs of 1,000 points, in three minibatches of the default
    size a pass: minibatch noise moves the bound over 3,000 samples by more
    than ``tol`` every pass, but not the bound per sample, which settles at
    the batch fit's bound and score."""
    X = make_blobs(n_samples=3000, centers=3, random_state=0)[0]
    reference = BayesianGaussianMixture(n_components=3, random_state=seed).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ours = SVIGaussianMixture(n_components=3, random_state=seed).fit(X)
    assert ours.converged_
    assert ours.n_iter_ < ours.max_iter
    change = abs(ours.lower_bounds_[-1] - ours.lower_bounds_[-2])
    assert ours.tol * len(X) > change > ours.tol
    assert ours.n_batch_iter_ == 3 * ours.n_iter_
    assert ours.score(X) == pytest.approx(reference.score(X), abs=0.01)
    assert ours.lower_bound_ / len(X) == pytest.approx(
        reference.lower_bound_ / len(X), abs=0.01
    )


def test_batch_mode_raises_the_lower_bound_every_pass(iris):
    model = SVIGaussianMixture(
        n_components=5, batch_size=len(iris), learning_rate=1.0, max_iter=40, tol=0.0
    )
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model.set_params(random_state=1).fit(iris)
    assert len(model.lower_bounds_) == 40
    assert np.all(np.diff(model.lower_bounds_) > -1e-9)


@pytest.mark.parametrize("covariance_type", COVARIANCE_TYPES)
def test_stochastic_fit_approaches_the_batch_fit(blobs, covariance_type):
    X, y = blobs
    reference = BayesianGaussianMixture(
        n_components=3, covariance_type=covariance_type, random_state=0
    ).fit(X)
    model = SVIGaussianMixture(
        n_components=3,
        covariance_type=covariance_type,
        batch_size=100,
        max_iter=3,
        random_state=0,
    ).fit(X)
    assert model.n_batch_iter_ == 90
    assert model.score(X) == pytest.approx(reference.score(X), rel=0.01)


def test_dirichlet_process_prunes_unused_components(blobs):
    X, _ = blobs
    model = SVIGaussianMixture(
        n_components=10,
        weight_concentration_prior=0.01,
        batch_size=200,
        learning_rate=0.3,
        max_iter=30,
        random_state=0,
    ).fit(X)
    assert np.sum(model.weights_ > 0.02) == 3
    assert np.sum(model.weights_[model.weights_ <= 0.02]) < 0.01


def test_pickle_mid_stream_resumes_exactly(blobs):
    X, _ = blobs
    params = dict(
        n_components=4,
        batch_size=100,
        total_samples=len(X),
        L=5,
        M=50,
        learning_rate="student-t",
        random_state=0,
    )
    uninterrupted = SVIGaussianMixture(**params).partial_fit(X[:1500])
    uninterrupted.partial_fit(X[1500:])
    interrupted = SVIGaussianMixture(**params).partial_fit(X[:1500])
    resumed = pickle.loads(pickle.dumps(interrupted)).partial_fit(X[1500:])
    for name in ("means_", "covariances_", "weights_"):
        assert_array_equal(getattr(resumed, name), getattr(uninterrupted, name))
    assert resumed.lower_bounds_ == uninterrupted.lower_bounds_
    assert resumed.n_projected_ == uninterrupted.n_projected_


def test_results_do_not_depend_on_n_jobs(blobs):
    X, _ = blobs
    X = np.vstack([X, X])  # more than one block of samples per minibatch
    params = dict(n_components=3, batch_size=5000, max_iter=2, random_state=0)
    one = SVIGaussianMixture(**params, n_jobs=1).fit(X)
    two = SVIGaussianMixture(**params, n_jobs=2).fit(X)
    assert_array_equal(one.covariances_, two.covariances_)
    assert one.lower_bound_ == two.lower_bound_


@pytest.mark.parametrize("covariance_type", COVARIANCE_TYPES)
def test_annealing_keeps_the_parameters_feasible(blobs, covariance_type):
    X, _ = blobs
    model = SVIGaussianMixture(
        n_components=4,
        covariance_type=covariance_type,
        batch_size=500,
        M=1,
        max_iter=2,
        random_state=0,
    )
    model.fit(X)
    assert model.n_projected_ > 0
    assert np.all(model.mean_precision_ >= model.mean_precision_prior_)
    assert np.all(model.degrees_of_freedom_ >= model.degrees_of_freedom_prior_)
    assert np.all(np.isfinite(model.score_samples(X)))
    if covariance_type in ("full", "tied"):
        covariances = np.reshape(model.covariances_, (-1, 4, 4))
        assert np.all(np.linalg.eigvalsh(covariances) > 0)
    else:
        assert np.all(model.covariances_ > 0)


def test_annealing_with_M_equal_to_batch_size_is_plain_svi(blobs):
    X, _ = blobs
    params = dict(n_components=3, batch_size=100, max_iter=2, random_state=0)
    plain = SVIGaussianMixture(**params).fit(X)
    annealed = SVIGaussianMixture(**params, M=100).fit(X)
    assert_array_equal(annealed.covariances_, plain.covariances_)


def test_smoothing_annealing_and_filtering_compose(blobs):
    X, y = blobs
    model = SVIGaussianMixture(
        n_components=3,
        batch_size=200,
        L=10,
        M=100,
        learning_rate="student-t",
        max_iter=5,
        random_state=0,
    )
    model.fit(X)
    reference = BayesianGaussianMixture(n_components=3, random_state=0).fit(X)
    assert model.score(X) == pytest.approx(reference.score(X), rel=0.02)
    history = model.step_size_history_["step_size"]
    assert len(history) == model.n_batch_iter_ and len(set(history)) > 1


def test_pipeline_and_grid_search(blobs):
    X, y = blobs
    X = X * 10.0 + 5.0
    pipeline = make_pipeline(
        StandardScaler(),
        SVIGaussianMixture(
            n_components=3,
            batch_size=100,
            max_iter=2,
            learning_rate="student-t",
            random_state=0,
        ),
    )
    grid = {
        "svigaussianmixture__L": [1, 5],
        "svigaussianmixture__M": [None, 50],
        "svigaussianmixture__prior_variance": [1.0, 1e3],
    }
    search = GridSearchCV(pipeline, grid, cv=2)
    search.fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 8 and np.all(np.isfinite(scores))
    assert search.best_params_ == search.cv_results_["params"][int(np.argmax(scores))]
    labels = search.best_estimator_.predict(X)
    assert labels.shape == (len(X),)


def test_float32_is_kept(blobs):
    X = blobs[0].astype(np.float32)
    model = SVIGaussianMixture(n_components=3, batch_size=200, random_state=0)
    model.fit(X)
    assert model.means_.dtype == np.float32
    assert model.predict_proba(X).dtype == np.float32


def test_sample_and_warm_start(blobs):
    X, _ = blobs
    model = SVIGaussianMixture(
        n_components=3, batch_size=200, max_iter=1, warm_start=True, random_state=0
    )
    model.fit(X)
    model.fit(X)
    assert model.n_iter_ == 2
    assert model.n_batch_iter_ == 30
    samples, labels = model.sample(500)
    assert samples.shape == (500, 4)
    assert_array_equal(np.bincount(labels, minlength=3).sum(), 500)
    assert_array_equal(model.sample(500)[0], samples)


def bad_fits():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(50, 3))
    with_nan = X.copy()
    with_nan[3, 1] = np.nan
    with_inf = X.copy()
    with_inf[0, 0] = np.inf
    return {
        "nan": (with_nan, "NaN"),
        "inf": (with_inf, "infinity"),
        "wrong n_features": (X[:, :2], "features"),
    }


@pytest.mark.parametrize("case", ["nan", "inf", "wrong n_features"])
def test_bad_input_raises_and_leaves_the_model_unchanged(case):
    X = np.random.RandomState(1).normal(size=(200, 3))
    model = SVIGaussianMixture(n_components=2, batch_size=50, random_state=0)
    model.partial_fit(X)
    before = pickle.dumps(model)
    bad, message = bad_fits()[case]
    with pytest.raises(ValueError, match=message):
        model.partial_fit(bad)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match=message):
        model.predict(bad)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_components": 60}, "n_samples >= n_components"),
        ({"M": 100, "batch_size": 50}, "must not exceed batch_size"),
        ({"degrees_of_freedom_prior": 1.0}, "degrees_of_freedom_prior"),
        ({"covariance_prior": np.eye(2)}, "covariance_prior"),
        ({"mean_prior": np.zeros(4)}, "mean_prior"),
        ({"step_size": "adagrad"}, "'step_size' parameter"),
    ],
)
def test_invalid_settings_raise(params, message):
    X = np.random.RandomState(1).normal(size=(50, 3))
    with pytest.raises(ValueError, match=message):
        SVIGaussianMixture(**params).fit(X)


def test_responsibilities_are_features_in_the_middle_of_a_pipeline(blobs):
    X, y = blobs
    X = X * 10.0 + 5.0
    mixture = SVIGaussianMixture(
        n_components=3, batch_size=100, max_iter=3, random_state=0
    )
    pipeline = make_pipeline(StandardScaler(), mixture, LogisticRegression())
    pipeline.fit(X[:2000], y[:2000])
    # Three well separated clusters: their responsibilities alone classify.
    assert pipeline.score(X[2000:], y[2000:]) > 0.99
    fitted = pipeline.named_steps["svigaussianmixture"]
    scaled = pipeline.named_steps["standardscaler"].transform(X[2000:])
    features = fitted.transform(scaled)
    assert_allclose(features.sum(axis=1), 1.0)
    assert_array_equal(features, fitted.predict_proba(scaled))
    assert_array_equal(
        fitted.get_feature_names_out(),
        ["svigaussianmixture0", "svigaussianmixture1", "svigaussianmixture2"],
    )


def test_fit_transform_and_pandas_output(blobs):
    X, _ = blobs
    model = SVIGaussianMixture(n_components=3, batch_size=100, random_state=0)
    direct = clone(model).fit_transform(X)
    assert_array_equal(direct, clone(model).fit(X).transform(X))
    frame = clone(model).set_output(transform="pandas").fit_transform(X)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [f"svigaussianmixture{k}" for k in range(3)]
    assert_array_equal(frame.to_numpy(), direct)
