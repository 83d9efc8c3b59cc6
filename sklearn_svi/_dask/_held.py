"""lambda partitioned by rows over the workers of a Dask cluster.

With Dask's configuration ``"sklearn-svi.partition-model"`` set, a fit on a
cluster keeps the stored array of lambda (lambda = eta + c (stored - eta),
:mod:`sklearn_svi._store`), the smoothing window and a
filter's state of each row in one block of rows per worker, each held by a
Dask actor, a :class:`ModelShard`. An update then moves no part of them
through the client:

1. each part of the minibatch (one per worker, :mod:`sklearn_svi._dask`)
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

from .._mechanisms import frozen_prior
from ._blocks import RowShards

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
