"""The tasks that run on the workers: a part's preparation and local step,
the tree that adds the parts' statistics, and the models' methods on row
blocks."""

import pickle

import numpy as np

from .._mechanisms import added_statistics
from .._store import LocalStore
from .._threads import threads
from ._client import _stacked


def _validated_block(model, block, index, reset, dtype):
    """The model's validation of one row block, which names the block."""
    try:
        return model._check_training_data(block, reset=reset, dtype=dtype)
    except ValueError as error:
        raise ValueError(f"In row block {index} of X: {error}") from error


def _shape(block):
    return block.shape[0], block.shape[1], block.dtype


def _assembled(*parts):
    """The samples of prepared parts, in their order in the minibatch."""
    X_batch = _stacked([part[0] for part in parts])
    positions = np.concatenate([part[2] for part in parts])
    return X_batch[np.argsort(positions, kind="stable")]


def _prepared_part(model, rows_by_block, positions, *blocks):
    """The rows ``rows_by_block`` of each block, one under the other, the
    same rows prepared for the model's local step, and their ``positions``
    in the minibatch."""
    X_part = _stacked([block[rows] for block, rows in zip(blocks, rows_by_block)])
    return X_part, model._prepare_minibatch(X_part), positions


def _block_order(order, offset, n_rows):
    """The positions in the pass's ``order`` of a block's rows, sorted, and
    the block's rows in that order."""
    positions = order.positions_of(np.arange(offset, offset + n_rows))
    by_position = np.argsort(positions)
    return positions[by_position], by_position


def _sampled_part(model, span, n_blocks, *blocks_and_orders):
    """The samples of the ``n_blocks`` blocks at the positions ``span`` of
    the pass's order (each block's ``_block_order`` follows the blocks),
    prepared as by ``_prepared_part``."""
    blocks, orders = blocks_and_orders[:n_blocks], blocks_and_orders[n_blocks:]
    rows_by_block, positions = [], []
    for sorted_positions, rows in orders:
        first, last = np.searchsorted(sorted_positions, [span.start, span.stop])
        rows_by_block.append(rows[first:last])
        positions.append(sorted_positions[first:last] - span.start)
    return _prepared_part(model, rows_by_block, np.concatenate(positions), *blocks)


def _rows_read(model, part):
    return model._rows_read(part[1])


def _worker_threads():
    """The number of threads of the worker that runs this task."""
    from distributed import get_worker

    return get_worker().state.nthreads


def _statistic_of_part(model, part, sample_weight, draw, n_batch):
    """The model's local step of a prepared part on all the threads of its
    worker, with its samples' weights of the minibatch's ``sample_weight``
    (None for none)."""
    weights = None if sample_weight is None else sample_weight[part[2]]
    with threads(_worker_threads()):
        return model._local_statistic(part[1], weights, draw, n_batch)


def _part_statistic(payload, part, sample_weight, draw, n_batch):
    """A part's share of the minibatch statistic, at the model in
    ``payload``, computed on all the threads of its worker; None for a
    part without samples. ``sample_weight`` holds the whole minibatch's
    weights (or is None)."""
    if part[0].shape[0] == 0:
        return None
    return _statistic_of_part(pickle.loads(payload), part, sample_weight, draw, n_batch)


def _held_part_statistic(
    payload, part, sample_weight, draw, n_batch, index, shards, change, scale
):
    """A part's share of the minibatch statistic, computed on all the
    threads of its worker at lambda's rows read from the ``shards`` that
    hold them, and handed to those shards."""
    if part[0].shape[0] == 0:
        return
    model = pickle.loads(payload)
    rows = model._rows_read(part[1])
    model._natural_store = LocalStore(shards.rows_of(rows, scale), rows=rows)
    statistic = _statistic_of_part(model, part, sample_weight, draw, n_batch)
    shards.receive(change, draw, index, statistic)


def _same(payload):
    """The payload itself: a copy of it on the worker that runs this task."""
    return payload


def _sum_of(*statistics):
    """The sum of the statistics of the parts that have samples (None for
    none)."""
    statistics = [statistic for statistic in statistics if statistic is not None]
    if not statistics:
        return None
    first = statistics[0]
    return added_statistics(statistics, first.block.shape[1], first.block.dtype)


def _minibatch_call(payload, function, *parts):
    """``function(model, X_batch)`` for the minibatch that the prepared
    parts make up, its samples in their order in the minibatch."""
    return function(pickle.loads(payload), _assembled(*parts))


def _block_call(block, method, model):
    return method(model, block)


def _partition_call(matrices, method, model):
    return [method(model, _stacked(matrices))]


def _ordered_sum(values):
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total
