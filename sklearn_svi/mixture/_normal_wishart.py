"""The Normal-Wishart algebra of the Bayesian Gaussian mixture, per covariance type.

A component's precision has a Wishart factor q(Lambda_k) = W(W_k, nu_k) and
its mean a Gaussian one given the precision (Bishop 2006, eq. 10.59). In
natural parameters the scale enters as

    Psi_k = W_0^-1 + beta_0 m_0 m_0^T + sum_n r_nk x_n x_n^T,
    W_k^-1 = Psi_k - beta_k m_k m_k^T                      (Bishop eq. 10.62)

which is linear in the statistics. Each covariance type keeps Psi in its
own rows of lambda and derives the covariances from them; the rest of the
model does not depend on the type.
"""

import math

import numpy as np
from scipy import linalg
from sklearn.mixture._base import _check_shape
from sklearn.mixture._gaussian_mixture import (
    _compute_log_det_cholesky,
    _compute_precision_cholesky,
    _estimate_log_gaussian_prob,
)
from sklearn.utils import check_array

_NOT_POSITIVE_DEFINITE = (
    "The covariance of a component is not finite or not positive definite "
    "(for instance when it holds a single sample or collapsed ones). Try "
    "fewer components, a larger reg_covar, or scaled data."
)


class _NaturalLayout:
    """Where each natural parameter sits among the rows of lambda.

    lambda has one column per component. Its rows are beta, nu, beta m
    (n_features rows), Psi (the scale's rows, ``scale.n_rows``), the weight
    concentrations (two rows, a and b, for the stick-breaking prior; one for
    the Dirichlet prior) and a last row that tracks the entropy of the
    responsibilities summed over the samples, which the lower bound needs.

    Parameters
    ----------
    n_features : int
        Dimension of the data.
    scale : _FullScale, _TiedScale, _DiagScale or _SphericalScale
        The covariance type.
    stick_breaking : bool
        Whether the weights have the Dirichlet process prior.
    """

    def __init__(self, n_features, scale, stick_breaking):
        self.n_features = n_features
        self.stick_breaking = stick_breaking
        self.beta = 0
        self.dof = 1
        self.mean = slice(2, 2 + n_features)
        self.scale = slice(self.mean.stop, self.mean.stop + scale.n_rows(n_features))
        n_weight_rows = 2 if stick_breaking else 1
        self.weights = slice(self.scale.stop, self.scale.stop + n_weight_rows)
        self.entropy = self.weights.stop
        self.n_rows = self.entropy + 1


