"""Bayesian matrix factorization as a model of the shared online update.

The model of probabilistic matrix factorization with Gaussian priors
(Salakhutdinov & Mnih 2008; Paisley, Fazelnia & Barr, Example 1): for users
i (rows), items j (columns) and observed ratings y_ij,

    u_i ~ N(0, c^-1 I),   v_j ~ N(0, c^-1 I),   y_ij ~ N(u_i^T v_j + o, s2),

with the rating offset o. The variational family is q(u_i) = N(mu_i, Sigma_i)
and q(v_j) = N(m_j, S_j), full covariances. The users are the local
variables, fitted per minibatch; the items are the global ones. Given the
users, the optimal q(v_j) has the natural parameters (precision P_j and
precision-weighted mean h_j = P_j m_j)

    P_j = c I + s2^-1 sum_{i rated j} E[u_i u_i^T],
    h_j =       s2^-1 sum_{i rated j} (y_ij - o) E[u_i],

eta plus a sum of per-user statistics, so the shared online update moves
them. lambda has one row per item: h_j, then P_j - c I row by row (d + d^2
values). It is stored minus its prior eta = (0, c I), so that the update's
prior is 0 on every row; an item that a minibatch does not rate moves toward
the prior alone.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from .._mechanisms import SparseStatistic
from .._online import OnlineUpdateMixin
from .._threads import sum_rows
from .._validation import LISTED_ROWS, listed_rows, rows_of_entries

# Users per block of the local step: blocks run on the threads and their
# statistics are added in order, so the result does not depend on n_jobs.
_LOCAL_BLOCK_SIZE = 4096


def _observed(X):
    """The pattern of X's stored entries as a CSR matrix of ones."""
    return sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)


def _symmetric(matrices):
    """(A + A^T) / 2 of each matrix of a stack, exactly symmetric."""
    return 0.5 * (matrices + np.swapaxes(matrices, -1, -2))


def _gaussian_divergence(means, covariances, precision):
    """KL(N(mean, covariance) || N(0, I / precision)) of each row, summed.

    KL = (c tr(S) + c m^T m - d - log det(c S)) / 2 for each Gaussian.
    """
    dimension = means.shape[-1]
    _, log_det = np.linalg.slogdet(covariances)
    trace = np.trace(covariances, axis1=-2, axis2=-1)
    return 0.5 * float(
        np.sum(
            precision * (trace + np.sum(means**2, axis=-1))
            - dimension
            - log_det
            - dimension * np.log(precision)
        )
    )


