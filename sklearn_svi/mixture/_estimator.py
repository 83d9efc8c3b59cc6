"""SVIGaussianMixture: the public estimator of the Bayesian Gaussian mixture."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state, check_scalar
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._mechanisms import learning_rate_constraint, renamed_constraint
from .._mechanisms._docstrings import mechanism_parameters
from .._parameters import CALLBACK_PARAMETER, WARM_START_PARAMETER, init_parameters
from .._sources import features_out, rowwise, summed_over_rows
from ._model import _OnlineGaussianMixture

_MECHANISM_PARAMETERS = mechanism_parameters(
    notes={
        "min_step_size": """\
        None, the published filters, is the default here: the filters
        matched the Robbins-Monro schedule on mixtures without it."""
    }
)


class SVIGaussianMixture(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, _OnlineGaussianMixture
):
    __doc__ = f"""Bayesian Gaussian mixture fitted by stochastic variational inference.

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
    covariance_type : {{"full", "tied", "diag", "spherical"}}, default="full"
        The form of the covariances, as in BayesianGaussianMixture.
    tol : float, default=1e-3
        ``fit`` stops when the lower bound per sample (``lower_bound_``
        divided by the number of samples) changes by less than ``tol``
        between two passes: the average gain, as scikit-learn's mixtures
        document it. BayesianGaussianMixture compares the bound itself;
        its ``tol`` is ``tol / n_samples`` here.
    reg_covar : float, default=1e-6
        Added to the diagonal of each sample's contribution to the scale
        statistics, which keeps the covariances positive definite.
    max_iter : int, default=20
        Maximum number of passes over the data in ``fit``.
    init_params : {{"kmeans", "k-means++", "random", "random_from_data"}}, \
            default="kmeans"
        How the initial responsibilities are chosen, as in
        BayesianGaussianMixture; the initial parameters are the update they
        give.
    weight_concentration_prior_type : {{"dirichlet_process", \
            "dirichlet_distribution"}}, default="dirichlet_process"
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
    batch_size : int, default=1024
        Number of samples per minibatch. Besides the local step of its
        samples, an update has a fixed cost of a fraction of a millisecond,
        which minibatches of this size keep small; a data set of a few
        thousand samples takes a few updates per pass.
    total_samples : float, default=1e6
        Number of samples N of the data set, used by ``partial_fit``.
{_MECHANISM_PARAMETERS}
    evaluate_every : int, default=-1
        Record the mean log-likelihood of ``X_val`` (or of the minibatch just
        used) in ``evaluation_history_`` every ``evaluate_every`` updates.
    n_jobs : int, default=None
        Number of threads of the local step and of the update; None means 1,
        -1 all cores (inside a joblib worker, its share of them). The result
        does not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the initialisation, of the order of the samples in ``fit``
        and of the annealing noise.
{WARM_START_PARAMETER}{CALLBACK_PARAMETER}    verbose : int, default=0
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
        Whether ``fit`` stopped because the lower bound per sample changed by
        less than ``tol``.
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
    >>> # A tolerance below the default lets the prior empty the unneeded
    >>> # components before fit stops.
    >>> gmm = SVIGaussianMixture(n_components=5, batch_size=100, learning_rate=0.3,
    ...                          max_iter=30, tol=1e-4, random_state=0).fit(X)
    >>> int(np.sum(gmm.weights_ > 0.05))
    2
    >>> gmm.predict([[-4.0, -4.0], [4.0, 4.0]]).tolist()
    [3, 0]
    """

    _parameter_constraints: dict = {
        **_OnlineGaussianMixture._shared_parameter_constraints,
        "step_size": renamed_constraint(learning_rate_constraint()),
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
    }
    _renamed_learning_rate = "step_size"

    _init_parameters = init_parameters(
        dict(
            n_components=1,
            covariance_type="full",
            tol=1e-3,
            reg_covar=1e-6,
            init_params="kmeans",
            weight_concentration_prior_type="dirichlet_process",
            weight_concentration_prior=None,
            mean_precision_prior=None,
            mean_prior=None,
            degrees_of_freedom_prior=None,
            covariance_prior=None,
        ),
        defaults=dict(batch_size=1024, max_iter=20),
        deprecated=("step_size",),
    )

    def __init__(
        self,
        n_components=1,
        *,
        covariance_type="full",
        tol=0.001,
        reg_covar=1e-06,
        init_params="kmeans",
        weight_concentration_prior_type="dirichlet_process",
        weight_concentration_prior=None,
        mean_precision_prior=None,
        mean_prior=None,
        degrees_of_freedom_prior=None,
        covariance_prior=None,
        L=1,
        M=None,
        M_growth=0.0,
        learning_rate="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.7,
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size=None,
        observed_components="auto",
        batch_size=1024,
        max_iter=20,
        total_samples=1000000.0,
        evaluate_every=-1,
        callback=None,
        warm_start=False,
        n_jobs=None,
        verbose=0,
        random_state=None,
        step_size="deprecated",
    ):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.init_params = init_params
        self.weight_concentration_prior_type = weight_concentration_prior_type
        self.weight_concentration_prior = weight_concentration_prior
        self.mean_precision_prior = mean_precision_prior
        self.mean_prior = mean_prior
        self.degrees_of_freedom_prior = degrees_of_freedom_prior
        self.covariance_prior = covariance_prior
        self.L = L
        self.M = M
        self.M_growth = M_growth
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.observed_components = observed_components
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.evaluate_every = evaluate_every
        self.callback = callback
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.step_size = step_size

    # -- public API ----------------------------------------------------------------

    @rowwise(dtype=np.float64)
    def score_samples(self, X):
        """Log of the variational predictive weight of each sample.

        As in BayesianGaussianMixture: log sum_k exp(E[log pi_k] +
        E[log N(x | mu_k, Lambda_k^-1)]).

        Parameters
        ----------
        X : {array-like, Dask array} of shape (n_samples, n_features)
            The samples. The row blocks of a Dask array are processed where
            they are (see :ref:`cluster`).

        Returns
        -------
        log_prob : ndarray of shape (n_samples,)
            A Dask array for a Dask array.
        """
        return self._log_responsibilities(self._check_fitted_data(X))[0]

    def score(self, X, y=None):
        """Mean of ``score_samples`` over X; higher is better.

        Parameters
        ----------
        X : {array-like, Dask array} of shape (n_samples, n_features)
            The samples. The row blocks of a Dask array are processed where
            they are (see :ref:`cluster`).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        log_likelihood : float
            For a Dask collection, computed where its blocks are.
        """
        return summed_over_rows(
            self, X, type(self)._score_total, type(self)._score_of_total
        )

    def _score_total(self, X):
        """The sum of ``score_samples`` over X, and the number of samples:
        what rows add to the score."""
        log_prob = self.score_samples(X)
        return np.array([log_prob.sum(), len(log_prob)])

    def _score_of_total(self, total):
        return float(total[0] / total[1])

    @rowwise(n_columns=features_out)
    def predict_proba(self, X):
        """Responsibilities of the components for each sample.

        Parameters
        ----------
        X : {array-like, Dask array} of shape (n_samples, n_features)
            The samples. The row blocks of a Dask array are processed where
            they are (see :ref:`cluster`).

        Returns
        -------
        resp : ndarray of shape (n_samples, n_components)
            A Dask array for a Dask array.
        """
        return np.exp(self._log_responsibilities(self._check_fitted_data(X))[1])

    def transform(self, X):
        """The components' responsibilities for each sample, as features.

        The same values as ``predict_proba``: probabilities, which lie in
        [0, 1] and sum to one per sample like the topic proportions of the
        LDA estimators, so that they can feed a classifier as they are. (Log
        responsibilities would run to minus infinity for components far from
        a sample.)

        Parameters
        ----------
        X : {array-like, Dask array} of shape (n_samples, n_features)
            The samples. The row blocks of a Dask array are processed where
            they are (see :ref:`cluster`).

        Returns
        -------
        resp : ndarray of shape (n_samples, n_components)
            Column k is named ``svigaussianmixture{k}`` by
            ``get_feature_names_out``. A Dask array for a Dask array.
        """
        return self.predict_proba(X)

    @property
    def _n_features_out(self):
        return self.n_components

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def predict(self, X):
        """The most responsible component of each sample.

        Parameters
        ----------
        X : {array-like, Dask array} of shape (n_samples, n_features)
            The samples. The row blocks of a Dask array are processed where
            they are (see :ref:`cluster`).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            A Dask array for a Dask array.
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
        # An integer of at least 1: 1.5 samples is an error, not 1 sample.
        check_scalar(n_samples, "n_samples", Integral, min_val=1)
        rng = check_random_state(self.random_state)
        counts = rng.multinomial(n_samples, self.weights_)
        n_features = self.means_.shape[1]
        scale = self._scale()
        X = np.vstack(
            [
                rng.multivariate_normal(
                    self.means_[k],
                    scale.component_covariance(self.covariances_, k, n_features),
                    count,
                )
                for k, count in enumerate(counts)
            ]
        )
        y = np.repeat(np.arange(self.n_components), counts)
        return X, y
