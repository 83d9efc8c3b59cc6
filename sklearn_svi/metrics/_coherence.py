"""Topic coherence and diversity from the documents a user already has.

Coherence asks whether a topic's top words occur together in documents.
From the documents' word occurrences (a word occurs in a document when its
count there is positive; N documents; D(w) documents hold w and D(w, w')
hold both), with eps = 1e-12 as in gensim and Roeder et al. (2015):

- ``"umass"`` (Mimno et al. 2011): the mean over the pairs of top words
  w_i, w_j with j < i (in the topic's order) of
  log((D(w_i, w_j) / N + eps) / (D(w_j) / N));
- ``"uci"`` (Newman et al. 2010): the mean over the ordered pairs i != j of
  PMI = log((D(w_i, w_j) / N + eps) / ((D(w_i) / N) (D(w_j) / N)));
- ``"npmi"`` (Bouma 2009; Aletras & Stevenson 2013): the same mean of
  PMI / -log(D(w_i, w_j) / N + eps), in [-1, 1] up to eps.

These are gensim's ``CoherenceModel`` measures ``"u_mass"``, ``"c_uci"``
and ``"c_npmi"`` with whole documents as the windows of co-occurrence
(``window_size`` at least the longest document); see the user guide.
Diversity is the share of distinct words among all topics' top words
(Dieng et al. 2020).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_array, check_non_negative

from .._validation import listed_rows

# What the co-occurrence probabilities add before their logarithm.
EPSILON = 1e-12

MEASURES = ("npmi", "uci", "umass")


def _final_step(estimator, X):
    """The topic model that ends ``estimator`` (a pipeline, or the model
    itself) and ``X`` turned into its input."""
    if isinstance(estimator, Pipeline):
        if len(estimator) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator[-1]
    return estimator, X


def top_word_indices(estimator, top_n):
    """The columns of each topic's ``top_n`` most probable words, most
    probable first (all words when there are fewer).

    Parameters
    ----------
    estimator : fitted topic model
        An estimator with ``components_`` of shape (n_topics, n_features);
        the order is that of each topic's word distribution.
    top_n : int
        Number of words per topic.

    Returns
    -------
    indices : ndarray of shape (n_topics, min(top_n, n_features))
    """
    components = np.asarray(estimator.components_)
    return np.argsort(-components, axis=1, kind="stable")[:, :top_n]


def _occurrences(X, n_features, words):
    """N, D(w) and D(w, w') of the words ``words`` in the documents X."""
    X = check_array(X, accept_sparse="csc", dtype=None)
    check_non_negative(X, "coherence")
    if X.shape[1] != n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but the topics have {n_features}."
        )
    occurs = (sp.csc_matrix(X)[:, words] > 0).astype(np.float64)
    together = (occurs.T @ occurs).toarray()
    return X.shape[0], np.diag(together).copy(), together


def _check_measure(measure, top_n):
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}.")
    if top_n < 2:
        raise ValueError(f"top_n must be at least 2 to pair words, got {top_n}.")


def _pair_scores(measure, n_documents, single, joint):
    """The measure of each pair of a topic's words: ``joint[i, j]`` holds
    D(w_i, w_j) and ``single[i]`` D(w_i)."""
    p_joint = joint / n_documents + EPSILON
    p_single = single / n_documents
    if measure == "umass":
        return np.log(p_joint / p_single[np.newaxis, :])
    pmi = np.log(p_joint / np.outer(p_single, p_single))
    if measure == "uci":
        return pmi
    return pmi / -np.log(p_joint)


