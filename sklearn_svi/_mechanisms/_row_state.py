"""The state that a mechanism keeps of each row of lambda, and how it is
partitioned by rows."""

from typing import Protocol, runtime_checkable


@runtime_checkable
class RowState(Protocol):
    """What a mechanism keeps of each row of lambda, in one object.

    A mechanism with state of every row (the smoothing window's statistics,
    a filter's averages and clocks) keeps that state in its attribute
    ``rows`` and its scalars in itself, and reaches the rows only through
    the calls that the rows' class declares. The rows can then be where
    lambda's rows are: in this process, or cut into blocks of rows on a
    cluster's workers (:mod:`sklearn_svi._dask._held`), where one stand-in
    serves every ``RowState`` by running each declared call on every block.

    Attributes
    ----------
    row_calls : tuple of functions
        The methods that read or write the rows. Each returns None or a
        sequence of sums over the rows, which blocks of rows add up in the
        order of the rows.
    row_values : tuple of functions
        The methods that return a value of the rows (a statistic on them)
        that the mechanisms pass on to other calls, on the blocks that hold
        it.
    """

    row_calls: tuple
    row_values: tuple

    def rows_between(self, start, stop):
        """The state of rows ``start`` to ``stop - 1``, as a new object whose
        row indices count from ``start``."""

    @classmethod
    def stacked(cls, parts, starts):
        """The state whose rows from ``starts[i]`` on are those of
        ``parts[i]``: the inverse of :meth:`rows_between`."""

    def begin(self):
        """Start recording changes, for :meth:`rollback`."""

    def commit(self):
        """Keep the changes since :meth:`begin`."""

    def rollback(self):
        """Undo the changes since :meth:`begin`."""
