# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled row operations of the shared online update.

The update of lambda and the smoothing window's running sum touch every value
of arrays of shape (n_params, n_components) once per minibatch, the filter's
moments the rows of the minibatch. NumPy needs a temporary array and a pass over memory per
arithmetic operation (for lambda^, for the convex combination, for the
differences, and a gather, an addition and a scatter for each sum over some
rows); these loops make one pass without the GIL and never form lambda^, so
the threads of :mod:`sklearn_svi._threads` run them on disjoint row blocks,
or, for the passes that take ``n_threads``, the threads of an OpenMP team.
"""

from cython cimport floating
from cython.parallel cimport prange

import numpy as np


cdef extern from *:
    """
    #define _prefetch(address) __builtin_prefetch(address)
    """
    void _prefetch(const void* address) noexcept nogil


# Rows ahead of the current one whose values a visit of the listed rows
# fetches early: the listed rows are scattered, beyond the reach of the
# processor's own prefetching.
cdef Py_ssize_t PREFETCH_DISTANCE = 4

# The most bytes of a row fetched early. The processor follows a row on its
# own once its first lines are read; asking for every line of a long row
# (8,000 bytes at K = 1000) made the scaled update's pass slower, asking for
# the first 512 bytes did not.
cdef Py_ssize_t PREFETCH_BYTES = 512


cdef inline void _prefetch_row(const void* row, Py_ssize_t n_bytes) noexcept nogil:
    """Ask for the first cache lines of a row of ``n_bytes`` bytes."""
    cdef Py_ssize_t offset
    for offset in range(0, min(n_bytes, PREFETCH_BYTES), 64):
        _prefetch(<const char*> row + offset)


cdef _sums_in_order(block_sums):
    """The sum of the rows of ``block_sums`` (a C-ordered array of float64),
    added in their order (as ``cumsum(axis=0)[-1]`` adds them), so that it
    does not depend on which thread summed which block; a view of the first
    row, where it is summed.

    A loop: NumPy's calls on arrays this small cost several percent of a
    pass over short texts."""
    cdef double[:, ::1] sums = block_sums
    cdef Py_ssize_t b, k
    for b in range(1, sums.shape[0]):
        for k in range(sums.shape[1]):
            sums[0, k] += sums[b, k]
    return block_sums[0]


cdef bint _all_zero(const double[::1] values):
    """Whether every value is 0 (and none NaN)."""
    cdef Py_ssize_t k
    for k in range(values.shape[0]):
        if values[k] != 0.0:
            return False
    return True


def replace_rows(
    floating[:, ::1] total,
    const Py_ssize_t[::1] old_rows,
    const floating[:, ::1] old_block,
    const Py_ssize_t[::1] new_rows,
    const floating[:, ::1] new_block,
    Py_ssize_t block_rows=1,
    Py_ssize_t n_threads=1,
):
    """total[old_rows] -= old_block, then total[new_rows] += new_block.

    The window's running sum, sum_t = sum_{t-1} - S_{t-L} + S_t (Mandt & Blei
    2014, eq. 11), in one pass over the two sorted lists of rows: a row in
    both is read and written once, its old values subtracted before its new
    ones are added, as two separate passes would. The threads of an OpenMP
    team share the rows of ``total`` in blocks of ``block_rows``.

    Parameters
    ----------
    total : ndarray of shape (n_params, n_components)
        The array updated in place.
    old_rows : ndarray of shape (n_old,)
        Sorted, distinct row indices of ``total``.
    old_block : ndarray of shape (n_old, n_components)
        The values subtracted from those rows.
    new_rows : ndarray of shape (n_new,)
        Sorted, distinct row indices of ``total``.
    new_block : ndarray of shape (n_new, n_components)
        The values added to those rows.
    block_rows : int, default=1
        The rows of ``total`` of a block.
    n_threads : int, default=1
        The threads of the team.
    """
    cdef Py_ssize_t n_blocks = (total.shape[0] + block_rows - 1) // block_rows
    cdef Py_ssize_t b
    with nogil:
        for b in prange(n_blocks, num_threads=n_threads, schedule="dynamic"):
            _replace_block(
                total, old_rows, old_block, new_rows, new_block, b * block_rows,
                min((b + 1) * block_rows, total.shape[0]),
            )


cdef inline void _replace_block(
    floating[:, ::1] total,
    const Py_ssize_t[::1] old_rows,
    const floating[:, ::1] old_block,
    const Py_ssize_t[::1] new_rows,
    const floating[:, ::1] new_block,
    Py_ssize_t start,
    Py_ssize_t stop,
) noexcept nogil:
    """:func:`replace_rows` on the rows ``start`` to ``stop - 1`` of ``total``."""
    cdef Py_ssize_t n_components = total.shape[1]
    cdef Py_ssize_t i = _first_listed(old_rows, start)
    cdef Py_ssize_t j = _first_listed(new_rows, start)
    cdef Py_ssize_t n_old = _first_listed(old_rows, stop)
    cdef Py_ssize_t n_new = _first_listed(new_rows, stop)
    cdef Py_ssize_t k
    cdef floating* row
    while i < n_old or j < n_new:
        if j == n_new or (i < n_old and old_rows[i] < new_rows[j]):
            row = &total[old_rows[i], 0]
            for k in range(n_components):
                row[k] -= old_block[i, k]
            i += 1
        elif i == n_old or new_rows[j] < old_rows[i]:
            row = &total[new_rows[j], 0]
            for k in range(n_components):
                row[k] += new_block[j, k]
            j += 1
        else:
            row = &total[new_rows[j], 0]
            for k in range(n_components):
                row[k] = (row[k] - old_block[i, k]) + new_block[j, k]
            i += 1
            j += 1


cdef inline Py_ssize_t _first_listed(
    const Py_ssize_t[::1] rows, Py_ssize_t row
) noexcept nogil:
    """The position of the first of the sorted ``rows`` at or after ``row``,
    by bisection."""
    cdef Py_ssize_t low = 0, high = rows.shape[0], middle
    while low < high:
        middle = (low + high) // 2
        if rows[middle] < row:
            low = middle + 1
        else:
            high = middle
    return low


cdef inline void _step_row(
    const floating* row,
    floating* out,
    const floating* total,
    floating factor,
    const floating* eta,
    Py_ssize_t eta_step,
    floating keep,
    floating move,
    Py_ssize_t n_components,
    double* column,
) noexcept nogil:
    """One row of :func:`step_toward_target`: lambda^ = eta + factor total,
    with ``total`` NULL for a row that is not listed (lambda^ = eta).

    ``eta`` is the row's prior, one value per column (``eta_step`` 1) or one
    for the whole row (0). Each call passes a constant ``eta_step``, so
    that the compiler makes a loop of its own for each kind of prior.
    """
    cdef Py_ssize_t k
    if total == NULL:
        for k in range(n_components):
            out[k] = keep * row[k] + move * eta[k * eta_step]
            column[k] += out[k]
    else:
        for k in range(n_components):
            out[k] = keep * row[k] + move * (total[k] * factor + eta[k * eta_step])
            column[k] += out[k]


cdef bint _prior_per_entry(
    const floating[:, :] prior, Py_ssize_t n_components
) except -1:
    """Whether the prior holds a value per entry of lambda (a contiguous
    array with one column per component) rather than one per row."""
    if prior.shape[1] == 1:
        return False
    if prior.shape[1] != n_components or prior.strides[1] != sizeof(floating):
        raise ValueError(
            "prior must have one column, or one contiguous column per component"
        )
    return True


def step_toward_target(
    const floating[:, ::1] natural,
    floating[:, ::1] updated,
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    double scale,
    const floating[:, :] prior,
    double rho,
    Py_ssize_t block_rows,
    Py_ssize_t n_threads=1,
):
    """updated = (1 - rho) natural + rho (prior + scale total).

    The convex combination with the noisy optimum lambda^ = eta + scale
    total, computed on the fly: one pass over lambda and the listed rows of
    the total, with no array for lambda^. The same pass sums the updated
    rows. Written to an array of its own, the update leaves lambda as it
    was until the caller adopts the result. The threads of an OpenMP team
    share the rows in blocks of ``block_rows``; each block sums its rows in
    order, and the blocks' sums are added in order, so that the sums do not
    depend on the number of threads.

    Parameters
    ----------
    natural : ndarray of shape (n_params, n_components)
        lambda, read only.
    updated : ndarray of shape (n_params, n_components)
        Output: the updated lambda.
    rows : ndarray of shape (n_rows,)
        Sorted, distinct rows of the total; a row that is not listed has
        total 0 and lambda^ = eta.
    block : ndarray of shape (n_rows, n_components)
        The total on those rows.
    scale : float
        N / (number of statistics in the window).
    prior : ndarray of shape (n_params, 1) or (n_params, n_components)
        eta of each row (a broadcast view when it is the same for all), or
        of each entry (rows contiguous).
    rho : float
        The step size.
    block_rows : int
        The rows of a block.
    n_threads : int, default=1
        The threads of the team.

    Returns
    -------
    column_sums : ndarray of shape (n_components,)
        The sum of the updated rows, in float64.
    """
    cdef Py_ssize_t n_components = natural.shape[1]
    cdef Py_ssize_t n_params = natural.shape[0]
    cdef Py_ssize_t n_blocks = (n_params + block_rows - 1) // block_rows
    cdef Py_ssize_t b
    cdef floating factor = <floating> scale
    cdef floating keep = <floating> (1.0 - rho)
    cdef floating move = <floating> rho
    cdef bint per_entry = _prior_per_entry(prior, n_components)
    block_sums = np.zeros((max(n_blocks, 1), n_components), dtype=np.float64)
    cdef double[:, ::1] sums = block_sums
    with nogil:
        for b in prange(n_blocks, num_threads=n_threads, schedule="dynamic"):
            _step_block(
                natural, updated, rows, block, factor, prior, per_entry, keep, move,
                b * block_rows, min((b + 1) * block_rows, n_params), &sums[b, 0],
            )
    return _sums_in_order(block_sums)


cdef inline void _step_block(
    const floating[:, ::1] natural,
    floating[:, ::1] updated,
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    floating factor,
    const floating[:, :] prior,
    bint per_entry,
    floating keep,
    floating move,
    Py_ssize_t start,
    Py_ssize_t stop,
    double* column,
) noexcept nogil:
    """:func:`step_toward_target` on rows ``start`` to ``stop - 1``, their
    sums added to ``column`` row after row."""
    cdef Py_ssize_t n_components = natural.shape[1]
    cdef Py_ssize_t i, listed = _first_listed(rows, start)
    cdef const floating* total
    for i in range(start, stop):
        total = NULL
        if listed < rows.shape[0] and rows[listed] == i:
            total = &block[listed, 0]
            listed += 1
        if per_entry:
            _step_row(
                &natural[i, 0], &updated[i, 0], total, factor, &prior[i, 0],
                1, keep, move, n_components, column,
            )
        else:
            _step_row(
                &natural[i, 0], &updated[i, 0], total, factor, &prior[i, 0],
                0, keep, move, n_components, column,
            )


cdef inline void _fold_row(
    const floating* row,
    const floating* stored,
    floating* updated,
    const floating* total,
    floating factor,
    const floating* eta,
    const floating* stored_eta,
    Py_ssize_t eta_step,
    floating current_scale,
    floating carry,
    floating pull,
    floating keep,
    floating share,
    Py_ssize_t n_components,
    double* sums,
) noexcept nogil:
    """One row of :func:`observe_difference`; ``total`` is NULL for a row
    that is not listed (s = 0: its three products with s are skipped).

    ``eta`` and ``stored_eta`` hold one value per column (``eta_step`` 1) or
    one for the row (0), a constant of each call, as in :func:`_step_row`.
    The row's lambda is c ``row`` + (1 - c) eta with c = ``current_scale``:
    the row itself when c = 1.
    """
    cdef Py_ssize_t k
    cdef double e, g, t
    cdef floating current
    cdef double squared_excess = 0.0, mean_excess = 0.0, squared_mean = 0.0
    cdef double mean_target = 0.0, excess_target = 0.0, squared_target = 0.0
    cdef floating rest = 1 - current_scale
    if total == NULL:
        for k in range(n_components):
            current = current_scale * row[k] + rest * eta[k * eta_step]
            e = current - eta[k * eta_step]
            g = carry * stored[k] - pull * (current - stored_eta[k * eta_step])
            updated[k] = keep * <floating> g - share * <floating> e
            squared_excess += e * e
            mean_excess += g * e
            squared_mean += g * g
    else:
        for k in range(n_components):
            current = current_scale * row[k] + rest * eta[k * eta_step]
            e = current - eta[k * eta_step]
            g = carry * stored[k] - pull * (current - stored_eta[k * eta_step])
            t = total[k] * factor
            updated[k] = keep * <floating> g + share * <floating> (t - e)
            squared_excess += e * e
            mean_excess += g * e
            squared_mean += g * g
            mean_target += g * t
            excess_target += e * t
            squared_target += t * t
    sums[0] += squared_excess
    sums[1] += mean_excess
    sums[2] += squared_mean
    sums[3] += mean_target
    sums[4] += excess_target
    sums[5] += squared_target


def observe_difference(
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    double scale,
    const floating[:, :] prior,
    const floating[:, ::1] current,
    double current_scale,
    const floating[:, ::1] mean,
    const floating[:, :] stored_prior,
    floating[:, ::1] updated_mean,
    const double[::1] row_decay,
    const double[::1] row_offset,
    double clock_decay,
    double clock_offset,
    double clock_shrink,
    double decay,
    double window,
    bint every_row,
    Py_ssize_t block_rows,
    Py_ssize_t n_threads=1,
):
    """Fold d = lambda^ - current into the filter's average g.

    updated_mean = decay g + d / window (Houlsby & Blei 2014, Alg. 1), in
    one pass that forms lambda^ = eta + scale total on the fly, as
    :func:`step_toward_target` does. The filter stores a row's g as of the
    last update that visited it, r: the row's g before this update is
    ``carry mean[i] - pull (current[i] - stored_prior[i])`` with carry =
    D_t / D_r and pull = D_t (F_t - F_r) / C_t, the clock of
    :class:`~sklearn_svi._mechanisms._step_sizes.FilteredStepSize` (the
    stored g itself right after the clock restarts). The pass visits every
    row with ``every_row``, and otherwise only the listed rows of the
    total, and on each row the first columns, as many as ``mean`` has: the
    filter may observe some of the components. It sums, in float64, the
    products from which the filter's norms follow. A BLAS dot product would
    start threads of its own inside the threads of
    :mod:`sklearn_svi._threads`, and its sum would depend on their number.
    A visit of every row is shared by the threads of an OpenMP team in
    blocks of ``block_rows``, whose sums are added in order; a visit of the
    listed rows is one block.

    Parameters
    ----------
    rows, block, scale, prior :
        The noisy optimum lambda^, as in :func:`step_toward_target`.
    current : ndarray of shape (n_params, n_components)
        lambda before the update, or, with ``current_scale`` c below 1, the
        stored array A of lambda = eta + c (A - eta).
    current_scale : float
        c.
    mean : ndarray of shape (n_params, n_observed)
        The stored average g of the differences so far on the first
        n_observed columns, read only.
    stored_prior : ndarray of the shape of ``prior``
        eta when the stored g was last brought up to date.
    updated_mean : ndarray of shape (n_params, n_observed)
        Output: the new average on the visited rows; it may be ``mean``
        itself, each value is read before it is written.
    row_decay, row_offset : ndarray of shape (n_params,)
        D_r and F_r of each row, the clock when it was last visited.
    clock_decay, clock_offset, clock_shrink : float
        D_t, F_t and C_t, the clock now.
    decay : float
        1 - 1 / window.
    window : float
        The filter's window tau.
    every_row : bool
        Whether every row is visited, or only the listed ones.
    block_rows : int
        The rows of a block of a visit of every row.
    n_threads : int, default=1
        The threads of the team.

    Returns
    -------
    sums : ndarray of shape (6,)
        Over the visited rows, with e = current - eta, s = lambda^ - eta
        and g the average before the update: ||e||^2, <g, e>, ||g||^2,
        <g, s>, <e, s> and ||s||^2.
    """
    cdef Py_ssize_t n_components = current.shape[1]
    cdef Py_ssize_t n_params = current.shape[0]
    cdef Py_ssize_t n_blocks = (
        (n_params + block_rows - 1) // block_rows if every_row else 1
    )
    cdef Py_ssize_t b
    cdef _Fold fold
    if stored_prior.shape[1] != prior.shape[1]:
        raise ValueError("stored_prior must have the shape of prior")
    if mean.shape[1] > n_components:
        raise ValueError("mean must not have more columns than current")
    fold.factor = scale
    fold.keep = decay
    fold.share = 1.0 / window
    fold.current_scale = current_scale
    fold.clock_decay = clock_decay
    fold.clock_offset = clock_offset
    fold.clock_shrink = clock_shrink
    fold.per_entry = _prior_per_entry(prior, n_components)
    block_sums = np.zeros((max(n_blocks, 1), 6), dtype=np.float64)
    cdef double[:, ::1] sums = block_sums
    with nogil:
        for b in prange(n_blocks, num_threads=n_threads, schedule="dynamic"):
            _fold_block(
                rows, block, prior, current, mean, stored_prior, updated_mean,
                row_decay, row_offset, &fold, every_row, b * block_rows,
                min((b + 1) * block_rows, n_params), &sums[b, 0],
            )
    return _sums_in_order(block_sums)


cdef struct _Fold:
    # The constants of a visit of :func:`observe_difference`: lambda^'s
    # factor of the total, the average's decay and share, lambda's scale c,
    # the clock D_t, F_t and C_t, and whether eta holds a value per entry.
    double factor
    double keep
    double share
    double current_scale
    double clock_decay
    double clock_offset
    double clock_shrink
    bint per_entry


cdef inline void _fold_block(
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    const floating[:, :] prior,
    const floating[:, ::1] current,
    const floating[:, ::1] mean,
    const floating[:, :] stored_prior,
    floating[:, ::1] updated_mean,
    const double[::1] row_decay,
    const double[::1] row_offset,
    const _Fold* fold,
    bint every_row,
    Py_ssize_t start,
    Py_ssize_t stop,
    double* sums,
) noexcept nogil:
    """:func:`observe_difference` on rows ``start`` to ``stop - 1`` (every
    row), or on the listed rows; the products added to ``sums`` row after
    row."""
    cdef Py_ssize_t n_observed = mean.shape[1]
    cdef Py_ssize_t n_listed = rows.shape[0]
    cdef Py_ssize_t listed = _first_listed(rows, start) if every_row else 0
    cdef Py_ssize_t n_visits = stop - start if every_row else n_listed
    cdef Py_ssize_t row_bytes = n_observed * sizeof(floating)
    cdef Py_ssize_t i, position, ahead
    cdef floating factor = <floating> fold.factor
    cdef floating keep = <floating> fold.keep
    cdef floating share = <floating> fold.share
    cdef floating current_factor = <floating> fold.current_scale
    cdef floating carry, pull
    cdef bint is_listed
    cdef const floating* total
    for position in range(n_visits):
        if not every_row and position + PREFETCH_DISTANCE < n_listed:
            ahead = rows[position + PREFETCH_DISTANCE]
            _prefetch_row(&current[ahead, 0], row_bytes)
            _prefetch_row(&mean[ahead, 0], row_bytes)
        i = start + position if every_row else rows[position]
        is_listed = listed < n_listed and rows[listed] == i
        total = &block[listed, 0] if is_listed else NULL
        carry = <floating> (fold.clock_decay / row_decay[i])
        pull = <floating> (
            fold.clock_decay * (fold.clock_offset - row_offset[i]) / fold.clock_shrink
        )
        if fold.per_entry:
            _fold_row(
                &current[i, 0], &mean[i, 0], &updated_mean[i, 0], total,
                factor, &prior[i, 0], &stored_prior[i, 0], 1, current_factor,
                carry, pull, keep, share,
                n_observed, sums,
            )
        else:
            _fold_row(
                &current[i, 0], &mean[i, 0], &updated_mean[i, 0], total,
                factor, &prior[i, 0], &stored_prior[i, 0], 0, current_factor,
                carry, pull, keep, share,
                n_observed, sums,
            )
        if is_listed:
            listed += 1


def scaled_rows_of(
    const floating[:, ::1] stored,
    const Py_ssize_t[::1] rows,
    const floating[:, :] prior,
    double scale,
    floating[:, ::1] out,
    const double[::1] column_factors=None,
    Py_ssize_t n_threads=1,
):
    """out = eta + c (stored - eta) on ``rows``: lambda's rows, kept scaled;
    with ``column_factors``, each value times its column's factor.

    Parameters
    ----------
    stored : ndarray of shape (n_params, n_components)
        The stored array A of lambda = eta + c (A - eta).
    rows : ndarray of shape (n_rows,)
        The rows to read.
    prior : ndarray of shape (n_params, 1) or (n_params, n_components) or None
        eta, as for :func:`step_toward_target`; not read when c is 1.
    scale : float
        c; at 1 the stored rows are lambda's.
    out : ndarray of shape (n_rows, n_components)
        Output: lambda on ``rows``, or with ``column_factors`` the values
        of lambda, in its type, times their column's factor (in float64,
        rounded to the type): ``(lambda_ik * column_factors[k])`` without
        writing lambda's rows out first.
    column_factors : ndarray of shape (n_components,) or None, default=None
        The factor of each column.
    n_threads : int, default=1
        The threads of the OpenMP team that share the rows.
    """
    cdef Py_ssize_t n_components = stored.shape[1]
    cdef bint scaled = scale != 1.0
    cdef bint per_entry = scaled and _prior_per_entry(prior, n_components)
    cdef bint factored = column_factors is not None
    cdef Py_ssize_t j, k, i
    cdef floating c = <floating> scale
    cdef const floating* eta
    cdef floating* out_row
    cdef Py_ssize_t row_bytes = n_components * sizeof(floating)
    with nogil:
        for j in prange(rows.shape[0], num_threads=n_threads, schedule="static"):
            if j + PREFETCH_DISTANCE < rows.shape[0]:
                _prefetch_row(&stored[rows[j + PREFETCH_DISTANCE], 0], row_bytes)
            i = rows[j]
            out_row = &out[j, 0]
            if not scaled:
                for k in range(n_components):
                    out_row[k] = stored[i, k]
            elif per_entry:
                eta = &prior[i, 0]
                for k in range(n_components):
                    out_row[k] = eta[k] + c * (stored[i, k] - eta[k])
            else:
                eta = &prior[i, 0]
                for k in range(n_components):
                    out_row[k] = eta[0] + c * (stored[i, k] - eta[0])
            if factored:
                for k in range(n_components):
                    out_row[k] = <floating> (out_row[k] * column_factors[k])


def add_to_rows(
    floating[:, ::1] stored,
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    double factor,
    floating[:, ::1] saved,
    Py_ssize_t[::1] done,
    Py_ssize_t block_rows,
    Py_ssize_t n_threads=1,
):
    """stored[rows] += factor block, in place, keeping the old rows.

    The scaled update of :class:`~sklearn_svi._store.ScaledStore`: with
    ``factor`` = rho scale / c_t and ``block`` the window's total, it adds
    rho (lambda^ - eta) / c_t to the rows listed. The old rows go to
    ``saved``, an undo record made before the call
    (:meth:`~sklearn_svi._transaction.UndoLog.staged_rows`), and ``done``
    is set once they are all there: the call does not return to the
    interpreter in between, so no Ctrl-C is handled between its first write
    and that mark.

    The rows are written in consecutive blocks of ``block_rows``, which the
    threads of an OpenMP team share; each block sums what it adds, and the
    blocks' sums are added in order, so that the sums do not depend on the
    number of threads.

    Parameters
    ----------
    stored : ndarray of shape (n_params, n_components)
        The stored array, whose ``rows`` are rewritten.
    rows : ndarray of shape (n_rows,)
        Distinct rows.
    block : ndarray of shape (n_rows, n_components)
        The values added to them, before ``factor``.
    factor : float
        The factor of ``block``.
    saved : ndarray of shape (n_rows, n_components)
        Output: the rows as they were.
    done : ndarray of shape (1,)
        Output: set to 1 when the rows are written and saved.
    block_rows : int
        The rows of a block.
    n_threads : int, default=1
        The threads of the team.

    Returns
    -------
    added : ndarray of shape (n_components,)
        The sums over the rows of what was added, in float64.
    finite : bool
        Whether every new value is finite.
    """
    cdef Py_ssize_t n_blocks = (rows.shape[0] + block_rows - 1) // block_rows
    cdef Py_ssize_t b
    # Per block, the sums of what it adds and, x - x being 0 for a finite x
    # and NaN otherwise, one probe per column, so that the loop over the
    # columns has no chain of additions from one column to the next.
    block_totals = np.zeros((max(n_blocks, 1), 2, stored.shape[1]), dtype=np.float64)
    cdef double[:, :, ::1] totals = block_totals
    with nogil:
        for b in prange(n_blocks, num_threads=n_threads, schedule="dynamic"):
            _add_block(
                stored, rows, block, <floating> factor, saved, b * block_rows,
                min((b + 1) * block_rows, rows.shape[0]), &totals[b, 0, 0],
                &totals[b, 1, 0],
            )
        done[0] = 1
    in_order = _sums_in_order(block_totals.reshape(block_totals.shape[0], -1))
    return in_order[: stored.shape[1]], _all_zero(in_order[stored.shape[1] :])


cdef inline void _add_block(
    floating[:, ::1] stored,
    const Py_ssize_t[::1] rows,
    const floating[:, ::1] block,
    floating factor,
    floating[:, ::1] saved,
    Py_ssize_t start,
    Py_ssize_t stop,
    double* sums,
    double* probe,
) noexcept nogil:
    """:func:`add_to_rows` on the listed rows ``start`` to ``stop - 1``."""
    cdef Py_ssize_t n_components = stored.shape[1]
    cdef Py_ssize_t row_bytes = n_components * sizeof(floating)
    cdef Py_ssize_t j, k
    cdef floating increment
    cdef floating* row
    cdef floating* old_row
    cdef const floating* added_row
    for j in range(start, stop):
        if j + PREFETCH_DISTANCE < rows.shape[0]:
            _prefetch_row(&stored[rows[j + PREFETCH_DISTANCE], 0], row_bytes)
        row = &stored[rows[j], 0]
        old_row = &saved[j, 0]
        added_row = &block[j, 0]
        for k in range(n_components):
            old_row[k] = row[k]
            increment = factor * added_row[k]
            row[k] = row[k] + increment
            sums[k] += increment
            probe[k] += row[k] - row[k]
