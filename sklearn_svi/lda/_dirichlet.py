"""Dirichlet expectations, the Dirichlet terms of the ELBO, and the Newton
steps that learn Dirichlet priors (empirical Bayes)."""

import numpy as np
from scipy.special import gammaln, polygamma, psi


def _dirichlet_expectation(parameters):
    """E[log x] for rows x ~ Dirichlet(parameters) (Blei et al. 2003, eq. 8)."""
    return psi(parameters) - psi(parameters.sum(axis=1))[:, np.newaxis]


def _dirichlet_term(prior, parameters):
    """The Dirichlet part of the ELBO, E[log p(x | prior)] - E[log q(x)].

    Summed over the rows of ``parameters``; ``prior`` is a scalar, a row,
    or an array of the shape of ``parameters`` (Hoffman et al. 2013,
    eq. 30-31).
    """
    prior = np.asarray(prior)
    prior_totals = (
        prior.sum(axis=1)
        if prior.ndim == 2
        else np.broadcast_to(prior, parameters.shape[1:]).sum()
    )
    expectation = _dirichlet_expectation(parameters)
    return (
        np.sum((prior - parameters) * expectation)
        + np.sum(gammaln(parameters) - gammaln(prior))
        + np.sum(gammaln(prior_totals) - gammaln(parameters.sum(axis=1)))
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


def _symmetric_dirichlet_maximum(eta, n_rows, n_categories, log_sum, offsets=None):
    """The symmetric part eta of a Dirichlet prior that maximises the
    topics' Dirichlet term.

    With prior eta + o_kw on word w of topic k (``offsets``, an array of
    shape (``n_rows``, ``n_categories``); all 0 when None) and V =
    ``n_categories``,

        f(eta) = sum_k (log Gamma(V eta + O_k) - sum_w log Gamma(eta + o_kw))
                 + (eta - 1) ``log_sum`` + const,

    O_k = sum_w o_kw and ``log_sum`` the sum of E[log beta_kw] over the
    topics and words, is concave; Newton's method from ``eta`` (Hoffman,
    Blei & Bach 2010, for o = 0; Minka 2000 for the derivatives). Only the
    non-zero offsets add terms of their own.
    """
    if offsets is None:
        offset_totals, shifted = np.zeros(n_rows), np.empty(0)
    else:
        offset_totals, shifted = offsets.sum(axis=1), offsets[offsets != 0]
    for _ in range(100):
        gradient = np.sum(n_categories * psi(n_categories * eta + offset_totals))
        gradient -= n_rows * n_categories * psi(eta)
        gradient -= np.sum(psi(eta + shifted) - psi(eta))
        gradient += log_sum
        curvature = np.sum(
            n_categories**2 * polygamma(1, n_categories * eta + offset_totals)
        )
        curvature -= n_rows * n_categories * polygamma(1, eta)
        curvature -= np.sum(polygamma(1, eta + shifted) - polygamma(1, eta))
        updated = float(_positive_step(np.array(eta), gradient / curvature, 1.0))
        if abs(updated - eta) <= 1e-12 * eta:
            return updated
        eta = updated
    return eta
