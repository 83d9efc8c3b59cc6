"""The contract every model of the package keeps, checked for all five.

Each estimator here is fitted through the shared online update; whatever
the model, its plain settings are plain SVI bit for bit, a filter changes
only the step size, a pickled model resumes exactly, the number of threads
changes nothing, a refused update leaves the last completed one, and a Dask
collection gives what the same rows in memory give.
"""

import copy
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.utils import gen_batches

from sklearn_svi import (
    AnnealedLDA,
    Checkpoint,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
    make_lda_corpus,
)
from sklearn_svi._mechanisms import Mechanisms
from sklearn_svi._mechanisms._step_sizes import _Schedule
from sklearn_svi._threads import sum_rows

BATCH = 50
N_SAMPLES = 300


def documents():
    return make_lda_corpus(
        n_documents=N_SAMPLES, n_features=60, n_topics=4, random_state=0
    )[0]


def short_documents():
    # Below 64 tokens: the default local step samples every document.
    return make_lda_corpus(
        n_documents=N_SAMPLES,
        n_features=60,
        n_topics=4,
        mean_document_length=10,
        random_state=0,
    )[0]


def points():
    rng = np.random.RandomState(0)
    centres = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0]])
    return centres[rng.randint(3, size=N_SAMPLES)] + rng.normal(size=(N_SAMPLES, 2))


def ratings():
    rng = np.random.RandomState(0)
    mask = rng.rand(N_SAMPLES, 30) < 0.3
    values = rng.normal(size=(N_SAMPLES, 2)) @ rng.normal(size=(2, 30)) + 3.0
    return sp.csr_matrix(np.where(mask, values, 0.0))


COMMON = dict(batch_size=BATCH, total_samples=5 * N_SAMPLES, random_state=0)
LDA = dict(n_components=4, **COMMON)

# Each estimator with its mechanisms on, and its data.
CASES = {
    "smoothed": (lambda: SmoothedLDA(L=3, **LDA), documents),
    "annealed": (lambda: AnnealedLDA(M=10, **LDA), documents),
    "filtered": (lambda: FilteredLDA(learning_rate="student-t", **LDA), documents),
    "sampled": (lambda: SmoothedLDA(**LDA), short_documents),
    "mixture": (
        lambda: SVIGaussianMixture(
            n_components=3, L=2, M=10, learning_rate="gaussian", **COMMON
        ),
        points,
    ),
    "factorization": (
        lambda: SVIMatrixFactorization(
            n_components=2, L=2, M=10, learning_rate="student-t", **COMMON
        ),
        ratings,
    ),
}


def case(name):
    make_estimator, make_data = CASES[name]
    return make_estimator(), make_data()


def plain_settings(estimator):
    """The estimator's parameters that turn its mechanisms off."""
    params = estimator.get_params()
    settings = {}
    if "L" in params:
        settings["L"] = 1
    if "M" in params:
        settings["M"] = BATCH
    if "M_growth" in params:
        settings["M_growth"] = 0.0
    return settings


def plain_svi_reference(estimator, X):
    """Plain SVI (Hoffman et al. 2013, Fig. 3) written out with the model's
    hooks alone: lambda = (1 - rho_t) lambda + rho_t (eta + N S_t)."""
    model = clone(estimator)
    X = model._check_training_data(X, reset=True)
    model._initialize_online(X, model.total_samples, Mechanisms())
    for step, batch in enumerate(gen_batches(X.shape[0], BATCH), start=1):
        minibatch = model._prepare_minibatch(X[batch])
        statistic = model._local_statistic(minibatch, draw=step)
        total = np.zeros_like(model._natural)
        total[statistic.rows] = statistic.block
        prior = np.broadcast_to(
            np.asarray(model._prior_natural(), dtype=total.dtype).reshape(-1),
            (len(total),),
        )
        rho = (model.learning_offset + step) ** -model.learning_decay
        target = prior[:, np.newaxis] + model.total_samples * total
        model._natural = (1 - rho) * model._natural + rho * target
        model._natural_updated(
            sum_rows(
                lambda span: model._natural[span].sum(axis=0, dtype=np.float64),
                len(model._natural),
            )
        )
        model._after_update(rho, statistic)
    return model._natural


