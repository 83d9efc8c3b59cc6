"""lambda partitioned by rows over the workers of a Dask cluster.

With Dask's configuration ``"sklearn-svi.partition-model"`` set, a fit on a
cluster keeps the stored array of lambda (lambda = eta + c (stored - eta),
:mod:`sklearn_svi._store`), the smoothing window and a
filter's state of each row in one block of rows per worker, each held by a
Dask actor, a :class:`ModelShard`. An update then moves no part of them
through the client:

1. each part of the minibatch (one per worker, :mod:`sklearn_svi._cluster`)
   asks the blocks for the rows that its local step reads, straight from
   worker to worker, computes its statistic, and hands each block the rows
   of the statistic that it holds;
2. the client runs the update as on one machine (``OnlineUpdateMixin``),
   with :class:`RowShards` as lambda's store, and handles in the place of
   the mechanisms' rows: :class:`HeldWindow` for the window and
   :class:`HeldFilterRows` for a filter's rows. Each pass over the rows
   becomes a call to every block, which runs the pass of one machine on its
   rows (:class:`~sklearn_svi._store.StoredRows`) and returns its sums (the
   filter's norms, the new rows' totals), added on the client in the order
   of the rows.

A new fit starts lambda on the blocks: the client draws the initial topics
a batch at a time and writes each block its rows of the batch
(:meth:`RowShards.started`), so that it never holds all of lambda before
the end, when the blocks write lambda out and send it back one after the
other. The client keeps the scalars, the sums of lambda over the rows (the
topics' totals) and the schedule: per update it sends and receives a few
bytes per worker and per component, none per row. Each block keeps what a
change (one transaction of the model) altered until the next one begins, so
that a failed update is undone on every block. The model's own copies are
written back when the fit ends or stops, and whenever the model is pickled
(a ``Checkpoint``).
"""

import contextlib
from dataclasses import dataclass

import numpy as np

from ._mechanisms import (
    FilterRows,
    NoisyOptimum,
    SmoothingWindow,
    SparseStatistic,
    added_statistics,
    frozen_prior,
)
from ._store import LocalStore, ScaledStore, Scaling, StoredRows

# The key of Dask's configuration that partitions lambda over the workers.
PARTITION_KEY = "sklearn-svi.partition-model"


def partitions_model():
    """Whether Dask's configuration asks for lambda partitioned by rows."""
    import dask

    return bool(dask.config.get(PARTITION_KEY, False))


@dataclass(frozen=True)
class HeldStatistic:
    """A minibatch statistic, or a window's total, whose pieces the shards
    hold.

    Parameters
    ----------
    draw : int
        The update's number: the shards keep the pieces by it.
    negatively_weighted : bool, default=False
        Whether a sample had a negative annealing weight.
    lists_every_row : bool, default=False
        Whether the total lists every row (the running sum of a window of
        L > 1).
    windowed : bool, default=False
        Whether it is the total of the fit's window, which the shards keep;
        otherwise the pieces of update ``draw`` themselves (a filter's start
        reads them outside the window).
    """

    draw: int
    negatively_weighted: bool = False
    lists_every_row: bool = False
    windowed: bool = False
    # What ``_after_update`` may read of a statistic; the blocks keep no
    # per-sample vector (learned priors are refused).
    sample_mean = None

    def lists_all(self, n_rows):
        """Whether it lists all ``n_rows`` rows of lambda."""
        return self.lists_every_row

    def in_type(self, dtype):
        """The statistic itself: the blocks hold its pieces in their type."""
        return self


def check_partitionable(model):
    """Refuse a fit whose update needs more of lambda than a block holds,
    before anything changes.

    The workers hold lambda, the smoothing window and a filter's state of
    each row for a model that keeps lambda scaled (LDA) with fixed priors;
    every mechanism composes with it. Learned priors read all of lambda.

    Raises
    ------
    ValueError
        Naming what the model's parameters ask for instead.
    """
    reasons = []
    if not model._scales_rows:
        reasons.append(f"{type(model).__name__} does not keep lambda scaled")
    if model._learns_priors():
        reasons.append("learned priors")
    if reasons:
        raise ValueError(
            f"Dask's configuration {PARTITION_KEY!r} partitions lambda over "
            "the workers for LDA with fixed priors; this fit has "
            + ", ".join(reasons)
            + f". Fit it with {PARTITION_KEY!r} set to False."
        )


