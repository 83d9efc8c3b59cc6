"""The cluster's client and its collections, with Dask imported only
when they are used."""

import sys

import joblib
import numpy as np
import scipy.sparse as sp


def is_dask_collection(X):
    """Whether ``X`` is a Dask collection (without importing Dask)."""
    dask = sys.modules.get("dask")
    return dask is not None and dask.is_dask_collection(X)


def _on_worker():
    """Whether this code runs in a task on a Dask worker."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


def active_client():
    """The client of ``joblib.parallel_backend("dask")`` when it is active.

    None otherwise, and in a task that already runs on a worker (a
    candidate of a GridSearchCV that the backend sent there), whose fit
    runs where it is.
    """
    if "distributed" not in sys.modules:
        return None
    backend, _ = joblib.parallel.get_active_backend()
    client = getattr(backend, "client", None)
    if client is None or type(backend).__name__ != "DaskDistributedBackend":
        return None
    return None if _on_worker() else client


def _client():
    """The Dask client: joblib's, or the default one."""
    client = active_client()
    if client is not None:
        return client
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        raise ValueError(
            "A Dask collection is fitted on a Dask cluster, and there is no "
            "client: start one first, for instance with "
            "distributed.Client(LocalCluster())."
        ) from None


def row_block_tasks(X):
    """The row blocks of a Dask array or bag, as a list of Delayed objects.

    A bag's partition is a list of matrices, stacked into one block.
    """
    import dask
    import dask.array as da
    import dask.bag as db

    if isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2-dimensional Dask array, got {X.ndim} dimensions."
            )
        return list(X.rechunk({1: -1}).to_delayed()[:, 0])
    if isinstance(X, db.Bag):
        return [dask.delayed(_stacked)(part) for part in X.to_delayed()]
    raise TypeError(
        f"Expected a Dask array or a Dask bag of row blocks, got {type(X).__name__}."
    )


def _stacked(matrices):
    """The rows of a list of matrices, one under the other."""
    if not matrices:
        raise ValueError(
            "A partition of the Dask bag holds no matrix; every partition "
            "must hold at least one matrix of rows."
        )
    if any(sp.issparse(matrix) for matrix in matrices):
        return sp.vstack(matrices, format="csr")
    return np.vstack(matrices)


def _serialized(model):
    """The model as bytes, by value when its class is defined in a script
    or a notebook (``__main__``), which the workers cannot import."""
    import cloudpickle

    return cloudpickle.dumps(model, protocol=5)


def _waits_for_lost_workers(dask_scheduler, keys):
    """Whether a task that the tasks ``keys`` wait for, on the scheduler,
    waits for workers that are gone although others run.

    Dask keeps a task in its ``no-worker`` state when every worker died
    while it waited, and its new workers do not take the tasks that were
    placed on the old ones, even when they may run elsewhere.
    """
    if not dask_scheduler.running:
        return False
    waiting = [dask_scheduler.tasks[key] for key in keys if key in dask_scheduler.tasks]
    seen = set()
    while waiting:
        task = waiting.pop()
        if task.key in seen or task.state == "memory":
            continue
        if task.state == "no-worker":
            return True
        seen.add(task.key)
        waiting.extend(task.dependencies)
    return False
