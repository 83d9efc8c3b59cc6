"""Every update is all-or-nothing: interrupted anywhere, the model is as after
its last completed minibatch and continues exactly like an uninterrupted run."""

import copy
import itertools
import signal
import time

import numpy as np
import pytest
import scipy.sparse as sp
from _interrupts import InjectedInterrupt, interrupted_at, interrupted_by_a_signal
from numpy.testing import assert_array_equal

from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
    _store,
    make_lda_corpus,
)
from sklearn_svi._mechanisms import (
    AnnealingWeights,
    FilteredStepSize,
    RobbinsMonroStepSize,
    SmoothingWindow,
    _smoothing,
)
from sklearn_svi._sources import InMemoryRows
from sklearn_svi._store import StoredRows
from sklearn_svi._threads import thread_pool
from sklearn_svi._transaction import interrupts_deferred
from sklearn_svi._update_state import UpdateState

BATCH = 40
LDA = dict(n_components=4, batch_size=BATCH, total_samples=2000, random_state=0)
MIXTURE = dict(
    n_components=3, batch_size=BATCH, total_samples=2000, random_state=0, max_iter=1
)

FACTORIZATION = dict(batch_size=BATCH, total_samples=2000, random_state=0)
ESTIMATORS = {
    "smoothed": lambda: SmoothedLDA(L=3, evaluate_every=1, **LDA),
    "annealed": lambda: AnnealedLDA(M=10, doc_topic_prior="auto", **LDA),
    "filtered": lambda: FilteredLDA(
        learning_rate="student-t", prior_variance=1.0, topic_word_prior="auto", **LDA
    ),
    "mixture": lambda: SVIGaussianMixture(
        L=2, M=10, learning_rate="gaussian", prior_variance=1.0, **MIXTURE
    ),
    "factorization": lambda: SVIMatrixFactorization(
        n_components=2,
        L=2,
        M=10,
        learning_rate="student-t",
        prior_variance=1.0,
        evaluate_every=2,
        **FACTORIZATION,
    ),
}


# Every estimator with its mechanisms' defaults, as a user makes it.
DEFAULTS = {
    "SmoothedLDA": lambda: SmoothedLDA(**LDA),
    "SmoothedLDA-n_jobs=2": lambda: SmoothedLDA(n_jobs=2, **LDA),
    "AnnealedLDA": lambda: AnnealedLDA(**LDA),
    "FilteredLDA": lambda: FilteredLDA(**LDA),
    "SVIGaussianMixture": lambda: SVIGaussianMixture(**MIXTURE),
    "SVIMatrixFactorization": lambda: SVIMatrixFactorization(
        n_components=2, **FACTORIZATION
    ),
}


def default_data_for(name):
    """Data for the default estimator ``name``: documents of a vocabulary
    large enough that a minibatch lists few of its words, so that plain SVI
    keeps lambda scaled and writes only the minibatch's rows; for the
    mixture and the factorization, whose updates take a fraction of an LDA
    update's time, enough samples that a fit lasts long next to the delay
    of a signal."""
    if name.startswith("SVIMatrix"):
        return data_for("factorization", n_samples=1200)
    if name.startswith("SVIGaussian"):
        return data_for("mixture", n_samples=1200)
    return make_lda_corpus(
        n_documents=400, n_features=3000, n_topics=4, random_state=0
    )[0]


class Interrupted(KeyboardInterrupt):
    """The interrupt the tests raise, told apart from a real Ctrl-C."""


def data_for(name, n_samples=200):
    if name == "factorization":
        rng = np.random.RandomState(0)
        mask = rng.rand(n_samples, 30) < 0.3
        values = rng.normal(size=(n_samples, 2)) @ rng.normal(size=(2, 30)) + 3.0
        return sp.csr_matrix(np.where(mask, values, 0.0))
    if name == "mixture":
        rng = np.random.RandomState(0)
        centres = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0]])
        return centres[rng.randint(3, size=n_samples)] + rng.normal(size=(n_samples, 2))
    return make_lda_corpus(n_documents=200, n_features=60, n_topics=4, random_state=0)[
        0
    ]