class ModelShard:
    """Rows ``start`` to ``start + n_rows`` of lambda's stored array (their
    :class:`~sklearn_svi._store.StoredRows`), of the smoothing window and of
    the filter's state, held by one worker (a Dask actor).

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
        self.window = None
        self.filter_rows = None
        self._change = None
        # The pieces of each update's statistic, by its number and then by
        # the part's index.
        self._pieces = {}
        # The rows that the filter visited last.
        self._observed = None

    def write_columns(self, first, block):
        """The stored rows' columns ``first`` to ``first + block.shape[1] - 1``."""
        self.rows.array[:, first : first + block.shape[1]] = block

    def hold(self, prior, window, filter_rows):
        """Take eta on the rows, in the form the compiled passes read (of
        shape (n_rows, 1) or (n_rows, n_components)), their smoothing window
        (its indices counted from ``start``) and a filter's state of them
        (None for a schedule)."""
        self.prior = prior
        self.window = window
        self.filter_rows = filter_rows

    def rows_of(self, rows, scale):
        """lambda on ``rows`` (indices in lambda): eta + c (stored - eta)."""
        local_rows = np.ascontiguousarray(rows - self.start, dtype=np.intp)
        return self.rows.rows_of(local_rows, self.prior, scale)

    def receive(self, change, draw, index, rows, block):
        """Keep the piece of part ``index`` of update ``draw``'s statistic."""
        self._begin(change)
        piece = SparseStatistic(rows - self.start, block)
        self._pieces.setdefault(draw, {})[index] = piece

    def _statistic(self, draw, negatively_weighted=False):
        """Update ``draw``'s statistic on these rows, its pieces added in
        the order of the parts, and forgotten."""
        pieces = self._pieces.pop(draw, {})
        array = self.rows.array
        total = added_statistics(
            [pieces[index] for index in sorted(pieces)], array.shape[1], array.dtype
        )
        return SparseStatistic(total.rows, total.block, None, negatively_weighted)

    def push(self, change, draw, negatively_weighted):
        """Push update ``draw``'s statistic into the window."""
        self._begin(change)
        self.window.push(self._statistic(draw, negatively_weighted))

    def observe(self, change, draw, total_scale, *arguments):
        """The filter's pass over these rows (:meth:`FilterRows.observe`,
        whose ``arguments`` follow lambda) toward eta + ``total_scale``
        times the window's total, or, for a ``draw``, that update's pieces;
        its sums."""
        self._begin(change)
        total = self.window.sum if draw is None else self._statistic(draw)
        self._observed = total
        return self.filter_rows.observe(
            NoisyOptimum(total, total_scale, self.prior), self.rows.array, *arguments
        )

    def restart_clock(self, change):
        """The filter's clock restarts on every row (:meth:`FilterRows.restart`)."""
        self._begin(change)
        self.filter_rows.restart(self.prior)

    def advance_clock(self, change, clock_decay, clock_offset):
        """The rows the filter visited last take the clock's D and F."""
        self._begin(change)
        self.filter_rows.advance(self._observed, clock_decay, clock_offset)

    def add(self, change, factor):
        """stored += factor (the window's total) on the total's rows
        (:meth:`StoredRows.add`)."""
        self._begin(change)
        return self.rows.add(self.window.sum, factor)

    def step_toward(self, change, total_scale, rho):
        """stored <- (1 - rho) stored + rho (eta + ``total_scale`` total)
        on every row (:meth:`StoredRows.step_toward`)."""
        self._begin(change)
        target = NoisyOptimum(self.window.sum, total_scale, self.prior)
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
        self._pieces = {}

    def stored(self):
        """The block's rows of the stored array."""
        return self.rows.array

    def held_window(self):
        """The block's rows of the smoothing window."""
        return self.window

    def held_filter_rows(self):
        """The block's rows of a filter's state, None for a schedule."""
        return self.filter_rows

    def _parts(self):
        parts = (self.rows, self.window, self.filter_rows)
        return [part for part in parts if part is not None]

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
            self._pieces = {}
            self._observed = None


