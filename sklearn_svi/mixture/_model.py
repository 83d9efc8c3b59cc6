"""The Bayesian Gaussian mixture as a model of the shared online update.

The model and variational family of scikit-learn's BayesianGaussianMixture
(Bishop 2006, Sec. 10.2): weights with a Dirichlet or a stick-breaking
(Dirichlet process) prior, and a Normal-Wishart prior on each component's
mean and precision. Its global parameters are linear in the responsibilities'
sufficient statistics when written as natural parameters (Bishop eq.
10.60-10.63):

    beta_k          = beta_0 + N_k
    nu_k            = nu_0 + N_k
    beta_k m_k      = beta_0 m_0 + sum_n r_nk x_n
    Psi_k           = W_0^-1 + beta_0 m_0 m_0^T + sum_n r_nk x_n x_n^T
    W_k^-1          = Psi_k - beta_k m_k m_k^T

so the shared online update moves these, and the means, covariances and
weights shown to the user are derived from them after each update.
"""

import math
import warnings

import numpy as np
from scipy.special import betaln, digamma, gammaln
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture._base import _check_shape
from sklearn.mixture._gaussian_mixture import _compute_log_det_cholesky
from sklearn.utils import check_array
from sklearn.utils.validation import validate_data

from .._mechanisms import (
    SparseStatistic,
)
from .._online import OnlineUpdateMixin
from .._sources import local_store
from .._threads import sum_rows
from .._validation import listed_rows
from ._normal_wishart import SCALES, _NaturalLayout

# Samples per block of the local step: blocks run on the threads and their
# statistics are added in order, so the result does not depend on n_jobs.
_LOCAL_BLOCK_SIZE = 4096


def _check_log_densities(weighted):
    """Refuse samples whose log-density overflowed under every component."""
    overflowed = np.flatnonzero(~np.isfinite(weighted).all(axis=1))
    if len(overflowed):
        raise ValueError(
            f"The samples in rows {listed_rows(overflowed)} lie so far from the "
            f"components that their log-densities overflow {weighted.dtype}. "
            "Scale the data, for instance with StandardScaler."
        )


def _log_normalised(weighted):
    """The log-sum-exp of each row of ``weighted``, and the rows minus it.

    scipy's ``logsumexp`` along the rows, the largest entry of each row
    subtracted before the exponentials; the maxima are taken over the
    columns of a Fortran-ordered copy and the sums by a product with ones,
    which for a few components are much faster than reductions along rows.
    """
    largest = np.asfortranarray(weighted).max(axis=1)
    shifted = weighted - largest[:, np.newaxis]
    ones = np.ones(weighted.shape[1], dtype=weighted.dtype)
    log_sum = np.log(np.exp(shifted) @ ones)
    return largest + log_sum, shifted - log_sum[:, np.newaxis]


