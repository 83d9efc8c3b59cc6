"""Step sizes of the update: the protocol, the noisy optimum they read, and
the schedules (the filtered step size is in ``_filtered``)."""

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ._smoothing import SparseStatistic


@dataclass(frozen=True)
class NoisyOptimum:
    """The noisy optimum lambda^ = eta + scale * total, never formed as an array.

    lambda^ is as large as lambda but differs from eta only on the rows of
    the window's total, so the compiled passes that read it (the convex
    combination and the filter's moments) compute it on the fly.

    Parameters
    ----------
    total : SparseStatistic
        The smoothing window's sum of statistics.
    scale : float
        N / (number of statistics in the window).
    prior : ndarray of shape (n_params, 1) or (n_params, n_components)
        eta of each row (a broadcast view when it is the same for all), or
        of each entry.
    negatively_weighted : bool, default=False
        Whether a statistic of the total had a negative annealing weight:
        the update toward lambda^ may then be followed by a projection.
    total_lists_every_row : bool, default=False
        Whether the total is known to list every row (a window's running
        sum), wherever its rows are held.
    """

    total: SparseStatistic
    scale: float
    prior: np.ndarray
    negatively_weighted: bool = False
    total_lists_every_row: bool = False

    @classmethod
    def of_window(cls, window, n_total, prior):
        """lambda^ = eta + N / (statistics in ``window``) * ``window.sum``
        (Mandt & Blei 2014, Alg. 1; Hoffman et al. 2013, eq. 25 when the
        window holds one statistic)."""
        return cls(
            window.sum,
            n_total / window.count,
            prior,
            window.negatively_weighted,
            window.sums_every_row,
        )

    def lists_all(self, n_rows):
        """Whether lambda^ lists all ``n_rows`` rows of lambda."""
        return self.total_lists_every_row or self.total.lists_all(n_rows)


def frozen_prior(prior):
    """A copy of the prior eta, a broadcast of its first row if it is one."""
    if prior.strides[0] == 0:
        return np.broadcast_to(np.array(prior[:1]), prior.shape)
    return np.array(prior)


@runtime_checkable
class StepSize(Protocol):
    """What the online update asks of a step size.

    Attributes
    ----------
    monte_carlo_batches : int
        Number of minibatches drawn at the initial lambda whose noisy optima
        ``start`` receives before the first update; 0 for none.
    """

    monte_carlo_batches: int

    def start(self, targets, current):
        """Take in the noisy optima ``targets`` (:class:`NoisyOptimum`)
        drawn at lambda = ``current``."""

    def __call__(self, step, target, current, current_scale=1.0):
        """rho_t of update number ``step`` from lambda toward the
        :class:`NoisyOptimum` ``target``: lambda is ``current``, or, with a
        ``current_scale`` c below 1, eta + c (``current`` - eta) with eta
        the target's prior."""

    def state(self):
        """The state the user sees, a dict of floats."""

    def begin(self):
        """Start recording changes of the state, for ``rollback``."""

    def commit(self):
        """Keep the changes since ``begin``."""

    def rollback(self):
        """Return to the state at ``begin``."""


class _Schedule:
    """A step size that depends on the update number alone."""

    monte_carlo_batches = 0

    def start(self, targets, current):
        """Nothing to start: a schedule draws no minibatches."""

    def begin(self):
        """A schedule has no state to record."""

    def commit(self):
        """A schedule has no state to keep."""

    def rollback(self):
        """A schedule has no state to restore."""

    def state(self):
        """A schedule keeps no state."""
        return {}


class RobbinsMonroStepSize(_Schedule):
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

    def __call__(self, step, target, current, current_scale=1.0):
        """Step size of update number ``step`` (the other arguments are unused)."""
        return (self.offset + step) ** (-self.decay)


class ConstantStepSize(_Schedule):
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

    def __call__(self, step, target, current, current_scale=1.0):
        """The constant step size (the arguments are unused)."""
        return self.rate