class RowShards(ScaledStore):
    """lambda's store on a cluster: blocks of rows of the stored array, of
    the smoothing window and of the filter's state, held by the workers.

    The client keeps the scale of lambda = eta + c (stored - eta) and the
    sums over the rows (:class:`~sklearn_svi._store.ScaledStore`); each pass
    over the rows is a call to every block, which runs it on its
    :class:`~sklearn_svi._store.StoredRows` and returns its sums, added in
    the order of the rows. It takes part in the model's transactions: each
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

    def hold(self, prior, window, filter_rows):
        """Give each block its rows of ``prior`` (eta, in the form of the
        compiled passes), of the smoothing ``window`` and of a filter's
        ``filter_rows`` (or None)."""
        self._results(
            [
                actor.hold(
                    np.ascontiguousarray(prior[start:stop]),
                    window.rows_between(start, stop, self.shape[1]),
                    None
                    if filter_rows is None
                    else filter_rows.rows_between(start, stop),
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

    def window(self):
        """The smoothing window of all the rows, gathered."""
        windows = self._each_block(lambda actor: actor.held_window())
        return SmoothingWindow.stacked(list(windows), self.bounds[:-1])

    def filter_rows(self):
        """A filter's state of all the rows, gathered; None for a schedule."""
        rows = list(self._each_block(lambda actor: actor.held_filter_rows()))
        return None if rows[0] is None else FilterRows.stacked(rows)

    def contents(self):
        """The store of this process with lambda's values, the smoothing
        window and the filter's state of the rows (None for a schedule),
        gathered. The window and the filter's state come first, so that
        their blocks and their stacked copies are not all held beside
        lambda."""
        window, filter_rows = self.window(), self.filter_rows()
        return self.gathered(), window, filter_rows

    # -- the store ----------------------------------------------------------------

    @property
    def stored(self):
        return self

    def array(self):
        return self.gathered().array()

    def rows_block(self, rows):
        return self.rows_of(rows, self.scale), rows

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
        # The blocks add their window's total, which ``total`` stands for.
        results = self._on_every_block(lambda actor: actor.add(self.change, factor))
        added = _added([shard_added for shard_added, _ in results])
        return added, all(finite for _, finite in results)

    def _step_toward(self, target, rho):
        return _added(
            self._on_every_block(
                lambda actor: actor.step_toward(self.change, target.scale, rho)
            )
        )

    def _settle(self, prior, scale):
        self._on_every_block(lambda actor: actor.settle(self.change, scale))

    def _project(self, projection, prior):
        return sum(
            self._on_every_block(lambda actor: actor.project(self.change, projection))
        )

    # -- the window's and the filter's passes ---------------------------------------

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

    def push(self, draw, negatively_weighted):
        """Push update ``draw``'s statistic into every shard's window."""
        self._on_every_block(
            lambda actor: actor.push(self.change, draw, negatively_weighted)
        )

    def observe(self, draw, total_scale, *arguments):
        """The filter's pass on every shard (:meth:`ModelShard.observe`): its
        sums over all rows."""
        return _added(
            self._on_every_block(
                lambda actor: actor.observe(self.change, draw, total_scale, *arguments)
            ),
            size=6,
        )

    def restart_clock(self):
        self._on_every_block(lambda actor: actor.restart_clock(self.change))

    def advance_clock(self, clock_decay, clock_offset):
        self._on_every_block(
            lambda actor: actor.advance_clock(self.change, clock_decay, clock_offset)
        )

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

    # -- one part of a transaction ------------------------------------------------

    def begin(self):
        """A new change of the blocks begins."""
        super().begin()
        self.change += 1

    def keep(self):
        """The blocks keep every change so far, and let go of what they
        saved to undo it and of the statistics that their windows no longer
        need."""
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


def _added(sums, size=None):
    """The arrays ``sums`` added in their order, in float64."""
    total = np.zeros(len(sums[0]) if size is None else size)
    # An overflow is refused by the caller, which checks the sums.
    with np.errstate(over="ignore", invalid="ignore"):
        for part in sums:
            total += part
    return total


class HeldFilterRows:
    """The client's side of a filter's state of the rows that the blocks
    hold: it stands in the filter (``FilteredStepSize.rows``) during a fit
    whose lambda the workers hold, and sends the passes to the blocks;
    pickled, it is the whole state, gathered.

    Parameters
    ----------
    shards : RowShards
        The blocks.
    prior : ndarray or None
        eta when the filter's clock last restarted, as the filter keeps it.
    """

    def __init__(self, shards, prior):
        self.shards = shards
        self.prior = prior
        self._saved = prior

    def observe(self, target, current, current_scale, clock, decay, window, every_row):
        total = target.total
        return self.shards.observe(
            None if total.windowed else total.draw,
            target.scale,
            current_scale,
            clock,
            decay,
            window,
            every_row,
        )

    def restart(self, prior):
        self.shards.restart_clock()
        self.prior = frozen_prior(prior)

    def advance(self, total, clock_decay, clock_offset):
        self.shards.advance_clock(clock_decay, clock_offset)

    def begin(self):
        self._saved = self.prior

    def commit(self):
        self._saved = self.prior

    def rollback(self):
        # The blocks undo their rows with the change.
        self.prior = self._saved

    def __reduce__(self):
        rows = self.shards.filter_rows()
        rows.prior = self.prior
        return _unchanged, (rows,)


