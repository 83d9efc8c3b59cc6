"""Dirichlet expectations, the Dirichlet terms of the ELBO, and the Newton
steps that learn Dirichlet priors (empirical Bayes)."""

import numpy as np
from scipy.special import gammaln, polygamma, psi


def _dirichlet_expectation(parameters):
    """E[log x] for rows x ~ Dirichlet(parameters) (Blei et al. 2003, eq. 8)."""
    return psi(parameters) - psi(parameters.sum(axis=1))[:, np.newaxis]


def _dirichlet_term(prior, parameters):
    """The Dirichlet part of the ELBO, E[log p(x | prior)] - E[log q(x)].

    Summed over the rows of ``parameters``; ``prior`` is a scalar or a row
    (Hoffman et al. 2013, eq. 30-31).
    """
    prior = np.broadcast_to(prior, parameters.shape[1:])
    expectation = _dirichlet_expectation(parameters)
    return (
        np.sum((prior - parameters) * expectation)
        + np.sum(gammaln(parameters) - gammaln(prior))
        + np.sum(gammaln(prior.sum()) - gammaln(parameters.sum(axis=1)))
    )


def _dirichlet_newton_direction(prior, mean_log):
    """The Newton direction of a Dirichlet prior's log-likelihood.

    For rows x_d ~ Dirichlet(prior) with mean E[log x_dk] = ``mean_log``,
    the per-row log-likelihood has the gradient g_k = psi(sum_j a_j) -
    psi(a_k) + mean_log_k and the Hessian diag(q) + z 1 1^T, q_k =
    -psi'(a_k), z = psi'(sum_j a_j), whose inverse applied to g is
    (g_k - b) / q_k with b = sum_j (g_j / q_j) / (1 / z + sum_j 1 / q_j)
    (Minka 2000, "Estimating a Dirichlet distribution", eq. 18).
    """
    gradient = psi(prior.sum()) - psi(prior) + mean_log
    curvature = -polygamma(1, prior)
    shared = np.sum(gradient / curvature) / (
        1.0 / polygamma(1, prior.sum()) + np.sum(1.0 / curvature)
    )
    return (gradient - shared) / curvature


def _positive_step(value, direction, rho):
    """value - rho direction, with rho halved until every entry is positive."""
    for _ in range(60):
        updated = value - rho * direction
        if np.all(updated > 0):
            return updated
        rho /= 2.0
    return value


def _symmetric_dirichlet_maximum(eta, n_rows, n_categories, log_sum):
    """The symmetric prior eta that maximises the topics' Dirichlet term.

    f(eta) = n_rows (log Gamma(V eta) - V log Gamma(eta)) + (eta - 1)
    ``log_sum``, with V = ``n_categories`` and ``log_sum`` the sum of
    E[log beta_kw] over the topics and words, is concave; Newton's method
    from ``eta`` (Hoffman, Blei & Bach 2010).
    """
    for _ in range(100):
        gradient = n_rows * n_categories * (psi(n_categories * eta) - psi(eta))
        gradient += log_sum
        curvature = (
            n_rows
            * n_categories
            * (n_categories * polygamma(1, n_categories * eta) - polygamma(1, eta))
        )
        updated = float(_positive_step(np.array(eta), gradient / curvature, 1.0))
        if abs(updated - eta) <= 1e-12 * eta:
            return updated
        eta = updated
    return eta
