"""The Dask engine: the local step on a cluster, and the models' methods
on Dask collections (registered with :mod:`sklearn_svi._sources`).

The local step is the cost of an update, and it is data-parallel: a
minibatch is cut into shards by the row blocks that hold its samples, each
shard's statistic is computed on the worker that holds the block, at the
model's present state, and the client adds the shards' statistics in the
order of the blocks and runs the usual update. What travels:

- to a worker, per shard and update: a copy of the model without the
  update's state (:meth:`~sklearn_svi._contract.OnlineModel._local_copy`),
  with lambda cut to the rows the shard's local step reads (an LDA shard's
  words);
- back, per shard: its sparse statistic, on those rows.

The samples stay where they are. Each shard divides its sum by the size of
the whole minibatch, so the statistics add up to the minibatch mean; every
sample's part of it is computed as on one machine (the same random starts,
drawn from the minibatch number and the sample), and only the grouping of
the sum over the samples differs, by rounding.

A worker that dies costs the tasks it was running: Dask runs them again
elsewhere (recomputing lost blocks of a Dask collection from their graph),
and blocks that the client scattered itself are sent again. The update
waits for exactly one statistic per shard and changes the model only then,
so nothing is counted twice. Dask is imported only when a Dask collection
or joblib's Dask backend is in use.
"""

import logging
import pickle
import sys
from dataclasses import dataclass

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from ._mechanisms import SparseStatistic
from ._sources import evenly_spaced_rows, register_engine

logger = logging.getLogger("sklearn_svi.cluster")

# How many times one update's shards are sent again after a worker was lost.
MAX_ATTEMPTS = 3

# Payloads of at least this size go straight to their worker (``_sent``).
DIRECT_PAYLOAD_BYTES = 2**20


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


# -- the tasks that run on the workers -------------------------------------------
#
# Each runs on one thread of its worker, as Dask's tasks do: a worker with
# several threads runs several shards at once.


def _validated_block(model, block, index, reset, dtype):
    """The model's validation of one row block, which names the block."""
    try:
        return model._check_training_data(block, reset=reset, dtype=dtype)
    except ValueError as error:
        raise ValueError(f"In row block {index} of X: {error}") from error


def _shape(block):
    return block.shape[0], block.shape[1], block.dtype


def _assembled(positions, shards):
    """The samples of shards, in their order in the minibatch."""
    X_batch = _stacked([shard[0] for shard in shards])
    return X_batch[np.argsort(np.concatenate(positions), kind="stable")]


def _prepared_shard(model, block, rows):
    """The rows ``rows`` of a block, and the same rows prepared for the
    model's local step."""
    X_shard = block[rows]
    return X_shard, model._prepare_minibatch(X_shard)


def _rows_read(model, shard):
    return model._rows_read(shard[1])


def _shard_statistic(payload, shard, sample_weight, draw, n_batch):
    """A shard's part of the minibatch statistic, at the model in ``payload``."""
    return pickle.loads(payload)._local_statistic(
        shard[1], sample_weight, draw, n_batch
    )


def _minibatch_call(payload, function, positions, *shards):
    """``function(model, X_batch)`` for the minibatch that the shards make
    up, its samples in their order in the minibatch."""
    return function(pickle.loads(payload), _assembled(positions, shards))


# -- the client's side ---------------------------------------------------------------


@dataclass
class _Shard:
    """The samples of a minibatch that one row block holds.

    Attributes
    ----------
    block : int
        The row block.
    positions : ndarray
        The samples' places in the minibatch.
    rows : ndarray
        Their rows in the block.
    prepared : Future
        (X_shard, prepared shard) on the worker.
    rows_read : ndarray or None
        The rows of lambda its local step reads, None for all.
    """

    block: int
    positions: np.ndarray
    rows: np.ndarray
    prepared: object = None
    rows_read: np.ndarray | None = None