@pytest.mark.parametrize("name", ["smoothed", "annealed", "mixture", "factorization"])
def test_plain_settings_are_plain_svi(name):
    """L = 1 and M = the minibatch size reduce every model's update to plain
    SVI with the Robbins-Monro schedule: bit for bit, or to rounding where
    the update scales the rows that a minibatch does not hold."""
    estimator, X = case(name)
    estimator.set_params(**plain_settings(estimator))
    if "learning_rate" in estimator.get_params():
        estimator.set_params(learning_rate="robbins-monro")
    fitted = clone(estimator).partial_fit(X)
    expected = plain_svi_reference(estimator, X)
    if estimator._scales_rows:
        assert fitted._natural_store.scale < 1.0
        assert_allclose(fitted._natural, expected, rtol=1e-12)
    else:
        assert_array_equal(fitted._natural, expected)


class Replayed(_Schedule):
    """The step sizes of another fit, update by update."""

    def __init__(self, step_sizes):
        self.step_sizes = step_sizes

    def __call__(self, step, target, current, current_scale=1.0):
        return self.step_sizes[step - 1]


@pytest.mark.parametrize("name", ["mixture", "factorization"])
def test_filters_of_other_models_observe_every_column(name):
    # LDA's topics are alike a priori; a factorisation's columns are the
    # moments of its factors, and a mixture's few components all count.
    estimator, X = case(name)
    step_size = estimator.partial_fit(X)._update_state.step_size
    assert step_size.mean_difference.shape == estimator._natural.shape


@pytest.mark.parametrize("name", ["filtered", "mixture", "factorization"])
def test_a_filter_changes_only_the_step_size(name, monkeypatch):
    """Replaying a filter's step sizes as a schedule gives its fit again."""
    estimator, X = case(name)
    estimator.set_params(**plain_settings(estimator))
    filtered = clone(estimator).partial_fit(X)
    step_sizes = filtered.step_size_history_["step_size"]
    assert len(set(step_sizes)) > 1
    monkeypatch.setattr(
        Mechanisms,
        "build_step_size",
        lambda settings, shape, dtype, **_: Replayed(step_sizes),
    )
    replayed = clone(estimator).partial_fit(X)
    assert_array_equal(replayed._natural, filtered._natural)


@pytest.mark.parametrize("name", CASES)
def test_a_pickled_model_resumes_exactly(name):
    estimator, X = case(name)
    first, rest = X[: 2 * BATCH], X[2 * BATCH :]
    uninterrupted = clone(estimator).partial_fit(first).partial_fit(rest)
    resumed = pickle.loads(pickle.dumps(clone(estimator).partial_fit(first)))
    resumed.partial_fit(rest)
    assert_array_equal(resumed._natural, uninterrupted._natural)
    assert resumed.step_size_history_ == uninterrupted.step_size_history_


class Stop(Exception):
    """Ends a fit from its callback, as a failure would."""


class StopAfter:
    """A callback that saves by ``checkpoint`` and raises after ``update``."""

    def __init__(self, update, checkpoint=None):
        self.update = update
        self.checkpoint = checkpoint

    def __call__(self, estimator, progress):
        if self.checkpoint is not None:
            self.checkpoint(estimator, progress)
        if progress.n_batch_iter == self.update:
            raise Stop


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("stop_at", [8, 12])
def test_a_fit_continues_from_its_checkpoint_exactly(name, stop_at, tmp_path):
    """Stopped after update 8 (inside the second pass of six updates) or 12
    (its last), saved every 4 updates: loaded and continued with warm_start,
    the fit ends as one that never stopped, in every attribute."""
    estimator, X = case(name)
    estimator.set_params(max_iter=3)
    uninterrupted = clone(estimator).fit(X)
    path = tmp_path / "model.joblib"
    save = Checkpoint(path, every=4)
    with pytest.raises(Stop):
        clone(estimator).set_params(callback=StopAfter(stop_at, save)).fit(X)
    resumed = joblib.load(path)
    assert resumed.n_batch_iter_ == stop_at
    resumed.set_params(warm_start=True, callback=None).fit(X)
    assert resumed.n_batch_iter_ == uninterrupted.n_batch_iter_ == 18
    assert resumed.n_iter_ == uninterrupted.n_iter_ == 3
    assert_array_equal(resumed._natural, uninterrupted._natural)
    assert resumed.step_size_history_ == uninterrupted.step_size_history_
    # The fit ended: a warm fit now makes max_iter more passes.
    resumed.fit(X)
    assert resumed.n_iter_ == 6


