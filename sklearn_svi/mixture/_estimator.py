"""A Bayesian Gaussian mixture fitted by stochastic variational inference.

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
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from scipy.special import betaln, digamma, gammaln, logsumexp
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._mechanisms import (
    FILTER_CONSTRAINTS,
    SCHEDULE_CONSTRAINTS,
    Mechanisms,
    SparseStatistic,
    learning_rate_constraint,
    renamed_constraint,
)
from .._online import OnlineUpdateMixin
from .._threads import sum_rows
from ._normal_wishart import (
    _check_shape,
    _log_det_cholesky,
    _log_gaussian_density,
    _NaturalLayout,
    _precision_cholesky,
    _precisions,
)

# Samples per block of the local step: blocks run on the threads and their
# statistics are added in order, so the result does not depend on n_jobs.
_LOCAL_BLOCK_SIZE = 4096


class SVIGaussianMixture(DensityMixin, OnlineUpdateMixin, BaseEstimator):
    """Bayesian Gaussian mixture fitted by stochastic variational inference.

    The model of :class:`sklearn.mixture.BayesianGaussianMixture`, fitted
    from minibatches by the shared online update with the three mechanisms
    of the package, which compose freely: smoothed statistics over the last
    ``L`` minibatches (Mandt & Blei 2014), the annealing noise of an
    effective minibatch of ``M`` samples (Paisley, Fazelnia & Barr), and
    step sizes from a schedule or from a variational filter (Houlsby & Blei
    2014; Ranganath et al. 2013). The update moves the natural parameters of
    the Normal-Wishart and Dirichlet factors; ``means_``, ``covariances_``,
    ``weights_`` and the other attributes are derived after each update.

    With ``batch_size`` at least the number of samples, ``learning_rate=1.0``,
    ``L=1`` and no annealing, each pass of ``fit`` is one iteration of
    BayesianGaussianMixture's variational EM, from the same initialisation.

    Read more in the :ref:`User Guide <svi_gaussian_mixture>`.

    Parameters
    ----------
    n_components : int, default=1
        Number of components K (an upper bound with the Dirichlet process
        prior, which leaves unneeded components with negligible weight).
    covariance_type : {"full", "tied", "diag", "spherical"}, default="full"
        The form of the covariances, as in BayesianGaussianMixture.
    tol : float, default=1e-3
        ``fit`` stops when the lower bound changes by less than ``tol``
        between two passes.
    reg_covar : float, default=1e-6
        Added to the diagonal of each sample's contribution to the scale
        statistics, which keeps the covariances positive definite.
    max_iter : int, default=20
        Maximum number of passes over the data in ``fit``.
    init_params : {"kmeans", "k-means++", "random", "random_from_data"}, \
            default="kmeans"
        How the initial responsibilities are chosen, as in
        BayesianGaussianMixture; the initial parameters are the update they
        give.
    weight_concentration_prior_type : {"dirichlet_process", \
            "dirichlet_distribution"}, default="dirichlet_process"
        The prior of the weights: stick-breaking or a Dirichlet.
    weight_concentration_prior : float, default=None
        gamma_0 of the weights' prior. None means ``1 / n_components``.
    mean_precision_prior : float, default=None
        beta_0 of the means' prior. None means 1.
    mean_prior : array-like of shape (n_features,), default=None
        m_0 of the means' prior. None means the mean of the first data.
    degrees_of_freedom_prior : float, default=None
        nu_0 of the Wishart prior, above ``n_features - 1``. None means
        ``n_features``.
    covariance_prior : float or array-like, default=None
        W_0^-1 of the Wishart prior, shaped by ``covariance_type`` as in
        BayesianGaussianMixture. None means the empirical covariance of the
        first data.
    batch_size : int, default=256
        Number of samples per minibatch.
    total_samples : float, default=1e6
        Number of samples N of the data set, used by ``partial_fit``.
    learning_rate : {"robbins-monro", "student-t", "gaussian", "adaptive"} or \
            float, default="robbins-monro"
        ``"robbins-monro"`` is ``(learning_offset + t) ** -learning_decay``;
        ``"student-t"`` and ``"gaussian"`` take the gain of a variational
        filter and ``"adaptive"`` Ranganath et al.'s adaptive rate, as
        :class:`FilteredLDA` does; a float in (0, 1] is a constant step size.
    learning_offset : float, default=10.0
        tau_0 of the Robbins-Monro schedule.
    learning_decay : float, default=0.7
        kappa of the Robbins-Monro schedule.
    prior_variance : float, default=0.0
        Sigma_0 of the filters, as in :class:`FilteredLDA`.
    prior_dof : float, default=3
        Degrees of freedom, above 2, of the Student's t filter.
    bias_correction : bool, default=True
        Correct the filters' estimates of the drift and the noise for the
        noise of their moving averages, as in :class:`FilteredLDA`.
    min_step_size : "robbins-monro", float or None, default=None
        A lower bound of the filters' step size, as in :class:`FilteredLDA`.
        None, the published filters, is the default here: the filters
        matched the Robbins-Monro schedule on mixtures without it.
    L : int, default=1
        Length of the smoothing window; 1 is no smoothing.
    M : int, default=None
        Effective minibatch size of the annealing noise, at most
        ``batch_size``; None is no annealing.
    M_growth : float, default=0.0
        Growth of ``M`` per update.
    evaluate_every : int, default=-1
        Record the mean log-likelihood of ``X_val`` (or of the minibatch just
        used) in ``evaluation_history_`` every ``evaluate_every`` updates.
    n_jobs : int, default=None
        Number of threads of the local step and of the update; None means 1.
        The result does not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the initialisation, of the order of the samples in ``fit``
        and of the annealing noise.
    warm_start : bool, default=False
        If True, ``fit`` continues from the fitted state instead of starting
        again.
    verbose : int, default=0
        Print progress when positive.
    step_size : str or float
        Former name of ``learning_rate``.

        .. deprecated:: 0.1
           ``step_size`` was renamed ``learning_rate`` in 0.1 and will be
           removed in 0.3.

    Attributes
    ----------
    weights_ : ndarray of shape (n_components,)
        Expected weight of each component.
    means_ : ndarray of shape (n_components, n_features)
        m_k, the mean of each component's mean.
    covariances_ : ndarray
        W_k^-1 / nu_k, shaped by ``covariance_type``.
    precisions_ : ndarray
        The expected precisions, nu_k W_k.
    precisions_cholesky_ : ndarray
        Cholesky factors of the precisions.
    weight_concentration_ : ndarray or tuple of ndarray
        The Dirichlet parameters of the weights, or (a, b) of the Beta
        distributions of the stick-breaking fractions.
    mean_precision_ : ndarray of shape (n_components,)
        beta_k.
    degrees_of_freedom_ : ndarray of shape (n_components,) or float
        nu_k (one value for "tied").
    weight_concentration_prior_, mean_precision_prior_, mean_prior_, \
