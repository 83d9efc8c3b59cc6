"""SVIMatrixFactorization: the public estimator of Bayesian matrix factorization."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._mechanisms._docstrings import mechanism_parameters
from .._parameters import CALLBACK_PARAMETER, WARM_START_PARAMETER, init_parameters
from .._sources import features_in, features_out, rowwise, summed_over_rows
from ._model import _OnlineMatrixFactorization

# Seed of the split of each user's ratings in ``score``.
_SCORE_SPLIT_SEED = 0


def _user_moments_width(model):
    """The number of values of a user's posterior moments: the mean of the
    factor and bias (D values), then their second moment (D * D)."""
    D = model._side_dimension
    return D + D * D


class SVIMatrixFactorization(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, _OnlineMatrixFactorization
):
    __doc__ = f"""Bayesian matrix factorization of ratings fitted by SVI.

    Users are rows and items columns of a sparse matrix whose stored entries
    are the observed ratings (an explicit zero is a rating of 0; a dense
    array has every rating observed). Each rating is
    ``y_ij ~ N(u_i^T v_j + a_i + b_j + o, s2)`` with the user and item
    factors u_i and v_j, the user and item biases a_i and b_j (with
    ``biases``), the offset o (``rating_offset``) and the noise variance s2,
    and Gaussian priors of zero mean on the factors and biases. By default
    s2 and the priors' precisions, one per dimension and side, are learned
    by empirical Bayes in the updates. The variational posteriors are
    Gaussians with full covariances over each user's and each item's factor
    and bias. The users are fitted
    exactly in each minibatch; the items' natural parameters are moved by the
    shared online update, with the package's three mechanisms: smoothed
    statistics over the last ``L`` minibatches (Mandt & Blei 2014), the
    annealing noise of an effective minibatch of ``M`` users (Paisley,
    Fazelnia & Barr), and step sizes from a schedule or a variational filter
    (Houlsby & Blei 2014).

    With ``batch_size`` at least the number of users, ``learning_rate=1.0``,
    ``L=1`` and no annealing, each pass of ``fit`` is one iteration of
    coordinate-ascent variational Bayes, which never lowers the bound.

    Read more in the :ref:`User Guide <svi_matrix_factorization>`.

    Parameters
    ----------
    n_components : int, default=10
        The rank d: the dimension of the user and item factors.
    prior_precision : float or "auto", default="auto"
        The precision of the Gaussian priors of the factors and biases. A
        float is the same for every coordinate of both sides (c of the
        papers). ``"auto"`` learns one precision for each dimension of the
        users' factors and their bias, and one for each of the items', by
        empirical Bayes: after every update that is not annealed (see
        ``M``), each moves a step of the update's size toward 1 / E[w_k^2],
        the mean over the minibatch's users (over all items for the items),
        which maximises the bound given the posteriors; it starts at 1.
    noise_variance : float or "auto", default="auto"
        s2, the variance of a rating around its mean (Paisley et al. use
        1/2 on MovieLens). ``"auto"`` starts at the variance of the first
        training ratings around the offset and learns it by empirical
        Bayes: after every update that is not annealed it moves a step of
        the update's size toward the minibatch's mean expected squared
        residual per rating, E[(y_ij - mean)^2], which maximises the bound
        given the posteriors.
    biases : bool, default=True
        Whether the model has a bias per user and per item.
    rating_offset : float, default=None
        o, added to every predicted rating. None means the mean of the first
        training ratings; 0 is the model without offset.
    tol : float, default=1e-3
        With ``evaluate_every``, ``fit`` stops when two evaluations in a row
        differ by less than ``tol``.
    max_iter : int, default=10
        Maximum number of passes over the users in ``fit``.
    batch_size : int, default=256
        Number of users per minibatch.
    total_samples : float, default=1e6
        Number of users N of the data set, used by ``partial_fit``.
{mechanism_parameters()}
    evaluate_every : int, default=-1
        Record the users' terms of the bound per rating of ``X_val`` (or of
        the minibatch just used) in ``evaluation_history_`` every
        ``evaluate_every`` updates.
    n_jobs : int, default=None
        Number of threads of the local step and of the update; None means 1,
        -1 all cores. The result does not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial item factors, of the order of the users in
        ``fit`` and of the annealing noise.
{WARM_START_PARAMETER}{CALLBACK_PARAMETER}    verbose : int, default=0
        Print progress when positive.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        m_j, the posterior mean of each item's factor, one column per item.
        It and the next two attributes are formed at the end of each pass
        of ``fit`` and each ``partial_fit``: an update forms only the
        posteriors of the items its users rated.
    component_covariances_ : ndarray of shape (n_features, n_components, \
n_components)
        S_j, the posterior covariance of each item's factor.
    item_biases_ : ndarray of shape (n_features,)
        The posterior mean of each item's bias b_j; empty without
        ``biases``.
    rating_offset_ : float
        The offset o in use.
    noise_variance_ : float
        s2 in use: learned, or ``noise_variance``.
    user_prior_precision_, item_prior_precision_ : ndarray of shape \
