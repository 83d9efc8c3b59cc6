"""Saved models: skops, pickle and the version they were saved by."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import sklearn_svi
from sklearn_svi.exceptions import InconsistentVersionWarning

from test_contract import CASES, case

sio = pytest.importorskip("skops.io")


@pytest.mark.parametrize("name", CASES)
def test_skops_round_trip_trusts_only_package_types_and_resumes_exactly(name):
    estimator, X = case(name)
    first, rest = X[:100], X[100:]
    uninterrupted = estimator.__class__(**estimator.get_params())
    uninterrupted.partial_fit(first).partial_fit(rest)
    mid_stream = estimator.partial_fit(first)
    saved = sio.dumps(mid_stream)
    untrusted = sio.get_untrusted_types(data=saved)
    assert untrusted
    assert all(name.startswith("sklearn_svi.") for name in untrusted), untrusted
    loaded = sio.loads(saved, trusted=untrusted)
    loaded.partial_fit(rest)
    assert_array_equal(loaded._natural, uninterrupted._natural)
    assert loaded.step_size_history_ == uninterrupted.step_size_history_


def test_a_model_saved_by_another_version_warns():
    estimator, X = case("smoothed")
    state = estimator.partial_fit(X).__getstate__()
    assert state["_sklearn_svi_version"] == sklearn_svi.__version__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pickle.loads(pickle.dumps(estimator))
    state["_sklearn_svi_version"] = "0.0.1"
    restored = estimator.__class__.__new__(estimator.__class__)
    with pytest.warns(InconsistentVersionWarning, match="saved by sklearn-svi 0.0.1"):
        restored.__setstate__(state)
    assert_array_equal(restored._natural, estimator._natural)
    del state["_sklearn_svi_version"]
    with pytest.warns(InconsistentVersionWarning, match="saved by sklearn-svi unknown"):
        estimator.__class__.__new__(estimator.__class__).__setstate__(state)


def test_saving_does_not_change_the_model():
    estimator, X = case("mixture")
    estimator.partial_fit(X)
    before = set(vars(estimator))
    pickle.dumps(estimator)
    assert set(vars(estimator)) == before
    assert not np.isnan(estimator.weights_).any()
