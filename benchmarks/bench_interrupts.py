"""Real Ctrl-C at random moments of ``partial_fit``: is any model torn?

Each estimator, with its mechanisms' defaults, is given a stream of
minibatches by one ``partial_fit`` call while a timer thread sends the
process SIGINT at a random moment of the call. The interrupted model must be
exactly (every attribute and the whole update state, bit for bit) the model
after one of the whole minibatches, and, given the rest of the stream, must
end exactly as the uninterrupted fit. A model that is neither is *torn*; one
whose continuation differs did not *resume*.

The LDA estimators read the first 2,100 NewsArticles documents (K = 20,
minibatches of 100); the mixture three Gaussian blobs, the factorization a
random sparse rating matrix. The default SmoothedLDA is also fitted on a
Dask array on a local cluster of two workers with lambda held by the workers
(``"sklearn-svi.partition-model"``): there the continued fit's row blocks
group the parts' sums otherwise, so it must match to rounding (rtol 1e-9).
It prints, per estimator, the interrupted fits, the torn models and the
continuations that differed.

Run ``python benchmarks/bench_interrupts.py [--fits 100]``.
"""

import contextlib
import copy
import hashlib
import pickle
import signal
import threading
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
)

from _common import argument_parser
from corpus import load_counts
from tables import report, simple_table

RESULTS_DIRECTORY = Path(__file__).resolve().parent / "results"
BATCH = 100
COMMON = dict(batch_size=BATCH, random_state=0)
ESTIMATORS = {
    "SmoothedLDA()": lambda: SmoothedLDA(n_components=20, **COMMON),
    "SmoothedLDA(n_jobs=2)": lambda: SmoothedLDA(n_components=20, n_jobs=2, **COMMON),
    "AnnealedLDA()": lambda: AnnealedLDA(n_components=20, **COMMON),
    "FilteredLDA()": lambda: FilteredLDA(n_components=20, **COMMON),
    "SVIGaussianMixture()": lambda: SVIGaussianMixture(n_components=3, **COMMON),
    "SVIMatrixFactorization()": lambda: SVIMatrixFactorization(
        n_components=5, **COMMON
    ),
}
# SmoothedLDA() fitted on a Dask array, lambda held by the workers.
ON_WORKERS = "SmoothedLDA(), lambda on the workers"
ESTIMATORS[ON_WORKERS] = ESTIMATORS["SmoothedLDA()"]