class _OnlineGaussianMixture(DensityMixin, OnlineUpdateMixin, BaseEstimator):
    """The Bayesian Gaussian mixture as a model of the shared online update.

    Its priors, natural parameters, local step, projection, lower bound and
    derived attributes; :class:`SVIGaussianMixture` adds the parameters and
    the public methods.
    """

    # -- validation and priors ---------------------------------------------------

    def _check_training_data(self, X, reset, dtype=None):
        """Validated samples whose outer products x x^T, the statistic of
        the scale matrices, are finite."""
        X = validate_data(
            self,
            X,
            reset=reset,
            dtype=[np.float64, np.float32] if dtype is None else dtype,
            ensure_min_samples=1,
        )
        with np.errstate(over="ignore"):
            overflowed = np.flatnonzero(~np.isfinite(np.einsum("ij,ij->i", X, X)))
        if len(overflowed):
            raise ValueError(
                f"The samples in rows {listed_rows(overflowed)} are too large to "
                f"fit: their squared norms overflow {X.dtype}. Scale the data, "
                "for instance with StandardScaler."
            )
        return X

    def _least_likely_samples(self, X_batch):
        """The samples farthest from every component first: in a refused
        update they are the likeliest cause (outliers so far out that the
        scale matrices lose their precision)."""
        weighted = self._weighted_log_densities(X_batch)
        best = np.max(np.where(np.isnan(weighted), -np.inf, weighted), axis=1)
        return np.argsort(best, kind="stable")

    def _set_priors(self, X):
        """Resolve the priors from the parameters and the first data."""
        n_samples, n_features = X.shape
        if n_samples < self.n_components:
            raise ValueError(
                f"Expected n_samples >= n_components but got n_components = "
                f"{self.n_components}, n_samples = {n_samples}."
            )
        self.weight_concentration_prior_ = (
            1.0 / self.n_components
            if self.weight_concentration_prior is None
            else self.weight_concentration_prior
        )
        self.mean_precision_prior_ = (
            1.0 if self.mean_precision_prior is None else self.mean_precision_prior
        )
        if self.mean_prior is None:
            self.mean_prior_ = X.mean(axis=0)
        else:
            self.mean_prior_ = check_array(
                self.mean_prior, dtype=[np.float64, np.float32], ensure_2d=False
            )
            _check_shape(self.mean_prior_, (n_features,), "mean_prior")
        if self.degrees_of_freedom_prior is None:
            self.degrees_of_freedom_prior_ = float(n_features)
        elif self.degrees_of_freedom_prior > n_features - 1.0:
            self.degrees_of_freedom_prior_ = float(self.degrees_of_freedom_prior)
        else:
            raise ValueError(
                "The parameter 'degrees_of_freedom_prior' should be greater "
                f"than {n_features - 1}, but got "
                f"{self.degrees_of_freedom_prior:.3f}."
            )
        self.covariance_prior_ = self._resolve_covariance_prior(X)

    def _resolve_covariance_prior(self, X):
        """W_0^-1 from ``covariance_prior``, or the covariance of ``X``."""
        scale = self._scale()
        if self.covariance_prior is None:
            if X.shape[0] < 2:
                raise ValueError(
                    "The default covariance_prior is the covariance of the "
                    f"data, which needs at least 2 samples; got n_samples = "
                    f"{X.shape[0]}."
                )
            return scale.default_prior(X)
        return scale.check_prior(
            self.covariance_prior,
            X.shape[1],
            f"{self.covariance_type} covariance_prior",
        )

    def _scale(self):
        """The Normal-Wishart algebra of ``covariance_type``."""
        return SCALES[self.covariance_type]()

    # -- natural parameters ------------------------------------------------------

    def _prior_natural(self):
        """eta, one column of prior values for every row of lambda."""
        layout = self._layout
        prior = np.zeros((layout.n_rows, 1), dtype=self._natural_store.dtype)
        beta0, m0 = self.mean_precision_prior_, self.mean_prior_
        prior[layout.beta] = beta0
        prior[layout.dof] = self.degrees_of_freedom_prior_
        prior[layout.mean, 0] = beta0 * m0
        prior[layout.scale, 0] = self._scale().prior_rows(
            self.covariance_prior_, beta0, m0
        )
        if layout.stick_breaking:
            prior[layout.weights, 0] = [1.0, self.weight_concentration_prior_]
        else:
            prior[layout.weights, 0] = self.weight_concentration_prior_
        return prior

    def _initial_natural(self, X, n_total, random_state):
        """The update from the initial responsibilities, with N = n_total."""
        self._set_priors(X)
        self._layout = _NaturalLayout(
            X.shape[1],
            self._scale(),
            self.weight_concentration_prior_type == "dirichlet_process",
        )
        resp = self._initial_responsibilities(X, random_state)
        statistic = self._sufficient_statistics(X, resp, entropy=0.0)
        natural = statistic * (n_total / X.shape[0])
        # Stored at once: the prior takes lambda's type from it, and the
        # attributes are read from it.
        self._natural = natural
        natural = natural + self._prior_natural()
        self._natural = natural
        self._update_attributes()
        return natural

    def _initial_responsibilities(self, X, random_state):
        """Responsibilities chosen by ``init_params``, as scikit-learn does."""
        n_samples = X.shape[0]
        resp = np.zeros((n_samples, self.n_components), dtype=X.dtype)
        if self.init_params == "kmeans":
            labels = (
                KMeans(self.n_components, n_init=1, random_state=random_state)
                .fit(X)
                .labels_
            )
            resp[np.arange(n_samples), labels] = 1
        elif self.init_params == "random":
            resp = random_state.uniform(size=resp.shape).astype(X.dtype)
            resp /= resp.sum(axis=1, keepdims=True)
        elif self.init_params == "random_from_data":
            chosen = random_state.choice(n_samples, self.n_components, replace=False)
            resp[chosen, np.arange(self.n_components)] = 1
        else:
            _, chosen = kmeans_plusplus(X, self.n_components, random_state=random_state)
            resp[chosen, np.arange(self.n_components)] = 1
        return resp

    def _sufficient_statistics(self, X, resp, entropy):
        """Sum over the samples of each row's statistic, shape (n_rows, K).

        ``resp`` holds the responsibilities, already multiplied by any sample
        weights; ``entropy`` the per-component sums of -r log r (0 for none).
        """
        layout = self._layout
        counts = resp.sum(axis=0)
        statistic = np.zeros((layout.n_rows, self.n_components), dtype=X.dtype)
        statistic[layout.beta] = counts
        statistic[layout.dof] = counts
        statistic[layout.mean] = X.T @ resp
        statistic[layout.scale] = self._scale().statistic_rows(X, resp, self.reg_covar)
        if layout.stick_breaking:
            statistic[layout.weights.start] = counts
            # b_k = gamma_0 + sum_{j > k} N_j (Blei & Jordan 2006).
            statistic[layout.weights.start + 1] = counts.sum() - np.cumsum(counts)
        else:
            statistic[layout.weights] = counts
        statistic[layout.entropy] = entropy
        return statistic

    def _local_statistic(self, X, sample_weight=None, draw=0, n_batch=None):
        """Mean statistic of the minibatch: responsibilities on the threads.

        The local step draws no random numbers, so ``draw`` is unused.
        """

        def block_statistic(span):
            X_block = X[span]
            # Rows of a block are not the user's rows: an overflow is named
            # by the refused update instead.
            log_resp = self._log_responsibilities(X_block, check_overflow=False)[1]
            resp = np.exp(log_resp)
            if sample_weight is not None:
                resp *= sample_weight[span, np.newaxis]
            entropy = -np.sum(resp * log_resp, axis=0)
            return self._sufficient_statistics(X_block, resp, entropy)

        total = sum_rows(block_statistic, X.shape[0], block_rows=_LOCAL_BLOCK_SIZE)
        n_batch = X.shape[0] if n_batch is None else n_batch
        return SparseStatistic(np.arange(len(total)), total / n_batch)

    def _projection(self):
        return self._project_rows

    def _project_rows(self, natural, prior):
        """Move lambda back into the set that holds every plain SVI iterate.

        Annealing weights can be negative. Every plain iterate has
        beta >= beta_0, nu >= nu_0, concentrations at least their prior,
        a non-negative entropy, and W^-1 - W_0^-1 positive semi-definite
        (W^-1 of a convex combination of natural parameters is at least the
        combination of the W^-1). Values below those bounds are raised to
        them; a scale is raised by lifting the eigenvalues of
        W_0^(1/2) W^-1 W_0^(1/2) below 1 to 1, in place. Returns the number
        of values or scale matrices changed.
        """
        layout = self._layout
        changed = 0
        bounded_rows = [
            layout.beta,
            layout.dof,
            *range(*layout.weights.indices(layout.n_rows)),
        ]
        for row in bounded_rows:
            below = natural[row] < prior[row]
            changed += int(np.count_nonzero(below))
            natural[row, below] = prior[row, 0]
        below = natural[layout.entropy] < 0
        changed += int(np.count_nonzero(below))
        natural[layout.entropy, below] = 0.0
        return changed + self._scale().project(natural, layout, self.covariance_prior_)

    # -- user-facing parameters --------------------------------------------------

    def _update_attributes(self):
        """Derive the attributes of BayesianGaussianMixture from lambda."""
        layout = self._layout
        natural = self._natural
        beta = natural[layout.beta]
        dof = natural[layout.dof]
        # Contiguous copies: the products of the local step then take the same
        # path, and round the same way, before and after pickling.
        means = np.ascontiguousarray((natural[layout.mean] / beta).T)
        self.mean_precision_ = beta.copy()
        self.means_ = means
        scale = self._scale()
        inverse_scales = scale.inverse_scales(natural[layout.scale], beta, means)
        self.covariances_, self.degrees_of_freedom_ = scale.covariances(
            inverse_scales, dof
        )
        self.precisions_cholesky_ = scale.precisions_cholesky(self.covariances_)
        self.precisions_ = scale.precisions(self.precisions_cholesky_)
        if layout.stick_breaking:
            a, b = natural[layout.weights]
            self.weight_concentration_ = (a.copy(), b.copy())
            # E[v_k] prod_{j<k} (1 - E[v_j]) of the stick-breaking fractions.
            fractions = a / (a + b)
            remaining = np.concatenate([[1.0], np.cumprod(1.0 - fractions[:-1])])
            weights = fractions * remaining
        else:
            self.weight_concentration_ = natural[layout.weights.start].copy()
            weights = self.weight_concentration_.copy()
        self.weights_ = weights / weights.sum()

    # -- local step ----------------------------------------------------------------

    def _expected_log_weights(self):
        """E[log pi_k] (Bishop eq. 10.66; Blei & Jordan 2006 for the sticks)."""
        if self.weight_concentration_prior_type == "dirichlet_process":
            a, b = self.weight_concentration_
            total = digamma(a + b)
            log_fraction = digamma(a) - total
            log_rest = digamma(b) - total
            return log_fraction + np.concatenate([[0.0], np.cumsum(log_rest[:-1])])
        concentration = self.weight_concentration_
        return digamma(concentration) - digamma(concentration.sum())

    def _expected_log_densities(self, X):
        """E[log N(x | mu_k, Lambda_k^-1)] (Bishop eq. 10.64-10.65)."""
        n_features = X.shape[1]
        dof = np.atleast_1d(self.degrees_of_freedom_)
        log_gauss = self._scale().log_gaussian(
            X, self.means_, self.precisions_cholesky_
        ) - 0.5 * n_features * np.log(dof)
        # E[log |Lambda_k|] minus the log |nu_k W_k| already in log_gauss.
        log_det_expectation = n_features * np.log(2.0) + np.sum(
            digamma(0.5 * (dof - np.arange(n_features)[:, np.newaxis])), axis=0
        )
        return log_gauss + 0.5 * (
            log_det_expectation - n_features / self.mean_precision_
        )

    def _weighted_log_densities(self, X):
        """E[log pi_k] + E[log N(x | mu_k, Lambda_k^-1)], shape (n_samples, K)."""
        weighted = self._expected_log_densities(X) + self._expected_log_weights()
        return weighted.astype(X.dtype, copy=False)

    def _log_responsibilities(self, X, check_overflow=True):
        """Per-sample log normaliser and log responsibilities.

        With ``check_overflow``, samples so far out that their log-density
        under every component overflows raise a ValueError that names their
        rows in ``X``; without it they get NaN responsibilities, which the
        update refuses.
        """
        weighted = self._weighted_log_densities(X)
        if check_overflow:
            _check_log_densities(weighted)
        return _log_normalised(weighted)

    # -- bound and convergence -----------------------------------------------------

    def _compute_lower_bound(self):
        """BayesianGaussianMixture's lower bound at the current parameters.

        The same expression, up to the same constant, with the entropy of
        the responsibilities taken from lambda's entropy row: the summed
        entropy over N samples, updated like every other statistic. At a
        fixed point of batch mode it is BayesianGaussianMixture's value.
        """
        layout = self._layout
        n_features = layout.n_features
        dof = self.degrees_of_freedom_
        log_det = _compute_log_det_cholesky(
            self.precisions_cholesky_, self.covariance_type, n_features
        ) - 0.5 * n_features * np.log(dof)
        log_wishart_norm = -(
            dof * log_det
            + dof * n_features * 0.5 * math.log(2.0)
            + np.sum(
                gammaln(0.5 * (np.atleast_1d(dof) - np.arange(n_features)[:, None])),
                axis=0,
            )
        )
        log_wishart = self._scale().wishart_terms(self.n_components) * float(
            np.sum(log_wishart_norm)
        )
        if layout.stick_breaking:
            log_norm_weight = -np.sum(betaln(*self.weight_concentration_))
        else:
            concentration = self.weight_concentration_
            log_norm_weight = gammaln(concentration.sum()) - np.sum(
                gammaln(concentration)
            )
        entropy = float(np.sum(self._natural[layout.entropy]))
        return float(
            entropy
            - log_wishart
            - log_norm_weight
            - 0.5 * n_features * np.sum(np.log(self.mean_precision_))
        )

    def _initialize_online(self, X, n_total, mechanisms, store=local_store):
        super()._initialize_online(X, n_total, mechanisms, store)
        self.lower_bounds_ = []
        self.converged_ = False
        self.lower_bound_ = -np.inf

    def _after_update(self, rho, statistic):
        self._update_attributes()

    def _after_pass(self):
        self.lower_bound_ = self._compute_lower_bound()
        # A new list: attributes change by assignment (see ``_transaction``).
        self.lower_bounds_ = [*self.lower_bounds_, self.lower_bound_]

    def _fit_converged(self):
        """Whether the lower bound per sample changed by less than ``tol``
        over the last pass.

        The average gain that BayesianGaussianMixture's documentation
        names: the bound over N samples moves after a pass of minibatch
        updates by their noise, about N times a per-sample amount, which a
        fixed tolerance on the bound itself would wait for in vain.
        """
        bounds = self.lower_bounds_
        n_samples = self._update_state.fit_position["n_samples"]
        return len(bounds) >= 2 and abs(bounds[-1] - bounds[-2]) < self.tol * n_samples

    def _after_fit(self, converged, stopped):
        self.converged_ = converged
        if not converged and not stopped:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} "
                "passes: the lower bound still changed by more than tol. Try "
                "more passes (max_iter), a larger tol, or a decaying step size.",
                ConvergenceWarning,
                stacklevel=4,
            )

    def _evaluation_score(self, X):
        return float(np.mean(self._log_responsibilities(X)[0]))
