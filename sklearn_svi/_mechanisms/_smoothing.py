"""Smoothed statistics: the window of Mandt & Blei (2014)."""

from dataclasses import dataclass

import numpy as np

from .._threads import fixed_block_rows, team_size
from .._transaction import LoggedPart, RebindingPart
from .._update_fast import replace_rows


@dataclass(frozen=True)
class SparseStatistic:
    """A minibatch statistic that is non-zero only on some rows.

    For LDA a row is a word, and a minibatch touches only its own words.

    Parameters
    ----------
    rows : ndarray of shape (n_rows,)
        Indices of the rows the statistic covers, sorted.
    block : ndarray of shape (n_rows, n_components)
        The values on those rows.
    sample_mean : ndarray of shape (n_values,) or None, default=None
        The minibatch mean of a per-sample vector that the model reads after
        the update, outside lambda (LDA learning alpha: E[log theta_d]).
    negatively_weighted : bool, default=False
        Whether some sample entered with a negative annealing weight, which
        can take the noisy optimum out of the model's feasible set.
    """

    rows: np.ndarray
    block: np.ndarray
    sample_mean: np.ndarray | None = None
    negatively_weighted: bool = False

    @property
    def nbytes(self):
        """Memory held by the statistic, in bytes."""
        extra = 0 if self.sample_mean is None else self.sample_mean.nbytes
        return self.block.nbytes + self.rows.nbytes + extra

    def positions(self, span):
        """The slice of the listed rows that fall in the slice ``span``."""
        first, last = np.searchsorted(self.rows, [span.start, span.stop])
        return slice(first, last)

    def restricted_to(self, span):
        """The row indices and values that fall in the slice ``span``."""
        listed = self.positions(span)
        return self.rows[listed], self.block[listed]

    def lists_all(self, n_rows):
        """Whether it lists all ``n_rows`` rows of the parameter."""
        return len(self.rows) == n_rows

    def in_type(self, dtype):
        """The statistic as the compiled passes read it: indices of type
        ``intp``, a C-contiguous block of type ``dtype``, and no per-sample
        vector."""
        return SparseStatistic(
            np.asarray(self.rows, dtype=np.intp),
            np.ascontiguousarray(self.block, dtype=dtype),
            negatively_weighted=self.negatively_weighted,
        )

    def rows_between(self, start, stop):
        """The statistic on rows ``start`` to ``stop - 1``, counted from
        ``start``."""
        rows, block = self.restricted_to(slice(start, stop))
        return SparseStatistic(
            rows - start, block, self.sample_mean, self.negatively_weighted
        )


def added_statistics(statistics, n_components, dtype):
    """The sum of sparse statistics, added in the order given on the union
    of their rows (and their ``sample_mean``, when they carry one).

    Parameters
    ----------
    statistics : list of SparseStatistic
        The statistics; none for a statistic of no rows.
    n_components, dtype :
        The columns and the type of the sum.

    Returns
    -------
    total : SparseStatistic
    """
    if len(statistics) == 1:
        return statistics[0]
    if not statistics:
        return SparseStatistic(
            np.empty(0, dtype=np.intp), np.empty((0, n_components), dtype=dtype)
        )
    rows = np.unique(np.concatenate([statistic.rows for statistic in statistics]))
    block = np.zeros((len(rows), n_components), dtype=dtype)
    for statistic in statistics:
        block[np.searchsorted(rows, statistic.rows)] += statistic.block
    sample_mean = None
    if statistics[0].sample_mean is not None:
        sample_mean = statistics[0].sample_mean.copy()
        for statistic in statistics[1:]:
            sample_mean += statistic.sample_mean
    return SparseStatistic(rows, block, sample_mean)


def _stacked_statistics(parts, starts):
    """The statistic whose rows from ``starts[i]`` on are those of
    ``parts[i]``."""
    return SparseStatistic(
        np.concatenate([part.rows + start for part, start in zip(parts, starts)]),
        np.concatenate([part.block for part in parts]),
        negatively_weighted=parts[0].negatively_weighted,
    )


