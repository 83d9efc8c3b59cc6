"""Saved models: skops, pickle and the version they were saved by."""

import pickle
import signal
import subprocess
import sys
import warnings

import joblib
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


def test_a_killed_fit_continues_from_its_checkpoint(tmp_path):
    """A process killed in the middle of ``fit``: the model saved three
    updates before continues to the end of a fit that never stopped."""
    path = tmp_path / "model.joblib"
    script = (
        "import os, signal\n"
        "from sklearn_svi import Checkpoint, FilteredLDA, make_lda_corpus\n"
        "X = make_lda_corpus(n_documents=300, n_features=60, random_state=0)[0]\n"
        f"save = Checkpoint({str(path)!r}, every=5)\n"
        "def callback(model, progress):\n"
        "    save(model, progress)\n"
        "    if progress.n_batch_iter == 13:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "FilteredLDA(n_components=4, batch_size=50, max_iter=3, random_state=0,\n"
        "            callback=callback).fit(X)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=False
    )
    assert result.returncode == -signal.SIGKILL
    X = sklearn_svi.make_lda_corpus(n_documents=300, n_features=60, random_state=0)[0]
    settings = dict(n_components=4, batch_size=50, max_iter=3, random_state=0)
    uninterrupted = sklearn_svi.FilteredLDA(**settings).fit(X)
    resumed = joblib.load(path)
    assert resumed.n_batch_iter_ == 10
    resumed.set_params(callback=None, warm_start=True).fit(X)
    assert_array_equal(resumed.components_, uninterrupted.components_)
    assert resumed.filter_state_ == uninterrupted.filter_state_
