"""Bayesian matrix factorization as a model of the shared online update.

The model of probabilistic matrix factorization with Gaussian priors
(Salakhutdinov & Mnih 2008; Paisley, Fazelnia & Barr, Example 1), with the
user and item biases of Koren, Bell & Volinsky (2009): for users i (rows),
items j (columns) and observed ratings y_ij,

    y_ij ~ N(u_i^T v_j + a_i + b_j + o, s2),
    u_ik ~ N(0, 1 / c_k),  a_i ~ N(0, 1 / c_a),
    v_jk ~ N(0, 1 / e_k),  b_j ~ N(0, 1 / e_b),

with the rating offset o. Each side's random vector is w = (factor, bias),
of dimension D = d + 1 (w = factor, D = d, without biases). A rating is
then w_i^T f(w_j) + g(w_j) + o, where for the other side's w' = (x', beta')

    f(w') = (x', 1),   g(w') = beta'       (without biases: f(w') = x', g = 0),

and the same with the sides swapped: the model is symmetric in users and
items. The variational family is q(w_i) = N(mu_i, Sigma_i) and
q(w_j) = N(m_j, S_j), full covariances. The users are the local variables,
fitted per minibatch; the items are the global ones. Given the users, the
optimal q(w_j) has the natural parameters (precision P_j and
precision-weighted mean h_j = P_j m_j)

    P_j = E + s2^-1 sum_{i rated j} E[f_i f_i^T],
    h_j =     s2^-1 sum_{i rated j} ((y_ij - o) E[f_i] - E[g_i f_i]),

with E = diag(e), f_i = f(w_i), g_i = g(w_i): the prior plus s2^-1 times a
sum of per-user statistics, which the shared online update moves. lambda
has one row per item: those sums, h_j then P_j row by row (D + D^2 values),
without the prior and the factor s2^-1, which enter when the items'
posteriors are formed; so the update's prior is 0 on every row, an item
that a minibatch does not rate moves toward the prior alone, and a learned
s2 or prior applies to all of lambda at once.

The noise variance and the prior precisions can be learned by empirical
Bayes (as Lim & Teh 2007 do in batch): each is the maximiser of the ELBO
given the posteriors, s2 = E[sum r_ij^2] / n_ratings with r_ij the rating's
residual, and 1 / c_k = E[u_ik^2] over the users (likewise for the items),
estimated on each minibatch and moved by the update's own step size.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from .._mechanisms import SparseStatistic
from .._online import OnlineUpdateMixin
from .._threads import map_rows, sum_rows
from .._validation import LISTED_ROWS, listed_rows, rows_of_entries
from ._posteriors import (
    _gaussian_divergence,
    _gaussians,
    _mean_second_moment,
    _moved,
    _Pairing,
    _second_moments,
    _symmetric,
    _Users,
)

# Users per block of the local step: blocks run on the threads and their
# statistics are added in order, so the result does not depend on n_jobs.
_LOCAL_BLOCK_SIZE = 4096

# Empirical Bayes estimates the items' mean E[w_jk^2] from this many items
# drawn anew each update, when there are more (see ``_after_update``).
_ITEM_MOMENT_SAMPLE = 2048

# A learned prior precision starts here, and a learned noise variance at
# the variance of the first training ratings around the offset.
_INITIAL_PRIOR_PRECISION = 1.0


class _OnlineMatrixFactorization(OnlineUpdateMixin, BaseEstimator):
    """Bayesian matrix factorization as a model of the shared online update.

    Its validation, natural parameters, local step, projection, empirical
    Bayes, bound and derived attributes; :class:`SVIMatrixFactorization`
    adds the parameters and the public methods.
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

    # -- natural parameters and hyperparameters ------------------------------------

    @property
    def _side_dimension(self):
        """D: the factor, and the bias with ``biases``."""
        return self.n_components + bool(self.biases)

    def _initial_natural(self, X, n_total, random_state):
        """Item factor means drawn from N(0, I / d), biases 0, with the
        prior's precision.

        The random means break the symmetry between the d dimensions. The
        stored precision is 0 and the stored h_j = s2 E m_j, so that
        P_j = E and m_j = P_j^-1 s2^-1 h_j is the draw.
        """
        n_items, rank, D = X.shape[1], self.n_components, self._side_dimension
        if self.rating_offset is None:
            self.rating_offset_ = float(X.data.mean()) if X.nnz else 0.0
        else:
            self.rating_offset_ = float(self.rating_offset)
        self._initialize_hyperparameters(X)
        means = np.zeros((n_items, D))
        means[:, :rank] = random_state.normal(0.0, 1.0 / np.sqrt(rank), (n_items, rank))
        natural = np.zeros((n_items, D + D * D), dtype=X.dtype)
        natural[:, :D] = self.noise_variance_ * self.item_prior_precision_ * means
        self._natural = natural
        self._update_attributes()
        return natural

    def _initialize_hyperparameters(self, X):
        """The noise variance and the prior precisions at their given or
        starting values, and the running averages that empirical Bayes
        moves."""
        D = self._side_dimension
        if self.noise_variance == "auto":
            deviations = X.data.astype(np.float64) - self.rating_offset_
            variance = float(np.mean(deviations**2)) if X.nnz else 1.0
            self.noise_variance_ = variance if variance > 0 else 1.0
        else:
            self.noise_variance_ = float(self.noise_variance)
        start = (
            _INITIAL_PRIOR_PRECISION
            if self.prior_precision == "auto"
            else float(self.prior_precision)
        )
        self.user_prior_precision_ = np.full(D, start)
        self.item_prior_precision_ = np.full(D, start)
        # The running averages of the minibatches' per-user mean squared
        # error sum and number of ratings, and of E[w_ik^2] of users and items.
        self._error_average = np.array([self.noise_variance_, 1.0])
        self._user_moment_average = 1.0 / self.user_prior_precision_
        self._item_moment_average = 1.0 / self.item_prior_precision_

    def _prior_natural(self):
        # lambda is stored without the prior.
        return 0.0

    def _item_posteriors(self, items=None):
        """Means and covariances of q(w_j) of the ``items`` (every item when
        None) from lambda: P_j = E + s2^-1 (stored P_j), h_j = s2^-1
        (stored h_j). Blocks of items are formed on the active threads."""
        D = self._side_dimension
        if items is None:
            natural = self._natural
        else:
            # A copy cut to some rows of lambda holds those rows only.
            block, block_rows = self._natural_store.rows_block(items)
            natural = block[
                items if block_rows is None else np.searchsorted(block_rows, items)
            ]
        natural = natural.astype(np.float64)
        precisions = natural[:, D:].reshape(-1, D, D) / self.noise_variance_
        precisions += np.diag(self.item_prior_precision_)
        linear = natural[:, :D] / self.noise_variance_
        means, covariances = np.empty_like(linear), np.empty_like(precisions)

        def form(span):
            means[span], covariances[span] = _gaussians(precisions[span], linear[span])

        try:
            map_rows(form, len(precisions), precisions[0].size)
        except np.linalg.LinAlgError as error:
            raise ValueError(
                "An item's precision matrix is not positive definite."
            ) from error
        return means, covariances

    def _projection(self):
        return self._project_rows

    def _project_rows(self, natural, prior):
        """Lift the eigenvalues of each stored P_j below zero to zero, in
        place.

        Every plain SVI iterate has the stored P_j positive semi-definite (a
        sum of second moments); annealing weights can leave that set.
        Returns the number of items changed.
        """
        D = self._side_dimension
        excess = _symmetric(natural[:, D:].reshape(-1, D, D).astype(np.float64))
        values, vectors = np.linalg.eigh(excess)
        outside = np.any(values < 0, axis=1)
        if not outside.any():
            return 0
        values = np.maximum(values[outside], 0.0)
        lifted = (vectors[outside] * values[:, np.newaxis, :]) @ np.swapaxes(
            vectors[outside], -1, -2
        )
        natural[outside, D:] = lifted.reshape(len(lifted), -1)
        return int(outside.sum())

    def _update_attributes(self):
        """Every item's posterior, kept until lambda moves, and the fitted
        attributes formed from them.

        An update reads and changes the posteriors of the items its users
        rated, so all of them are formed only at the end of each pass (and
        at the start of the fit).
        """
        means, covariances = self._item_posteriors()
        dtype = self._natural.dtype
        rank = self.n_components
        self.components_ = np.ascontiguousarray(means[:, :rank].T, dtype=dtype)
        self.component_covariances_ = covariances[:, :rank, :rank].astype(dtype)
        self.item_biases_ = (
            means[:, rank].astype(dtype) if self.biases else np.zeros(0, dtype=dtype)
        )
        self._item_moments = (None, means, covariances)
        self._item_moment_estimate = _mean_second_moment(means, covariances)

    def _current_item_moments(self, items=None):
        """Means and covariances of q(w_j) of the sorted ``items`` (every
        item when None) at the current lambda.

        Those formed since lambda last moved (``_item_moments``: the items,
        None for all, and their moments) are reused, and only the others
        formed.
        """
        if self._item_moments is None:
            return self._item_posteriors(items)
        known, means, covariances = self._item_moments
        if known is None:
            if items is None:
                return means, covariances
            return means[items], covariances[items]
        if items is None:
            items = np.arange(len(self._natural))
        positions = np.searchsorted(known, items)
        found = positions < len(known)
        found[found] = known[positions[found]] == items[found]
        all_means = np.empty((len(items), means.shape[1]))
        all_covariances = np.empty((len(items), *covariances.shape[1:]))
        all_means[found] = means[positions[found]]
        all_covariances[found] = covariances[positions[found]]
        if not found.all():
            missing = self._item_posteriors(items[~found])
            all_means[~found], all_covariances[~found] = missing
        return all_means, all_covariances

    def _item_pairing(self, items=None):
        """What the users read of q(w_j) of the sorted ``items`` (every item
        when None): :class:`_Pairing`."""
        means, covariances = self._current_item_moments(items)
        return _Pairing(means, _second_moments(means, covariances), self.biases)

    def _natural_updated(self, row_sums):
        # The item posteriors formed before no longer hold.
        self._item_moments = None

    def _after_pass(self):
        self._update_attributes()

    # -- empirical Bayes -------------------------------------------------------------

    def _learn_hyperparameters(self, rho, sample_mean):
        """Move the learned noise variance and prior precisions a step
        ``rho`` toward the minibatch's maximisers of the ELBO.

        ``sample_mean`` holds the minibatch means of each user's E[w_ik^2]
        (D values), sum_j E[r_ij^2] and number of ratings; the items' mean
        E[w_jk^2] was estimated at the end of the update before.
        """
        D = self._side_dimension
        if self.noise_variance == "auto":
            self._error_average = _moved(self._error_average, sample_mean[D:], rho)
            if self._error_average[1] > 0:
                self.noise_variance_ = float(
                    self._error_average[0] / self._error_average[1]
                )
        if self.prior_precision == "auto":
            self._user_moment_average = _moved(
                self._user_moment_average, sample_mean[:D], rho
            )
            self._item_moment_average = _moved(
                self._item_moment_average, self._item_moment_estimate, rho
            )
            self.user_prior_precision_ = 1.0 / self._user_moment_average
            self.item_prior_precision_ = 1.0 / self._item_moment_average

    def _after_update(self, rho, statistic):
        """Empirical Bayes, then the posteriors that the next update reads.

        The posteriors of the items the minibatch rated are formed at the
        new lambda: the next local step reads most of them, and an update
        that leaves one not positive definite is refused (the other items
        only moved toward the prior). With a learned prior precision, so
        are those of the items whose E[w_jk^2] estimate the mean over all
        items that the next empirical Bayes step reads: every item up to
        ``_ITEM_MOMENT_SAMPLE`` items, otherwise that many drawn uniformly,
        so that an update's cost does not grow with the number of items.
        """
        if statistic.sample_mean is not None:
            self._learn_hyperparameters(rho, statistic.sample_mean)
        items, sample = statistic.rows, None
        if self.prior_precision == "auto":
            n_items = len(self._natural)
            if n_items <= _ITEM_MOMENT_SAMPLE:
                items = None
            else:
                random_state = self._update_state.random_state
                sample = random_state.choice(
                    n_items, _ITEM_MOMENT_SAMPLE, replace=False
                )
                items = np.union1d(items, sample)
        means, covariances = self._item_posteriors(items)
        self._item_moments = (items, means, covariances)
        if self.prior_precision == "auto":
            drawn = slice(None) if sample is None else np.searchsorted(items, sample)
            self._item_moment_estimate = _mean_second_moment(
                means[drawn], covariances[drawn]
            )

    @property
    def _learns_hyperparameters(self):
        return "auto" in (self.noise_variance, self.prior_precision)

    # -- local step ---------------------------------------------------------------

    def _users(self, X, items=None, pairing=None):
        """The users of X at their optimum given the items (:class:`_Users`).

        X's columns are first restricted to the items it rates, or to the
        sorted ``items`` whose moments ``pairing`` holds.
        """
        if items is None:
            items = np.unique(X.indices)
            pairing = self._item_pairing(items)
        return _Users(
            X[:, items],
            self.rating_offset_,
            pairing,
            self.user_prior_precision_,
            self.noise_variance_,
        )

    def _user_posteriors(self, X):
        """q(w_i) of each user (row) of X at the current items: the exact
        optimum given q(V), factor and bias.

        Returns
        -------
        means : ndarray of shape (n_users, D)
        covariances : ndarray of shape (n_users, D, D)
        """
        users = self._users(X)
        return users.means, users.covariances

    def _rows_read(self, X):
        """The local step reads the rows of lambda of the items X rates."""
        return np.unique(X.indices)

    def _local_copy(self, rows=None):
        local = super()._local_copy(rows)
        if rows is not None:
            # The items' posteriors are formed from the rows it holds.
            local._item_moments = None
        return local

    def _local_statistic(self, X, sample_weight=None, draw=0, n_batch=None):
        """Minibatch mean of each user's statistic on the items it rated.

        For item j: w_i ((y_ij - o) E[f_i] - E[g_i f_i]) and w_i E[f_i f_i^T],
        summed over the minibatch's users i who rated j and divided by the
        minibatch size (w_i the user's weight). With learned hyperparameters
        the statistic also carries the minibatch means of E[w_ik^2], of
        sum_j E[r_ij^2] and of the users' numbers of ratings, which
        empirical Bayes reads; not in an annealed update (weights drawn),
        whose noise perturbs the items' posteriors by design: a prior
        fitted to them follows the noise, and in a measured run its
        precision fell toward 0 in five updates until an item's precision
        matrix failed. The local step draws no random numbers.
        """
        items = np.unique(X.indices)
        pairing = self._item_pairing(items)
        D = self._side_dimension
        learn = self._learns_hyperparameters and sample_weight is None

        def block_statistic(span):
            """The block's summed statistic, flattened, then its sums for
            empirical Bayes (none without learned hyperparameters)."""
            users = self._users(X[span], items, pairing)
            user_pairing = _Pairing(users.means, users.second, self.biases)
            weight = (
                np.ones((len(users.means), 1))
                if sample_weight is None
                else sample_weight[span, np.newaxis].astype(np.float64)
            )
            rated = users.observed
            statistic = np.empty((len(items), D + D * D))
            statistic[:, :D] = users.residuals.T @ (weight * user_pairing.f_mean)
            statistic[:, :D] -= rated.T @ (weight * user_pairing.gf)
            statistic[:, D:] = rated.T @ (weight * user_pairing.f_second)
            if not learn:
                return statistic.ravel()
            per_user = np.column_stack(
                [
                    np.diagonal(users.second, axis1=1, axis2=2),
                    users.squared_errors(),
                    np.diff(users.observed.indptr),
                ]
            )
            return np.concatenate([statistic.ravel(), per_user.sum(axis=0)])

        total = sum_rows(block_statistic, X.shape[0], block_rows=_LOCAL_BLOCK_SIZE)
        n_batch = X.shape[0] if n_batch is None else n_batch
        size = len(items) * (D + D * D)
        return SparseStatistic(
            items,
            total[:size].reshape(len(items), -1) / n_batch,
            total[size:] / n_batch if learn else None,
        )

    def _least_likely_samples(self, X_batch):
        """The users with the largest rating farthest from the offset first."""
        deviations = X_batch.copy()
        deviations.data = np.abs(deviations.data - self.rating_offset_)
        largest = deviations.max(axis=1).toarray().ravel()
        return np.argsort(-largest, kind="stable")

    # -- bound and predictions ------------------------------------------------------

    def _users_bound(self, X):
        """The users' terms of the ELBO of the ratings X.

        sum_ij E[log N(y_ij | w_i^T f_j + g_j + o, s2)] - sum_i KL(q(w_i) ||
        p(w_i)), with each q(w_i) at its optimum.
        """
        users = self._users(X)
        noise = self.noise_variance_
        likelihood = -0.5 * X.nnz * np.log(2 * np.pi * noise) - float(
            np.sum(users.squared_errors())
        ) / (2 * noise)
        return likelihood - _gaussian_divergence(
            users.means, users.covariances, self.user_prior_precision_
        )

    def _bound_of_users(self, users_bound):
        """The ELBO of ratings whose users' terms are ``users_bound``, and
        of the items."""
        means, covariances = self._current_item_moments()
        items = _gaussian_divergence(means, covariances, self.item_prior_precision_)
        return float(users_bound - items)

    def _predict_entries(self, means, rows, columns):
        """E[y] at the (row, column) pairs, from the users' means ``means``:
        mu_i^T E[f_j] + E[g_j] + o."""
        items = self._item_pairing()
        return (
            np.sum(means[rows] * items.f_mean[columns], axis=1)
            + items.g_mean[columns]
            + self.rating_offset_
        )

    def _predictive_variances(self, means, second, rows, columns):
        """Var[y] at the (row, column) pairs, from the users' means and
        second moments E[w w^T] (row by row): s2 plus the variance of the
        mean w_i^T f_j + g_j under the independent posteriors,

            tr(E[w w^T] E[f f^T]) + 2 mu^T E[g f] + E[g^2] - (mu^T E[f] + E[g])^2.
        """
        items = self._item_pairing()
        mean = self._predict_entries(means, rows, columns) - self.rating_offset_
        square = (
            np.sum(second[rows] * items.f_second[columns], axis=1)
            + 2 * np.sum(means[rows] * items.gf[columns], axis=1)
            + items.g_square[columns]
        )
        return self.noise_variance_ + square - mean**2

    def _evaluation_score(self, X):
        """The users' terms of the ELBO per rating of X."""
        return self._users_bound(X) / max(X.nnz, 1)

    def _fit_converged(self):
        """Whether the last two evaluation scores differ by less than ``tol``."""
        scores = self.evaluation_history_["score"]
        return len(scores) >= 2 and abs(scores[-1] - scores[-2]) < self.tol