class WindowRows(LoggedPart):
    """The rows of a smoothing window: its queued statistics and, for
    L > 1, their running sum.

    The queued statistics are stored sparsely, as row blocks, so the
    window's memory grows with the words actually seen and not with
    L x n_params x n_components. For L > 1 their sum is kept as a dense
    running sum, updated with the running-sum recursion of Mandt & Blei's
    eq. 11,

        sum_t = sum_{t-1} - S_{t-L} + S_t.

    With ``length=1`` the sum is the latest statistic itself, rows and
    values, and no dense array is kept. No later update reads it, so it is
    let go once its update is kept (:meth:`commit`).

    Parameters
    ----------
    length : int
        Window length L.
    shape : tuple of int
        Shape of the global parameter, (n_params, n_components).
    dtype : dtype
        Floating point type of the statistics and of the running sum.
    """

    def __init__(self, length, shape, dtype):
        super().__init__()
        self.length = length
        # A tuple, rebuilt by each push, and the type's code: both are
        # plain values to every serialiser, skops included.
        self.queue = ()
        self.dtype = np.dtype(dtype).str
        self._running_sum = None
        if length > 1:
            self._running_sum = SparseStatistic(
                np.arange(shape[0]), np.zeros(shape, dtype=dtype)
            )

    def total(self):
        """sum_{j<count} S_{t-j}, the queued statistics added up.

        Returns
        -------
        total : SparseStatistic
            Every row of the parameter for L > 1; for L = 1, the latest
            statistic's rows.
        """
        if self._running_sum is None:
            return self.queue[-1]
        return self._running_sum

    def push(self, statistic):
        """Add the newest statistic, dropping the oldest beyond the window.

        Blocks of rows of the running sum are updated on the active threads.

        Parameters
        ----------
        statistic : SparseStatistic
            The minibatch statistic S_t.
        """
        statistic = statistic.in_type(self.dtype)
        oldest = self.queue[0] if len(self.queue) == self.length else None
        total = None if self._running_sum is None else self._running_sum.block
        if total is not None:
            changed_rows = statistic.rows
            if oldest is not None:
                changed_rows = np.union1d(oldest.rows, statistic.rows)
            self._undo.record_rows(total, changed_rows)
        self.queue = (*self.queue[1 if oldest is not None else 0 :], statistic)
        if total is not None:
            # sum <- sum - S_{t-L} + S_t (eq. 11).
            old_rows, old_block = (
                (np.empty(0, dtype=np.intp), total[:0])
                if oldest is None
                else (oldest.rows, oldest.block)
            )
            replace_rows(
                total,
                old_rows,
                old_block,
                statistic.rows,
                statistic.block,
                fixed_block_rows(total.shape[1]),
                team_size(*total.shape),
            )

    row_calls = (push,)
    row_values = (total,)

    def rows_between(self, start, stop):
        """The window of rows ``start`` to ``stop - 1`` of the parameter,
        counted from ``start``: the same statistics, cut."""
        part = WindowRows(self.length, (0, 0), self.dtype)
        part.queue = tuple(
            statistic.rows_between(start, stop) for statistic in self.queue
        )
        if self._running_sum is not None:
            part._running_sum = self._running_sum.rows_between(start, stop)
        return part

    @classmethod
    def stacked(cls, parts, starts):
        """The window whose rows from ``starts[i]`` on are those of
        ``parts[i]``: the inverse of :meth:`rows_between`."""
        first = parts[0]
        whole = cls(first.length, (0, 0), first.dtype)
        whole.queue = tuple(
            _stacked_statistics(statistics, starts)
            for statistics in zip(*(part.queue for part in parts))
        )
        if first._running_sum is not None:
            whole._running_sum = _stacked_statistics(
                [part._running_sum for part in parts], starts
            )
        return whole

    def _kept(self):
        # A window of one statistic lets it go once its update is kept.
        if self.length == 1:
            self.queue = ()

    @property
    def nbytes(self):
        """Memory of the queued statistics (the running sum excluded)."""
        return sum(statistic.nbytes for statistic in self.queue)


class SmoothingWindow(RebindingPart):
    """Mean of the last ``length`` minibatch statistics (Mandt & Blei 2014).

    The smoothed statistic of Mandt & Blei's Algorithm 1 is the window mean
    S~_t = (1/L) sum_{j<L} S_{t-j}. The window keeps how many statistics it
    holds and which had negative annealing weights; the statistics and
    their sum are its ``rows`` (:class:`WindowRows`), which may be held
    where lambda's rows are. During warm-up, before L statistics have
    arrived, the mean is taken over those stored.

    With ``length=1`` the update is plain SVI: it reads the latest statistic
    on its own rows and moves every other row toward the prior alone.

    Parameters
    ----------
    length : int
        Window length L.
    shape : tuple of int
        Shape of the global parameter, (n_params, n_components).
    dtype : dtype
        Floating point type of the statistics and of the running sum.

    Attributes
    ----------
    rows : WindowRows
        The queued statistics and their sum.
    """

    def __init__(self, length, shape, dtype):
        self.length = length
        # Whether each queued statistic had a negative annealing weight,
        # oldest first.
        self.negative_weights = ()
        self.rows = WindowRows(length, shape, dtype)

    @property
    def sum(self):
        """sum_{j<count} S_{t-j}, the statistics in the window added up
        (:meth:`WindowRows.total`)."""
        return self.rows.total()

    @property
    def sums_every_row(self):
        """Whether :attr:`sum` lists every row: the running sum of L > 1."""
        return self.length > 1

    def push(self, statistic):
        """Add the newest statistic, dropping the oldest beyond the window.

        Parameters
        ----------
        statistic : SparseStatistic
            The minibatch statistic S_t.
        """
        self.rows.push(statistic)
        self.negative_weights = (*self.negative_weights, statistic.negatively_weighted)[
            -self.length :
        ]

    def _held_parts(self):
        return (self.rows,)

    def _kept(self):
        # A window of one statistic lets it go once its update is kept.
        if self.length == 1:
            self.negative_weights = ()

    @property
    def negatively_weighted(self):
        """Whether a statistic in the window had a negative annealing weight."""
        return any(self.negative_weights)

    @property
    def count(self):
        """Number of statistics currently in the window (at most L)."""
        return len(self.negative_weights)

    @property
    def nbytes(self):
        """Memory of the queued statistics (the running sum excluded)."""
        return self.rows.nbytes
