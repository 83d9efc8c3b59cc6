"""Step sizes of the update: schedules, and the filtered step size."""

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .._threads import sum_rows
from .._transaction import spare_like
from .._update_fast import observe_difference
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
    prior : ndarray of shape (n_params,)
        eta of each row (a broadcast view when it is the same for all).
    """

    total: SparseStatistic
    scale: float
    prior: np.ndarray

    def restricted_to(self, span):
        """The rows and block of the total in the slice ``span``, the scale
        and the prior: the arguments of the compiled passes."""
        return (*self.total.restricted_to(span), self.scale, self.prior)


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

    def __call__(self, step, target, current):
        """rho_t of update number ``step`` from lambda = ``current`` toward
        the :class:`NoisyOptimum` ``target``."""

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

    def __call__(self, step, target, current):
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

    def __call__(self, step, target, current):
        """The constant step size (the arguments are unused)."""
        return self.rate


class FilteredStepSize:
    """A step size that adapts to the noise of the update.

    Ranganath et al. (2013) and Houlsby & Blei (2014, Alg. 1) estimate the
    drift Q and the noise R of the noisy optimum from exponentially weighted
    averages over a window tau of d_t = lambda^_t - mu_{t-1}, where mu_{t-1}
    is the current lambda:

        g_t = (1 - 1/tau) g_{t-1} + (1/tau) d_t,
        h_t = (1 - 1/tau) h_{t-1} + (1/tau) ||d_t||^2,
        Q   = ||g_t||^2 / n,   R = (h_t - ||g_t||^2) / n,

    per coordinate (n coordinates), so that the filters' Mahalanobis
    distance is one. A ``gain_rule`` turns Q and R into the step size rho_t,
    and the window then follows it, tau <- (1 - rho_t) tau + 1.

    These are the published estimates. With ``corrected`` (the package's
    variant) they are corrected for the noise of the average g itself. If
    the d_t have mean m and variance R per coordinate, and the weights of
    the average have the sum of squares s_t = (1 - 1/tau)^2 s_{t-1} +
    1/tau^2, then E||g||^2 = ||m||^2 + n R s and E[h - ||g||^2] =
    n R (1 - s), so

        R = (h_t - ||g_t||^2) / (n (1 - s_t)),   Q = ||g_t||^2 / n - s_t R

    (Q at least 0) are unbiased. Uncorrected, Q holds about R s_t of pure
    noise: the gain then settles where that noise is taken for drift (the
    Gaussian filter's at 1/3, since s is about P/2 there), and a gain near
    one shrinks tau to one, where R is estimated as zero and the gain stays
    near one.

    Before the first update, ``start`` sets g and h to plain means over
    ``monte_carlo_batches`` minibatches drawn at the initial lambda, and
    tau to their number, as Ranganath et al. do. d_t is summed in one
    compiled pass that forms lambda^ on the fly, never as an array.

    With a ``floor`` (the package's variant) the step is never below that
    floor's step of the same update: the filter can raise the step above a
    schedule when the targets disagree with lambda more than their noise
    explains, but not lower it. The window then follows the step actually
    taken.

    Parameters
    ----------
    gain_rule : AdaptiveGain, GaussianFilter or StudentTFilter
        Maps Q, R and ||d_t||^2 to the step size.
    shape : tuple of int
        Shape of lambda, (n_params, n_components).
    dtype : dtype
        Floating point type of lambda.
    monte_carlo_batches : int
        Number of minibatches of the start.
    corrected : bool, default=True
        Whether Q and R are corrected for the noise of the average.
    floor : RobbinsMonroStepSize, ConstantStepSize or None, default=None
        The schedule whose steps bound the step from below; None for none.
    """

    def __init__(
        self,
        gain_rule,
        shape,
        dtype,
        monte_carlo_batches,
        corrected=True,
        floor=None,
    ):
        self.gain_rule = gain_rule
        self.monte_carlo_batches = monte_carlo_batches
        self.corrected = corrected
        self.floor = floor
        self.mean_difference = np.zeros(shape, dtype=dtype)
        # Each update writes the new g here and swaps it in, so that g is
        # never changed in place and ``rollback`` only rebinds names.
        self._spare_mean = None
        self._saved = None
        self.mean_squared_norm = 0.0
        self.weight_square_sum = 0.0
        self.window = 0.0
        self.drift = 0.0
        self.noise = 0.0

    def start(self, targets, current):
        """Set the averages to the means of ``targets - current``.

        With tau = 1, 2, ... the exponentially weighted averages are plain
        running means.

        Parameters
        ----------
        targets : iterable of NoisyOptimum
            Noisy optima lambda^ of minibatches drawn at lambda = ``current``.
        current : ndarray
            The initial lambda.
        """
        for count, target in enumerate(targets, start=1):
            self.window = float(count)
            self._observe(target, current)

    def __call__(self, step, target, current):
        """The step size of an update from ``current`` toward ``target``.

        Parameters
        ----------
        step : int
            The update number t, from 1.
        target : NoisyOptimum
            The noisy optimum lambda^_t.
        current : ndarray
            lambda before the update, the filter's mean mu_{t-1}.

        Returns
        -------
        rho : float
        """
        squared_distance = self._observe(target, current)
        rho = self.gain_rule.gain(self.drift, self.noise, squared_distance)
        if self.floor is not None:
            rho = max(rho, self.floor(step, target, current))
        self.window = (1.0 - rho) * self.window + 1.0
        return rho

    def _observe(self, target, current):
        """Fold d_t into g and h, update Q and R; return ||d_t||^2.

        Summed over fixed blocks of rows on the active threads.
        """
        decay = 1.0 - 1.0 / self.window
        updated_mean = spare_like(self.mean_difference, self._spare_mean)
        squared_distance, squared_mean_norm = sum_rows(
            lambda span: observe_difference(
                *target.restricted_to(span),
                current,
                self.mean_difference,
                updated_mean,
                decay,
                self.window,
                span.start,
                span.stop,
            ),
            len(current),
        )
        self._spare_mean, self.mean_difference = self.mean_difference, updated_mean
        self.mean_squared_norm = (
            decay * self.mean_squared_norm + squared_distance / self.window
        )
        self.weight_square_sum = (
            decay**2 * self.weight_square_sum + 1.0 / self.window**2
        )
        n_coordinates = self.mean_difference.size
        mean_square = float(squared_mean_norm) / n_coordinates
        spread = max(float(self.mean_squared_norm - squared_mean_norm), 0.0)
        spread /= n_coordinates
        if not self.corrected:
            self.drift, self.noise = mean_square, spread
        else:
            # With one effective observation (s = 1) the spread says nothing
            # about R: the previous estimate is kept.
            if self.weight_square_sum < 1.0:
                self.noise = spread / (1.0 - self.weight_square_sum)
            self.drift = max(mean_square - self.weight_square_sum * self.noise, 0.0)
        return float(squared_distance)

    def begin(self):
        """Record the averages and the filter's state, for :meth:`rollback`."""
        self._saved = (
            {name: value for name, value in vars(self).items() if name != "_saved"},
            vars(self.gain_rule).copy(),
        )

    def commit(self):
        """Keep the changes since :meth:`begin`."""
        self._saved = None

    def rollback(self):
        """Return to the state recorded by :meth:`begin`.

        Every change since is a new value bound to a name (g is written to
        a spare array and swapped in), so restoring the names restores the
        state.
        """
        if self._saved is None:
            return
        attributes, gain_attributes = self._saved
        vars(self).update(attributes)
        vars(self.gain_rule).update(gain_attributes)
        self._saved = None

    def __getstate__(self):
        # The spare array holds no information.
        return {**vars(self), "_spare_mean": None, "_saved": None}

    def state(self):
        """Q, R, tau and the filter's own state."""
        return {
            "drift": self.drift,
            "noise": self.noise,
            "window": self.window,
            **self.gain_rule.state(),
        }
