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

import numpy as np


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


cdef inline floating _noisy_optimum(
    floating total, floating scale, floating prior
) noexcept nogil:
    """lambda^ = eta + N S~ for one coordinate, S~ = total / count, scale = N / count."""
    return total * scale + prior


def form_target(
    floating[:, ::1] target,
    const floating[:, ::1] total,
    double scale,
    const floating[:] prior,
    Py_ssize_t start,
    Py_ssize_t stop,
):
    """target = prior + scale total on rows ``start`` to ``stop - 1``.

    Parameters
    ----------
    target : ndarray of shape (n_params, n_components)
        Output: the noisy optimum lambda^.
    total : ndarray of shape (n_params, n_components)
        The smoothing window's running sum of minibatch statistics.
    scale : float
        N / (number of statistics in the window).
    prior : ndarray of shape (n_params,)
        eta of each row (a broadcast view when it is the same for all).
    start, stop : int
        The range of rows.
    """
    cdef Py_ssize_t n_components = target.shape[1]
    cdef Py_ssize_t i, k
    cdef floating factor = <floating> scale
    with nogil:
        for i in range(start, stop):
            for k in range(n_components):
                target[i, k] = _noisy_optimum(total[i, k], factor, prior[i])


def step_toward_target(
    floating[:, ::1] natural,
    const floating[:, ::1] total,
    double scale,
    const floating[:] prior,
    double rho,
    Py_ssize_t start,
    Py_ssize_t stop,
):
    """natural = (1 - rho) natural + rho (prior + scale total) on rows ``start`` to ``stop - 1``.

    The convex combination with the noisy optimum of :func:`form_target`,
    computed on the fly: one pass over lambda and the running sum, with no
    array for lambda^. The same pass sums the updated rows.

    Parameters
    ----------
    natural : ndarray of shape (n_params, n_components)
        lambda, updated in place.
    total, scale, prior :
        As in :func:`form_target`.
    rho : float
        The step size.
    start, stop : int
        The range of rows.

    Returns
    -------
    column_sums : ndarray of shape (n_components,)
        The sum of the updated rows, in float64, added row after row.
    """
    cdef Py_ssize_t n_components = natural.shape[1]
    cdef Py_ssize_t i, k
    cdef floating factor = <floating> scale
    cdef floating keep = <floating> (1.0 - rho)
    cdef floating move = <floating> rho
    cdef floating eta
    cdef floating* row
    cdef const floating* sums
    column_sums = np.zeros(n_components, dtype=np.float64)
    cdef double[::1] column = column_sums
    with nogil:
        for i in range(start, stop):
            row = &natural[i, 0]
            sums = &total[i, 0]
            eta = prior[i]
            for k in range(n_components):
                row[k] = keep * row[k] + move * _noisy_optimum(sums[k], factor, eta)
                column[k] += row[k]
    return column_sums
