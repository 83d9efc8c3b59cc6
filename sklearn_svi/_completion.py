"""Held-out fit by document completion, the measure of the three papers.

Each held-out document's tokens are split at random into an observed and a
predicted half; the topic proportions are inferred from the observed half
and the predicted half is scored by its per-word log predictive probability.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class DocumentCompletion:
    """Held-out documents split into an observed and a predicted half.

    Attributes
    ----------
    observed : scipy.sparse.csr_matrix of shape (n_documents, n_features)
        Counts of the observed half of each document's tokens.
    predicted : scipy.sparse.csr_matrix of shape (n_documents, n_features)
        Counts of the other half, whose probability is scored.
    """

    observed: sp.csr_matrix
    predicted: sp.csr_matrix


def complete_documents(X, rng):
    """Split each document's tokens at random into two halves.

    The counts are expanded to one entry per token, the tokens of each
    document are shuffled, and the first half (rounded down) is observed,
    the rest predicted. Documents with fewer than two tokens are dropped.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_features)
        Document-word counts; the counts must be whole numbers.
    rng : numpy.random.Generator
        Source of the random split.

    Returns
    -------
    completion : DocumentCompletion
        The observed and predicted halves of the documents kept.
    """
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

    return DocumentCompletion(counts_of(observed), counts_of(~observed))


def log_predictive(model, completion):
    """Held-out per-word log predictive probability by document completion.

    Parameters
    ----------
    model : fitted LDA estimator
        An estimator with ``transform`` returning normalised topic
        proportions and ``components_`` of shape (n_topics, n_features).
    completion : DocumentCompletion
        The held-out documents.

    Returns
    -------
    score : float
        sum over predicted tokens of log(theta_d @ beta[:, w]), divided by
        the number of predicted tokens, with theta_d inferred from the
        observed half and beta the normalised ``components_``.
    """
    theta = model.transform(completion.observed)
    beta = model.components_ / model.components_.sum(axis=1, keepdims=True)
    predicted = completion.predicted.tocoo()
    probability = np.einsum("ij,ij->i", theta[predicted.row], beta.T[predicted.col])
    return float(predicted.data @ np.log(probability) / predicted.data.sum())
