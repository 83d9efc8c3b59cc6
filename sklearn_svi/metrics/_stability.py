"""Whether topics come out the same: alignment of two fits, and stability
over seeds.

The distance between two topics is the total variation distance of their
word distributions, sum_w |p_w - q_w| / 2 = 1 - sum_w min(p_w, q_w): 0 for
identical topics, 1 for topics without a common word. Two fits' topics are
paired so that the total distance is smallest (the Hungarian algorithm),
since a topic model's topics come in no particular order.
"""

from typing import NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone
from sklearn.pipeline import Pipeline


class TopicAlignment(NamedTuple):
    """The pairs of :func:`topic_alignment`, closest first."""

    index_a: np.ndarray
    index_b: np.ndarray
    distance: np.ndarray


def _topics(model):
    """The normalised topic-word distributions of a fitted model, a pipeline
    that ends with one, or an array of topic-word weights."""
    if isinstance(model, Pipeline):
        model = model[-1]
    weights = np.asarray(getattr(model, "components_", model), dtype=np.float64)
    if weights.ndim != 2 or np.any(weights < 0) or np.any(weights.sum(axis=1) <= 0):
        raise ValueError(
            "Topics must be non-negative weights of shape (n_topics, "
            "n_features), each topic with some positive weight."
        )
    return weights / weights.sum(axis=1, keepdims=True)


def topic_alignment(a, b):
    """Pair the topics of two fits, each with the closest topic of the other.

    Parameters
    ----------
    a, b : fitted topic model, Pipeline or array-like
        Models with ``components_`` over the same features (or pipelines
        that end with one), or topic-word weights of shape
        (n_topics, n_features). They may have different numbers of topics:
        the smaller number of pairs is made.

    Returns
    -------
    alignment : TopicAlignment
        A named tuple ``(index_a, index_b, distance)`` of arrays, one entry
        per pair, the closest pair first: the topics' rows in ``a`` and in
        ``b``, and their total variation distance, in [0, 1].

    Examples
    --------
    >>> from sklearn_svi import SmoothedLDA, make_lda_corpus
    >>> from sklearn_svi.metrics import topic_alignment
    >>> X, _, _ = make_lda_corpus(n_documents=200, n_topics=3, random_state=0)
    >>> first = SmoothedLDA(n_components=3, random_state=0).fit(X)
    >>> again = SmoothedLDA(n_components=3, random_state=0).fit(X)
    >>> float(topic_alignment(first, again).distance.max())
    0.0
    """
    topics_a, topics_b = _topics(a), _topics(b)
    if topics_a.shape[1] != topics_b.shape[1]:
        raise ValueError(
            f"The topics of a have {topics_a.shape[1]} features and those of "
            f"b {topics_b.shape[1]}; they must share their features."
        )
    # One topic of a at a time, to bound the memory.
    distance = np.array(
        [0.5 * np.abs(topic - topics_b).sum(axis=1) for topic in topics_a]
    )
    index_a, index_b = linear_sum_assignment(distance)
    closest = np.argsort(distance[index_a, index_b], kind="stable")
    index_a, index_b = index_a[closest], index_b[closest]
    return TopicAlignment(index_a, index_b, distance[index_a, index_b])


def seed_stability(estimator, X, *, seeds=(0, 1, 2)):
    """How alike the topics of fits that differ only in their seed are.

    ``estimator`` is fitted on ``X`` once per seed (``random_state``); for
    each pair of fits the topics are aligned (:func:`topic_alignment`), and
    the score is one minus the mean distance of the aligned topics over all
    pairs: 1 when every seed gives the same topics, lower as they differ.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The configuration to judge, fitted or not (it is cloned); a pipeline
        has its last step's ``random_state`` set.
    X : {array-like, sparse matrix} of shape (n_documents, n_features)
        The data of the fits.
    seeds : sequence of int, default=(0, 1, 2)
        At least two seeds.

    Returns
    -------
    stability : float
        In [0, 1]; higher is more stable.
    """
    seeds = list(seeds)
    if len(set(seeds)) < 2:
        raise ValueError(f"seeds must hold at least two different seeds, got {seeds}.")
    name = (
        f"{estimator.steps[-1][0]}__random_state"
        if isinstance(estimator, Pipeline)
        else "random_state"
    )
    fits = [clone(estimator).set_params(**{name: seed}).fit(X) for seed in seeds]
    distances = [
        topic_alignment(fits[i], fits[j]).distance.mean()
        for i in range(len(fits))
        for j in range(i + 1, len(fits))
    ]
    return float(1.0 - np.mean(distances))


def stability_scorer(*, seeds=(0, 1)):
    """A scorer ``scorer(estimator, X, y=None)`` of :func:`seed_stability`.

    For ``GridSearchCV``: each candidate's configuration is fitted again on
    the fold's held-out documents with each seed, so the scorer costs
    ``len(seeds)`` fits per candidate and fold.

    Parameters
    ----------
    seeds : sequence of int, default=(0, 1)

    Returns
    -------
    scorer : callable
    """

    def score(estimator, X, y=None):
        return seed_stability(estimator, X, seeds=seeds)

    return score