(n_components + biases,)
        The precisions of the priors of each dimension of the users' and of
        the items' factors, then of their biases: learned, or
        ``prior_precision``.
    n_iter_ : int
        Number of passes made.
    n_batch_iter_ : int
        Number of minibatch updates made.
    n_samples_seen_ : int
        Number of users used by the updates.
    n_projected_ : int
        With annealing, the number of items whose precision was moved back
        into the feasible set.
    evaluation_history_ : dict of lists
        ``"n_batch_iter"``, ``"n_samples_seen"`` and ``"score"`` of each
        evaluation.
    step_size_history_ : dict of lists
        ``"n_batch_iter"`` and ``"step_size"`` of the updates, at most 10,000
        values.
    random_state_ : RandomState instance
        The random state of the fit.
    n_features_in_ : int
        Number of items seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the items seen during ``fit``, when they are all strings.

    See Also
    --------
    sklearn.decomposition.NMF : A non-Bayesian factorization of a matrix
        with every entry observed.

    References
    ----------
    .. [1] R. Salakhutdinov and A. Mnih. "Probabilistic Matrix
       Factorization". NIPS, 2008.
    .. [2] J. Paisley, G. Fazelnia and B. Barr. "Stochastic Variational
       Inference with Tuneable Stochastic Annealing", Example 1.
    .. [3] N. Houlsby and D. Blei. "A Filtering Approach to Stochastic
       Variational Inference". NIPS, 2014.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sklearn_svi import SVIMatrixFactorization
    >>> rng = np.random.RandomState(0)
    >>> users, items = rng.normal(size=(300, 2)), rng.normal(size=(40, 2))
    >>> mask = rng.rand(300, 40) < 0.3
    >>> X = sp.csr_matrix(np.where(mask, users @ items.T, 0.0) + 3 * mask)
    >>> mf = SVIMatrixFactorization(n_components=2, batch_size=100,
    ...                             learning_rate=0.5, random_state=0).fit(X)
    >>> mf.transform(X).shape
    (300, 2)
    >>> bool(mf.score(X) > -0.5)
    True
    """

    _parameter_constraints: dict = {
        **_OnlineMatrixFactorization._shared_parameter_constraints,
        "prior_precision": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "noise_variance": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "biases": ["boolean"],
        "rating_offset": [None, Real],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    _init_parameters = init_parameters(
        dict(
            n_components=10,
            prior_precision="auto",
            noise_variance="auto",
            biases=True,
            rating_offset=None,
            tol=1e-3,
        ),
        defaults=dict(batch_size=256),
    )

    def __init__(
        self,
        n_components=10,
        *,
        prior_precision="auto",
        noise_variance="auto",
        biases=True,
        rating_offset=None,
        tol=0.001,
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
        batch_size=256,
        max_iter=10,
        total_samples=1000000.0,
        evaluate_every=-1,
        callback=None,
        warm_start=False,
        n_jobs=None,
        verbose=0,
        random_state=None,
    ):
        self.n_components = n_components
        self.prior_precision = prior_precision
        self.noise_variance = noise_variance
        self.biases = biases
        self.rating_offset = rating_offset
        self.tol = tol
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

    # -- public API ----------------------------------------------------------------

    @rowwise(n_columns=features_out)
    def transform(self, X):
        """The posterior mean of each user's factor, given the user's ratings.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Ratings of the users, one row each; stored entries are observed.
            The row blocks of a Dask collection are processed where they
            are (see :ref:`cluster`).

        Returns
        -------
        user_factors : ndarray of shape (n_samples, n_components)
            mu_i; a user without ratings gets the prior mean 0. A Dask array
            for a Dask array, and a bag of each partition's rows for a bag.
        """
        X = self._check_fitted_data(X)
        means = self._user_posteriors(X)[0][:, : self.n_components]
        return means.astype(X.dtype, copy=False)

    @rowwise(n_columns=features_in, dtype=np.float64)
    def predict_ratings(self, X):
        """Expected ratings of every item by each user of X.

        The users' factors and biases are fitted to their ratings in X; the
        expected rating of item j is mu_i^T m_j + E[a_i] + E[b_j] + o.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Ratings of the users; stored entries are observed. The row
            blocks of a Dask collection are processed where they are.

        Returns
        -------
        ratings : ndarray of shape (n_samples, n_features)
            A Dask array for a Dask array, and a bag of each partition's
            rows for a bag.
        """
        X = self._check_fitted_data(X)
        means = self._user_posteriors(X)[0]
        items = self._item_pairing()
        return means @ items.f_mean.T + items.g_mean + self.rating_offset_

    def predict_pairs(self, X, users, items, return_std=False):
        """Expected ratings of given (user, item) pairs, and their spread.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array} of shape \
                (n_samples, n_features)
            Ratings of the users, to which their factors are fitted. The
            row blocks of a Dask array are processed where they are.
        users : array-like of int of shape (n_pairs,)
            Rows of X.
        items : array-like of int of shape (n_pairs,)
            Columns of X.
        return_std : bool, default=False
            Whether to return the standard deviation of each rating under
            the posterior predictive distribution: the noise and the
            posterior uncertainty of the user's and the item's factors and
            biases.

        Returns
        -------
        ratings : ndarray of shape (n_pairs,)
            The expected ratings; a Dask array for a Dask array.
        std : ndarray of shape (n_pairs,)
            Their posterior predictive standard deviations; only with
            ``return_std=True``.
        """
        moments = self._user_moments(X)
        if not hasattr(moments, "shape"):
            raise TypeError(
                "predict_pairs names users by their row in X, and the rows of "
                "a Dask bag are not numbered; pass a Dask array."
            )
        users = _check_indices(users, moments.shape[0], "users")
        items = _check_indices(items, self.n_features_in_, "items")
        if users.shape != items.shape:
            raise ValueError(
                f"users and items must have the same length, got {len(users)} "
                f"and {len(items)}."
            )
        D = self._side_dimension
        means = moments[:, :D]
        ratings = self._predict_entries(means, users, items)
        if not return_std:
            return ratings
        variances = self._predictive_variances(means, moments[:, D:], users, items)
        return ratings, np.sqrt(variances)

    @rowwise(n_columns=_user_moments_width, dtype=np.float64)
    def _user_moments(self, X):
        """The posterior mean of each user of X validated, factor and bias,
        then its second moment row by row, in float64."""
        users = self._users(self._check_fitted_data(X))
        return np.hstack([users.means, users.second.reshape(len(users.means), -1)])

    def recommend(self, X, n_items=10, *, exclude_seen=True):
        """The items of highest expected rating for each user of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Ratings of the users, to which their factors and biases are
            fitted; stored entries are observed.
        n_items : int, default=10
            The number of items recommended to each user.
        exclude_seen : bool, default=True
            Whether to leave out the items that a user has rated in X.

        Returns
        -------
        items : ndarray of shape (n_samples, n_items)
            Each user's items (columns of X), by decreasing expected rating.
        ratings : ndarray of shape (n_samples, n_items)
            Their expected ratings.

        Raises
        ------
        ValueError
            If a user has fewer than ``n_items`` items to recommend.
        """
        X = self._check_fitted_data(X)
        _check_count(n_items, self.n_features_in_, "n_items")
        predicted = self.predict_ratings(X)
        if exclude_seen:
            seen = X.getnnz(axis=1)
            if np.any(self.n_features_in_ - seen < n_items):
                user = int(np.argmax(self.n_features_in_ - seen < n_items))
                raise ValueError(
                    f"n_items={n_items}, but the user of row {user} of X has "
                    f"rated {seen[user]} of the {self.n_features_in_} items."
                )
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            predicted[rows, X.indices] = -np.inf
        return _largest(predicted, n_items)

    def similar_items(self, items, n_items=10):
        """The items whose factors are closest in direction to each item's.

        Similarity is the cosine of the angle between the posterior means of
        two items' factors; an item whose factor mean is 0 (one that no
        training user rated keeps its prior) has similarity 0 to every
        item.

        Parameters
        ----------
        items : array-like of int of shape (n_queries,)
            Items, as columns of the training ratings.
        n_items : int, default=10
            The number of similar items returned for each, the item itself
            left out.

        Returns
        -------
        similar : ndarray of shape (n_queries, n_items)
            Each item's most similar items, by decreasing similarity.
        similarities : ndarray of shape (n_queries, n_items)
            Their cosine similarities.
        """
        check_is_fitted(self)
        items = _check_indices(items, self.n_features_in_, "items")
        _check_count(n_items, self.n_features_in_ - 1, "n_items")
        factors = self.components_.T.astype(np.float64)
        norms = np.linalg.norm(factors, axis=1)
        directions = factors / np.where(norms > 0, norms, 1.0)[:, np.newaxis]
        similarities = directions[items] @ directions.T
        similarities[np.arange(len(items)), items] = -np.inf
        return _largest(similarities, n_items)

    def score(self, X, y=None):
        """Negative root mean squared error of rating completion.

        Each user's ratings in X are split at random (a fixed seed) into an
        observed half, rounded up, and a held-out half. The users' factors
        are fitted to the observed half and the held-out ratings are
        predicted; users with fewer than two ratings hold none out. Higher
        is better, as :class:`~sklearn.model_selection.GridSearchCV` needs.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Ratings of the users; stored entries are observed. Each row
            block of a Dask collection is split where it is, with the same
            seed, so the held-out ratings are not those of the same rows in
            memory.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
            Minus the RMSE on the held-out ratings. For a Dask collection,
            computed where its blocks are.

        Raises
        ------
        ValueError
            If no user of X has two ratings, so nothing can be held out.
        """
        return summed_over_rows(
            self, X, type(self)._completion_errors, type(self)._score_of_errors
        )

    def _completion_errors(self, X):
        """The sum of the squared errors of rating completion on X, and the
        number of held-out ratings: what rows add to ``score``."""
        X = self._check_fitted_data(X)
        observed, users, items, ratings = _completion_split(X)
        means = self._user_posteriors(observed)[0]
        predicted = self._predict_entries(means, users, items)
        return np.array([np.sum((predicted - ratings) ** 2), len(ratings)])

    def _score_of_errors(self, errors):
        squared, n_ratings = errors
        if n_ratings == 0:
            raise ValueError(
                "score holds out half of each user's ratings, and no user of "
                "X has two ratings."
            )
        return -float(np.sqrt(squared / n_ratings))

    def lower_bound(self, X):
        """The evidence lower bound (ELBO) of the ratings X and the items.

        The users' factors and biases are at their optimum given the items,
        so the bound is the variational objective of batch variational Bayes
        at the current items and hyperparameters:
        sum_ij E[log N(y_ij | u_i^T v_j + a_i + b_j + o, s2)] minus the
        divergences KL(q || p) of the users' and the items' factors and
        biases.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Ratings of the users; stored entries are observed. The row
            blocks of a Dask collection are processed where they are.

        Returns
        -------
        bound : float
            Higher is better. For a Dask collection, computed where its
            blocks are.
        """
        return summed_over_rows(
            self, X, type(self)._checked_users_bound, type(self)._bound_of_users
        )

    def _checked_users_bound(self, X):
        """The users' terms of the ELBO of X validated: what rows add to
        ``lower_bound``."""
        return self._users_bound(self._check_fitted_data(X))

    @property
    def _n_features_out(self):
        return self.n_components

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _check_count(count, largest, name):
    """Refuse a number of items that is not an integer in [1, largest]."""
    if not isinstance(count, Integral) or isinstance(count, bool):
        raise TypeError(f"{name} must be an integer, got {count!r}.")
    if not 1 <= count <= largest:
        raise ValueError(f"{name} must lie in [1, {largest}], got {count}.")


def _largest(values, n):
    """The columns of the n largest values of each row, in decreasing order
    of value, and those values."""
    top = np.argpartition(-values, n - 1, axis=1)[:, :n]
    top_values = np.take_along_axis(values, top, axis=1)
    order = np.argsort(-top_values, axis=1, kind="stable")
    return (
        np.take_along_axis(top, order, axis=1),
        np.take_along_axis(top_values, order, axis=1),
    )


def _check_indices(indices, size, name):
    """Integer indices in [0, size) as an intp array."""
    indices = np.asarray(indices)
    if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D array of integers.")
    if len(indices) and (indices.min() < 0 or indices.max() >= size):
        raise ValueError(f"{name} must lie in [0, {size}).")
    return indices.astype(np.intp)


def _completion_split(X):
    """Each row's stored entries split at random into observed and held out.

    A row of n entries holds out n // 2 of them, chosen with a fixed seed.

    Returns
    -------
    observed : scipy.sparse.csr_matrix
        X without the held-out entries.
    users, items : ndarray of int
        Row and column of each held-out entry.
    ratings : ndarray of float64
        Its value.
    """
    rng = np.random.RandomState(_SCORE_SPLIT_SEED)
    counts = np.diff(X.indptr)
    rows = np.repeat(np.arange(X.shape[0]), counts)
    # Each entry's rank within its row in a random order.
    order = np.lexsort((rng.random_sample(X.nnz), rows))
    rank = np.empty(X.nnz, dtype=np.intp)
    rank[order] = np.arange(X.nnz) - X.indptr[rows[order]]
    held_out = rank < (counts // 2)[rows]
    keep = ~held_out
    indptr = np.concatenate(
        [[0], np.cumsum(np.bincount(rows[keep], minlength=X.shape[0]))]
    )
    observed = sp.csr_matrix((X.data[keep], X.indices[keep], indptr), shape=X.shape)
    return (
        observed,
        rows[held_out],
        X.indices[held_out],
        X.data[held_out].astype(np.float64),
    )
