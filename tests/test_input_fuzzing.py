"""Any input to any public method gives a valid result or a clean error.

Generated inputs vary the container (dense, CSR, CSC, COO, DataFrame), the
type (int, float32, float64), the shape (empty, one row, one column, a wrong
number of features) and the values (zero rows, huge counts, negatives, NaN,
inf, far-out rows). Each call either returns a finite, valid result or
raises ValueError or TypeError; a method that only reads the model leaves it
unchanged, and a refused update leaves it as it was.
"""

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_transactions import model_state

from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
    make_lda_corpus,
)

N_FEATURES = 6
# Larger than any generated input: partial_fit makes a single update.
BATCH_SIZE = 16

ESTIMATORS = {
    "SmoothedLDA": lambda: SmoothedLDA(n_components=3, L=2),
    "AnnealedLDA": lambda: AnnealedLDA(n_components=3, M=4, M_growth=1.0),
    "FilteredLDA": lambda: FilteredLDA(n_components=3, learning_rate="student-t"),
    "SVIGaussianMixture": lambda: SVIGaussianMixture(n_components=2, max_iter=2),
    "SVIMatrixFactorization": lambda: SVIMatrixFactorization(
        n_components=2, M=4, L=2, learning_rate="gaussian", prior_variance=1.0
    ),
}

# Values of LDA counts and of mixture features, ordinary and extreme.
COUNTS = [0, 1, 2, 7, 2**24 + 1, 1e10, 1e30, 1e300, -1, np.nan, np.inf]
FEATURES = [0.0, -1.5, 2.0, 3.5, 1e5, 1e10, 1e30, 1e200, -1e200, np.nan, -np.inf]
RATINGS = [1.0, 3.0, 4.5, 5.0, 0.0, -2.0, 1e10, 1e160, -1e200, np.nan, np.inf]

CONTAINERS = {
    "dense": np.asarray,
    "csr": sp.csr_matrix,
    "csc": sp.csc_matrix,
    "coo": sp.coo_matrix,
    "dataframe": lambda X: pd.DataFrame(
        X, columns=[f"x{j}" for j in range(X.shape[1])]
    ),
}


def fitted(name):
    """The estimator fitted on clean data of N_FEATURES features."""
    estimator = ESTIMATORS[name]().set_params(
        batch_size=BATCH_SIZE, total_samples=1000, random_state=0
    )
    if name == "SVIGaussianMixture":
        X = np.random.RandomState(0).normal(size=(60, N_FEATURES))
    elif name == "SVIMatrixFactorization":
        rng = np.random.RandomState(0)
        X = sp.random(60, N_FEATURES, density=0.5, random_state=rng, format="csr")
        X.data = rng.randint(1, 6, size=X.nnz).astype(float)
    else:
        X = make_lda_corpus(
            n_documents=60, n_features=N_FEATURES, n_topics=3, random_state=0
        )[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X)


FITTED = {name: fitted(name) for name in ESTIMATORS}


