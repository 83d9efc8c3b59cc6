"""A minibatch on a cluster: its samples stay on the workers, one part per
worker that holds them."""

import functools
from dataclasses import dataclass

import numpy as np


def _rows_of_all(parts):
    """The rows of lambda that the parts read together, None for all."""
    rows = [part.rows_read for part in parts]
    if any(part_rows is None for part_rows in rows):
        return None
    return functools.reduce(np.union1d, rows)


@dataclass
class _Part:
    """The samples of a minibatch that one worker holds.

    Attributes
    ----------
    worker : str or None
        The address of the worker that holds the blocks, None when unknown.
    blocks : list of int
        The row blocks that hold the samples, in their order.
    rows : list of ndarray or None
        The samples' rows in each block; None when the worker finds them
        (a ``PermutedSpan``).
    positions : ndarray or None
        The samples' places in the minibatch, in the part's order (a list
        of each block's while the part is cut); None when the worker finds
        them.
    prepared : Future
        (X_part, prepared part, positions) on the worker.
    rows_read : ndarray or None
        The rows of lambda its local step reads, None for all.
    """

    worker: str | None
    blocks: list
    rows: list | None
    positions: list | np.ndarray | None
    prepared: object = None
    rows_read: np.ndarray | None = None


class _DistributedMinibatch:
    """A minibatch whose samples stay on the workers, one part per worker.

    Its parts are prepared on the workers as soon as it is made. The rows
    of lambda that they read (``reads``, futures until then) come back with
    the statistic of the update before it (:meth:`ClusterRows.statistic`),
    or when ``result()`` is asked for first.
    """

    def __init__(self, source, rows, parts):
        self.source = source
        self.rows = rows
        self.parts = parts
        self.reads = None

    @property
    def size(self):
        return len(self.rows)

    def take(self, rows_read):
        for part, rows in zip(self.parts, rows_read):
            part.rows_read = rows
        self.reads = None

    def result(self):
        if self.reads is not None:
            self.take(self.source._gathered(self.reads, "A minibatch's preparation"))
        return self
