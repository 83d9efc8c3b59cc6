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

from ._threads import SERIAL
from ._update_fast import replace_rows


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


def _replace_rows(total, oldest, newest, span):
    """sum <- sum - S_{t-L} + S_t on the rows of ``span`` (eq. 11)."""
    old_rows, old_block = (
        (np.empty(0, dtype=np.intp), total[:0])
        if oldest is None
        else oldest.restricted_to(span)
    )
    replace_rows(total, old_rows, old_block, *newest.restricted_to(span))


class SmoothingWindow:
    """Mean of the last ``length`` minibatch statistics (Mandt & Blei 2014).

    The smoothed statistic of Mandt & Blei's Algorithm 1 is the window mean
    S~_t = (1/L) sum_{j<L} S_{t-j}. For L > 1 it is kept as a dense running
    sum that is updated with the running-sum recursion of their eq. 11,

        sum_t = sum_{t-1} - S_{t-L} + S_t,

    while the queued statistics are stored sparsely, as row blocks, so the
    window's memory grows with the words actually seen and not with
    L x n_params x n_components. During warm-up, before L statistics have
    arrived, the mean is taken over those stored.

    With ``length=1`` the sum is the latest statistic itself, rows and
    values, and no dense array is kept: the update, plain SVI bit for bit,
    reads the statistic on its own rows and moves every other row toward
    the prior alone.

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
        self.length = length
        self.queue = deque()
        self.dtype = np.dtype(dtype)
        self._running_sum = None
        if length > 1:
            self._running_sum = SparseStatistic(
                np.arange(shape[0]), np.zeros(shape, dtype=dtype)
            )

    @property
    def sum(self):
        """sum_{j<count} S_{t-j}, the statistics in the window added up.

        Returns
        -------
        sum : SparseStatistic
            Every row of the parameter for L > 1; for L = 1, the latest
            statistic's rows.
        """
        if self._running_sum is None:
            return self.queue[-1]
        return self._running_sum

    def push(self, statistic, workers=SERIAL):
        """Add the newest statistic, dropping the oldest beyond the window.

        Parameters
        ----------
        statistic : SparseStatistic
            The minibatch statistic S_t.
        workers : Workers, default=SERIAL
            Threads that update blocks of rows of the running sum.
        """
        statistic = SparseStatistic(
            np.asarray(statistic.rows, dtype=np.intp),
            np.ascontiguousarray(statistic.block, dtype=self.dtype),
        )
        oldest = self.queue.popleft() if len(self.queue) == self.length else None
        self.queue.append(statistic)
        if self._running_sum is None:
            return
        total = self._running_sum.block
        workers.run(
            _replace_rows,
            [
                (total, oldest, statistic, span)
                for span in workers.row_blocks(len(total))
            ],
        )

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

    monte_carlo_batches = 0
    observes_target = False

    def __init__(self, offset, decay):
        self.offset = offset
        self.decay = decay

    def __call__(self, step, target, current, workers=SERIAL):
        """Step size of update number ``step`` (the other arguments are unused)."""
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

    monte_carlo_batches = 0
    observes_target = False

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, step, target, current, workers=SERIAL):
        """The constant step size (the arguments are unused)."""
        return self.rate


def _ratio(numerator, denominator):
    """numerator / denominator, and 0 when both are 0 (nothing to update)."""
    return numerator / denominator if denominator > 0 else 0.0


class AdaptiveGain:
    """Ranganath, Wang, Blei & Xing's adaptive learning rate.

    rho_t = Q / (Q + R) (Ranganath et al. 2013): the step that minimises
    the expected distance to the batch optimum given the estimated drift and
    noise, which is the variational filter with no uncertainty about the
    optimum, Sigma = 0 (Houlsby & Blei 2014).
    """

    def gain(self, drift, noise, squared_distance):
        """The step size from the per-coordinate variances Q and R.

        Parameters
        ----------
        drift : float
            Q, the variance per coordinate of the optimum's drift.
        noise : float
            R, the variance per coordinate of the noisy optimum around it.
        squared_distance : float
            ||lambda^_t - mu_{t-1}||^2 (unused).

        Returns
        -------
        gain : float
        """
        return _ratio(drift, drift + noise)

    def state(self):
        """The filter's state: none beyond the moments."""
        return {}


