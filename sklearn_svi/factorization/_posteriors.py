"""The Gaussian algebra of the factorization: the posteriors q(w) from
their natural parameters, their moments and divergences, and the users'
exact local step given the items (see :mod:`._model` for the model)."""

import numpy as np
import scipy.sparse as sp


def _observed(X):
    """The pattern of X's stored entries as a CSR matrix of ones."""
    return sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)


def _residuals(X, offset):
    """X with the offset subtracted from its stored entries, in float64."""
    residuals = X.astype(np.float64)
    residuals.data -= offset
    return residuals


def _symmetric(matrices):
    """(A + A^T) / 2 of each matrix of a stack, exactly symmetric."""
    return 0.5 * (matrices + np.swapaxes(matrices, -1, -2))


def _gaussians(precisions, linear):
    """Means and covariances of Gaussians given by their natural parameters.

    S = P^-1 and m = S h, for stacks of P and h. The Cholesky factorisation
    only checks that each P is positive definite (it raises
    ``LinAlgError`` otherwise); inverting its factors instead of P took
    1.6 times as long for a stack of 11 x 11 precisions.
    """
    np.linalg.cholesky(precisions)
    covariances = _symmetric(np.linalg.inv(precisions))
    means = np.einsum("nab,nb->na", covariances, linear)
    return means, covariances


def _moved(average, target, rho):
    """A running average moved a step ``rho`` toward ``target``."""
    return (1 - rho) * average + rho * target


def _mean_second_moment(means, covariances):
    """The mean of E[w_k^2] = S_kk + m_k^2 over a stack of Gaussians."""
    return np.mean(np.diagonal(covariances, axis1=1, axis2=2) + means**2, axis=0)


def _second_moments(means, covariances):
    """E[w w^T] = S + m m^T of each Gaussian of a stack, exactly symmetric."""
    return _symmetric(covariances + means[:, :, np.newaxis] * means[:, np.newaxis, :])


def _gaussian_divergence(means, covariances, precision):
    """KL(N(m, S) || N(0, diag(c)^-1)) of each row, summed.

    KL = (tr(C S) + m^T C m - D - log det S - sum_k log c_k) / 2 for each
    Gaussian, with C = diag(c).
    """
    _, log_det = np.linalg.slogdet(covariances)
    diagonal = np.diagonal(covariances, axis1=-2, axis2=-1)
    return 0.5 * float(
        np.sum((diagonal + means**2) @ precision)
        - len(means) * (means.shape[-1] + np.sum(np.log(precision)))
        - np.sum(log_det)
    )


class _Pairing:
    """What one side's posteriors give the other side: the moments of f(w)
    and g(w) (see the module's docstring) for each of its members.

    Attributes
    ----------
    f_mean : ndarray of shape (n, D)
        E[f].
    f_second : ndarray of shape (n, D * D)
        E[f f^T], row by row.
    gf : ndarray of shape (n, D)
        E[g f].
    g_mean, g_square : ndarray of shape (n,)
        E[g] and E[g^2].
    """

    def __init__(self, means, second, biases):
        n, D = means.shape
        if biases:
            factors = means[:, :-1]
            f_second = np.empty((n, D, D))
            f_second[:, :-1, :-1] = second[:, :-1, :-1]
            f_second[:, :-1, -1] = factors
            f_second[:, -1, :-1] = factors
            f_second[:, -1, -1] = 1.0
            self.f_mean = np.concatenate([factors, np.ones((n, 1))], axis=1)
            self.gf = np.concatenate([second[:, -1, :-1], means[:, -1:]], axis=1)
            self.g_mean = means[:, -1]
            self.g_square = second[:, -1, -1]
        else:
            f_second = second
            self.f_mean = means
            self.gf = np.zeros_like(means)
            self.g_mean = self.g_square = np.zeros(n)
        self.f_second = f_second.reshape(n, D * D)


class _Users:
    """The users' posteriors given the items, and their sums over each
    user's ratings that the statistic, the bound and empirical Bayes read.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        The users' ratings.
    offset : float
        o.
    items : _Pairing
        The items' moments.
    prior_precision : ndarray of shape (D,)
        The users' prior precisions, c then c_a.
    noise_variance : float
        s2.
    """

    def __init__(self, X, offset, items, prior_precision, noise_variance):
        n_users, D = X.shape[0], len(prior_precision)
        observed = _observed(X).astype(np.float64)
        residuals = _residuals(X, offset)
        self.observed, self.residuals = observed, residuals
        # sum_j E[f_j f_j^T], sum_j ((y_ij - o) E[f_j] - E[g_j f_j])
        self.f_second_sum = observed @ items.f_second
        self.linear = residuals @ items.f_mean - observed @ items.gf
        precisions = self.f_second_sum.reshape(n_users, D, D) / noise_variance
        precisions += np.diag(prior_precision)
        self.means, self.covariances = _gaussians(
            precisions, self.linear / noise_variance
        )
        self.second = _second_moments(self.means, self.covariances)
        self.items = items

    def squared_errors(self):
        """sum_j E[r_ij^2] over each user's ratings, with the residual
        r_ij = y_ij - o - w_i^T f_j - g_j:

        (y - o)^2 - 2 (y - o) (mu_i^T E[f_j] + E[g_j]) + tr(E[w_i w_i^T]
        E[f_j f_j^T]) + 2 mu_i^T E[g_j f_j] + E[g_j^2].
        """
        residuals, observed, items = self.residuals, self.observed, self.items
        squares = residuals.multiply(residuals).sum(axis=1).A1
        n_users = len(self.means)
        return (
            squares
            - 2 * np.sum(self.means * (residuals @ items.f_mean), axis=1)
            - 2 * residuals @ items.g_mean
            + np.sum(self.second.reshape(n_users, -1) * self.f_second_sum, axis=1)
            + 2 * np.sum(self.means * (observed @ items.gf), axis=1)
            + observed @ items.g_square
        )
