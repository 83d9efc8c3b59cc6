"""Tuneable stochastic annealing: the weights of SVI+ (Paisley, Fazelnia & Barr)."""

import numpy as np


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
