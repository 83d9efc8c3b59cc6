"""The filtered step size: the gain of a filter that tracks the batch
optimum from the noisy optima (Houlsby & Blei 2014), or Ranganath et al.'s
adaptive rate."""

from dataclasses import replace

import numpy as np

from .._transaction import RebindingPart
from ._filter_rows import FilterRows
from ._step_sizes import frozen_prior

# The filter visits every row, and restarts its clock, before the clock's
# scales fall below this value, far from underflow.
_SMALLEST_CLOCK = 1e-30

# The filter observes every component up to ALL_OBSERVED_COMPONENTS of
# them; above, an eighth, but at least MIN_OBSERVED_COMPONENTS.
ALL_OBSERVED_COMPONENTS = 32
MIN_OBSERVED_COMPONENTS = 8


def auto_observed_components(n_components):
    """How many of lambda's components (columns) the filter observes.

    A row of up to 32 components spans a few cache lines, and observing
    fewer of them saves little.

    Parameters
    ----------
    n_components : int
        Number of columns of lambda.

    Returns
    -------
    n_observed : int
        ``n_components`` up to ``ALL_OBSERVED_COMPONENTS``; above, an eighth
        of them, rounded up, and at least ``MIN_OBSERVED_COMPONENTS``.
    """
    if n_components <= ALL_OBSERVED_COMPONENTS:
        return n_components
    return max(MIN_OBSERVED_COMPONENTS, -(-n_components // 8))


def _same_values(prior, stored):
    """Whether ``prior`` holds the values of the copy ``stored``; for two
    broadcasts of a row, from that row alone."""
    if prior.strides[0] == 0 and stored.strides[0] == 0:
        return prior[0].tolist() == stored[0].tolist()
    return np.array_equal(prior, stored)


class FilteredStepSize(RebindingPart):
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
    tau to their number, as Ranganath et al. do. d_t is summed in a
    compiled pass that forms lambda^ on the fly, never as an array.

    The averages are kept lazily, so that an update costs what the rows of
    its minibatch cost. Where the window's total lists no value, lambda^ =
    eta: there d_t = -e_t with e = lambda - eta, and the update only scales
    e by 1 - rho_t. Between two updates that list it, the g of such a row
    is a closed form of the g stored when it was last listed, at update r,
    and of its current e:

        g_t = D_t (g_r / D_r - (F_t - F_r) e_{t+1} / C_{t+1}),

    with the clock D_t = prod_{s<=t} (1 - 1/tau_s), C_t = prod_{s<t} (1 -
    rho_s) and F_t = sum_{s<=t} C_s / (tau_s D_s). ||d_t||^2 and ||g_t||^2
    over all rows follow from running totals of ||e||^2, <g, e> and
    ||g||^2, which move in closed form on the rows not listed. An update
    therefore visits the listed rows only, and every row (restarting the
    clock) when tau is one, when the clock's scales near underflow, when
    eta changed, around an update that a projection may follow, and when
    the total lists every row (a window of L > 1).

    With a ``floor`` (the package's variant) the step is never below that
    floor's step of the same update: the filter can raise the step above a
    schedule when the targets disagree with lambda more than their noise
    explains, but not lower it. The window then follows the step actually
    taken.

    With ``n_observed`` below the number of columns (the package's
    variant) the filter observes the first ``n_observed`` columns of lambda
    alone: it is the same filter of the sub-array lambda[:, :n_observed].
    For LDA a column is a topic, and the topics are exchangeable (started
    at random), so the first topics' per-coordinate Q and R estimate those
    of all topics, on every word, the frequent ones included; the pass of
    an update reads n_observed of the n_components values of each row.

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
    n_observed : int or None, default=None
        Number of columns observed, from the first; None for all.

    Attributes
    ----------
    mean_difference : ndarray of shape (n_params, n_observed)
        The stored g: each row as of the last update that visited it.
    """

    def __init__(
        self,
        gain_rule,
        shape,
        dtype,
        monte_carlo_batches,
        corrected=True,
        floor=None,
        n_observed=None,
    ):
        self.gain_rule = gain_rule
        self.monte_carlo_batches = monte_carlo_batches
        self.corrected = corrected
        self.floor = floor
        n_observed = shape[1] if n_observed is None else n_observed
        self.rows = FilterRows(shape[0], n_observed, dtype)
        self.n_coordinates = shape[0] * n_observed
        self.mean_squared_norm = 0.0
        self.weight_square_sum = 0.0
        self.window = 0.0
        self.drift = 0.0
        self.noise = 0.0
        # The clock: D, F and C of the last update (each row's D_r and F_r,
        # of the update that last visited it, are in ``rows``).
        self._clock_decay = 1.0
        self._clock_offset = 0.0
        self._clock_shrink = 1.0
        # eta when the clock last restarted (a copy), None before.
        self._clock_prior = None
        # Running totals over all rows: ||e||^2, <g, e> and ||g||^2.
        self._squared_excess = 0.0
        self._mean_excess = 0.0
        self._squared_mean = 0.0
        # <e, s>, ||s||^2 and <g, s> on the listed rows (s = lambda^ - eta),
        # from which the totals follow the step.
        self._step_sums = (0.0, 0.0, 0.0)
        self._visit_all_rows = True

    @property
    def mean_difference(self):
        """The stored g of every row, of shape (n_params, n_observed)."""
        return self.rows.mean_difference

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

    def __call__(self, step, target, current, current_scale=1.0):
        """The step size of an update from ``current`` toward ``target``.

        Parameters
        ----------
        step : int
            The update number t, from 1.
        target : NoisyOptimum
            The noisy optimum lambda^_t.
        current : ndarray
            lambda before the update, the filter's mean mu_{t-1}, or its
            stored array when ``current_scale`` is below 1.
        current_scale : float, default=1.0
            c of lambda = eta + c (``current`` - eta), eta the target's
            prior.

        Returns
        -------
        rho : float
        """
        squared_distance = self._observe(target, current, current_scale)
        rho = self.gain_rule.gain(self.drift, self.noise, squared_distance)
        if self.floor is not None:
            rho = max(rho, self.floor(step, target, current))
        self.window = (1.0 - rho) * self.window + 1.0
        self._follow_step(rho, target)
        return rho

    def _observe(self, target, current, current_scale=1.0):
        """Fold d_t into g and h, update Q and R; return ||d_t||^2."""
        decay = 1.0 - 1.0 / self.window
        squared_distance, squared_mean_norm = self._fold_difference(
            target, current, current_scale, decay
        )
        self.mean_squared_norm = (
            decay * self.mean_squared_norm + squared_distance / self.window
        )
        self.weight_square_sum = (
            decay**2 * self.weight_square_sum + 1.0 / self.window**2
        )
        n_coordinates = self.n_coordinates
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

    def _fold_difference(self, target, current, current_scale, decay):
        """g <- decay g + d_t / tau on the rows visited, and the totals
        moved; return ||d_t||^2 and ||g||^2 over all rows.

        A visit of every row is summed over fixed blocks of rows on the
        active threads.
        """
        share = 1.0 / self.window
        every_row = self._visits_every_row(target, decay, len(current))
        (
            visited_excess,
            visited_product,
            visited_mean,
            visited_mean_target,
            excess_target,
            target_norm,
        ) = self.rows.observe(
            target,
            current,
            current_scale,
            (self._clock_decay, self._clock_offset, self._clock_shrink),
            decay,
            self.window,
            every_row,
        )
        # On the visited rows d = s - e and g' = decay g + d / tau.
        visited_distance = target_norm - 2.0 * excess_target + visited_excess
        updated_norm = (
            decay**2 * visited_mean
            + 2.0 * decay * share * (visited_mean_target - visited_product)
            + share**2 * visited_distance
        )
        updated_product = decay * visited_product + share * (
            excess_target - visited_excess
        )
        updated_target = decay * visited_mean_target + share * (
            target_norm - excess_target
        )
        if every_row:
            squared_distance = visited_distance
            squared_mean_norm = updated_norm
            self._squared_excess = visited_excess
            self._mean_excess = updated_product
            self._restart_clock(target)
        else:
            # The rows not listed: d = -e, g <- decay g - e / tau.
            other_excess = max(self._squared_excess - visited_excess, 0.0)
            other_product = self._mean_excess - visited_product
            other_mean = max(self._squared_mean - visited_mean, 0.0)
            squared_distance = other_excess + visited_distance
            squared_mean_norm = (
                decay**2 * other_mean
                - 2.0 * decay * share * other_product
                + share**2 * other_excess
                + updated_norm
            )
            self._mean_excess = decay * other_product - share * other_excess
            self._mean_excess += updated_product
            self._advance_clock(target.total, decay, share)
        self._squared_mean = squared_mean_norm
        self._step_sums = (excess_target, target_norm, updated_target)
        return squared_distance, squared_mean_norm

    def _visits_every_row(self, target, decay, n_rows):
        """Whether the update visits every row: the closed form of the rows
        not listed does not hold, or there are none."""
        return (
            self._visit_all_rows
            or target.negatively_weighted
            or decay == 0.0
            or self._clock_decay * decay < _SMALLEST_CLOCK
            or self._clock_shrink < _SMALLEST_CLOCK
            or target.lists_all(n_rows)
            or not _same_values(target.prior, self._clock_prior)
        )

    def _restart_clock(self, target):
        """After a visit of every row, each row's g is up to date: the
        clock restarts at D = C = 1 and F = 0."""
        self._clock_decay = 1.0
        self._clock_offset = 0.0
        self._clock_shrink = 1.0
        self._clock_prior = frozen_prior(target.prior)
        self.rows.restart(replace(target, prior=self._clock_prior))
        self._visit_all_rows = False

    def _advance_clock(self, total, decay, share):
        """D_t = D_{t-1} (1 - 1/tau_t), F_t = F_{t-1} + C_t / (tau_t D_t);
        the visited rows, those of ``total``, take the clock's D and F."""
        self._clock_decay *= decay
        self._clock_offset += share * self._clock_shrink / self._clock_decay
        self.rows.advance(total, self._clock_decay, self._clock_offset)

    def _follow_step(self, rho, target):
        """Carry the totals and the clock over the update by ``rho``:
        e <- (1 - rho) e + rho s, C_{t+1} = (1 - rho) C_t."""
        excess_target, target_norm, mean_target = self._step_sums
        keep = 1.0 - rho
        self._squared_excess = (
            keep**2 * self._squared_excess
            + 2.0 * rho * keep * excess_target
            + rho**2 * target_norm
        )
        self._mean_excess = keep * self._mean_excess + rho * mean_target
        self._clock_shrink *= keep
        # A projection may change lambda in no closed form: this update
        # brought every row's g up to date, and the next one sums the
        # totals afresh.
        self._visit_all_rows = target.negatively_weighted

    def _held_parts(self):
        return (self.rows, self.gain_rule)

    def state(self):
        """Q, R, tau and the filter's own state."""
        return {
            "drift": self.drift,
            "noise": self.noise,
            "window": self.window,
            **self.gain_rule.state(),
        }
