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