def holds(dtype, values):
    """Whether ``dtype`` holds each of ``values`` (to within rounding)."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        if dtype == "int64":
            return np.isfinite(values) & (np.abs(values) < 2**62)
        if dtype == "float32":
            return ~np.isfinite(values) | (np.abs(values) < np.finfo(np.float32).max)
    return np.ones(values.shape, dtype=bool)


@st.composite
def inputs(draw, values):
    """An input as a user might pass it, with its values drawn from ``values``.

    Ordinary values fill it; a row may be all zeros; then one cell gets a
    value drawn from all of ``values`` and up to two more cells others. The
    type is one that holds that first value.
    """
    n_rows = draw(st.sampled_from([0, 1, 2, 5, 9]))
    n_columns = draw(st.sampled_from([N_FEATURES] * 6 + [1, N_FEATURES + 2]))
    ordinary = values[:4]
    cells = draw(
        st.lists(
            st.sampled_from(ordinary),
            min_size=n_rows * n_columns,
            max_size=n_rows * n_columns,
        )
    )
    X = np.array(cells, dtype=np.float64).reshape(n_rows, n_columns)
    if n_rows and draw(st.booleans()):
        X[draw(st.integers(0, n_rows - 1))] = 0
    special = draw(st.sampled_from(values))
    for value in [special] + draw(st.lists(st.sampled_from(values), max_size=2)):
        if X.size:
            row = draw(st.integers(0, n_rows - 1))
            column = draw(st.integers(0, n_columns - 1))
            X[row, column] = value
    dtype = draw(
        st.sampled_from(
            [
                dtype
                for dtype in ("int64", "float32", "float64")
                if holds(dtype, special)
            ]
        )
    )
    with np.errstate(all="ignore"):
        if dtype == "int64":
            X = np.where(holds("int64", X), X, 0)
        X = X.astype(dtype)
    return draw(st.sampled_from(list(CONTAINERS.values())))(X)


def check_valid(name, method, X, result, model):
    """The result of a call that did not raise is finite and valid."""
    n_rows = X.shape[0]
    if method in ("fit", "partial_fit"):
        assert result is model
        assert np.isfinite(model._natural).all()
        return
    if method == "sample":
        samples, labels = result
        assert np.isfinite(samples).all() and samples.shape[1] == N_FEATURES
        return
    result = np.asarray(result)
    assert np.isfinite(result).all(), (method, result)
    if name == "SVIMatrixFactorization":
        if method in ("transform", "fit_transform"):
            assert result.shape == (n_rows, 2)
        elif method == "predict_ratings":
            assert result.shape == (n_rows, N_FEATURES)
        elif method == "score":
            assert result <= 0
        return
    if method in ("transform", "fit_transform") and name != "SVIGaussianMixture":
        assert result.shape == (n_rows, 3)
        assert (result >= 0).all()
        np.testing.assert_allclose(result.sum(axis=1), 1.0, rtol=1e-5)
    elif method == "predict_proba":
        np.testing.assert_allclose(result.sum(axis=1), 1.0, rtol=1e-5)
    elif method in ("predict", "fit_predict"):
        assert set(result.tolist()) <= {0, 1}
    elif method == "perplexity":
        assert result >= 1.0
    elif method == "score" and name != "SVIGaussianMixture":
        # The ELBO bounds the log-probability of counts, which is at most 0.
        assert result <= 1e-6 * max(1.0, abs(float(result)))


FAMILIES = {
    "SVIGaussianMixture": "mixture",
    "SVIMatrixFactorization": "factorization",
}
READ_ONLY = {
    "lda": ["transform", "score", "perplexity"],
    "mixture": ["transform", "score", "score_samples", "predict", "predict_proba"],
    "factorization": ["transform", "score", "predict_ratings", "lower_bound"],
}
UPDATES = {
    "lda": ["partial_fit", "fit", "fit_transform"],
    "mixture": ["partial_fit", "fit", "fit_predict"],
    "factorization": ["partial_fit", "fit", "fit_transform"],
}
VALUES = {"lda": COUNTS, "mixture": FEATURES, "factorization": RATINGS}


def cases():
    for name in ESTIMATORS:
        family = FAMILIES.get(name, "lda")
        for method in READ_ONLY[family] + UPDATES[family]:
            yield name, method


@pytest.mark.parametrize("name, method", list(cases()))
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_input_gives_a_valid_result_or_a_clean_error(name, method, data):
    family = FAMILIES.get(name, "lda")
    X = data.draw(inputs(VALUES[family]))
    model = copy.deepcopy(FITTED[name])
    before = model_state(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = getattr(model, method)(X)
        except (ValueError, TypeError):
            if method == "partial_fit" or method not in UPDATES[family]:
                # Read-only methods, and a refused single update.
                assert model_state(model) == before
            else:
                # A refit that failed part-way is still a usable model.
                assert np.isfinite(model._natural).all()
            return
    event("accepted")
    check_valid(name, method, X, result, model)
    if method not in UPDATES[family]:
        assert model_state(model) == before


@pytest.mark.parametrize("n_samples", [-1, 0, 1.5, "3"])
def test_sample_takes_only_a_positive_number_of_samples(n_samples):
    model = copy.deepcopy(FITTED["SVIGaussianMixture"])
    before = model_state(model)
    with pytest.raises((ValueError, TypeError)):
        model.sample(n_samples)
    assert model_state(model) == before