class _OnlineMatrixFactorization(OnlineUpdateMixin, BaseEstimator):
    """Bayesian matrix factorization as a model of the shared online update.

    Its validation, natural parameters, local step, projection, bound and
    derived attributes; :class:`SVIMatrixFactorization` adds the parameters
    and the public methods.
    """

    # -- validation ----------------------------------------------------------------

    def _check_ratings(self, X, reset, dtype=None):
        """Ratings as a CSR matrix whose stored entries are the observed ones.

        A dense array is a matrix with every rating observed.
        """
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=[np.float64, np.float32] if dtype is None else dtype,
        )
        X = sp.csr_matrix(X)
        with np.errstate(over="ignore"):
            squares = X.data.astype(np.float64) ** 2
        if not np.isfinite(np.sum(squares)):
            largest = rows_of_entries(X, np.argsort(-squares)[:LISTED_ROWS])
            raise ValueError(
                "The ratings are too large: their squares, which the bound "
                "adds up, overflow float64. The largest are in the rows "
                f"{listed_rows(largest)}."
            )
        return X

    def _check_training_data(self, X, reset, dtype=None):
        return self._check_ratings(X, reset, dtype)

    # -- natural parameters ---------------------------------------------------------

    def _initial_natural(self, X, n_total, random_state):
        """Item means drawn from N(0, I / d) with the prior's precision c I.

        The random means break the symmetry between the d dimensions.
        """
        n_items, rank = X.shape[1], self.n_components
        if self.rating_offset is None:
            self.rating_offset_ = float(X.data.mean()) if X.nnz else 0.0
        else:
            self.rating_offset_ = float(self.rating_offset)
        means = random_state.normal(0.0, 1.0 / np.sqrt(rank), (n_items, rank))
        natural = np.zeros((n_items, rank + rank * rank), dtype=X.dtype)
        # h = P m with P = c I; lambda holds P - c I, here 0.
        natural[:, :rank] = self.prior_precision * means
        self._natural = natural
        self._update_attributes()
        return natural

    def _prior_natural(self):
        # lambda is stored minus eta.
        return 0.0

    def _item_precisions(self, natural):
        """P_j = c I + (the stored P_j - c I), shape (n_items, d, d)."""
        rank = self.n_components
        precisions = natural[:, rank:].reshape(-1, rank, rank).astype(np.float64)
        precisions += self.prior_precision * np.eye(rank)
        return precisions

    def _project_natural(self):
        """Lift the eigenvalues of each P_j - c I below zero to zero.

        Every plain SVI iterate has P_j - c I positive semi-definite (a sum of
        second moments); annealing weights can leave that set. Returns the
        number of items changed.
        """
        rank = self.n_components
        excess = _symmetric(
            self._natural[:, rank:].reshape(-1, rank, rank).astype(np.float64)
        )
        values, vectors = np.linalg.eigh(excess)
        outside = np.any(values < 0, axis=1)
        if not outside.any():
            return 0
        values = np.maximum(values[outside], 0.0)
        lifted = (vectors[outside] * values[:, np.newaxis, :]) @ np.swapaxes(
            vectors[outside], -1, -2
        )
        self._natural[outside, rank:] = lifted.reshape(len(lifted), -1)
        return int(outside.sum())

    def _update_attributes(self):
        """Means, covariances and second moments of the items from lambda.

        S_j = P_j^-1 (by Cholesky factors, which fail for a P_j that is not
        positive definite), m_j = S_j h_j and E[v_j v_j^T] = S_j + m_j m_j^T.
        """
        rank = self.n_components
        precisions = self._item_precisions(self._natural)
        try:
            cholesky = np.linalg.cholesky(precisions)
        except np.linalg.LinAlgError as error:
            raise ValueError(
                "An item's precision matrix is not positive definite."
            ) from error
        inverse_factors = np.linalg.inv(cholesky)
        covariances = np.swapaxes(inverse_factors, -1, -2) @ inverse_factors
        linear = self._natural[:, :rank].astype(np.float64)
        means = np.einsum("jab,jb->ja", covariances, linear)
        dtype = self._natural.dtype
        self.components_ = np.ascontiguousarray(means.T, dtype=dtype)
        self.component_covariances_ = covariances.astype(dtype)
        self._item_second_moments = _symmetric(
            covariances + means[:, :, np.newaxis] * means[:, np.newaxis, :]
        ).astype(dtype)

    def _after_update(self, rho, statistic):
        self._update_attributes()

    # -- local step ---------------------------------------------------------------

    def _user_posteriors(self, X):
        """q(u_i) of each user (row) of X at the current items.

        Lambda_i = c I + s2^-1 sum_j E[v_j v_j^T] and
        mu_i = Lambda_i^-1 s2^-1 sum_j (y_ij - o) m_j over the items j that
        user i rated: the exact optimum of q(u_i) given q(V).

        Returns
        -------
        means : ndarray of shape (n_users, d)
        covariances : ndarray of shape (n_users, d, d)
        """
        rank, noise = self.n_components, self.noise_variance
        n_users = X.shape[0]
        moments = self._item_second_moments.reshape(len(self._natural), -1)
        precisions = (_observed(X) @ moments).reshape(n_users, rank, rank) / noise
        precisions = precisions.astype(np.float64) + self.prior_precision * np.eye(rank)
        residuals = X.copy()
        residuals.data -= self.rating_offset_
        linear = (residuals @ self.components_.T).astype(np.float64) / noise
        cholesky = np.linalg.cholesky(precisions)
        inverse_factors = np.linalg.inv(cholesky)
        covariances = np.swapaxes(inverse_factors, -1, -2) @ inverse_factors
        means = np.einsum("iab,ib->ia", covariances, linear)
        return means, covariances

    def _local_statistic(self, X, sample_weight=None, draw=0, n_batch=None):
        """Minibatch mean of each user's statistic on the items it rated.

        For item j: s2^-1 w_i (y_ij - o) mu_i and s2^-1 w_i E[u_i u_i^T],
        summed over the minibatch's users i who rated j and divided by the
        minibatch size. The local step draws no random numbers.
        """
        items = np.unique(X.indices)
        rank, noise = self.n_components, self.noise_variance

        def block_statistic(span):
            X_block = X[span]
            means, covariances = self._user_posteriors(X_block)
            second = _symmetric(
                covariances + means[:, :, np.newaxis] * means[:, np.newaxis, :]
            )
            if sample_weight is not None:
                means = means * sample_weight[span, np.newaxis]
                second = second * sample_weight[span, np.newaxis, np.newaxis]
            rated = X_block[:, items]
            residuals = rated.copy()
            residuals.data -= self.rating_offset_
            statistic = np.empty((len(items), rank + rank * rank))
            statistic[:, :rank] = residuals.T @ means
            statistic[:, rank:] = _observed(rated).T @ second.reshape(len(means), -1)
            return statistic / noise

        total = sum_rows(block_statistic, X.shape[0], block_rows=_LOCAL_BLOCK_SIZE)
        n_batch = X.shape[0] if n_batch is None else n_batch
        return SparseStatistic(items, total / n_batch)

    def _least_likely_samples(self, X_batch):
        """The users with the largest rating farthest from the offset first."""
        deviations = X_batch.copy()
        deviations.data = np.abs(deviations.data - self.rating_offset_)
        largest = deviations.max(axis=1).toarray().ravel()
        return np.argsort(-largest, kind="stable")

    # -- bound and predictions ------------------------------------------------------

    def _users_bound(self, X):
        """The users' terms of the ELBO of the ratings X, and their number.

        sum_ij E[log N(y_ij | u_i^T v_j + o, s2)] - sum_i KL(q(u_i) || p(u_i))
        with each q(u_i) at its optimum; E[(r - u^T v)^2] = r^2 - 2 r mu^T m
        + tr(E[u u^T] E[v v^T]).
        """
        means, covariances = self._user_posteriors(X)
        noise = self.noise_variance
        residuals = X.copy()
        residuals.data -= self.rating_offset_
        residuals.data = residuals.data.astype(np.float64)
        squared = float(np.sum(residuals.data**2))
        cross = float(np.sum((residuals @ self.components_.T) * means))
        second = covariances + means[:, :, np.newaxis] * means[:, np.newaxis, :]
        moments = self._item_second_moments.reshape(len(self._natural), -1)
        summed = (_observed(X) @ moments).astype(np.float64)
        trace = float(np.sum(summed * second.reshape(len(means), -1)))
        likelihood = -0.5 * X.nnz * np.log(2 * np.pi * noise) - (
            squared - 2 * cross + trace
        ) / (2 * noise)
        return likelihood - _gaussian_divergence(
            means, covariances, self.prior_precision
        )

    def _bound_of_users(self, users_bound):
        """The ELBO of ratings whose users' terms are ``users_bound``, and
        of the items."""
        items = _gaussian_divergence(
            self.components_.T.astype(np.float64),
            self.component_covariances_.astype(np.float64),
            self.prior_precision,
        )
        return float(users_bound - items)

    def _predict_entries(self, means, rows, columns):
        """E[y] at the (row, column) pairs, from the users' means ``means``."""
        items = self.components_.T[columns].astype(np.float64)
        return np.sum(means[rows] * items, axis=1) + self.rating_offset_

    def _evaluation_score(self, X):
        """The users' terms of the ELBO per rating of X."""
        return self._users_bound(X) / max(X.nnz, 1)

    def _fit_converged(self):
        """Whether the last two evaluation scores differ by less than ``tol``."""
        scores = self.evaluation_history_["score"]
        return len(scores) >= 2 and abs(scores[-1] - scores[-2]) < self.tol