class _ShardedMinibatch:
    """A minibatch whose samples stay on the workers, in shards.

    Its shards are prepared on the workers as soon as it is made. The rows
    of lambda that they read (``reads``, futures until then) come back with
    the statistics of the update before it (:meth:`ClusterRows.statistic`),
    or when ``result()`` is asked for first.
    """

    def __init__(self, client, shards, size):
        self.client = client
        self.shards = shards
        self.size = size
        self.reads = None

    def take(self, rows_read):
        for shard, rows in zip(self.shards, rows_read):
            shard.rows_read = rows
        self.reads = None

    def result(self):
        if self.reads is not None:
            self.take(self.client.gather(self.reads))
        return self


def _added_statistics(statistics):
    """The sum of shard statistics, added in the order given."""
    if len(statistics) == 1:
        return statistics[0]
    rows = np.unique(np.concatenate([statistic.rows for statistic in statistics]))
    first = statistics[0]
    block = np.zeros((len(rows), first.block.shape[1]), dtype=first.block.dtype)
    for statistic in statistics:
        block[np.searchsorted(rows, statistic.rows)] += statistic.block
    sample_mean = None
    if first.sample_mean is not None:
        sample_mean = first.sample_mean.copy()
        for statistic in statistics[1:]:
            sample_mean += statistic.sample_mean
    return SparseStatistic(rows, block, sample_mean)


