"""Held-out metrics of topic models: document completion, as in the papers.

The three papers the package implements judge a topic model by the held-out
per-word log predictive probability by document completion (Hoffman et al.
2013, Sec. 4; Mandt & Blei 2014; Houlsby & Blei 2014): each held-out
document's tokens are split at random into an observed and a predicted half,
the topic proportions theta_d are inferred from the observed half, and the
predicted half is scored by

    sum_{d, w in predicted} n_dw log sum_k theta_dk beta_kw / sum n_dw,

with beta the normalised topics. :func:`completion_score` does both steps
with a fixed seed and has the signature of a scikit-learn scorer, so that
``GridSearchCV(..., scoring=completion_score)`` selects by it.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array


class TokenSplit(NamedTuple):
    """The two halves of documents split by :func:`split_tokens`."""

    observed: sp.csr_matrix
    predicted: sp.csr_matrix


def split_tokens(X, *, random_state=None):
    """Split each document's tokens at random into two halves.

    The counts are expanded to one entry per token, each document's tokens
    are shuffled, and the first half (rounded down) is observed, the rest
    predicted. A document with fewer than two tokens has nothing to predict
    from and is left out of both halves.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_documents, n_features)
        Document-word counts, whole numbers.
    random_state : int, RandomState instance, Generator or None, default=None
        Source of the random split.

    Returns
    -------
    split : TokenSplit
        A named tuple ``(observed, predicted)`` of CSR matrices of shape
        (n_kept, n_features): the counts of the observed half of the
        documents with two tokens or more, and of the other half, in the
        same rows.
    """
    X = check_array(X, accept_sparse="csr", dtype=[np.float64, np.float32])
    X = sp.csr_matrix(X)
    if np.any(X.data < 0) or np.any(X.data != np.round(X.data)):
        raise ValueError(
            "Document completion needs non-negative whole-number word counts."
        )
    rng = (
        random_state
        if isinstance(random_state, np.random.Generator)
        else check_random_state(random_state)
    )
    lengths = np.asarray(X.sum(axis=1)).ravel().astype(np.intp)
    X = X[lengths >= 2]
    lengths = lengths[lengths >= 2]
    counts = X.data.astype(np.intp)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    token_documents = np.repeat(rows, counts)
    token_words = np.repeat(X.indices, counts)
    # Sorting by document, then by a random key, shuffles within documents.
    order = np.lexsort((rng.random(token_documents.size), token_documents))
    token_words = token_words[order]
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    rank = np.arange(token_words.size) - starts
    observed = rank < np.repeat(lengths // 2, lengths)

    def counts_of(tokens):
        ones = np.ones(np.count_nonzero(tokens))
        matrix = sp.coo_matrix(
            (ones, (token_documents[tokens], token_words[tokens])), shape=X.shape
        )
        return matrix.tocsr()

    return TokenSplit(counts_of(observed), counts_of(~observed))


def log_predictive(estimator, X_observed, X_predicted):
    """Per-word log predictive probability of held-out halves of documents.

    Parameters
    ----------
    estimator : fitted LDA estimator
        An estimator whose ``transform`` returns normalised topic proportions
        and whose ``components_`` has shape (n_topics, n_features): any of
        the package's, scikit-learn's LatentDirichletAllocation, or a
        wrapper of another library with those two members.
    X_observed : {array-like, sparse matrix} of shape (n_documents, n_features)
        The observed half of each document, from which theta_d is inferred.
    X_predicted : {array-like, sparse matrix} of shape (n_documents, \
            n_features)
        The predicted half, in the same rows.

    Returns
    -------
    score : float
        sum over predicted tokens of log(theta_d . beta_w), divided by the
        number of predicted tokens; higher is better.
    """
    predicted = sp.coo_matrix(check_array(X_predicted, accept_sparse="coo"))
    if predicted.shape[0] != np.shape(X_observed)[0]:
        raise ValueError(
            f"X_observed has {np.shape(X_observed)[0]} documents and "
            f"X_predicted {predicted.shape[0]}; they must be halves of the "
            "same documents."
        )
    if predicted.data.sum() <= 0:
        raise ValueError("X_predicted holds no words to predict.")
    theta = estimator.transform(X_observed)
    topics = estimator.components_
    beta = topics / topics.sum(axis=1, keepdims=True)
    probability = np.einsum("ij,ij->i", theta[predicted.row], beta.T[predicted.col])
    return float(predicted.data @ np.log(probability) / predicted.data.sum())


def completion_score(estimator, X, y=None, *, random_state=0):
    """Held-out per-word log predictive probability of X by document completion.

    :func:`split_tokens` with a fixed seed, then :func:`log_predictive`: the
    measure of the papers, with the signature of a scikit-learn scorer, so
    that ``GridSearchCV(estimator, grid, scoring=completion_score)`` selects
    the candidate that predicts held-out words best. Every candidate sees the
    same split of the same fold.

    Parameters
    ----------
    estimator : fitted LDA estimator or Pipeline
        As for :func:`log_predictive`, or a pipeline that ends with one: its
        other steps (a ``CountVectorizer``, say) turn ``X`` into the counts
        that are split.
    X : {array-like, sparse matrix} of shape (n_documents, n_features)
        Held-out documents: whole-number counts, or the input of the
        pipeline.
    y : Ignored
        Not used, present for API consistency by convention.
    random_state : int, RandomState instance or None, default=0
        Seed of the split of the tokens.

    Returns
    -------
    score : float
        Higher is better.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_svi import SmoothedLDA, make_lda_corpus
    >>> from sklearn_svi.metrics import completion_score
    >>> X, _, _ = make_lda_corpus(n_documents=200, random_state=0)
    >>> search = GridSearchCV(
    ...     SmoothedLDA(n_components=5, max_iter=2, random_state=0),
    ...     {"L": [1, 10]}, scoring=completion_score, cv=2).fit(X)
    >>> sorted(search.best_params_)
    ['L']
    """
    if isinstance(estimator, Pipeline):
        if len(estimator) > 1:
            X = estimator[:-1].transform(X)
        estimator = estimator[-1]
    return log_predictive(estimator, *split_tokens(X, random_state=random_state))
