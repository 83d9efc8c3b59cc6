# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled row operations of the shared online update.

The update of lambda and of the smoothing window's running sum touch every
value of arrays of shape (n_params, n_components) once per minibatch. NumPy
needs a temporary array and a pass over memory per arithmetic operation
(three for a convex combination, a gather, an addition and a scatter for a
sum over some rows); these loops make one pass without the GIL, so the
threads of :mod:`sklearn_svi._threads` run them on disjoint row blocks.
"""

from cython cimport floating


def add_rows(
    floating[:, ::1] total,
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    bint subtract,
):
    """total[rows[j]] += block[j] (or -= with ``subtract``) for every j.

    Parameters
    ----------
    total : ndarray of shape (n_params, n_components)
        The array updated in place.
    rows : ndarray of shape (n_rows,)
        Distinct row indices of ``total``.
    block : ndarray of shape (n_rows, n_components)
        The values added to (or subtracted from) those rows.
    subtract : bool
        Subtract the values instead of adding them.
    """
    cdef Py_ssize_t n_components = total.shape[1]
    cdef Py_ssize_t j, k
    cdef floating* row
    cdef const floating* values
    with nogil:
        for j in range(rows.shape[0]):
            row = &total[rows[j], 0]
            values = &block[j, 0]
            if subtract:
                for k in range(n_components):
                    row[k] -= values[k]
            else:
                for k in range(n_components):
                    row[k] += values[k]


def convex_combination(
    floating[:, ::1] natural,
    const floating[:, ::1] target,
    double rho,
    Py_ssize_t start,
    Py_ssize_t stop,
):
    """natural = (1 - rho) natural + rho target on rows ``start`` to ``stop - 1``.

    Parameters
    ----------
    natural : ndarray of shape (n_params, n_components)
        lambda, updated in place.
    target : ndarray of shape (n_params, n_components)
        The noisy optimum lambda^.
    rho : float
        The step size.
    start, stop : int
        The range of rows.
    """
    cdef Py_ssize_t n_components = natural.shape[1]
    cdef Py_ssize_t i, k
    cdef floating keep = <floating> (1.0 - rho)
    cdef floating move = <floating> rho
    cdef floating* row
    cdef const floating* toward
    with nogil:
        for i in range(start, stop):
            row = &natural[i, 0]
            toward = &target[i, 0]
            for k in range(n_components):
                row[k] = keep * row[k] + move * toward[k]