@pytest.mark.parametrize("name", CASES)
def test_a_stopped_fit_refuses_other_data_and_stays_as_it_was(name):
    estimator, X = case(name)
    model = clone(estimator).set_params(callback=StopAfter(3))
    with pytest.raises(Stop):
        model.fit(X)
    before = model._natural.copy()
    with pytest.raises(ValueError, match="stopped in pass 1 over 300 samples; X has"):
        model.set_params(warm_start=True, callback=None).fit(X[:-BATCH])
    assert_array_equal(model._natural, before)
    assert model.n_batch_iter_ == 3


@pytest.mark.parametrize("all_shared", [False, True])
@pytest.mark.parametrize("name", CASES)
def test_the_number_of_threads_changes_nothing(name, all_shared, request):
    """At the real thresholds of shared work, and with all of it shared."""
    if all_shared:
        request.getfixturevalue("all_work_shared")
    estimator, X = case(name)
    alone = clone(estimator).set_params(n_jobs=1).fit(X)
    threaded = clone(estimator).set_params(n_jobs=2).fit(X)
    assert_array_equal(threaded._natural, alone._natural)


@pytest.mark.parametrize("estimator", [SmoothedLDA, AnnealedLDA, FilteredLDA])
def test_the_number_of_threads_changes_no_lda_default(estimator, all_work_shared):
    """Every LDA default, its documents and rows shared by the threads."""
    X = documents()
    alone = estimator(n_jobs=1, **LDA).fit(X)
    threaded = estimator(n_jobs=2, **LDA).fit(X)
    assert_array_equal(threaded._natural, alone._natural)


@pytest.mark.parametrize("name", CASES)
def test_a_refused_update_leaves_the_last_completed_one(name, monkeypatch):
    """An update that fails is undone: the model is as after the update
    before it, and goes on exactly like a model that never failed."""
    estimator, X = case(name)
    uninterrupted = clone(estimator).partial_fit(X)
    model = clone(estimator)
    local_statistic = type(model)._local_statistic
    calls = []

    def failing_at_the_second_update(self, *args, **kwargs):
        calls.append(None)
        if len(calls) == 2 + self._update_state.step_size.monte_carlo_batches:
            raise FloatingPointError("planted failure")
        return local_statistic(self, *args, **kwargs)

    monkeypatch.setattr(type(model), "_local_statistic", failing_at_the_second_update)
    with pytest.raises(ValueError, match="was undone; the model is as after update 1"):
        model.partial_fit(X)
    monkeypatch.undo()
    assert model.n_batch_iter_ == 1
    assert len(model.step_size_history_["step_size"]) == 1
    model.partial_fit(X[BATCH:])
    assert_array_equal(model._natural, uninterrupted._natural)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.mark.parametrize("name", CASES)
def test_a_dask_array_gives_what_the_rows_in_memory_give(name, client):
    """The update continued on a Dask array equals the update in memory up
    to the order of the parts' sums, and the fitted model's row-wise
    methods give the same rows."""
    da = pytest.importorskip("dask.array")
    estimator, X = case(name)
    started = clone(estimator).partial_fit(X[:BATCH])
    blocks = da.from_array(X, chunks=(120, X.shape[1]), asarray=False)
    in_memory = copy.deepcopy(started).partial_fit(X)
    on_cluster = copy.deepcopy(started).partial_fit(blocks)
    assert on_cluster.n_batch_iter_ == in_memory.n_batch_iter_
    assert_allclose(on_cluster._natural, in_memory._natural, rtol=1e-9)
    assert_allclose(
        in_memory.transform(blocks).compute(), in_memory.transform(X), rtol=1e-12
    )
    # The factorization's score splits each block's ratings where it is.
    summed = (
        type(in_memory).lower_bound
        if name == "factorization"
        else type(in_memory).score
    )
    assert_allclose(summed(in_memory, blocks), summed(in_memory, X), rtol=1e-12)
