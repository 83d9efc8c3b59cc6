"""Bayesian matrix factorization of ratings by smoothed, annealed or filtered SVI."""

from ._estimator import SVIMatrixFactorization

__all__ = ["SVIMatrixFactorization"]
