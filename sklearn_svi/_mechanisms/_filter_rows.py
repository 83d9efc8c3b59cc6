"""The filter's state of each row of lambda, kept lazily for the rows a
minibatch does not list."""

import numpy as np

from .._threads import SUM_BLOCK_ROWS, team_size
from .._transaction import LoggedPart, spare_like
from .._update_fast import observe_difference
from ._step_sizes import frozen_prior


class FilterRows(LoggedPart):
    """The filter's state of each row of lambda: the stored average g of
    the differences, and the clock of the update that last visited the row.

    :class:`FilteredStepSize` keeps one for all of lambda's rows; the
    blocks of lambda on a cluster's workers keep one each
    (:mod:`sklearn_svi._dask._blocks`).

    Parameters
    ----------
    n_rows : int
        Number of rows.
    n_observed : int
        Number of columns observed, from the first.
    dtype : dtype
        Floating point type of lambda.

    Attributes
    ----------
    mean_difference : ndarray of shape (n_rows, n_observed)
        The stored g: each row as of the last update that visited it.
    prior : ndarray or None
        eta when the clock last restarted (a copy; one row of a broadcast),
        None before.
    """

    def __init__(self, n_rows, n_observed, dtype):
        super().__init__()
        self.mean_difference = np.zeros((n_rows, n_observed), dtype=dtype)
        self.row_decay = np.ones(n_rows)
        self.row_offset = np.zeros(n_rows)
        self.prior = None
        # A visit of every row writes the new g here and swaps it in; a
        # visit of the listed rows writes them in place and records them.
        self._spare_mean = None

    def observe(self, target, current, current_scale, clock, decay, window, every_row):
        """Fold d_t = lambda^ - lambda into g on the rows visited (every row,
        or the rows of the target's total); the sums of
        :func:`observe_difference` over them.

        Parameters
        ----------
        target : NoisyOptimum
            lambda^, on these rows.
        current : ndarray
            These rows of lambda, or of its stored array.
        current_scale : float
            c of lambda = eta + c (``current`` - eta).
        clock : tuple of float
            D_t, F_t and C_t.
        decay, window : float
            1 - 1 / tau and tau.
        every_row : bool
            Whether every row is visited.
        """
        if every_row:
            updated_mean = spare_like(self.mean_difference, self._spare_mean)
        else:
            updated_mean = self.mean_difference
            self._undo.record_rows(self.mean_difference, target.total.rows)
        sums = observe_difference(
            target.total.rows,
            target.total.block,
            target.scale,
            target.prior,
            current,
            current_scale,
            self.mean_difference,
            target.prior if self.prior is None else self.prior,
            updated_mean,
            self.row_decay,
            self.row_offset,
            *clock,
            decay,
            window,
            every_row,
            SUM_BLOCK_ROWS,
            # A visit of the listed rows alone costs too little to share.
            team_size(*current.shape) if every_row else 1,
        )
        if every_row:
            self._spare_mean, self.mean_difference = self.mean_difference, updated_mean
        return sums

    def restart(self, target):
        """After a visit of every row each row's g is up to date: the clock
        of every row restarts, and eta is kept as it is now: the prior of
        ``target``, a copy that its caller leaves unchanged."""
        self.row_decay = np.ones(len(self.row_decay))
        self.row_offset = np.zeros(len(self.row_offset))
        self.prior = target.prior

    def advance(self, total, clock_decay, clock_offset):
        """The rows of ``total``, visited, take the clock's D and F."""
        self._undo.record_rows(self.row_decay, total.rows)
        self.row_decay[total.rows] = clock_decay
        self._undo.record_rows(self.row_offset, total.rows)
        self.row_offset[total.rows] = clock_offset

    def rows_between(self, start, stop):
        """The state of rows ``start`` to ``stop - 1``, a new ``FilterRows``."""
        part = FilterRows(0, self.mean_difference.shape[1], self.mean_difference.dtype)
        part.mean_difference = self.mean_difference[start:stop].copy()
        part.row_decay = self.row_decay[start:stop].copy()
        part.row_offset = self.row_offset[start:stop].copy()
        if self.prior is not None:
            part.prior = frozen_prior(self.prior[start:stop])
        return part

    row_calls = (observe, restart, advance)
    row_values = ()

    @classmethod
    def stacked(cls, parts, starts):
        """The state whose rows from ``starts[i]`` on are those of
        ``parts[i]``: the inverse of :meth:`rows_between`."""
        first = parts[0]
        whole = cls(0, first.mean_difference.shape[1], first.mean_difference.dtype)
        whole.mean_difference = np.concatenate([part.mean_difference for part in parts])
        whole.row_decay = np.concatenate([part.row_decay for part in parts])
        whole.row_offset = np.concatenate([part.row_offset for part in parts])
        if first.prior is not None:
            whole.prior = np.concatenate([part.prior for part in parts])
        return whole

    def __getstate__(self):
        # The spare array holds no information.
        return {**super().__getstate__(), "_spare_mean": None}
