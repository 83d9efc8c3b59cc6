"""lambda's blocks of rows on the workers: ``ModelShard``, the rows of one
block with the mechanisms' states of them (a Dask actor), and
``RowShards``, lambda's store made of the blocks
(:mod:`sklearn_svi._store`)."""

import contextlib

import numpy as np

from .._mechanisms import NoisyOptimum, SparseStatistic, added_statistics
from .._store import LocalStore, ScaledStore, Scaling, StoredRows
from ._handles import HeldValue, OptimumOnBlocks, StoredRowsOnBlocks


class ModelShard:
    """Rows ``start`` to ``start + n_rows`` of lambda's stored array (their
    :class:`~sklearn_svi._store.StoredRows`) and of the mechanisms' row
    states, held by one worker (a Dask actor).

    It starts with the stored rows' columns written batch by batch
    (:meth:`write_columns`); :meth:`hold` gives it the rest before the
    updates. Every call of an update names its change: the client's
    transaction that makes it (:meth:`RowShards.begin`). The shard keeps
    what the current change altered until the next change begins, so that
    :meth:`undo` can put it back.

    Parameters
    ----------
    n_rows : int
        Number of rows.
    n_components : int
        Number of columns.
    dtype : dtype
        Floating point type.
    start : int
        The first row's index in lambda.
    """

    def __init__(self, n_rows, n_components, dtype, start):
        self.rows = StoredRows(np.empty((n_rows, n_components), dtype=dtype))
        self.start = start
        self.prior = None
        self.states = []
        self._change = None
        # The pieces of each update's statistic, by its number and then by
        # the part's index; the statistics added up from them.
        self._pieces = {}
        self._statistics = {}

    def write_columns(self, first, block):
        """The stored rows' columns ``first`` to ``first + block.shape[1] - 1``."""
        self.rows.array[:, first : first + block.shape[1]] = block

    def hold(self, prior, states):
        """Take eta on the rows, in the form the compiled passes read (of
        shape (n_rows, 1) or (n_rows, n_components)), and the mechanisms'
        states of the rows (each a
        :class:`~sklearn_svi._mechanisms.RowState`, its indices counted
        from ``start``), in their slots."""
        self.prior = prior
        self.states = list(states)

    def rows_of(self, rows, scale):
        """lambda on ``rows`` (indices in lambda): eta + c (stored - eta)."""
        local_rows = np.ascontiguousarray(rows - self.start, dtype=np.intp)
        return self.rows.rows_of(local_rows, self.prior, scale)

    def receive(self, change, draw, index, rows, block):
        """Keep the piece of part ``index`` of update ``draw``'s statistic."""
        self._begin(change)
        piece = SparseStatistic(rows - self.start, block)
        self._pieces.setdefault(draw, {})[index] = piece

    def statistic(self, draw, negatively_weighted=False):
        """Update ``draw``'s statistic on these rows, its pieces added in
        the order of the parts; kept until the change ends."""
        if draw not in self._statistics:
            pieces = self._pieces.pop(draw, {})
            array = self.rows.array
            total = added_statistics(
                [pieces[index] for index in sorted(pieces)],
                array.shape[1],
                array.dtype,
            )
            self._statistics[draw] = SparseStatistic(
                total.rows, total.block, None, negatively_weighted
            )
        return self._statistics[draw]

    def received(self, arguments):
        """The ``arguments`` of a call on these rows: each handle of the
        client (``on_block``) replaced by its value here."""
        return tuple(
            argument.on_block(self) if hasattr(argument, "on_block") else argument
            for argument in arguments
        )

    def call(self, change, slot, function, arguments):
        """``function`` (one of the ``row_calls`` of the state in ``slot``)
        on these rows of the state."""
        self._begin(change)
        return function(self.states[slot], *self.received(arguments))

    def add(self, change, total, factor):
        """stored += factor total on the total's rows
        (:meth:`StoredRows.add`)."""
        self._begin(change)
        (total,) = self.received((total,))
        return self.rows.add(total, factor)

    def step_toward(self, change, target, rho):
        """stored <- (1 - rho) stored + rho lambda^ on every row
        (:meth:`StoredRows.step_toward`)."""
        self._begin(change)
        (target,) = self.received((target,))
        return self.rows.step_toward(target, rho)

    def project(self, change, projection):
        """The model's ``projection`` of these rows; the values it changed."""
        self._begin(change)
        return self.rows.project(projection, self.prior)

    def settle(self, change, scale):
        """Write out lambda: stored <- eta + c (stored - eta)."""
        self._begin(change)
        self.rows.settle(self.prior, scale)

    def totals(self):
        """The sums of the stored rows, in float64."""
        return self.rows.totals()

    def undo(self, change):
        """Put back what ``change`` altered."""
        if change != self._change:
            return
        for part in self._parts():
            part.rollback()
            part.begin()
        self._pieces, self._statistics = {}, {}

    def stored(self):
        """The block's rows of the stored array."""
        return self.rows.array

    def held_state(self, slot):
        """The block's rows of the state in ``slot``."""
        return self.states[slot]

    def _parts(self):
        return [self.rows, *self.states]

    def keep(self, change):
        """Keep the changes before ``change``, which alters nothing."""
        self._begin(change)

    def _begin(self, change):
        """Keep what earlier changes altered once ``change`` begins."""
        if change != self._change:
            for part in self._parts():
                part.commit()
                part.begin()
            self._change = change
            self._pieces, self._statistics = {}, {}