def snapshot(value):
    """A value that compares equal exactly when the states are the same."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.random.RandomState):
        kind, keys, position, has_gauss, gauss = value.get_state()
        return ("rng", kind, keys.tobytes(), position, has_gauss, gauss)
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [snapshot(item) for item in value]
    if hasattr(value, "queue") and hasattr(value, "length"):
        return snapshot({**vars(value), "queue": list(value.queue)})
    if hasattr(value, "__dict__") and type(value).__module__.startswith("sklearn_svi"):
        # What a saved copy holds: spare arrays and a transaction's records
        # hold no information.
        state = value.__getstate__()
        return (type(value).__name__, snapshot(state if state else vars(value)))
    if callable(value) or value is None or np.isscalar(value):
        return value
    return (type(value).__name__, repr(value))


def model_state(estimator):
    """Everything the estimator holds, its spare arrays excepted."""
    return snapshot(vars(estimator))


def interrupt_at(monkeypatch, owner, name, call_number, after):
    """Make ``owner.name`` raise on its ``call_number``-th call.

    With ``after`` the call does its work first, so that what it changed
    must be undone.
    """
    original = getattr(owner, name)
    calls = []
    # next() on a count is atomic: each call gets its own number on any thread.
    numbers = itertools.count(1)

    def wrapper(*args, **kwargs):
        number = next(numbers)
        calls.append(number)
        if number == call_number and not after:
            raise Interrupted
        result = original(*args, **kwargs)
        if number == call_number:
            raise Interrupted
        return result

    monkeypatch.setattr(owner, name, wrapper)
    return calls


# Each stage of an update: (owner of the function, its name). Methods of the
# estimators are looked up on their class at run time.
STAGES = [
    ("estimator", "_local_statistic"),
    (AnnealingWeights, "__call__"),
    (SmoothingWindow, "push"),
    (_smoothing, "replace_rows"),
    (FilteredStepSize, "__call__"),
    (FilteredStepSize, "_observe"),
    (RobbinsMonroStepSize, "__call__"),
    (_store, "step_toward_target"),
    ("estimator", "_natural_updated"),
    (StoredRows, "project"),
    ("estimator", "_after_update"),
    (UpdateState, "record_step_size"),
    (UpdateState, "record_evaluation"),
    ("estimator", "_evaluation_score"),
    ("estimator", "_after_pass"),
]


def completed_after(fitted, X, n_minibatches):
    """A copy of ``fitted`` after the updates of the first ``n_minibatches``
    of X, without the end of a pass."""
    reference = copy.deepcopy(fitted)
    X = reference._check_training_data(X, reset=False).astype(reference._natural.dtype)
    data = InMemoryRows(reference, X)
    with thread_pool(reference.n_jobs):
        for start in range(0, n_minibatches * BATCH, BATCH):
            minibatch = data.minibatch(np.arange(start, start + BATCH)).result()
            with reference._transaction():
                reference._online_step(data, minibatch, reference.total_samples, None)
    return reference


def interrupted_fit(monkeypatch, fitted, X, owner, function, call_number, after):
    """A copy of ``fitted`` given ``partial_fit(X)`` with ``owner.function``
    interrupted on its ``call_number``-th call; None if it was not called
    that often."""
    model = copy.deepcopy(fitted)
    owner = type(fitted) if owner == "estimator" else owner
    with monkeypatch.context() as patch:
        calls = interrupt_at(patch, owner, function, call_number, after)
        try:
            model.partial_fit(X)
        except Interrupted:
            return model
    assert len(calls) < call_number
    return None


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_an_interrupt_at_any_stage_leaves_the_last_completed_update(
    monkeypatch, name, n_jobs
):
    X = data_for(name)
    first, second = X[:80], X[80:200]
    fitted = ESTIMATORS[name]().set_params(n_jobs=n_jobs).partial_fit(first)
    states = [model_state(completed_after(fitted, second, n)) for n in range(4)]
    uninterrupted = model_state(copy.deepcopy(fitted).partial_fit(second))
    n_interrupted = 0
    for owner, function in STAGES:
        for call_number in (1, 2, 3):
            for after in (False, True):
                model = interrupted_fit(
                    monkeypatch, fitted, second, owner, function, call_number, after
                )
                if model is None:
                    continue
                n_interrupted += 1
                completed = model.n_batch_iter_ - fitted.n_batch_iter_
                where = (function, call_number, after)
                assert model_state(model) == states[completed], where
                if completed < 3:
                    # The rest of the data continues the run as if nothing
                    # had happened.
                    model.partial_fit(second[completed * BATCH :])
                    assert model_state(model) == uninterrupted, where
    assert n_interrupted >= 30


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize(
    "estimator, settings, owner, function",
    [
        # Every default, by the write of lambda its update makes (plain SVI
        # and the filtered step add to the minibatch's rows; the annealed
        # step's weights move every row), and the window's.
        (SmoothedLDA, {}, _store, "add_to_rows"),
        (FilteredLDA, {}, _store, "add_to_rows"),
        (AnnealedLDA, {}, _store, "step_toward_target"),
        (SmoothedLDA, {"L": 2}, _store, "step_toward_target"),
        (SmoothedLDA, {"L": 2}, _smoothing, "replace_rows"),
    ],
    ids=["SmoothedLDA", "FilteredLDA", "AnnealedLDA", "L=2-lambda", "L=2-window"],
)
def test_an_interrupt_around_a_shared_write_of_the_update_is_undone(
    monkeypatch, all_work_shared, n_jobs, estimator, settings, owner, function
):
    # Each compiled write of lambda or of the window's running sum is one
    # call that shares its blocks of rows with a team of threads, with
    # nothing between the blocks that a Ctrl-C could interrupt: an
    # interrupt lands before or after the call. 10,000 words make the
    # blocks many, as a large model's would.
    X = make_lda_corpus(n_documents=120, n_features=10_000, n_topics=2, random_state=0)[
        0
    ]
    fitted = estimator(n_jobs=n_jobs, **settings, **{**LDA, "n_components": 2})
    fitted.partial_fit(X[:80])
    state = model_state(fitted)
    uninterrupted = copy.deepcopy(fitted).partial_fit(X[80:])
    n_interrupted_after = 0
    for call_number in (1, 2):
        for after in (False, True):
            model = interrupted_fit(
                monkeypatch, fitted, X[80:], owner, function, call_number, after
            )
            if model is None:
                continue
            n_interrupted_after += after
            assert model_state(model) == state, (call_number, after)
            model.partial_fit(X[80:])
            assert model_state(model) == model_state(uninterrupted)
    # The update of X[80:] is one minibatch: one call.
    assert n_interrupted_after == 1


def test_ctrl_c_during_the_rollback_is_delivered_after_it(python_sigint_handler):
    received = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            received.append("the body ran to its end")
    assert received == ["the body ran to its end"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_random_state_is_recorded_when_it_is_first_drawn_from():
    """A rolled-back update puts back what it drew; one that drew nothing
    leaves the random state as it is without having recorded it."""
    source = np.random.RandomState(0)
    state = UpdateState(
        window=None, step_size=None, annealing=None, random_source=source
    )
    expected = np.random.RandomState(0).randint(1000, size=5)
    state.begin()
    assert state._saved[1] is None
    state.rollback()
    state.begin()
    drawn = state.random_state.randint(1000, size=5)
    state.random_state.randint(1000, size=5)
    state.rollback()
    assert_array_equal(drawn, expected)
    assert_array_equal(state.random_state.randint(1000, size=5), expected)
    assert state.random_state is source


def resumed_after_interrupt(fitted, rest, model, uninterrupted):
    """Whether ``model``, a copy of ``fitted`` whose ``partial_fit(rest)``
    was interrupted, is as after its last whole update and, given the rest
    of ``rest``, ends as ``uninterrupted``; None when the fit ended first."""
    completed = model.n_batch_iter_ - fitted.n_batch_iter_
    if completed * BATCH >= rest.shape[0]:
        return None
    assert model_state(model) == model_state(completed_after(fitted, rest, completed))
    model.partial_fit(rest[completed * BATCH :])
    assert model_state(model) == uninterrupted
    return True


@pytest.mark.parametrize("name", [*DEFAULTS, "SmoothedLDA(L=4)"])
def test_a_real_ctrl_c_at_a_random_moment_is_survived(name, python_sigint_handler):
    if name in DEFAULTS:
        X, fitted = default_data_for(name), DEFAULTS[name]()
    else:
        X, fitted = default_data_for("SmoothedLDA"), SmoothedLDA(L=4, **LDA)
    fitted.partial_fit(X[:80])
    rest = X[80:]
    uninterrupted = model_state(copy.deepcopy(fitted).partial_fit(rest))
    start = time.perf_counter()
    copy.deepcopy(fitted).partial_fit(rest)
    duration = time.perf_counter() - start
    rng = np.random.RandomState(0)
    n_resumed = 0
    # On a busy machine many signals come after the fit: draw moments until
    # ten interrupted fits have been resumed.
    for delay in rng.uniform(0.05, 0.95, size=200) * duration:
        if n_resumed == 10:
            break
        model = copy.deepcopy(fitted)
        interrupted_by_a_signal(delay, model.partial_fit, rest)
        n_resumed += bool(resumed_after_interrupt(fitted, rest, model, uninterrupted))
    assert n_resumed >= 10


# Documents' mean length and topics of the short-document cases below. Below
# 64 tokens the default local step samples every document; with three
# tokens and 80 topics most documents also keep their responsibilities on
# the topics they hold (the sparse layout).
SHORT_DOCUMENTS = {
    "SmoothedLDA-short-documents": (10, LDA["n_components"]),
    "SmoothedLDA-sparse-documents": (3, 80),
}

# Interrupts placed over the updates of the test below, evenly: a moment
# at which an in-place write and its record were apart once spanned about a
# hundred bytecodes out of some ten thousand per update.
N_INTERRUPTS = 500


@pytest.mark.parametrize(
    "name",
    [
        *DEFAULTS,
        "SmoothedLDA-every-row",
        *SHORT_DOCUMENTS,
    ],
)
def test_an_interrupt_at_any_bytecode_of_an_update_is_survived(
    name, python_sigint_handler
):
    # A signal is handled between two bytecodes of the main thread; a
    # random delay mostly lands in the local step's compiled loop, after
    # which the handler runs at one and the same bytecode. Here interrupts
    # are placed every few bytecodes over three whole updates instead.
    if name == "SmoothedLDA-every-row":
        # Every minibatch lists every word: lambda is never kept scaled.
        X, fitted = data_for("smoothed"), SmoothedLDA(**LDA)
    elif name in SHORT_DOCUMENTS:
        length, n_components = SHORT_DOCUMENTS[name]
        X = make_lda_corpus(
            n_documents=400,
            n_features=3000,
            n_topics=4,
            mean_document_length=length,
            random_state=0,
        )[0]
        fitted = SmoothedLDA(**{**LDA, "n_components": n_components})
    else:
        X, fitted = default_data_for(name), DEFAULTS[name]()
    fitted.partial_fit(X[:80])
    rest = X[80 : 80 + 3 * BATCH]
    uninterrupted = copy.deepcopy(fitted)
    with interrupted_at(float("inf")) as counter:
        uninterrupted.partial_fit(rest)
    uninterrupted = model_state(uninterrupted)
    stride = max(counter.count // N_INTERRUPTS, 1)
    n_interrupted = n_resumed = 0
    for moment in range(1, counter.count, stride):
        model = copy.deepcopy(fitted)
        try:
            with interrupted_at(moment):
                model.partial_fit(rest)
        except InjectedInterrupt:
            n_interrupted += 1
        if model_state(model) == uninterrupted:
            continue
        n_resumed += bool(resumed_after_interrupt(fitted, rest, model, uninterrupted))
    assert n_interrupted > 0.9 * N_INTERRUPTS
    assert n_resumed > 0.5 * n_interrupted


def test_a_far_out_sample_is_refused_and_named_and_the_mixture_stays_usable():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(30 * 64, 3))
    mixture = SVIGaussianMixture(
        n_components=3, batch_size=64, random_state=0, max_iter=1
    ).partial_fit(X)
    before = model_state(mixture)
    far_out = rng.normal(size=(64, 3))
    far_out[17] = 1e10
    # scikit-learn's BayesianGaussianMixture refuses such data as well.
    with pytest.raises(ValueError, match=r"undone.*row in X: 17\b"):
        mixture.partial_fit(far_out)
    assert model_state(mixture) == before
    clean = copy.deepcopy(mixture).partial_fit(X[:64])
    mixture.partial_fit(X[:64])
    assert model_state(mixture) == model_state(clean)


@pytest.mark.parametrize("dtype, limit", [(np.float32, 2**24), (np.float64, 2**53)])
def test_counts_beyond_what_the_type_holds_exactly_are_refused(dtype, limit):
    X = make_lda_corpus(n_documents=100, n_features=50, random_state=0)[0]
    X = X.toarray().astype(dtype)
    model = SmoothedLDA(**LDA).partial_fit(X)
    before = model_state(model)
    at_limit = X.copy()
    at_limit[3, 5] = limit
    assert model.score(at_limit) < 0
    too_large = X.copy()
    too_large[3, 5] = limit * 2
    too_large[7, 1] = limit * 2
    for method in (model.partial_fit, model.transform, model.score, model.perplexity):
        with pytest.raises(ValueError, match=r"counts above .* rows 3, 7\."):
            method(too_large)
    assert model_state(model) == before


def test_an_update_that_would_overflow_is_refused_and_undone():
    X = make_lda_corpus(n_documents=100, n_features=50, random_state=0)[0]
    model = SmoothedLDA(**{**LDA, "total_samples": 1e37}).partial_fit(
        X[:40].astype(np.float32)
    )
    before = model_state(model)
    heavy = X[40:80].astype(np.float32) * 1000
    with pytest.raises(ValueError, match="non-finite in float32.*row in X: "):
        model.partial_fit(heavy)
    assert model_state(model) == before
    assert np.isfinite(model.components_).all()