class _FullScale:
    """One full d x d scale per component, Psi stored row-major in d^2 rows."""

    covariance_type = "full"

    def n_rows(self, n_features):
        return n_features**2

    def default_prior(self, X):
        """W_0^-1 when the user gives none: the covariance of ``X``."""
        return np.atleast_2d(np.cov(X.T))

    def check_prior(self, prior, n_features, name):
        """``prior`` validated as W_0^-1: symmetric positive definite."""
        prior = check_array(prior, dtype=[np.float64, np.float32], ensure_2d=False)
        _check_shape(prior, (n_features, n_features), name)
        if not np.allclose(prior, prior.T) or np.any(linalg.eigvalsh(prior) <= 0):
            raise ValueError(f"'{name}' should be symmetric, positive-definite.")
        return prior

    def prior_rows(self, covariance_prior, beta0, m0):
        """The rows of Psi's prior, W_0^-1 + beta_0 m_0 m_0^T."""
        return (covariance_prior + beta0 * np.outer(m0, m0)).ravel()

    def statistic_rows(self, X, resp, reg_covar):
        """sum_n r_nk x_n x_n^T (+ reg_covar N_k on the diagonal), shape
        (n_rows, K)."""
        n_features = X.shape[1]
        counts = resp.sum(axis=0)
        statistic = np.empty((n_features, n_features, resp.shape[1]), dtype=X.dtype)
        for k in range(resp.shape[1]):
            statistic[:, :, k] = (X * resp[:, k : k + 1]).T @ X
        diagonal = np.arange(n_features)
        statistic[diagonal, diagonal] += reg_covar * counts
        return statistic.reshape(n_features**2, -1)

    def inverse_scales(self, scale_rows, beta, means):
        """W_k^-1 = Psi_k - beta_k m_k m_k^T, shape (K, d, d)."""
        d = means.shape[1]
        scales = np.ascontiguousarray(scale_rows.T).reshape(-1, d, d)
        return scales - beta[:, None, None] * (means[:, :, None] * means[:, None, :])

    def covariances(self, inverse_scales, dof):
        """(covariances_, degrees_of_freedom_): W_k^-1 / nu_k and nu_k."""
        return inverse_scales / dof[:, None, None], dof.copy()

    def precisions_cholesky(self, covariances):
        """The factors P_k with P_k P_k^T the inverse of each covariance.

        scikit-learn's ``_compute_precision_cholesky``, with one batched
        factorisation and inversion for all the components (a single
        matrix for "tied").
        """
        try:
            lower = np.linalg.cholesky(covariances)
        except np.linalg.LinAlgError as error:
            raise ValueError(_NOT_POSITIVE_DEFINITE) from error
        # NumPy factors a matrix with NaN or infinite entries without error.
        if not np.all(np.isfinite(lower)):
            raise ValueError(_NOT_POSITIVE_DEFINITE)
        return np.swapaxes(np.linalg.inv(lower), -1, -2)

    def _component_factors(self, precisions_cholesky, n_components):
        """The precision factor of each component, shape (K, d, d)."""
        return precisions_cholesky

    def log_gaussian(self, X, means, precisions_cholesky):
        """log N(x_n | m_k, (P_k P_k^T)^-1), shape (n_samples, K).

        scikit-learn's ``_estimate_log_gaussian_prob``, with the whitened
        samples of all the components in one product.
        """
        n_samples, n_features = X.shape
        n_components = means.shape[0]
        factors = self._component_factors(precisions_cholesky, n_components)
        whitened = X @ np.moveaxis(factors, 0, 1).reshape(n_features, -1)
        whitened -= np.einsum("ki,kij->kj", means, factors).ravel()
        whitened *= whitened
        squared_distances = np.einsum(
            "nkj->nk", whitened.reshape(n_samples, n_components, n_features)
        )
        log_det = _compute_log_det_cholesky(factors, "full", n_features)
        return log_det - 0.5 * (n_features * math.log(2 * math.pi) + squared_distances)

    def project(self, natural, layout, covariance_prior):
        """Lift every W_k^-1 - W_0^-1 back to positive semi-definite.

        Every plain SVI iterate has W_k^-1 - W_0^-1 positive semi-definite.
        With L L^T = W_0^-1, the eigenvalues of L^-1 W_k^-1 L^-T below 1
        are raised to 1. Returns the number of scales changed.
        """
        d = layout.n_features
        beta = natural[layout.beta]
        mean_natural = natural[layout.mean]
        root = linalg.cholesky(covariance_prior, lower=True)
        changed = 0
        for k in range(natural.shape[1]):
            outer = np.outer(mean_natural[:, k], mean_natural[:, k]) / beta[k]
            inverse_scale = natural[layout.scale, k].reshape(d, d) - outer
            whitened = linalg.solve_triangular(
                root,
                linalg.solve_triangular(root, inverse_scale, lower=True).T,
                lower=True,
            )
            values, vectors = linalg.eigh((whitened + whitened.T) / 2)
            if values.min() >= 1.0:
                continue
            changed += 1
            lifted = (vectors * np.maximum(values, 1.0)) @ vectors.T
            inverse_scale = root @ lifted @ root.T
            natural[layout.scale, k] = (inverse_scale + outer).ravel()
        return changed

    def precisions(self, precisions_cholesky):
        """The precisions P P^T from their Cholesky factors P."""
        return precisions_cholesky @ np.swapaxes(precisions_cholesky, 1, 2)

    def wishart_terms(self, n_components):
        """How many times the Wishart normaliser of each covariance counts."""
        return 1

    def component_covariance(self, covariances, k, n_features):
        """The d x d covariance of component ``k``."""
        return covariances[k]