class ClusterRows:
    """Training data in row blocks on a Dask cluster, for the online update.

    It answers the update's questions (minibatches, their statistics, their
    scores) like :class:`~sklearn_svi._sources.InMemoryRows`, with the work
    done where the blocks are. Use :meth:`from_data`.

    Parameters
    ----------
    model : OnlineUpdateMixin
        The model that is fitted.
    client : distributed.Client
        The cluster's client.
    blocks : list of Future
        The validated row blocks, on the workers.
    offsets : ndarray of shape (n_blocks + 1,)
        The first row of each block, and the number of rows.
    dtype : dtype
        The blocks' floating point type.
    X : ndarray or sparse matrix or None, default=None
        The validated data when the client holds it as well: the model is
        then initialised from all of it, as on one machine, and a block that
        dies with its worker is sent again.
    """

    def __init__(self, model, client, blocks, offsets, dtype, X=None):
        self.model = model
        self.client = client
        self.blocks = blocks
        self.offsets = offsets
        self.dtype = dtype
        self.X = X
        # What preparing a shard needs: the model's parameters.
        self.parameters = clone(model)
        # Minibatches whose preparation was submitted.
        self._pending = []
        # The workers that hold each block, by the block's key.
        self._homes = None

    @classmethod
    def from_data(cls, model, X, reset, dtype):
        """The data ``X`` validated, in row blocks on the cluster.

        A Dask array (chunked by rows) or bag (of matrices) is validated
        where its blocks are computed, and stays there. Data in memory is
        validated on the client and scattered in one block per worker
        thread.
        """
        client = _client()
        if not is_dask_collection(X):
            X = model._check_training_data(X, reset=reset, dtype=dtype)
            n_blocks = max(1, sum(client.nthreads().values()))
            bounds = np.linspace(0, X.shape[0], n_blocks + 1).astype(np.intp)
            bounds = np.unique(bounds)
            blocks = client.scatter(
                [X[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])],
                hash=False,
            )
            return cls(model, client, blocks, bounds, X.dtype, X)
        tasks = row_block_tasks(X)
        # The model's parameters travel inside the tasks, so that Dask can
        # compute a block again from its graph when a worker is lost.
        checker = clone(model)
        if not reset:
            checker.n_features_in_ = model.n_features_in_
        raw = client.compute(tasks)
        blocks = [
            client.submit(_validated_block, checker, block, index, reset, dtype)
            for index, block in enumerate(raw)
        ]
        shapes = client.gather([client.submit(_shape, block) for block in blocks])
        n_rows, n_features, dtypes = (list(values) for values in zip(*shapes))
        if len(set(n_features)) > 1 or len(set(dtypes)) > 1:
            raise ValueError(
                "The row blocks of X differ in their number of features or in "
                f"their type: {sorted(set(n_features))} features, types "
                f"{sorted(set(map(str, dtypes)))}."
            )
        if reset:
            model.n_features_in_ = n_features[0]
            model.__dict__.pop("feature_names_in_", None)
        offsets = np.concatenate([[0], np.cumsum(n_rows)]).astype(np.intp)
        return cls(model, client, blocks, offsets, dtypes[0])

    @property
    def n_samples(self):
        return int(self.offsets[-1])

    def initial_rows(self):
        """All the data when the client holds them, as on one machine.

        Otherwise a sample of the model's ``_initial_sample_batches``
        minibatches' worth of rows spread evenly over the data (all rows
        when there are fewer), which reaches every block even when the data
        are sorted, gathered to the client: of no rows, a model that does
        not read them.
        """
        if self.X is not None:
            return self.X
        batches = self.model._initial_sample_batches
        rows = evenly_spaced_rows(self.n_samples, batches * self.model.batch_size)
        shards = self._shards(rows)
        self._prepare(shards)
        sample = self.client.submit(
            _assembled,
            [shard.positions for shard in shards],
            [shard.prepared for shard in shards],
            pure=False,
        ).result()
        return sample if batches else sample[:0]

    def minibatch(self, rows):
        """Start cutting and preparing the minibatch of the rows ``rows`` (an
        array or a slice) where its samples are; the result's ``result()``
        gives it."""
        if isinstance(rows, slice):
            rows = np.arange(rows.start, rows.stop)
        pending = _ShardedMinibatch(self.client, self._shards(rows), len(rows))
        self._prepare_pending(pending)
        self._pending.append(pending)
        return pending

    def _shards(self, rows):
        """The minibatch of the rows ``rows`` cut by the blocks, in their order."""
        block_of = np.searchsorted(self.offsets, rows, side="right") - 1
        return [
            _Shard(block, positions, rows[positions] - self.offsets[block])
            for block in np.unique(block_of)
            for positions in [np.flatnonzero(block_of == block)]
        ]

    def _prepare(self, shards):
        """Submit the preparation of the shards."""
        for shard in shards:
            shard.prepared = self.client.submit(
                _prepared_shard,
                self.parameters,
                self.blocks[shard.block],
                shard.rows,
                pure=False,
            )

    def _prepare_pending(self, pending):
        """Submit the preparation of a minibatch's shards and the look-up of
        the rows of lambda they read."""
        self._prepare(pending.shards)
        pending.reads = [
            self.client.submit(_rows_read, self.parameters, shard.prepared, pure=False)
            for shard in pending.shards
        ]

    def statistic(self, minibatch, sample_weight=None, draw=0):
        """The minibatch statistic at the model's present state: the shards'
        statistics, computed on the workers and added in the blocks' order."""
        payloads = [
            pickle.dumps(self.model._local_copy(shard.rows_read), protocol=5)
            for shard in minibatch.shards
        ]
        statistics = self._run_shards(minibatch, payloads, sample_weight, draw)
        logger.debug(
            "update %d: %d shards, %d bytes sent, %d bytes received",
            draw,
            len(statistics),
            sum(len(payload) for payload in payloads),
            sum(statistic.nbytes for statistic in statistics),
        )
        return _added_statistics(statistics)

    def _run_shards(self, minibatch, payloads, sample_weight, draw):
        """One statistic per shard, sending the shards again after a worker
        was lost (at most ``MAX_ATTEMPTS`` times)."""
        from distributed import CancelledError, KilledWorker

        for attempt in range(1, MAX_ATTEMPTS + 1):
            # The next minibatch's rows come back with this one's statistics,
            # in the same round trip.
            upcoming = [pending for pending in self._pending if pending.reads]
            reads = [future for pending in upcoming for future in pending.reads]
            try:
                futures = [
                    self.client.submit(
                        _shard_statistic,
                        payload,
                        shard.prepared,
                        None
                        if sample_weight is None
                        else sample_weight[shard.positions],
                        draw,
                        minibatch.size,
                        pure=False,
                        priority=1,
                    )
                    for shard, payload in zip(
                        minibatch.shards, self._sent(minibatch.shards, payloads)
                    )
                ]
                results = self.client.gather(futures + reads, direct=True)
            except (KilledWorker, CancelledError, OSError):
                if attempt == MAX_ATTEMPTS:
                    raise
                logger.warning(
                    "update %d: a worker was lost; sending its shards again", draw
                )
                self._homes = None
                self._restore_blocks()
                self._prepare(minibatch.shards)
                for pending in upcoming:
                    self._prepare_pending(pending)
                continue
            rows_read = iter(results[len(futures) :])
            for pending in upcoming:
                pending.take([next(rows_read) for _ in pending.reads])
            self._pending = []
            return results[: len(futures)]

    def _sent(self, shards, payloads):
        """The payloads as task arguments, the large ones scattered first.

        A small payload travels inside its task, through the scheduler; one
        of at least ``DIRECT_PAYLOAD_BYTES`` is sent straight to the worker
        that holds the shard's block, which costs a round trip of its own
        but not the scheduler's copy.
        """
        sent = []
        for shard, payload in zip(shards, payloads):
            if len(payload) < DIRECT_PAYLOAD_BYTES:
                sent.append(payload)
                continue
            if self._homes is None:
                self._homes = self.client.who_has(self.blocks)
            home = list(self._homes.get(self.blocks[shard.block].key, ())) or None
            sent.append(
                self.client.scatter(payload, direct=True, hash=False, workers=home)
            )
        return sent

    def _restore_blocks(self):
        """Scatter again the blocks of the client's data that were lost."""
        if self.X is None:
            return
        for index, block in enumerate(self.blocks):
            if block.status != "finished":
                start, stop = self.offsets[index], self.offsets[index + 1]
                self.blocks[index] = self.client.scatter(self.X[start:stop], hash=False)

    def _on_minibatch(self, function, minibatch):
        """``function(model, X_batch)`` computed on a worker, at the model's
        present state."""
        payload = pickle.dumps(self.model._local_copy(), protocol=5)
        positions = [shard.positions for shard in minibatch.shards]
        return self.client.submit(
            _minibatch_call,
            payload,
            function,
            positions,
            *[shard.prepared for shard in minibatch.shards],
            pure=False,
        ).result()

    def evaluation_score(self, minibatch):
        """The model's evaluation score of the minibatch, on a worker."""
        return self._on_minibatch(type(self.model)._evaluation_score, minibatch)

    def least_likely_samples(self, minibatch):
        """The samples of the minibatch that fit the model worst, by their
        place in it, worst first, found on a worker."""
        return self._on_minibatch(type(self.model)._least_likely_samples, minibatch)