def coherence(estimator, X, *, measure="npmi", top_n=10, average=True):
    """Coherence of a topic model's top words in the documents X.

    Parameters
    ----------
    estimator : fitted topic model or Pipeline
        An estimator with ``components_`` of shape (n_topics, n_features),
        any of the package's LDA estimators or scikit-learn's
        LatentDirichletAllocation, or a pipeline that ends with one (its
        other steps turn ``X`` into counts).
    X : {array-like, sparse matrix} of shape (n_documents, n_features)
        The reference documents, such as the training counts: non-negative
        counts, or the input of the pipeline.
    measure : {"npmi", "uci", "umass"}, default="npmi"
        The measure, as the module describes it.
    top_n : int, default=10
        Number of top words of each topic, at least 2.
    average : bool, default=True
        Whether to return the mean over the topics, or each topic's.

    Returns
    -------
    coherence : float or ndarray of shape (n_topics,)
        Higher is better.

    Raises
    ------
    ValueError
        If a top word of a topic occurs in no document of X, where the
        measures are undefined, or if ``measure`` is not known.

    Notes
    -----
    Documents without words count among the N documents. A topic whose
    weights are all equal (an empty topic) has its first ``top_n`` columns
    as its top words.

    Examples
    --------
    >>> from sklearn_svi import SmoothedLDA, make_lda_corpus
    >>> from sklearn_svi.metrics import coherence
    >>> X, _, _ = make_lda_corpus(n_documents=300, n_topics=5, random_state=0)
    >>> lda = SmoothedLDA(n_components=5, random_state=0).fit(X)
    >>> bool(-1 <= coherence(lda, X) <= 1)
    True
    """
    _check_measure(measure, top_n)
    estimator, X = _final_step(estimator, X)
    top = top_word_indices(estimator, top_n)
    words, position = np.unique(top, return_inverse=True)
    position = position.reshape(top.shape)
    n_documents, single, joint = _occurrences(
        X, np.shape(estimator.components_)[1], words
    )
    unseen = np.flatnonzero((single[position] == 0).any(axis=1))
    if len(unseen):
        raise ValueError(
            f"Top words of topics {listed_rows(unseen)} occur in no document "
            "of X, where their coherence is undefined: score with documents "
            "that hold every topic's top words, such as the training data."
        )
    n_words = top.shape[1]
    if measure == "umass":
        later, earlier = np.tril_indices(n_words, k=-1)
    else:
        later, earlier = np.nonzero(~np.eye(n_words, dtype=bool))
    scores = np.array(
        [
            _pair_scores(measure, n_documents, single[rows], joint[np.ix_(rows, rows)])[
                later, earlier
            ].mean()
            for rows in position
        ]
    )
    return float(scores.mean()) if average else scores


def topic_diversity(estimator, *, top_n=25):
    """The share of distinct words among all topics' top words.

    1 when no two topics share a top word, 1 / n_topics when all topics have
    the same top words (Dieng et al. 2020 use ``top_n=25``).

    Parameters
    ----------
    estimator : fitted topic model or Pipeline
        As for :func:`coherence`.
    top_n : int, default=25
        Number of top words of each topic.

    Returns
    -------
    diversity : float
        In (0, 1]; higher is more diverse.
    """
    if top_n < 1:
        raise ValueError(f"top_n must be at least 1, got {top_n}.")
    if isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    top = top_word_indices(estimator, top_n)
    return len(np.unique(top)) / top.size


def coherence_scorer(*, measure="npmi", top_n=10, reference=None):
    """A scorer ``scorer(estimator, X, y=None)`` of :func:`coherence`.

    For ``GridSearchCV(..., scoring=...)``, alone or in a dict of scorers
    with ``refit=``.

    Parameters
    ----------
    measure : {"npmi", "uci", "umass"}, default="npmi"
    top_n : int, default=10
    reference : {array-like, sparse matrix}, default=None
        The documents that every candidate's topics are scored on, such as
        the whole corpus. None scores each candidate on the fold's held-out
        documents, in which a rare top word may not occur at all (the
        scorer then raises, and the search records ``error_score``).

    Returns
    -------
    scorer : callable
    """
    _check_measure(measure, top_n)

    def score(estimator, X, y=None):
        documents = X if reference is None else reference
        return coherence(estimator, documents, measure=measure, top_n=top_n)

    return score


def diversity_scorer(*, top_n=25):
    """A scorer ``scorer(estimator, X, y=None)`` of :func:`topic_diversity`,
    which reads the topics alone.

    Parameters
    ----------
    top_n : int, default=25

    Returns
    -------
    scorer : callable
    """

    def score(estimator, X, y=None):
        return topic_diversity(estimator, top_n=top_n)

    return score