class _TiedScale(_FullScale):
    """One scale shared by the components.

    lambda keeps one Psi per component, like "full": the tied scale is their
    mean, which keeps every row linear in the statistics.
    """

    covariance_type = "tied"

    def covariances(self, inverse_scales, dof):
        tied_dof = dof.mean()
        return inverse_scales.mean(axis=0) / tied_dof, tied_dof

    def _component_factors(self, precisions_cholesky, n_components):
        return np.broadcast_to(
            precisions_cholesky, (n_components, *precisions_cholesky.shape)
        )

    def precisions(self, precisions_cholesky):
        return precisions_cholesky @ precisions_cholesky.T

    def wishart_terms(self, n_components):
        return n_components

    def component_covariance(self, covariances, k, n_features):
        return covariances


class _DiagScale:
    """A diagonal scale per component: the d diagonal entries of Psi."""

    covariance_type = "diag"

    def n_rows(self, n_features):
        return n_features

    def default_prior(self, X):
        return np.var(X, axis=0, ddof=1)

    def check_prior(self, prior, n_features, name):
        prior = check_array(prior, dtype=[np.float64, np.float32], ensure_2d=False)
        _check_shape(prior, (n_features,), name)
        if np.any(prior <= 0):
            raise ValueError(f"'{name}' should be positive.")
        return prior

    def _squares(self, values):
        """The squares that the scale keeps of each row of ``values``."""
        return values**2

    def prior_rows(self, covariance_prior, beta0, m0):
        return covariance_prior + beta0 * self._squares(m0)

    def statistic_rows(self, X, resp, reg_covar):
        return self._squares(X).T @ resp + reg_covar * resp.sum(axis=0)

    def inverse_scales(self, scale_rows, beta, means):
        # A copy: for one scale row the transposed view is already
        # contiguous, and the subtraction would write into lambda.
        inverse_scales = scale_rows.T.copy()
        inverse_scales -= beta[:, None] * self._squares(means)
        return inverse_scales

    def covariances(self, inverse_scales, dof):
        return inverse_scales / dof[:, None], dof.copy()

    def precisions_cholesky(self, covariances):
        return _compute_precision_cholesky(covariances, self.covariance_type)

    def log_gaussian(self, X, means, precisions_cholesky):
        return _estimate_log_gaussian_prob(
            X, means, precisions_cholesky, self.covariance_type
        )

    def _outer_rows(self, mean_natural, beta):
        """The rows of beta_k m_k m_k^T that the scale keeps."""
        return mean_natural**2 / beta

    def project(self, natural, layout, covariance_prior):
        """Raise each W_k^-1 entry below W_0^-1's to it; return how many."""
        outer = self._outer_rows(natural[layout.mean], natural[layout.beta])
        floor = np.reshape(covariance_prior, (-1, 1))
        inverse_scale = natural[layout.scale] - outer
        below = inverse_scale < floor
        natural[layout.scale] = np.maximum(inverse_scale, floor) + outer
        return int(np.count_nonzero(below))

    def precisions(self, precisions_cholesky):
        return precisions_cholesky**2

    def wishart_terms(self, n_components):
        return 1

    def component_covariance(self, covariances, k, n_features):
        return np.diag(covariances[k])


class _SphericalScale(_DiagScale):
    """One variance per component: the mean of Psi's diagonal."""

    covariance_type = "spherical"

    def n_rows(self, n_features):
        return 1

    def default_prior(self, X):
        return np.var(X, axis=0, ddof=1).mean()

    def check_prior(self, prior, n_features, name):
        if not np.isscalar(prior):
            raise ValueError(
                "covariance_prior must be a positive float for "
                "covariance_type='spherical'."
            )
        return float(prior)

    def _squares(self, values):
        return np.mean(values**2, axis=-1, keepdims=True)

    def statistic_rows(self, X, resp, reg_covar):
        squares = (X**2).mean(axis=1)
        return (squares @ resp + reg_covar * resp.sum(axis=0))[np.newaxis]

    def _outer_rows(self, mean_natural, beta):
        return super()._outer_rows(mean_natural, beta).mean(axis=0, keepdims=True)

    def covariances(self, inverse_scales, dof):
        return inverse_scales[:, 0] / dof, dof.copy()

    def component_covariance(self, covariances, k, n_features):
        return covariances[k] * np.eye(n_features)


SCALES = {
    "full": _FullScale,
    "tied": _TiedScale,
    "diag": _DiagScale,
    "spherical": _SphericalScale,
}