class GaussianFilter:
    """Isotropic Gaussian variational filter (Houlsby & Blei 2014).

    A Kalman filter of the batch optimum lambda^VB, a random walk with drift
    variance Q observed through the noisy optimum lambda^_t with noise
    variance R, every variance per coordinate. Its posterior variance Sigma
    gives the gain, which is the step size:

        P_t     = (Sigma_{t-1} + Q) / (Sigma_{t-1} + Q + R),
        Sigma_t = (1 - P_t) (Sigma_{t-1} + Q).

    With Q = 0 and R fixed, 1 / P_{t+1} = 1 / P_t + 1: Robbins-Monro with
    kappa = 1.

    Parameters
    ----------
    prior_variance : float
        Sigma_0, the prior variance of each coordinate of the optimum.
    """

    def __init__(self, prior_variance):
        self.variance = prior_variance

    def gain(self, drift, noise, squared_distance):
        """Update Sigma and return the gain P_t.

        Parameters
        ----------
        drift : float
            Q, the variance per coordinate of the optimum's drift.
        noise : float
            R, the variance per coordinate of the noisy optimum around it.
        squared_distance : float
            ||lambda^_t - mu_{t-1}||^2 (unused by the Gaussian filter).

        Returns
        -------
        gain : float
        """
        predicted = self.variance + drift
        gain = _ratio(predicted, predicted + noise)
        self.variance = (1.0 - gain) * predicted
        return gain

    def state(self):
        """The filter's state: Sigma."""
        return {"variance": self.variance}


