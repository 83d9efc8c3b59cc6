"""Helpers of the models' input checks: which rows hold a bad value, said in
an error message."""

import numpy as np

# Most rows that an error message lists.
LISTED_ROWS = 5


def listed_rows(rows):
    """The first LISTED_ROWS of ``rows`` as "3, 7, 12, ...", for a message."""
    rows = np.asarray(rows)
    more = ", ..." if len(rows) > LISTED_ROWS else ""
    return ", ".join(map(str, rows[:LISTED_ROWS])) + more


def rows_of_entries(X, entries):
    """The distinct rows, sorted, of stored entries of the CSR matrix ``X``.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
    entries : array-like of int
        Positions in ``X.data``.

    Returns
    -------
    rows : ndarray of int
    """
    return np.unique(np.searchsorted(X.indptr, entries, side="right") - 1)


def refused_update(error, least_likely, samples, n_batch_iter):
    """The error that says why the update from a minibatch was refused.

    Parameters
    ----------
    error : Exception
        What the update raised; the update was undone.
    least_likely : ndarray of int
        The samples that fit the model worst, by their place in the
        minibatch, worst first.
    samples : ndarray of int
        The minibatch's samples, by their row in the caller's ``X``.
    n_batch_iter : int
        The number of the last update that the model keeps.

    Returns
    -------
    error : ValueError
    """
    suspects = samples[least_likely[:LISTED_ROWS]]
    hint = ""
    if len(suspects):
        hint = (
            " The samples of the minibatch that fit the model worst are, "
            f"by their row in X: {listed_rows(suspects)}."
        )
    return ValueError(
        f"The update from a minibatch of {len(samples)} samples failed and "
        f"was undone; the model is as after update {n_batch_iter}. {error}{hint}"
    )
