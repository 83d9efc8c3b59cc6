"""A Bayesian Gaussian mixture fitted by smoothed, annealed or filtered SVI."""

from ._estimator import SVIGaussianMixture

__all__ = ["SVIGaussianMixture"]
