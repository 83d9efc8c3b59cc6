"""What the client holds of the values and the row states that the blocks of
lambda hold (:mod:`sklearn_svi._dask._held`).

The client names a value on the rows by a handle, and a block that receives
the handle in a call reads its own rows of the value
(:meth:`ModelShard.received <sklearn_svi._dask._blocks.ModelShard.received>`,
through each handle's ``on_block``).
"""

import functools
from dataclasses import dataclass

from .._mechanisms import NoisyOptimum


class _StatisticOnBlocks:
    """What :meth:`lambda^ <sklearn_svi._mechanisms.NoisyOptimum>` and the
    statistics that the blocks hold answer on the client: their pieces are
    on the blocks."""

    # What ``_after_update`` may read of a statistic; the blocks keep no
    # per-sample vector (learned priors are refused).
    sample_mean = None

    def lists_all(self, n_rows):
        """Not known on the client: the blocks hold the rows."""
        return False

    def in_type(self, dtype):
        """The handle itself: the blocks hold the values in their type."""
        return self


@dataclass(frozen=True)
class HeldStatistic(_StatisticOnBlocks):
    """A minibatch statistic whose pieces the blocks hold, by the number of
    its update.

    Parameters
    ----------
    draw : int
        The update's number: the blocks keep the pieces by it.
    negatively_weighted : bool, default=False
        Whether a sample had a negative annealing weight.
    """

    draw: int
    negatively_weighted: bool = False

    def on_block(self, block):
        """The statistic on the block's rows."""
        return block.statistic(self.draw, self.negatively_weighted)


@dataclass(frozen=True)
class HeldValue(_StatisticOnBlocks):
    """A value of a mechanism's rows that the blocks hold: ``function`` of
    the block's state in ``slot`` (one of the rows' ``row_values``).

    Parameters
    ----------
    slot : int
        The state's place on the blocks.
    function : function
        The value's method of the rows' class.
    arguments : tuple
        Its arguments, as the blocks receive them.
    """

    slot: int
    function: object
    arguments: tuple = ()

    def on_block(self, block):
        """The value of the block's rows."""
        return self.function(block.states[self.slot], *block.received(self.arguments))


@dataclass(frozen=True)
class OptimumOnBlocks:
    """lambda^ = eta + scale * total as the blocks receive it: each block
    reads its rows of the total and its own rows of eta."""

    total: object
    scale: float
    negatively_weighted: bool

    def on_block(self, block):
        (total,) = block.received((self.total,))
        return NoisyOptimum(total, self.scale, block.prior, self.negatively_weighted)


class StoredRowsOnBlocks:
    """lambda's stored array as the blocks receive it: each block reads its
    own rows."""

    def on_block(self, block):
        return block.rows.array


class HeldRows:
    """A mechanism's ``rows`` (a :class:`~sklearn_svi._mechanisms.RowState`)
    held by the blocks of lambda, in their ``slot``: it stands in the rows'
    object on the client.

    Each call that the rows' class declares (its ``row_calls``) runs on
    every block, on the block's rows, and returns the blocks' sums added in
    the order of the rows; each value that it declares (its
    ``row_values``) is a :class:`HeldValue`, resolved by the blocks that
    receive it. The blocks undo their rows with their change, so that the
    stand-in's own transaction records nothing. Pickled, it is the rows'
    state, gathered.

    Parameters
    ----------
    shards : RowShards
        The blocks.
    slot : int
        The place of the state on each block.
    kind : type
        The rows' class.
    """

    def __init__(self, shards, slot, kind):
        self.shards = shards
        self.slot = slot
        self.kind = kind
        for call in kind.row_calls:
            setattr(
                self, call.__name__, functools.partial(shards.call_rows, slot, call)
            )
        for value in kind.row_values:
            setattr(
                self, value.__name__, functools.partial(shards.held_value, slot, value)
            )

    def gathered(self):
        """The rows' state, gathered from the blocks."""
        return self.shards.held_rows(self.slot, self.kind)

    def begin(self):
        """Nothing to record: the blocks record their changes."""

    def commit(self):
        """Nothing to keep: the blocks keep their changes."""

    def rollback(self):
        """Nothing to undo: the blocks undo their rows with their change."""

    def __reduce__(self):
        return _unchanged, (self.gathered(),)


def _unchanged(value):
    """``value`` itself: what a pickled :class:`HeldRows` loads as, the rows'
    state gathered from the blocks."""
    return value
