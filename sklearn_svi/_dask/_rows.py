"""``ClusterRows``: the training data of a fit on a cluster, each
minibatch cut into one part per worker that holds its samples (see
:mod:`sklearn_svi._dask`)."""

import contextlib
import logging
import time

import numpy as np
from sklearn.base import clone

from .._permutation import PermutedSpan
from .._sources import evenly_spaced_rows, local_store
from ._blocks import RowShards
from ._client import (
    _client,
    _serialized,
    _waits_for_lost_workers,
    is_dask_collection,
    row_block_tasks,
)
from ._handles import HeldStatistic
from ._held import check_partitionable, held_by_workers, partitions_model
from ._parts import _DistributedMinibatch, _Part, _rows_of_all
from ._tasks import (
    _assembled,
    _block_order,
    _held_part_statistic,
    _minibatch_call,
    _part_statistic,
    _prepared_part,
    _rows_read,
    _same,
    _sampled_part,
    _shape,
    _sum_of,
    _validated_block,
)

logger = logging.getLogger("sklearn_svi.cluster")

# How many times one update's parts are sent again after a worker was lost.
MAX_ATTEMPTS = 3

# The fan-in of the tree of tasks that adds the parts' statistics.
SUM_FAN_IN = 8

# The key of Dask's configuration that holds how long an update waits for the
# workers, and its default.
TIMEOUT_KEY = "sklearn-svi.update-timeout"

DEFAULT_TIMEOUT = "10 minutes"

# How often an update that waits for the workers checks that they can still
# give it what it waits for (``ClusterRows._gathered``).
WORKER_CHECK_SECONDS = 1.0

# An update's payloads that would send at least this many bytes through the
# scheduler go straight to a worker and along a tree of copies, each worker
# sending to at most ``BROADCAST_FAN_OUT`` others (``_broadcast``).
DIRECT_PAYLOAD_BYTES = 2**20

BROADCAST_FAN_OUT = 2


