"""The Normal-Wishart and Dirichlet algebra of the Bayesian Gaussian mixture:
where each natural parameter sits in lambda, and the Gaussian densities of
the components (Bishop 2006, Sec. 10.2)."""

import numpy as np
from scipy import linalg


class _NaturalLayout:
    """Where each natural parameter sits among the rows of lambda.

    lambda has one column per component. Its rows are beta, nu, beta m
    (n_features rows), Psi (n_features^2 rows for "full" and "tied",
    n_features for "diag", 1 for "spherical"), the weight concentrations
    (two rows, a and b, for the stick-breaking prior; one for the Dirichlet
    prior) and a last row that tracks the entropy of the responsibilities
    summed over the samples, which the lower bound needs.

    "tied" keeps one Psi per component, like "full": the tied scale is their
    mean, which keeps every row linear in the statistics.

    Parameters
    ----------
    n_features : int
        Dimension of the data.
    covariance_type : str
        "full", "tied", "diag" or "spherical".
    stick_breaking : bool
        Whether the weights have the Dirichlet process prior.
    """

    def __init__(self, n_features, covariance_type, stick_breaking):
        self.n_features = n_features
        self.covariance_type = covariance_type
        self.stick_breaking = stick_breaking
        n_scale = {
            "full": n_features**2,
            "tied": n_features**2,
            "diag": n_features,
            "spherical": 1,
        }[covariance_type]
        self.beta = 0
        self.dof = 1
        self.mean = slice(2, 2 + n_features)
        self.scale = slice(self.mean.stop, self.mean.stop + n_scale)
        n_weight_rows = 2 if stick_breaking else 1
        self.weights = slice(self.scale.stop, self.scale.stop + n_weight_rows)
        self.entropy = self.weights.stop
        self.n_rows = self.entropy + 1


def _check_shape(array, shape, name):
    if array.shape != shape:
        raise ValueError(
            f"The parameter '{name}' should have the shape of {shape}, but got "
            f"{array.shape}."
        )


def _precision_cholesky(covariances, covariance_type):
    """Cholesky factors of the inverses of ``covariances``."""
    if covariance_type in ("diag", "spherical"):
        return 1.0 / np.sqrt(covariances)
    stacked = covariances[np.newaxis] if covariance_type == "tied" else covariances
    factors = np.empty_like(stacked)
    for k, covariance in enumerate(stacked):
        try:
            lower = linalg.cholesky(covariance, lower=True)
        except linalg.LinAlgError as error:
            raise ValueError(
                "A covariance matrix is not positive definite; increase "
                "reg_covar or scale the data."
            ) from error
        factors[k] = linalg.solve_triangular(
            lower, np.eye(len(covariance)), lower=True
        ).T
    return factors[0] if covariance_type == "tied" else factors


def _precisions(precisions_cholesky, covariance_type):
    if covariance_type == "full":
        return precisions_cholesky @ np.swapaxes(precisions_cholesky, 1, 2)
    if covariance_type == "tied":
        return precisions_cholesky @ precisions_cholesky.T
    return precisions_cholesky**2


def _log_det_cholesky(precisions_cholesky, covariance_type, n_features):
    """log |P| of each precision's Cholesky factor P."""
    if covariance_type == "full":
        return np.sum(
            np.log(np.diagonal(precisions_cholesky, axis1=1, axis2=2)), axis=1
        )
    if covariance_type == "tied":
        return np.sum(np.log(np.diag(precisions_cholesky)))
    if covariance_type == "diag":
        return np.sum(np.log(precisions_cholesky), axis=1)
    return n_features * np.log(precisions_cholesky)


def _log_gaussian_density(X, means, precisions_cholesky, covariance_type):
    """log N(x | m_k, (P_k P_k^T)^-1) for every sample and component."""
    n_samples, n_features = X.shape
    n_components = means.shape[0]
    log_det = _log_det_cholesky(precisions_cholesky, covariance_type, n_features)
    if covariance_type in ("full", "tied"):
        squared = np.empty((n_samples, n_components), dtype=X.dtype)
        for k in range(n_components):
            factor = (
                precisions_cholesky
                if covariance_type == "tied"
                else precisions_cholesky[k]
            )
            projected = X @ factor - means[k] @ factor
            squared[:, k] = np.sum(projected**2, axis=1)
    elif covariance_type == "diag":
        precisions = precisions_cholesky**2
        squared = (
            np.sum(means**2 * precisions, axis=1)
            - 2.0 * X @ (means * precisions).T
            + (X**2) @ precisions.T
        )
    else:
        precisions = precisions_cholesky**2
        squared = (
            np.sum(means**2, axis=1) * precisions
            - 2.0 * (X @ means.T) * precisions
            + np.outer(np.sum(X**2, axis=1), precisions)
        )
    return -0.5 * (n_features * np.log(2 * np.pi) + squared) + log_det