# -- the engine of the models' methods on Dask collections ---------------------------


class DaskEngine:
    """Dask collections of row blocks, for every model (an ``Engine``)."""

    def holds(self, X):
        return is_dask_collection(X)

    def fits(self, X):
        return is_dask_collection(X) or active_client() is not None

    def row_source(self, model, X, reset, dtype):
        return ClusterRows.from_data(model, X, reset, dtype)

    def map_row_blocks(self, method, model, X, n_columns, dtype):
        """``method(model, block)`` on each row block of ``X``.

        For a Dask array, a Dask array of the blocks' results, one row per
        sample, with ``n_columns`` columns (None for a vector); for a bag, a
        bag of each partition's result.
        """
        import dask
        import dask.array as da

        shared = dask.delayed(model)
        if not isinstance(X, da.Array):
            row_block_tasks(X)  # the type check
            return X.map_partitions(_partition_call, method, shared)
        X = X.rechunk({1: -1})
        if n_columns is None:
            shape = dict(drop_axis=1, meta=np.empty((0,), dtype=dtype))
        else:
            shape = dict(
                chunks=(X.chunks[0], (n_columns,)), meta=np.empty((0, 0), dtype=dtype)
            )
        return X.map_blocks(_block_call, method, shared, dtype=dtype, **shape)

    def sum_row_blocks(self, part, model, X):
        """The sum of ``part(model, block)`` over the row blocks of ``X``,
        added in the blocks' order, as a Dask Delayed object."""
        import dask

        shared = dask.delayed(model)
        parts = [dask.delayed(part)(shared, block) for block in row_block_tasks(X)]
        return dask.delayed(_ordered_sum)(parts)

    def later(self, function, *arguments):
        """``function(*arguments)`` as a Dask Delayed object."""
        import dask

        return dask.delayed(function)(*arguments)


def _block_call(block, method, model):
    return method(model, block)


def _partition_call(matrices, method, model):
    return [method(model, _stacked(matrices))]


def _ordered_sum(values):
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


register_engine(DaskEngine())