degrees_of_freedom_prior_, covariance_prior_
        The priors in use.
    lower_bound_ : float
        BayesianGaussianMixture's lower bound on the evidence (up to the same
        constant) at the current parameters, with the entropy of the
        responsibilities tracked by the online update.
    lower_bounds_ : list of float
        The lower bound after each pass.
    converged_ : bool
        Whether ``fit`` stopped because the lower bound changed by less than
        ``tol``.
    n_iter_ : int
        Number of passes made.
    n_batch_iter_ : int
        Number of minibatch updates made.
    n_samples_seen_ : int
        Number of samples used by the updates.
    n_projected_ : int
        With annealing, the number of parameter values moved back into the
        feasible set.
    evaluation_history_ : dict of lists
        ``"n_batch_iter"``, ``"n_samples_seen"`` and ``"score"`` of each
        evaluation.
    step_size_history_ : dict of lists
        ``"n_batch_iter"`` and ``"step_size"`` of the updates, at most 10,000
        values (thinned as described for :class:`FilteredLDA`).
    random_state_ : RandomState instance
        The random state of the fit.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``, when they are all strings.

    See Also
    --------
    sklearn.mixture.BayesianGaussianMixture : The same model by batch
        variational inference.

    References
    ----------
    .. [1] C. Bishop. "Pattern Recognition and Machine Learning", Sec. 10.2.
       Springer, 2006.
    .. [2] M. Hoffman, D. Blei, C. Wang and J. Paisley. "Stochastic
       Variational Inference". JMLR 14, 2013.
    .. [3] J. Paisley, G. Fazelnia and B. Barr. "Stochastic Variational
       Inference with Tuneable Stochastic Annealing".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_svi import SVIGaussianMixture
    >>> rng = np.random.RandomState(0)
    >>> X = np.vstack([rng.normal(-4, 1, (500, 2)), rng.normal(4, 1, (500, 2))])
    >>> gmm = SVIGaussianMixture(n_components=5, batch_size=100, learning_rate=0.3,
    ...                          max_iter=30, random_state=0).fit(X)
    >>> int(np.sum(gmm.weights_ > 0.05))
    2
    >>> gmm.predict([[-4.0, -4.0], [4.0, 4.0]]).tolist()
    [3, 0]
    """

    _parameter_constraints: dict = {
        **OnlineUpdateMixin._online_parameter_constraints,
        **SCHEDULE_CONSTRAINTS,
        **FILTER_CONSTRAINTS,
        "learning_rate": learning_rate_constraint(),
        "step_size": renamed_constraint(learning_rate_constraint()),
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "covariance_type": [StrOptions({"full", "tied", "diag", "spherical"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "reg_covar": [Interval(Real, 0, None, closed="left")],
        "init_params": [
            StrOptions({"kmeans", "k-means++", "random", "random_from_data"})
        ],
        "weight_concentration_prior_type": [
            StrOptions({"dirichlet_process", "dirichlet_distribution"})
        ],
        "weight_concentration_prior": [None, Interval(Real, 0, None, closed="neither")],
        "mean_precision_prior": [None, Interval(Real, 0, None, closed="neither")],
        "mean_prior": [None, "array-like"],
        "degrees_of_freedom_prior": [None, Interval(Real, 0, None, closed="neither")],
        "covariance_prior": [
            None,
            "array-like",
            Interval(Real, 0, None, closed="neither"),
        ],
        "L": [Interval(Integral, 1, None, closed="left")],
        "M": [None, Interval(Integral, 1, None, closed="left")],
        "M_growth": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=1e-3,
        reg_covar=1e-6,
        max_iter=20,
        init_params="kmeans",
        weight_concentration_prior_type="dirichlet_process",
        weight_concentration_prior=None,
        mean_precision_prior=None,
        mean_prior=None,
        degrees_of_freedom_prior=None,
        covariance_prior=None,
        batch_size=256,
        total_samples=1e6,
        learning_rate="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.7,
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size=None,
        L=1,
        M=None,
        M_growth=0.0,
        evaluate_every=-1,
        n_jobs=None,
        random_state=None,
        warm_start=False,
        verbose=0,
        step_size="deprecated",
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.init_params = init_params
        self.weight_concentration_prior_type = weight_concentration_prior_type
        self.weight_concentration_prior = weight_concentration_prior
        self.mean_precision_prior = mean_precision_prior
        self.mean_prior = mean_prior
        self.degrees_of_freedom_prior = degrees_of_freedom_prior
        self.covariance_prior = covariance_prior
        self.batch_size = batch_size
        self.total_samples = total_samples
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.L = L
        self.M = M
        self.M_growth = M_growth
        self.evaluate_every = evaluate_every
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.step_size = step_size

    def _mechanism_settings(self):
        return Mechanisms(
            window_length=self.L,
            effective_batch_size=self.M,
            effective_batch_growth=self.M_growth,
            learning_rate=self._renamed_parameter("learning_rate", "step_size"),
            learning_offset=self.learning_offset,
            learning_decay=self.learning_decay,
            prior_variance=self.prior_variance,
            prior_dof=self.prior_dof,
            bias_correction=self.bias_correction,
            min_step_size=self.min_step_size,
        )

    # -- validation and priors ---------------------------------------------------

    def _check_training_data(self, X, reset):
        return validate_data(
            self, X, reset=reset, dtype=[np.float64, np.float32], ensure_min_samples=1
        )

    def _check_data(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=self._natural.dtype)

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
        n_features = X.shape[1]
        if self.covariance_prior is None:
            if X.shape[0] < 2:
                raise ValueError(
                    "The default covariance_prior is the covariance of the "
                    f"data, which needs at least 2 samples; got n_samples = "
                    f"{X.shape[0]}."
                )
            if self.covariance_type in ("full", "tied"):
                return np.atleast_2d(np.cov(X.T))
            variances = np.var(X, axis=0, ddof=1)
            return variances if self.covariance_type == "diag" else variances.mean()
        if self.covariance_type == "spherical":
            if not np.isscalar(self.covariance_prior):
                raise ValueError(
                    "covariance_prior must be a positive float for "
                    "covariance_type='spherical'."
                )
            return float(self.covariance_prior)
        prior = check_array(
            self.covariance_prior, dtype=[np.float64, np.float32], ensure_2d=False
        )
        if self.covariance_type == "diag":
            _check_shape(prior, (n_features,), "diag covariance_prior")
            if np.any(prior <= 0):
                raise ValueError("'diag covariance_prior' should be positive.")
            return prior
        _check_shape(
            prior, (n_features, n_features), f"{self.covariance_type} covariance_prior"
        )
        if not np.allclose(prior, prior.T) or np.any(linalg.eigvalsh(prior) <= 0):
            raise ValueError(
                f"'{self.covariance_type} covariance_prior' should be symmetric, "
                "positive-definite."
            )
        return prior

    # -- natural parameters ------------------------------------------------------

    def _prior_natural(self):
        """eta, one column of prior values for every row of lambda."""
        layout = self._layout
        prior = np.zeros((layout.n_rows, 1), dtype=self._natural.dtype)
        beta0, m0 = self.mean_precision_prior_, self.mean_prior_
        prior[layout.beta] = beta0
        prior[layout.dof] = self.degrees_of_freedom_prior_
        prior[layout.mean, 0] = beta0 * m0
        if self.covariance_type in ("full", "tied"):
            scale = self.covariance_prior_ + beta0 * np.outer(m0, m0)
            prior[layout.scale, 0] = scale.ravel()
        elif self.covariance_type == "diag":
            prior[layout.scale, 0] = self.covariance_prior_ + beta0 * m0**2
        else:
            prior[layout.scale, 0] = self.covariance_prior_ + beta0 * np.mean(m0**2)
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
            self.covariance_type,
            self.weight_concentration_prior_type == "dirichlet_process",
        )
        resp = self._initial_responsibilities(X, random_state)
        statistic = self._sufficient_statistics(X, resp, entropy=0.0)
        # Stored at once: the prior and the attributes are read from it.
        self._natural = statistic * (n_total / X.shape[0])
        self._natural += self._prior_natural()
        self._update_attributes()
        return self._natural

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
        n_features = X.shape[1]
        if self.covariance_type in ("full", "tied"):
            scale = statistic[layout.scale].reshape(n_features, n_features, -1)
            for k in range(self.n_components):
                scale[:, :, k] = (X * resp[:, k : k + 1]).T @ X
            scale[np.arange(n_features), np.arange(n_features)] += (
                self.reg_covar * counts
            )
        elif self.covariance_type == "diag":
            statistic[layout.scale] = (X**2).T @ resp + self.reg_covar * counts
        else:
            squares = (X**2).mean(axis=1)
            statistic[layout.scale] = squares @ resp + self.reg_covar * counts
        if layout.stick_breaking:
            statistic[layout.weights.start] = counts
            # b_k = gamma_0 + sum_{j > k} N_j (Blei & Jordan 2006).
            statistic[layout.weights.start + 1] = counts.sum() - np.cumsum(counts)
        else:
            statistic[layout.weights] = counts
        statistic[layout.entropy] = entropy
        return statistic

    def _local_statistic(self, X, sample_weight=None, draw=0):
        """Mean statistic of the minibatch: responsibilities on the threads.

        The local step draws no random numbers, so ``draw`` is unused.
        """

        def block_statistic(span):
            X_block = X[span]
            log_resp = self._log_responsibilities(X_block)[1]
            resp = np.exp(log_resp)
            if sample_weight is not None:
                resp *= sample_weight[span, np.newaxis]
            entropy = -np.sum(resp * log_resp, axis=0)
            return self._sufficient_statistics(X_block, resp, entropy)

        total = sum_rows(block_statistic, X.shape[0], block_rows=_LOCAL_BLOCK_SIZE)
        return SparseStatistic(np.arange(len(total)), total / X.shape[0])

    def _project_natural(self):
        """Move lambda back into the set that holds every plain SVI iterate.

        Annealing weights can be negative. Every plain iterate has
        beta >= beta_0, nu >= nu_0, concentrations at least their prior,
        a non-negative entropy, and W^-1 - W_0^-1 positive semi-definite
        (W^-1 of a convex combination of natural parameters is at least the
        combination of the W^-1). Values below those bounds are raised to
        them; a scale is raised by lifting the eigenvalues of
        W_0^(1/2) W^-1 W_0^(1/2) below 1 to 1. Returns the number of values
        or scale matrices changed.
        """
        layout = self._layout
        natural = self._natural
        prior = self._prior_natural()
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
        return changed + self._project_scales()

    def _project_scales(self):
        layout = self._layout
        natural = self._natural
        beta = natural[layout.beta]
        mean_natural = natural[layout.mean]
        changed = 0
        if self.covariance_type in ("full", "tied"):
            d = layout.n_features
            root = linalg.cholesky(self.covariance_prior_, lower=True)
            for k in range(self.n_components):
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
        outer = mean_natural**2 / beta
        if self.covariance_type == "spherical":
            outer = outer.mean(axis=0, keepdims=True)
        floor = np.reshape(self.covariance_prior_, (-1, 1))
        inverse_scale = natural[layout.scale] - outer
        below = inverse_scale < floor
        changed = int(np.count_nonzero(below))
        natural[layout.scale] = np.maximum(inverse_scale, floor) + outer
        return changed

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
        d = layout.n_features
        if self.covariance_type in ("full", "tied"):
            scales = np.ascontiguousarray(natural[layout.scale].T).reshape(-1, d, d)
            inverse_scales = scales - beta[:, None, None] * (
                means[:, :, None] * means[:, None, :]
            )
            if self.covariance_type == "tied":
                self.degrees_of_freedom_ = dof.mean()
                self.covariances_ = (
                    inverse_scales.mean(axis=0) / self.degrees_of_freedom_
                )
            else:
                self.degrees_of_freedom_ = dof.copy()
                self.covariances_ = inverse_scales / dof[:, None, None]
        else:
            self.degrees_of_freedom_ = dof.copy()
            squares = means**2
            if self.covariance_type == "spherical":
                squares = squares.mean(axis=1, keepdims=True)
            # A copy: for one scale row (spherical, or diag in one
            # dimension) the transposed view is already contiguous, and the
            # subtraction would write into lambda.
            inverse_scales = natural[layout.scale].T.copy()
            inverse_scales -= beta[:, None] * squares
            covariances = inverse_scales / dof[:, None]
            self.covariances_ = (
                covariances[:, 0]
                if self.covariance_type == "spherical"
                else covariances
            )
        self.precisions_cholesky_ = _precision_cholesky(
            self.covariances_, self.covariance_type
        )
        self.precisions_ = _precisions(self.precisions_cholesky_, self.covariance_type)
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
        log_gauss = _log_gaussian_density(
            X, self.means_, self.precisions_cholesky_, self.covariance_type
        ) - 0.5 * n_features * np.log(dof)
        # E[log |Lambda_k|] minus the log |nu_k W_k| already in log_gauss.
        log_det_expectation = n_features * np.log(2.0) + np.sum(
            digamma(0.5 * (dof - np.arange(n_features)[:, np.newaxis])), axis=0
        )
        return log_gauss + 0.5 * (
            log_det_expectation - n_features / self.mean_precision_
        )

    def _log_responsibilities(self, X):
        """Per-sample log normaliser and log responsibilities."""
        weighted = self._expected_log_densities(X) + self._expected_log_weights()
        weighted = weighted.astype(X.dtype, copy=False)
        log_norm = logsumexp(weighted, axis=1)
        return log_norm, weighted - log_norm[:, np.newaxis]

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
        log_det = _log_det_cholesky(
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
        if self.covariance_type == "tied":
            log_wishart = self.n_components * float(np.sum(log_wishart_norm))
        else:
            log_wishart = float(np.sum(log_wishart_norm))
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

    def _initialize_online(self, X, n_total, mechanisms):
        super()._initialize_online(X, n_total, mechanisms)
        self.lower_bounds_ = []
        self.converged_ = False
        self.lower_bound_ = -np.inf

    def _after_update(self, rho):
        self._update_attributes()

    def _after_pass(self):
        self.lower_bound_ = self._compute_lower_bound()
        self.lower_bounds_.append(self.lower_bound_)

    def _fit_converged(self):
        bounds = self.lower_bounds_
        return len(bounds) >= 2 and abs(bounds[-1] - bounds[-2]) < self.tol

    def _after_fit(self, converged):
        self.converged_ = converged
        if not converged:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} "
                "passes: the lower bound still changed by more than tol. Try "
                "more passes (max_iter), a larger tol, or a decaying step size.",
                ConvergenceWarning,
                stacklevel=4,
            )

    def _evaluation_score(self, X):
        return float(np.mean(self._log_responsibilities(X)[0]))

    # -- public API ----------------------------------------------------------------

    def score_samples(self, X):
        """Log of the variational predictive weight of each sample.

        As in BayesianGaussianMixture: log sum_k exp(E[log pi_k] +
        E[log N(x | mu_k, Lambda_k^-1)]).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        log_prob : ndarray of shape (n_samples,)
        """
        return self._log_responsibilities(self._check_data(X))[0]

    def score(self, X, y=None):
        """Mean of ``score_samples`` over X; higher is better.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        log_likelihood : float
        """
        return float(self.score_samples(X).mean())

    def predict_proba(self, X):
        """Responsibilities of the components for each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        resp : ndarray of shape (n_samples, n_components)
        """
        return np.exp(self._log_responsibilities(self._check_data(X))[1])

    def predict(self, X):
        """The most responsible component of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.predict_proba(X).argmax(axis=1)

    def fit_predict(self, X, y=None):
        """Fit the model and predict the component of each sample of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The samples.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X).predict(X)

    def sample(self, n_samples=1):
        """Draw samples from the fitted point-estimate mixture.

        Components are drawn with ``weights_`` and samples from Gaussians
        with ``means_`` and ``covariances_``, as BayesianGaussianMixture
        does.

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,)
            The component of each sample.
        """
        check_is_fitted(self)
        if n_samples < 1:
            raise ValueError(
                f"Invalid value for 'n_samples': {n_samples}. The sampling "
                "requires at least one sample."
            )
        rng = check_random_state(self.random_state)
        counts = rng.multinomial(n_samples, self.weights_)
        n_features = self.means_.shape[1]
        covariances = {
            "full": lambda k: self.covariances_[k],
            "tied": lambda k: self.covariances_,
            "diag": lambda k: np.diag(self.covariances_[k]),
            "spherical": lambda k: self.covariances_[k] * np.eye(n_features),
        }[self.covariance_type]
        X = np.vstack(
            [
                rng.multivariate_normal(self.means_[k], covariances(k), count)
                for k, count in enumerate(counts)
            ]
        )
        y = np.repeat(np.arange(self.n_components), counts)
        return X, y
