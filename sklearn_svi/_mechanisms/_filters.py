"""The gains of the variational filters (Houlsby & Blei 2014; Ranganath et al.
2013): each maps the estimated drift and noise of the noisy optimum to a step
size."""

from .._transaction import RebindingPart


def _ratio(numerator, denominator):
    """numerator / denominator, and 0 when both are 0 (nothing to update)."""
    return numerator / denominator if denominator > 0 else 0.0


class AdaptiveGain(RebindingPart):
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


class GaussianFilter(RebindingPart):
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


class StudentTFilter(RebindingPart):
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