class RowShards(ScaledStore):
    """lambda's store on a cluster: blocks of rows of the stored array and
    of the mechanisms' row states, held by the workers.

    The client keeps the scale of lambda = eta + c (stored - eta) and the
    sums over the rows (:class:`~sklearn_svi._store.ScaledStore`); each pass
    over the rows is a call to every block, which runs it on its
    :class:`~sklearn_svi._store.StoredRows` or on its rows of a mechanism's
    state (:meth:`call_rows`) and returns its sums, added in the order of
    the rows. It takes part in the model's transactions: each
    is a change of the blocks, which a rollback undoes on every block.
    Pickled, it is the handle of the blocks, without the client's scale;
    :meth:`gathered` is the store a saved model holds.

    Parameters
    ----------
    actors : list of distributed.Actor
        The :class:`ModelShard` of each block, in the order of the rows.
    bounds : ndarray of shape (n_shards + 1,)
        The first row of each block, and the number of rows.
    n_components : int
        Number of columns.
    dtype : dtype
        Floating point type.
    timeout : float or None, default=None
        Seconds that a call waits for a block before it stops with an
        error; None for no limit.
    futures : list of Future
        The actors' futures, which keep them alive; the handle sent to a
        worker leaves them behind.
    """

    def __init__(self, actors, bounds, n_components, dtype, timeout=None, futures=()):
        super().__init__((int(bounds[-1]), n_components), dtype)
        self.actors = actors
        self.bounds = bounds
        self.timeout = timeout
        self.futures = list(futures)
        self.change = 0

    @classmethod
    def started(cls, client, shape, dtype, columns, workers, timeout=None):
        """lambda's stored array of ``shape`` and ``dtype`` in one block of
        rows per worker, each held by a :class:`ModelShard`, made of its
        ``columns`` (batches of (first column, block)) one batch after the
        other and one block after the other, so that the client holds one
        batch and one block's piece of it at most; calls wait ``timeout``
        seconds at most."""
        bounds = np.linspace(0, shape[0], len(workers) + 1).astype(np.intp)
        futures = [
            client.submit(
                ModelShard,
                int(stop - start),
                shape[1],
                dtype,
                int(start),
                actor=True,
                workers=[worker],
            )
            for worker, start, stop in zip(workers, bounds[:-1], bounds[1:])
        ]
        actors = [future.result(timeout=timeout) for future in futures]
        shards = cls(actors, bounds, shape[1], dtype, timeout, futures)
        for first, block in columns:
            for actor, start, stop in shards._blocks():
                piece = np.ascontiguousarray(block[start:stop], dtype=dtype)
                shards._results([actor.write_columns(first, piece)])
        return shards

    @classmethod
    def scattered(cls, client, store, workers, timeout=None):
        """:meth:`started` from a :class:`~sklearn_svi._store.LocalStore`,
        its scale kept."""
        stored = store.stored
        columns = iter([(0, stored)])
        shards = cls.started(
            client, stored.shape, stored.dtype, columns, workers, timeout
        )
        shards.scaling = store.scaling
        return shards

    def hold(self, prior, states):
        """Give each block its rows of ``prior`` (eta, in the form of the
        compiled passes) and of the mechanisms' row ``states`` (each a
        :class:`~sklearn_svi._mechanisms.RowState`), in their order."""
        self._results(
            [
                actor.hold(
                    np.ascontiguousarray(prior[start:stop]),
                    [state.rows_between(start, stop) for state in states],
                )
                for actor, start, stop in self._blocks()
            ]
        )

    def _blocks(self):
        """Each block's actor, first row and end."""
        return zip(self.actors, self.bounds[:-1], self.bounds[1:])

    def lost(self):
        """Whether a worker that held a block was lost, and the block with it."""
        return any(future.status != "finished" for future in self.futures)

    def __getstate__(self):
        # The handle: the client's scale and saved state stay behind.
        state = {**vars(self), "futures": []}
        for name in ("scaling", "_saved_scaling"):
            state.pop(name)
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self.scaling, self._saved_scaling = Scaling(), None

    def _each_block(self, held):
        """``held(actor)``'s result for each block, one block after the
        other."""
        for actor in self.actors:
            (result,) = self._results([held(actor)])
            yield result

    def stored_array(self):
        """The stored array, gathered one block after the other into it."""
        stored = np.empty(self.shape, dtype=self.dtype)
        blocks = self._each_block(lambda actor: actor.stored())
        for (_, start, stop), rows in zip(self._blocks(), blocks):
            stored[start:stop] = rows
        return stored

    def held_rows(self, slot, kind):
        """The state of the rows in ``slot`` on the blocks, an object of
        class ``kind``, gathered one block after the other."""
        parts = self._each_block(lambda actor: actor.held_state(slot))
        return kind.stacked(list(parts), self.bounds[:-1])

    @property
    def stored(self):
        return self

    def array(self):
        return self.gathered().array()

    def rows_block(self, rows, column_factors=None):
        block = self.rows_of(rows, self.scale)
        if column_factors is not None:
            block = (block * column_factors).astype(self.dtype, copy=False)
        return block, rows

    def gathered(self):
        return LocalStore(self.stored_array(), scaling=self.scaling)

    def rows_of(self, rows, scale):
        """eta + ``scale`` (stored - eta) on the sorted ``rows``, read from
        the blocks that hold them."""
        cuts = np.searchsorted(rows, self.bounds)
        blocks = self._results(
            [
                actor.rows_of(rows[first:last], scale)
                for actor, first, last in zip(self.actors, cuts[:-1], cuts[1:])
                if last > first
            ]
        )
        if not blocks:
            return np.empty((0, self.shape[1]), dtype=self.dtype)
        return np.concatenate(blocks)

    def _on_every_block(self, call):
        """``call(actor)`` on every block; the results in the order of the
        rows."""
        return self._results([call(actor) for actor in self.actors])

    def _stored_totals(self):
        return _added(self._on_every_block(lambda actor: actor.totals()))

    def _add(self, total, factor):
        total = self._sent(total)
        results = self._on_every_block(
            lambda actor: actor.add(self.change, total, factor)
        )
        added = _added([shard_added for shard_added, _ in results])
        return added, all(finite for _, finite in results)

    def _step_toward(self, target, rho):
        target = self._sent(target)
        return _added(
            self._on_every_block(
                lambda actor: actor.step_toward(self.change, target, rho)
            )
        )

    def _settle(self, prior, scale):
        self._on_every_block(lambda actor: actor.settle(self.change, scale))

    def _project(self, projection, prior):
        return sum(
            self._on_every_block(lambda actor: actor.project(self.change, projection))
        )

    def receive(self, change, draw, index, statistic):
        """Hand each shard its rows of part ``index``'s statistic."""
        cuts = np.searchsorted(statistic.rows, self.bounds)
        self._results(
            [
                actor.receive(
                    change,
                    draw,
                    index,
                    statistic.rows[first:last],
                    statistic.block[first:last],
                )
                for actor, first, last in zip(self.actors, cuts[:-1], cuts[1:])
                if last > first
            ]
        )

    def call_rows(self, slot, function, *arguments):
        """``function``, one of the ``row_calls`` of the state in ``slot``,
        on every block: None, or its sums over all rows."""
        arguments = tuple(self._sent(argument) for argument in arguments)
        results = self._on_every_block(
            lambda actor: actor.call(self.change, slot, function, arguments)
        )
        return None if results[0] is None else _added(results)

    def held_value(self, slot, function, *arguments):
        """The handle of ``function``'s value, one of the ``row_values`` of
        the state in ``slot``, which each block reads of its rows."""
        return HeldValue(
            slot, function, tuple(self._sent(argument) for argument in arguments)
        )

    def _sent(self, argument):
        """An argument of a call on the blocks, as they receive it: the
        store stands for each block's stored rows, and lambda^ leaves eta
        behind, which each block holds of its rows."""
        if argument is self:
            return StoredRowsOnBlocks()
        if isinstance(argument, NoisyOptimum):
            return OptimumOnBlocks(
                self._sent(argument.total),
                argument.scale,
                argument.negatively_weighted,
            )
        return argument

    def _results(self, actor_futures):
        """The calls' results, or a clear error after ``timeout`` seconds."""
        try:
            return [future.result(timeout=self.timeout) for future in actor_futures]
        except TimeoutError:
            raise TimeoutError(
                f"A block of lambda did not answer within {self.timeout:g} s; "
                "its worker may hang. The update stops, and the blocks that "
                "answered undo it."
            ) from None

    def begin(self):
        """A new change of the blocks begins."""
        super().begin()
        self.change += 1

    def keep(self):
        """The blocks keep every change so far, and let go of what they
        saved to undo it and of the statistics that their mechanisms no
        longer need."""
        self.change += 1
        self._on_every_block(lambda actor: actor.keep(self.change))

    def rollback(self):
        """Undo the change on every block.

        A block lost with its worker cannot be undone, and the fit cannot go
        on: the error that stopped the update is the one raised.
        """
        with contextlib.suppress(Exception):
            self._on_every_block(lambda actor: actor.undo(self.change))
        super().rollback()

    def release(self):
        """Let the actors go."""
        for future in self.futures:
            future.release()
        self.futures = []


def _added(sums):
    """The arrays ``sums`` added in their order, in float64."""
    total = np.zeros(len(sums[0]))
    # An overflow is refused by the caller, which checks the sums.
    with np.errstate(over="ignore", invalid="ignore"):
        for part in sums:
            total += part
    return total
