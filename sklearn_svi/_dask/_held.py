"""lambda partitioned by rows over the workers of a Dask cluster.

With Dask's configuration ``"sklearn-svi.partition-model"`` set, a fit on a
cluster keeps the stored array of lambda (lambda = eta + c (stored - eta),
:mod:`sklearn_svi._store`) and the mechanisms' states of each row (the
smoothing window's statistics, a filter's averages and clocks: each
mechanism's ``rows``, a :class:`~sklearn_svi._mechanisms.RowState`) in one
block of rows per worker, each held by a Dask actor, a :class:`ModelShard`.
An update then moves no part of them through the client:

1. each part of the minibatch (one per worker, :mod:`sklearn_svi._dask`)
   asks the blocks for the rows that its local step reads, straight from
   worker to worker, computes its statistic, and hands each block the rows
   of the statistic that it holds;
2. the client runs the update as on one machine (``OnlineUpdateMixin``),
   with :class:`RowShards` as lambda's store and one stand-in,
   :class:`HeldRows`, in the place of every mechanism's ``rows``. Each pass
   over the rows becomes a call to every block, which runs the pass of one
   machine on its rows (:class:`~sklearn_svi._store.StoredRows`, or the
   call that the rows' class declares) and returns its sums (the filter's
   norms, the new rows' totals), added on the client in the order of the
   rows; the client holds handles of the values on the rows (the window's
   total, :mod:`sklearn_svi._dask._handles`).

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

from ._blocks import RowShards
from ._handles import HeldRows

# The key of Dask's configuration that partitions lambda over the workers.
PARTITION_KEY = "sklearn-svi.partition-model"


def partitions_model():
    """Whether Dask's configuration asks for lambda partitioned by rows."""
    import dask

    return bool(dask.config.get(PARTITION_KEY, False))


def check_partitionable(model):
    """Refuse a fit whose update needs more of lambda than a block holds,
    before anything changes.

    The workers hold lambda and the mechanisms' states of each row for a
    model that keeps lambda scaled (LDA) with fixed priors;
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


@contextlib.contextmanager
def held_by_workers(model, client, timeout):
    """A context in which the client's workers hold the model's lambda and
    the mechanisms' states of its rows, one block of rows per worker: the
    model's store is the blocks' (:class:`RowShards`) and each mechanism's
    ``rows`` a :class:`HeldRows` until the context ends, and then the
    gathered arrays again, lambda written out (settled) when the context
    ends without an error.

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
    keepers = model._update_state.row_keepers()
    # lambda is on the client, or its blocks were started with the fit
    # (``ClusterRows.stored_columns``).
    shards = model._natural_store
    on_client = not isinstance(shards, RowShards)
    if on_client:
        shards = RowShards.scattered(
            client, model._natural_store, sorted(client.nthreads()), timeout
        )
    try:
        shards.hold(model._compiled_prior(), [keeper.rows for keeper in keepers])
    except BaseException:
        shards.release()
        if not on_client:
            del model._natural_store
        raise
    held = [
        HeldRows(shards, slot, type(keeper.rows)) for slot, keeper in enumerate(keepers)
    ]
    try:
        model._natural_store = shards
        for keeper, rows in zip(keepers, held):
            keeper.rows = rows
        yield shards
        shards.keep()
        # The blocks write lambda out, so that the client receives lambda
        # itself, once, and ``components_`` is a view of it.
        shards.settle()
    finally:
        try:
            # The row states first, so that their blocks and their stacked
            # copies are not all held beside lambda.
            for keeper, rows in zip(keepers, held):
                keeper.rows = rows.gathered()
            model._natural_store = shards.gathered()
        except Exception as error:
            del model._natural_store
            raise RuntimeError(
                "A worker that held a block of lambda's rows was lost, and the "
                "block with it: the model is no longer fitted. Load its last "
                "Checkpoint and continue the fit from there."
            ) from error
        finally:
            shards.release()
