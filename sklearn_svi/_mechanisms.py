"""Model-agnostic mechanisms of the online update.

Each mechanism changes one line of the stochastic variational inference
update (see :class:`sklearn_svi._online.OnlineUpdateMixin`) and knows nothing
about the model: it sees the global variational parameter lambda only as an
array of shape (n_params, n_components) and minibatch statistics only as
row blocks of such an array.
"""

from collections import deque
from dataclasses import dataclass

import numpy as np

from ._threads import Workers

SERIAL = Workers(1)


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
    """

    rows: np.ndarray
    block: np.ndarray

    @property
    def nbytes(self):
        """Memory held by the statistic, in bytes."""
        return self.block.nbytes + self.rows.nbytes

    def restricted_to(self, span):
        """The row indices and values that fall in the slice ``span``."""
        first, last = np.searchsorted(self.rows, [span.start, span.stop])
        return self.rows[first:last], self.block[first:last]


class SmoothingWindow:
    """Mean of the last ``length`` minibatch statistics (Mandt & Blei 2014).

    The smoothed statistic of Mandt & Blei's Algorithm 1 is the window mean
    S~_t = (1/L) sum_{j<L} S_{t-j}. It is kept as a dense running sum that is
    updated with the running-sum recursion of their eq. 11,

        sum_t = sum_{t-1} - S_{t-L} + S_t,

    while the queued statistics are stored sparsely, as row blocks, so the
    window's memory grows with the words actually seen and not with
    L x n_params x n_components. During warm-up, before L statistics have
    arrived, the mean is taken over those stored.

    The oldest statistic is subtracted before the newest is added, so with
    ``length=1`` the sum is exactly the latest statistic and the update is
    plain SVI bit for bit.

    Parameters
    ----------
    length : int
        Window length L.
    shape : tuple of int
        Shape of the global parameter, (n_params, n_components).
    dtype : dtype
        Floating point type of the running sum.
    """

    def __init__(self, length, shape, dtype):
        self.length = length
        self.queue = deque()
        self.total = np.zeros(shape, dtype=dtype)

    def push(self, statistic, workers=SERIAL):
        """Add the newest statistic, dropping the oldest beyond the window.

        Parameters
        ----------
        statistic : SparseStatistic
            The minibatch statistic S_t.
        workers : Workers, default=SERIAL
            Threads that update blocks of rows of the running sum.
        """
        oldest = self.queue.popleft() if len(self.queue) == self.length else None
        self.queue.append(statistic)
        workers.run(
            self._replace,
            [(oldest, statistic, span) for span in workers.row_blocks(len(self.total))],
        )

    def _replace(self, oldest, newest, span):
        """sum <- sum - S_{t-L} + S_t on the rows of ``span`` (eq. 11)."""
        if oldest is not None:
            rows, block = oldest.restricted_to(span)
            self.total[rows] -= block
        rows, block = newest.restricted_to(span)
        self.total[rows] += block

    @property
    def count(self):
        """Number of statistics currently in the window (at most L)."""
        return len(self.queue)

    @property
    def nbytes(self):
        """Memory of the queued statistics (the running sum excluded)."""
        return sum(statistic.nbytes for statistic in self.queue)


class AnnealingWeights:
    """Per-sample weights of tuneable stochastic annealing (SVI+).

    Paisley, Fazelnia & Barr, Algorithm 1 and Definition 1: a minibatch of
    |B| samples gets the noise of a minibatch of M samples when sample n's
    statistic is multiplied by

        w_n = 1 + eps_n - mean(eps),   eps_n ~ N(0, |B| / M - 1),

    which leaves the minibatch statistic unbiased and raises its variance
    from that of |B| samples to about that of M (their eq. 14-15). The
    effective size grows with the update number t,

        M_t = M + growth (t - 1),

    so that a run can anneal from SVI+ to plain SVI (the paper uses
    M_t = 50 t). A minibatch with |B| <= M_t, a final short one for
    instance, gets no noise.

    Parameters
    ----------
    effective_batch_size : int
        M, the effective minibatch size of the first update.
    growth : float
        Increase of the effective size per update.
    """

    def __init__(self, effective_batch_size, growth):
        self.effective_batch_size = effective_batch_size
        self.growth = growth

    def effective_size(self, step):
        """M_t of update number ``step`` (counted from 1)."""
        return self.effective_batch_size + self.growth * (step - 1)

    def __call__(self, batch_size, step, random_state):
        """Weights of the samples of update ``step``, or None for no noise.

        Parameters
        ----------
        batch_size : int
            |B|, the number of samples of the minibatch.
        step : int
            The update number t, from 1.
        random_state : RandomState
            Source of the noise.

        Returns
        -------
        weights : ndarray of shape (batch_size,) or None
            None when |B| <= M_t.
        """
        effective_size = self.effective_size(step)
        if batch_size <= effective_size:
            return None
        noise = random_state.normal(
            0.0, np.sqrt(batch_size / effective_size - 1.0), batch_size
        )
        return 1.0 + noise - noise.mean()


class RobbinsMonroStepSize:
    """Robbins-Monro schedule rho_t = (tau_0 + t) ** (-kappa).

    Hoffman et al. (2013), eq. 26. ``t`` counts minibatch updates from 1,
    as in scikit-learn's online LatentDirichletAllocation.

    Parameters
    ----------
    offset : float
        tau_0 >= 0, down-weights early iterations.
    decay : float
        kappa in (0.5, 1] for convergence.
    """

    def __init__(self, offset, decay):
        self.offset = offset
        self.decay = decay

    def __call__(self, step, target, current):
        """Step size of update number ``step`` (``target`` and ``current`` unused)."""
        return (self.offset + step) ** (-self.decay)


class ConstantStepSize:
    """A constant step size rho_t = rho.

    With rho = 1 and the whole data set as the minibatch the update is a
    batch variational Bayes iteration.

    Parameters
    ----------
    rate : float
        The step size in (0, 1].
    """

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, step, target, current):
        """The constant step size (the arguments are unused)."""
        return self.rate