class HeldWindow:
    """The client's side of a smoothing window whose statistics the shards
    hold: how many there are and which had negative weights.

    It stands in the update's state during a fit whose lambda the workers
    hold; pickled, it is the whole window, gathered.

    Parameters
    ----------
    length : int
        L.
    flags : tuple of bool
        Whether each queued statistic had a negative annealing weight,
        oldest first.
    shards : RowShards
        The blocks that hold the statistics.
    """

    def __init__(self, length, flags, shards):
        self.length = length
        self.flags = tuple(flags)
        self.shards = shards
        self.draw = None
        self._saved = (self.flags, self.draw)

    @property
    def count(self):
        return len(self.flags)

    @property
    def negatively_weighted(self):
        return any(self.flags)

    @property
    def sum(self):
        """The handle of the window's total, which the shards hold."""
        return HeldStatistic(
            self.draw,
            self.negatively_weighted,
            lists_every_row=self.length > 1,
            windowed=True,
        )

    def push(self, statistic):
        """Push the statistic held by the shards into their windows."""
        self.shards.push(statistic.draw, statistic.negatively_weighted)
        self.flags = (*self.flags, statistic.negatively_weighted)[-self.length :]
        self.draw = statistic.draw

    def begin(self):
        self._saved = (self.flags, self.draw)

    def commit(self):
        if self.length == 1:
            # As the shards' windows do when they keep the change.
            self.flags, self.draw = (), None
        self._saved = (self.flags, self.draw)

    def rollback(self):
        # The shards' windows are undone with their rows of lambda.
        self.flags, self.draw = self._saved

    def __reduce__(self):
        return _unchanged, (self.shards.window(),)


@contextlib.contextmanager
def held_by_workers(model, client, timeout):
    """A context in which the client's workers hold the model's lambda, its
    smoothing window and a filter's rows, one block of rows per worker;
    the model's update state holds the handles (:class:`RowShards`,
    :class:`HeldWindow`, :class:`HeldFilterRows`) until the context ends,
    and then the gathered arrays again: lambda written out (settled) when
    the context ends without an error.

    Parameters
    ----------
    model : OnlineUpdateMixin
        A model whose fit has begun (it has lambda's store, in this process
        or on the blocks, and its update state).
    client : distributed.Client
        The cluster's client.
    timeout : float
        Seconds that a call waits for a block.

    Yields
    ------
    shards : RowShards

    Raises
    ------
    RuntimeError
        When the blocks cannot be gathered because a worker was lost with
        one: the model is then no longer fitted.
    """
    state = model._update_state
    filter_rows = getattr(state.step_size, "rows", None)
    # lambda is on the client, or its blocks were started with the fit
    # (``ClusterRows.stored_columns``).
    shards = model._natural_store
    on_client = not isinstance(shards, RowShards)
    if on_client:
        shards = RowShards.scattered(
            client, model._natural_store, sorted(client.nthreads()), timeout
        )
    try:
        shards.hold(model._compiled_prior(), state.window, filter_rows)
    except BaseException:
        shards.release()
        if not on_client:
            del model._natural_store
        raise
    try:
        model._natural_store = shards
        state.window = HeldWindow(
            state.window.length,
            [statistic.negatively_weighted for statistic in state.window.queue],
            shards,
        )
        if filter_rows is not None:
            state.step_size.rows = HeldFilterRows(shards, filter_rows.prior)
        yield shards
        shards.keep()
        # The blocks write lambda out, so that the client receives lambda
        # itself, once, and ``components_`` is a view of it.
        shards.settle()
    finally:
        try:
            model._natural_store, state.window, gathered_rows = shards.contents()
            if gathered_rows is not None:
                gathered_rows.prior = state.step_size.rows.prior
                state.step_size.rows = gathered_rows
        except Exception as error:
            del model._natural_store
            raise RuntimeError(
                "A worker that held a block of lambda's rows was lost, and the "
                "block with it: the model is no longer fitted. Load its last "
                "Checkpoint and continue the fit from there."
            ) from error
        finally:
            shards.release()


def _unchanged(value):
    """``value`` itself: what a pickled ``HeldWindow`` or ``HeldFilterRows``
    loads as, the whole state gathered from the blocks."""
    return value