class StudentTFilter:
    """Isotropic Student's t variational filter (Houlsby & Blei 2014, Alg. 1).

    The prior of the optimum, the drift and the noise are Student's t with
    scales Sigma, Q and R and degrees of freedom eta, gamma and delta. Each
    update matches the degrees of freedom, eta~ = min(eta_{t-1}, gamma,
    delta), and rescales the scales to keep their variances (moment
    matching), then

        P_t     = (Sigma~ + Q) / (Sigma~ + Q + R),
        Delta^2 = ||lambda^_t - mu_{t-1}||^2 / (Sigma~ + Q + R),
        Sigma_t = (eta~ + Delta^2) / (eta~ + d) (1 - P_t) (Sigma~ + Q),
        eta_t   = eta~ + d,

    with d the number of coordinates. Delta^2 is a Mahalanobis distance: an
    observation far from where the filter expects it inflates Sigma and so
    raises the next gain. As the degrees of freedom grow the filter becomes
    the Gaussian one.

    Here eta_0 = gamma = delta, as in the paper's experiments (all 3). Then
    eta~ is always eta_0, because eta_t = eta~ + d > eta_0, so Q and R need
    no rescaling and Sigma is rescaled by
    eta_{t-1} (eta~ - 2) / ((eta_{t-1} - 2) eta~).

    Parameters
    ----------
    prior_variance : float
        Sigma_0, the prior scale of each coordinate of the optimum.
    dof : float
        eta_0 = gamma = delta > 2, the degrees of freedom of the prior, the
        drift and the noise.
    n_coordinates : int
        d, the number of coordinates of lambda.
    """

    def __init__(self, prior_variance, dof, n_coordinates):
        self.scale = prior_variance
        self.prior_dof = dof
        self.dof = dof
        self.n_coordinates = n_coordinates

    def gain(self, drift, noise, squared_distance):
        """Update Sigma and eta and return the gain P_t.

        Parameters
        ----------
        drift : float
            Q, the scale per coordinate of the optimum's drift.
        noise : float
            R, the scale per coordinate of the noisy optimum around it.
        squared_distance : float
            ||lambda^_t - mu_{t-1}||^2, summed over the coordinates.

        Returns
        -------
        gain : float
        """
        matched = self.prior_dof
        scale = self.scale * (self.dof / (self.dof - 2.0)) * ((matched - 2.0) / matched)
        predicted = scale + drift
        gain = _ratio(predicted, predicted + noise)
        mahalanobis = _ratio(squared_distance, predicted + noise)
        self.scale = (
            (matched + mahalanobis)
            / (matched + self.n_coordinates)
            * (1.0 - gain)
            * predicted
        )
        self.dof = matched + self.n_coordinates
        return gain

    def state(self):
        """The filter's state: Sigma and eta."""
        return {"scale": self.scale, "dof": self.dof}


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
    distance is one. A ``filter`` turns Q and R into the step size rho_t,
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
    tau to their number, as Ranganath et al. do. Its ``observes_target`` is
    true: the online update forms lambda^ as an array for it, which it does
    not for the schedules.

    With a ``floor`` (the package's variant) the step is never below that
    floor's step of the same update: the filter can raise the step above a
    schedule when the targets disagree with lambda more than their noise
    explains, but not lower it. The window then follows the step actually
    taken.

    Parameters
    ----------
    filter : AdaptiveGain, GaussianFilter or StudentTFilter
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

    observes_target = True

    def __init__(
        self,
        filter,
        shape,
        dtype,
        monte_carlo_batches,
        corrected=True,
        floor=None,
    ):
        self.filter = filter
        self.monte_carlo_batches = monte_carlo_batches
        self.corrected = corrected
        self.floor = floor
        self.mean_difference = np.zeros(shape, dtype=dtype)
        self.mean_squared_norm = 0.0
        self.weight_square_sum = 0.0
        self.window = 0.0
        self.drift = 0.0
        self.noise = 0.0

    def start(self, targets, current, workers=SERIAL):
        """Set the averages to the means of ``targets - current``.

        With tau = 1, 2, ... the exponentially weighted averages are plain
        running means.

        Parameters
        ----------
        targets : iterable of ndarray
            Noisy optima lambda^ of minibatches drawn at lambda = ``current``.
        current : ndarray
            The initial lambda.
        workers : Workers, default=SERIAL
            Threads that update blocks of rows.
        """
        for count, target in enumerate(targets, start=1):
            self.window = float(count)
            self._observe(target, current, workers)

    def __call__(self, step, target, current, workers=SERIAL):
        """The step size of an update from ``current`` toward ``target``.

        Parameters
        ----------
        step : int
            The update number t, from 1.
        target : ndarray
            The noisy optimum lambda^_t.
        current : ndarray
            lambda before the update, the filter's mean mu_{t-1}.
        workers : Workers, default=SERIAL
            Threads that update blocks of rows.

        Returns
        -------
        rho : float
        """
        squared_distance = self._observe(target, current, workers)
        rho = self.filter.gain(self.drift, self.noise, squared_distance)
        if self.floor is not None:
            rho = max(rho, self.floor(step, target, current))
        self.window = (1.0 - rho) * self.window + 1.0
        return rho

    def _observe(self, target, current, workers):
        """Fold d_t into g and h, update Q and R; return ||d_t||^2."""
        decay = 1.0 - 1.0 / self.window
        squared_distance, squared_mean_norm = workers.sum_over_rows(
            lambda span: self._observe_rows(target, current, decay, span),
            len(current),
        )
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

    def _observe_rows(self, target, current, decay, span):
        difference = target[span] - current[span]
        mean = self.mean_difference[span]
        mean *= decay
        mean += difference / self.window
        return np.array(
            [np.vdot(difference, difference), np.vdot(mean, mean)], dtype=np.float64
        )

    def state(self):
        """Q, R, tau and the filter's own state."""
        return {
            "drift": self.drift,
            "noise": self.noise,
            "window": self.window,
            **self.filter.state(),
        }