@contextlib.contextmanager
def on_a_local_cluster():
    """A local Dask cluster of two one-thread workers, for the fits whose
    workers hold lambda, and Python's own Ctrl-C handler in this process."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster:
        with Client(cluster):
            signal.signal(signal.SIGINT, signal.default_int_handler)
            yield


def fingerprint(value, digest=None):
    """A digest of a model's whole state that two states share exactly when
    they hold the same values (a dictionary's order aside)."""
    digest = hashlib.sha256() if digest is None else digest
    if isinstance(value, np.ndarray):
        digest.update(f"array{value.dtype.str}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, np.random.RandomState):
        fingerprint(list(value.get_state()), digest)
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            digest.update(repr(key).encode())
            fingerprint(value[key], digest)
    elif isinstance(value, (list, tuple)):
        digest.update(f"sequence{len(value)}".encode())
        for item in value:
            fingerprint(item, digest)
    elif type(value).__module__.startswith("sklearn_svi"):
        digest.update(type(value).__name__.encode())
        state = value.__getstate__() if hasattr(value, "__getstate__") else None
        fingerprint(state if isinstance(state, dict) else vars(value), digest)
    else:
        digest.update(pickle.dumps(value))
    return digest


def state_of(model, name):
    """The fingerprint of ``model``'s whole state, its callback aside.

    With lambda on the workers, the fit's own state is on them while it
    runs: there the fingerprint of what the model shows instead, lambda's
    values, the counters, the records and the random state.
    """
    if name == ON_WORKERS:
        state = {
            "lambda": model._natural,
            "counters": [model.n_batch_iter_, model.n_samples_seen_, model.n_iter_],
            "records": [model.step_size_history_, model.evaluation_history_],
            "random_state": model.random_state_,
        }
    else:
        state = {key: item for key, item in vars(model).items() if key != "callback"}
    return fingerprint(state).hexdigest()


def data_for(name):
    if name.startswith("SVIGaussian"):
        return make_blobs(n_samples=2100, centers=3, n_features=4, random_state=0)[0]
    if name.startswith("SVIMatrix"):
        rng = np.random.RandomState(0)
        ratings = rng.normal(size=(2100, 5)) @ rng.normal(size=(5, 300)) + 3.0
        return sp.csr_matrix(np.where(rng.rand(2100, 300) < 0.05, ratings, 0.0))
    X = load_counts("NewsArticles")[0][:2100]
    if name == ON_WORKERS:
        import dask.array as da

        return da.from_array(X, chunks=(500, X.shape[1]), asarray=False)
    return X


def states_after_each_update(model, X, name):
    """The fingerprints of ``model`` before and after each update of
    ``partial_fit(X)``, and the model at the end."""
    states = [state_of(model, name)]

    def record(fitted, progress):
        states.append(state_of(fitted, name))

    model.set_params(callback=record)
    model.partial_fit(X)
    model.set_params(callback=None)
    return states, model


def same_model(model, end, name):
    """Whether a continued fit ended as the uninterrupted one: bit for bit,
    or, with lambda on the workers, where the continued stream's row blocks
    group the parts' sums otherwise, to rounding."""
    if name != ON_WORKERS:
        return state_of(model, name) == state_of(end, name)
    return np.allclose(model.components_, end.components_, rtol=1e-9, atol=0)


def interrupted_fits(name, n_fits, rng):
    """Counts of the interrupted, torn and differently continued fits."""
    import dask

    with dask.config.set({"sklearn-svi.partition-model": name == ON_WORKERS}):
        return _interrupted_fits(name, n_fits, rng)


def _interrupted_fits(name, n_fits, rng):
    X = data_for(name)
    start = ESTIMATORS[name]().partial_fit(X[:BATCH])
    rest = X[BATCH:]
    whole_states, end = states_after_each_update(copy.deepcopy(start), rest, name)
    started = time.perf_counter()
    copy.deepcopy(start).partial_fit(rest)
    duration = time.perf_counter() - started
    first = start.n_batch_iter_
    n_interrupted = n_torn = n_not_resumed = 0
    while n_interrupted < n_fits:
        model = copy.deepcopy(start)
        timer = threading.Timer(
            rng.uniform(0.02, 0.98) * duration,
            signal.raise_signal,
            args=(signal.SIGINT,),
        )
        try:
            try:
                timer.start()
                model.partial_fit(rest)
            finally:
                timer.join()
                time.sleep(0.02)  # the handler runs in the main thread
        except KeyboardInterrupt:
            pass
        completed = model.n_batch_iter_ - first
        if completed * BATCH >= rest.shape[0]:
            continue  # the signal came after the last update
        n_interrupted += 1
        if state_of(model, name) != whole_states[completed]:
            n_torn += 1
            continue
        model.partial_fit(rest[completed * BATCH :])
        n_not_resumed += not same_model(model, end, name)
    return n_interrupted, n_torn, n_not_resumed


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--fits", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.RandomState(args.seed)
    rows = []
    with on_a_local_cluster():
        for name in ESTIMATORS:
            started = time.perf_counter()
            counts = interrupted_fits(name, args.fits, rng)
            seconds = f"{time.perf_counter() - started:.0f}"
            rows.append([name, *map(str, counts), seconds])
    settings = (
        f"Real SIGINTs at random moments of partial_fit, {args.fits} interrupted "
        "fits per estimator: the models torn (equal to no model after a whole "
        "update) and the continuations that differed from the uninterrupted "
        "fit; seconds for the row."
    )
    table = simple_table(["Estimator", "Interrupted", "Torn", "Differed", "s"], rows)
    report(RESULTS_DIRECTORY / "interrupts.rst", settings, table)


if __name__ == "__main__":
    main()
