"""Ranking metrics of recommendations: precision, recall and NDCG at k.

Each user's ratings are split as ``SVIMatrixFactorization.score`` splits
them (half held out, a fixed seed); the recommender ranks the items that
the user did not rate in the observed half, and its top k are judged
against the held-out items that count as relevant.
"""

import numpy as np

from ..factorization._estimator import _completion_split
from ._coherence import _final_step

METRICS = ("precision", "recall", "ndcg")


def _check_metric(metric, k):
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}.")


def _relevant_pairs(X, min_rating):
    """The observed half of X's ratings, and the held-out (user, item) pairs
    whose rating is at least ``min_rating`` (every one when None)."""
    observed, users, items, ratings = _completion_split(X)
    if min_rating is not None:
        relevant = ratings >= min_rating
        users, items = users[relevant], items[relevant]
    return observed, users, items


def _metric_of_hits(metric, hits, n_relevant):
    """Each user's metric from ``hits`` (n_users, k), whether the item at
    each rank is relevant, and the number of relevant items of each user."""
    k = hits.shape[1]
    if metric == "precision":
        return hits.sum(axis=1) / k
    if metric == "recall":
        return hits.sum(axis=1) / n_relevant
    # Binary relevance: DCG = sum_r hit_r / log2(r + 1), divided by the DCG
    # of a ranking that puts every relevant item first.
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = np.cumsum(discounts)[np.minimum(n_relevant, k) - 1]
    return (hits @ discounts) / ideal


def ranking_score(estimator, X, y=None, *, metric="ndcg", k=10, min_rating=None):
    """Top-k quality of a recommender on each user's held-out ratings.

    Each user's ratings in ``X`` are split at random (a fixed seed) into an
    observed half, rounded up, and a held-out half. The recommender is
    given the observed half and recommends ``k`` items the user did not
    rate there (``recommend(..., exclude_seen=True)``); the relevant items
    are the held-out ones rated at least ``min_rating``. The metric is
    averaged over the users with a relevant item:

    - ``"precision"``: the share of the k items that are relevant;
    - ``"recall"``: the share of the relevant items among the k;
    - ``"ndcg"``: the discounted cumulative gain of the k items (binary
      relevance, 1 / log2(rank + 1)) over that of the best ranking.

    Parameters
    ----------
    estimator : fitted recommender or Pipeline
        A model with ``recommend``, such as
        :class:`~sklearn_svi.SVIMatrixFactorization`, or a Pipeline ending
        in one (the other steps turn ``X`` into its ratings).
    X : {array-like, sparse matrix} of shape (n_users, n_items)
        Ratings of the users; stored entries are observed.
    y : Ignored
        Not used, present for API consistency by convention.
    metric : {"precision", "recall", "ndcg"}, default="ndcg"
        The measure of each user's top k.
    k : int, default=10
        The number of items recommended to each user.
    min_rating : float, default=None
        The lowest held-out rating of a relevant item (MovieLens studies
        often use 4); None counts every held-out item.

    Returns
    -------
    score : float
        In [0, 1], higher is better.

    Raises
    ------
    ValueError
        If no user of X has a relevant held-out item, or a user has fewer
        than ``k`` items to recommend.
    """
    _check_metric(metric, k)
    estimator, X = _final_step(estimator, X)
    if not hasattr(estimator, "recommend"):
        raise TypeError(
            f"ranking_score needs a recommender with a recommend method, got "
            f"{type(estimator).__name__}."
        )
    X = estimator._check_fitted_data(X)
    observed, users, items = _relevant_pairs(X, min_rating)
    n_relevant = np.bincount(users, minlength=X.shape[0])
    judged = np.flatnonzero(n_relevant)
    if not len(judged):
        raise ValueError(
            "No user of X has a held-out rating that counts as relevant: "
            "ranking_score holds out half of each user's ratings, and keeps "
            "those rated at least min_rating."
        )
    recommended, _ = estimator.recommend(observed[judged], k, exclude_seen=True)
    n_items = X.shape[1]
    relevant_codes = np.unique(users * n_items + items)
    codes = judged[:, np.newaxis] * n_items + recommended
    hits = np.isin(codes, relevant_codes).astype(np.float64)
    return float(np.mean(_metric_of_hits(metric, hits, n_relevant[judged])))


def ranking_scorer(*, metric="ndcg", k=10, min_rating=None):
    """A scorer ``scorer(estimator, X, y=None)`` of :func:`ranking_score`.

    For ``GridSearchCV(..., scoring=...)`` over folds of users, alone or in
    a dict of scorers with ``refit=``.

    Parameters
    ----------
    metric : {"precision", "recall", "ndcg"}, default="ndcg"
    k : int, default=10
    min_rating : float, default=None

    Returns
    -------
    scorer : callable
    """
    _check_metric(metric, k)

    def score(estimator, X, y=None):
        return ranking_score(estimator, X, metric=metric, k=k, min_rating=min_rating)

    return score