def _update_timeout():
    """Seconds that an update waits for the workers, from Dask's
    configuration (``"sklearn-svi.update-timeout"``)."""
    import dask
    from dask.utils import parse_timedelta

    return parse_timedelta(dask.config.get(TIMEOUT_KEY, DEFAULT_TIMEOUT))


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
        self.timeout = _update_timeout()
        # What preparing a part needs: the model's parameters.
        self.parameters = clone(model)
        # Minibatches whose preparation was submitted.
        self._pending = []
        # The worker that holds each block, by the block's index.
        self._homes = None
        # The pass's order and, for each block, the positions of its rows
        # in it (``_block_order``), on the block's worker.
        self._orders = (None, [])
        # The handle of lambda's blocks of rows while the workers hold it.
        self.shards = None

    @classmethod
    def from_data(cls, model, X, reset, dtype):
        """The data ``X`` validated, in row blocks on the cluster.

        A Dask array (chunked by rows) or bag (of matrices) is validated
        where its blocks are computed, and stays there. Data in memory is
        validated on the client and scattered in one block per worker
        thread.
        """
        client = _client()
        if partitions_model():
            check_partitionable(model)
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
        parts = self._parts(rows)
        self._prepare(parts)
        assembled = self.client.submit(
            _assembled, *[part.prepared for part in parts], pure=False
        )
        (sample,) = self._gathered([assembled], "The first sample")
        return sample if batches else sample[:0]

    def minibatch(self, rows):
        """Start cutting and preparing the minibatch of the rows ``rows`` (an
        array, a slice or a ``PermutedSpan``) where its samples are; the
        result's ``result()`` gives it."""
        if isinstance(rows, slice):
            rows = np.arange(rows.start, rows.stop)
        pending = _DistributedMinibatch(self, rows, self._parts(rows))
        self._prepare_pending(pending)
        self._pending.append(pending)
        return pending

    def _parts(self, rows):
        """The minibatch of the rows ``rows`` cut by the workers that hold
        them, in the order of their first block.

        The minibatch of a ``PermutedSpan`` has a part on every worker that
        holds blocks, which finds its samples itself: the client computes no
        row of it."""
        if isinstance(rows, PermutedSpan):
            parts = {}
            for block, home in enumerate(self._block_homes()):
                parts.setdefault(home, _Part(home, [], None, None)).blocks.append(block)
            return list(parts.values())
        block_of = np.searchsorted(self.offsets, rows, side="right") - 1
        by_block = np.argsort(block_of, kind="stable")
        blocks, starts = np.unique(block_of[by_block], return_index=True)
        homes = self._block_homes()
        parts = {}
        for block, positions in zip(blocks, np.split(by_block, starts[1:])):
            part = parts.setdefault(homes[block], _Part(homes[block], [], [], []))
            part.blocks.append(block)
            part.rows.append(rows[positions] - self.offsets[block])
            part.positions.append(positions)
        for part in parts.values():
            part.positions = np.concatenate(part.positions)
        return list(parts.values())

    def _block_homes(self):
        """The address of a worker that holds each block (None if none)."""
        if self._homes is None:
            held = self.client.who_has(self.blocks)
            self._homes = [
                min(held.get(block.key, ()), default=None) for block in self.blocks
            ]
        return self._homes

    def _placement(self, worker):
        """Where a task runs: on ``worker`` (a part's, a block's), or
        elsewhere if it is lost or unknown (None)."""
        if worker is None:
            return {}
        return dict(workers=[worker], allow_other_workers=True)

    def _prepare(self, parts, span=None):
        """Submit the preparation of the parts; of a ``PermutedSpan``'s,
        the workers find their samples by the positions of their rows."""
        orders = None if span is None else self._block_orders(span.order)
        for part in parts:
            blocks = [self.blocks[block] for block in part.blocks]
            if span is None:
                function, arguments = _prepared_part, (part.rows, part.positions)
            else:
                function = _sampled_part
                arguments = (span.span, len(blocks))
                blocks += [orders[block] for block in part.blocks]
            part.prepared = self.client.submit(
                function,
                self.parameters,
                *arguments,
                *blocks,
                pure=False,
                **self._placement(part.worker),
            )

    def _block_orders(self, order):
        """The positions of each block's rows in the pass's ``order``
        (``_block_order``), computed once per pass where the block is."""
        current, futures = self._orders
        if current is not order:
            homes = self._block_homes()
            futures = [
                self.client.submit(
                    _block_order,
                    order,
                    int(start),
                    int(stop - start),
                    pure=False,
                    **self._placement(home),
                )
                for start, stop, home in zip(self.offsets[:-1], self.offsets[1:], homes)
            ]
            self._orders = (order, futures)
        return futures

    def _prepare_pending(self, pending):
        """Submit the preparation of a minibatch's parts and, unless the
        workers hold lambda, the look-up of the rows of lambda they read."""
        span = pending.rows if isinstance(pending.rows, PermutedSpan) else None
        self._prepare(pending.parts, span)
        if self.shards is not None:
            return
        pending.reads = [
            self.client.submit(
                _rows_read,
                self.parameters,
                part.prepared,
                pure=False,
                **self._placement(part.worker),
            )
            for part in pending.parts
        ]

    def stored_columns(self, shape, dtype, columns):
        """lambda's stored array made of its initial ``columns``: while the
        workers hold lambda, written to their blocks of rows one batch of
        columns after the other, so that the client never holds all of it;
        otherwise an array on the client."""
        if not partitions_model():
            return local_store(shape, dtype, columns)
        workers = sorted(self.client.nthreads())
        return RowShards.started(
            self.client, shape, dtype, columns, workers, self.timeout
        )

    @contextlib.contextmanager
    def holding_natural(self, model):
        """A context in which the workers hold lambda by blocks of rows,
        when Dask's configuration ``"sklearn-svi.partition-model"`` asks
        for it (:mod:`sklearn_svi._dask._held`); the model's own copy is
        written back when it ends."""
        if not partitions_model():
            yield
            return
        with held_by_workers(model, self.client, self.timeout) as shards:
            self.shards = shards
            try:
                yield
            finally:
                self.shards = None

    def statistic(self, minibatch, sample_weight=None, draw=0):
        """The minibatch statistic at the model's present state: one task
        per worker computes its part's, and a tree of tasks adds them on
        the workers, in the order of the parts. While the workers hold
        lambda, the parts hand their statistics to the blocks of rows
        instead (:meth:`_held_statistic`)."""
        from distributed import CancelledError

        if self.shards is not None:
            return self._held_statistic(minibatch, sample_weight, draw)

        for attempt in range(1, MAX_ATTEMPTS + 1):
            # The next minibatch's rows come back with this one's statistic,
            # in the same round trip.
            upcoming = [pending for pending in self._pending if pending.reads]
            reads = [future for pending in upcoming for future in pending.reads]
            payload = _serialized(self.model._local_copy(_rows_of_all(minibatch.parts)))
            try:
                copies, sent = self._broadcast(payload, minibatch.parts)
                weights = self._scattered_weights(sample_weight)
                parts = [
                    self._part_task(
                        _part_statistic, part, copy, weights, draw, minibatch.size
                    )
                    for part, copy in zip(minibatch.parts, copies)
                ]
                results = self._gathered(
                    [self._tree_sum(parts)] + reads, f"Update {draw}"
                )
            except TimeoutError:
                # An OSError too, but the wait is over: the update stops.
                raise
            except (CancelledError, OSError):
                # A worker was lost with data that Dask cannot compute again
                # (the payload or a block that the client scattered), or
                # tasks wait for lost workers; a task that killed its
                # workers (KilledWorker) is not sent again.
                if attempt == MAX_ATTEMPTS:
                    raise
                logger.warning(
                    "update %d: a worker was lost; sending its parts again", draw
                )
                self._recover(minibatch, upcoming)
                continue
            statistic = results[0]
            rows_read = iter(results[1:])
            for pending in upcoming:
                pending.take([next(rows_read) for _ in pending.reads])
            self._pending = []
            logger.debug(
                "update %d: %d parts, %d bytes sent, %d bytes received",
                draw,
                len(parts),
                sent,
                statistic.nbytes,
            )
            return statistic

    def _part_task(self, function, part, payload, *arguments):
        """``function(payload, prepared part, *arguments)`` on the part's
        worker, before the preparation of the next minibatch."""
        return self.client.submit(
            function,
            payload,
            part.prepared,
            *arguments,
            pure=False,
            priority=1,
            **self._placement(part.worker),
        )

    def _scattered_weights(self, sample_weight):
        """The minibatch's annealing weights sent once, to one worker, for
        every part to read its samples' from (None for none)."""
        if sample_weight is None:
            return None
        return self.client.scatter(sample_weight, hash=False)

    def _held_statistic(self, minibatch, sample_weight, draw):
        """The parts' statistics handed to the blocks of lambda that hold
        their rows; the handle of the statistic they make up together.

        The payload is the model without lambda; each part reads its rows
        from the blocks, worker to worker. A worker lost with a block of
        lambda ends the fit (see :mod:`sklearn_svi._dask._held`).
        """
        scale = self.shards.scale
        payload = _serialized(self.model._local_copy(np.empty(0, dtype=np.intp)))
        weights = self._scattered_weights(sample_weight)
        parts = [
            self._part_task(
                _held_part_statistic,
                part,
                payload,
                weights,
                draw,
                minibatch.size,
                index,
                self.shards,
                self.shards.change,
                scale,
            )
            for index, part in enumerate(minibatch.parts)
        ]
        self._gathered(parts, f"Update {draw}")
        logger.debug(
            "update %d: %d parts handed to %d blocks of lambda, %d bytes sent",
            draw,
            len(parts),
            len(self.shards.actors),
            len(payload) * len(parts),
        )
        return HeldStatistic(draw)

    def _tree_sum(self, statistics):
        """The sum of the statistics, added on the workers by a tree of tasks
        of fan-in ``SUM_FAN_IN`` whose shape depends only on their number."""
        while len(statistics) > 1:
            statistics = [
                self.client.submit(
                    _sum_of, *statistics[start : start + SUM_FAN_IN], pure=False
                )
                for start in range(0, len(statistics), SUM_FAN_IN)
            ]
        return statistics[0]

    def _gathered(self, futures, waiting):
        """The futures' results, or a clear error after ``timeout`` seconds,
        or as soon as a worker that holds a block of lambda is lost;
        ``waiting`` names what waits in the error. Tasks left waiting for
        lost workers raise ``CancelledError``, so that the update's parts
        are sent again (:meth:`_recover`)."""
        from distributed import CancelledError, wait

        deadline = time.monotonic() + self.timeout
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                wait(futures, timeout=min(WORKER_CHECK_SECONDS, remaining))
                break
            except TimeoutError:
                if self.shards is not None and self.shards.lost():
                    self.client.cancel(futures)
                    raise RuntimeError(
                        f"{waiting} stopped: a worker that held a block of "
                        "lambda's rows was lost."
                    ) from None
                keys = [future.key for future in futures]
                if self.client.run_on_scheduler(_waits_for_lost_workers, keys=keys):
                    self.client.cancel(futures)
                    raise CancelledError(keys) from None
                if time.monotonic() < deadline:
                    continue
                self.client.cancel(futures)
                raise TimeoutError(
                    f"{waiting} waited {self.timeout:g} s for the workers "
                    "and stopped; the model keeps its last update. A worker may "
                    "hang. Set a longer wait with dask.config.set"
                    f'({{"{TIMEOUT_KEY}": "30 minutes"}}).'
                ) from None
        return self.client.gather(futures, direct=True)

    def _recover(self, minibatch, upcoming):
        """Cut and prepare again this update's minibatch and the next after a
        worker was lost, by the workers that hold the blocks now. The
        positions of the blocks' rows in the pass's order are found again
        there too: Dask would wait for the lost workers to run them."""
        self._homes = None
        self._orders = (None, [])
        self._restore_blocks()
        for pending in [minibatch, *upcoming]:
            pending.parts = self._parts(pending.rows)
            self._prepare_pending(pending)
        minibatch.result()

    def _broadcast(self, payload, parts):
        """The payload as an argument of each part's task, and the bytes
        that leave the client.

        A payload that all the parts together would send in less than
        ``DIRECT_PAYLOAD_BYTES`` travels inside each task, through the
        scheduler. A larger one leaves the client once, straight to the
        first part's worker, and is copied from worker to worker along a
        tree of tasks of fan-out ``BROADCAST_FAN_OUT``, so that no worker
        sends it more than that many times: the i-th part's copy comes from
        the copy of part (i - 1) // ``BROADCAST_FAN_OUT``.
        """
        if len(payload) * len(parts) < DIRECT_PAYLOAD_BYTES:
            return [payload] * len(parts), len(payload) * len(parts)
        first = parts[0].worker
        copies = [
            self.client.scatter(
                payload,
                direct=True,
                hash=False,
                workers=None if first is None else [first],
            )
        ]
        for index, part in enumerate(parts[1:], start=1):
            source = copies[(index - 1) // BROADCAST_FAN_OUT]
            copies.append(
                self.client.submit(
                    _same,
                    source,
                    pure=False,
                    priority=2,
                    **self._placement(part.worker),
                )
            )
        return copies, len(payload)

    def _restore_blocks(self):
        """Scatter again the blocks of the client's data that were lost;
        refuse to go on without a lost block that Dask cannot compute
        again. A block made by a task graph is only "lost" until Dask has
        computed it again."""
        for index, block in enumerate(self.blocks):
            if block.status == "finished":
                continue
            if self.X is not None:
                start, stop = self.offsets[index], self.offsets[index + 1]
                self.blocks[index] = self.client.scatter(self.X[start:stop], hash=False)
            elif block.status in ("cancelled", "error"):
                raise RuntimeError(
                    f"Row block {index} of X was lost with its worker, and "
                    "Dask cannot compute it again: it holds data that was "
                    "sent to one worker (client.scatter), not made by a task "
                    "graph. The model keeps its last update. Make the blocks "
                    "with a graph (dask.array.from_array, dask.bag.read_text, "
                    "...) and persist them, so that a lost block is computed "
                    "again."
                )

    def _on_minibatch(self, function, minibatch):
        """``function(model, X_batch)`` computed on a worker, at the model's
        present state."""
        payload = _serialized(self.model._local_copy())
        call = self.client.submit(
            _minibatch_call,
            payload,
            function,
            *[part.prepared for part in minibatch.parts],
            pure=False,
        )
        (result,) = self._gathered([call], "An evaluation")
        return result

    def evaluation_score(self, minibatch):
        """The model's evaluation score of the minibatch, on a worker."""
        return self._on_minibatch(type(self.model)._evaluation_score, minibatch)

    def least_likely_samples(self, minibatch):
        """The samples of the minibatch that fit the model worst, by their
        place in it, worst first, found on a worker."""
        return self._on_minibatch(type(self.model)._least_likely_samples, minibatch)
