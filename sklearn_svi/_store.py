"""Where lambda lives: one store, the same operations wherever it is.

The online update reads and moves lambda only through a store
(:class:`NaturalStore`), and never asks where lambda is. A store keeps
lambda as eta + c (stored - eta) with one scale c for all rows
(:class:`ScaledStore`): an update of plain SVI on a minibatch that lists few
rows then writes only those rows and shrinks c (Hoffman et al. 2013, eq. 26,
whose lambda^ equals eta on the rows a minibatch does not list). Two stores
implement it:

- :class:`LocalStore`: the array in this process (or some of its rows, in
  the copy of the model that a worker's local step reads);
- :class:`~sklearn_svi._dask._blocks.RowShards`: blocks of rows held by the
  workers of a Dask cluster, each of them the :class:`StoredRows` of its
  rows, so that every operation on rows exists once.

Every write goes through :class:`StoredRows`, which keeps the undo
discipline of :mod:`sklearn_svi._transaction`: an in-place write is recorded
before it happens, and a whole new array is written on a spare one and
swapped in, the old one kept until the transaction ends.
"""

import functools
from typing import Protocol, runtime_checkable

import numpy as np

from ._threads import SUM_BLOCK_ROWS, fixed_block_rows, map_rows, sum_rows, team_size
from ._transaction import UndoLog, spare_like
from ._update_fast import add_to_rows, scaled_rows_of, step_toward_target

# A scaled lambda is written out before its scale falls below this value, so
# that the stored deviations from eta stay far from overflow, in float32 too.
SMALLEST_SCALE = 1e-12


def compiled_prior(prior, shape, dtype):
    """eta in the form the compiled passes read, for lambda of ``shape``
    and ``dtype``: an array of shape (n_params, 1), a broadcast view for a
    scalar, or, for a prior of every entry of lambda, a C-contiguous array
    of lambda's ``shape``."""
    if np.isscalar(prior):
        return _scalar_compiled_prior(prior, shape[0], np.dtype(dtype))
    prior = np.asarray(prior, dtype=dtype)
    if prior.ndim == 2:
        return np.ascontiguousarray(prior)
    return np.broadcast_to(prior.reshape(-1, 1), (shape[0], 1))


@functools.lru_cache(maxsize=16)
def _scalar_compiled_prior(prior, n_params, dtype):
    """A scalar eta's broadcast view (read-only), asked for by every update
    and so kept."""
    return np.broadcast_to(np.asarray(prior, dtype=dtype).reshape(1, 1), (n_params, 1))


def non_finite_update(dtype):
    """The error of an update whose lambda would not be finite."""
    return FloatingPointError(
        "The update from this minibatch would make the global parameters "
        f"non-finite in {np.dtype(dtype)}: the data's values are too large "
        "for the model's floating point type."
    )


def raise_to_prior(natural, prior):
    """Raise every entry of ``natural`` below eta to eta, in place; return
    how many were raised.

    The projection onto {lambda >= eta} of a model whose lambda is eta plus
    a non-negative statistic without annealing. ``prior`` is eta in the
    form the compiled passes read (one column per row, or one per entry).
    """

    def raise_rows(span):
        block, floor = natural[span], prior[span]
        below = int(np.count_nonzero(block < floor))
        if below:
            np.maximum(block, floor, out=block)
        return below

    return sum(map_rows(raise_rows, len(natural), natural.shape[1]))


class StoredRows:
    """Rows of lambda's stored array, written only in ways a transaction
    can undo.

    Between :meth:`begin` and :meth:`commit` (or :meth:`rollback`) every
    write of rows in place is recorded before it happens, and a write of
    every row goes to a spare array that is then swapped in; the array of
    :meth:`begin` is kept until the end.

    Parameters
    ----------
    array : ndarray of shape (n_rows, n_components)
        The rows, C-contiguous.
    """

    def __init__(self, array):
        self.array = array
        self._spare = None
        self._array_at_begin = None
        self._undo = UndoLog()

    def __len__(self):
        return len(self.array)

    def rows_of(self, rows, prior, scale, column_factors=None):
        """eta + c (stored - eta) on ``rows``, a new array; with
        ``column_factors``, each column times its factor
        (:func:`~sklearn_svi._update_fast.scaled_rows_of`)."""
        if scale == 1.0 and column_factors is None:
            return self.array[rows]
        out = np.empty((len(rows), self.array.shape[1]), dtype=self.array.dtype)
        scaled_rows_of(
            self.array,
            rows,
            prior,
            scale,
            out,
            column_factors,
            team_size(len(rows), out.shape[1]),
        )
        return out

    def totals(self):
        """The sums of the rows, in float64, over the same fixed blocks of
        rows whatever the number of threads."""
        return sum_rows(
            lambda span: self.array[span].sum(axis=0, dtype=np.float64),
            len(self.array),
        )

    def add(self, total, factor):
        """rows[total.rows] += factor total.block, in place: the sums over
        the rows of what was added, in float64, and whether every new value
        is finite.

        The threads of a team write the rows in blocks
        (:func:`fixed_block_rows`) and sum them block by block, in order:
        the sums do not depend on the number of threads.
        """
        n_rows, row_size = len(total.rows), self.array.shape[1]
        saved, done = self._undo.staged_rows(self.array, total.rows)
        return add_to_rows(
            self.array,
            total.rows,
            total.block,
            factor,
            saved,
            done,
            fixed_block_rows(row_size),
            team_size(n_rows, row_size),
        )

    def step_toward(self, target, rho):
        """rows <- (1 - rho) rows + rho lambda^ with lambda^ the
        :class:`~sklearn_svi._mechanisms.NoisyOptimum` ``target``; the sums
        of the new rows, in float64."""
        # The array of ``begin`` is never written: a rollback returns to it.
        spare = None if self._spare is self._array_at_begin else self._spare
        updated = spare_like(self.array, spare)
        row_sums = step_toward_target(
            self.array,
            updated,
            target.total.rows,
            target.total.block,
            target.scale,
            target.prior,
            rho,
            SUM_BLOCK_ROWS,
            team_size(*self.array.shape),
        )
        self._swap_in(updated)
        return row_sums

    def settle(self, prior, scale):
        """rows <- eta + c (rows - eta): the stored rows become lambda's."""
        self._swap_in(self.rows_of(np.arange(len(self.array)), prior, scale))

    def project(self, projection, prior):
        """``projection(rows, prior)``, which writes the rows in place and
        returns how many values it changed."""
        if self.array is self._array_at_begin:
            # Written by the transaction for the first time: record it all.
            self._undo.record_rows(self.array, slice(None))
        return projection(self.array, prior)

    def _swap_in(self, updated):
        self._spare, self.array = self.array, updated

    # -- one part of a transaction ------------------------------------------------

    def begin(self):
        """Start recording the writes, for :meth:`rollback`."""
        self._array_at_begin = self.array
        self._undo.begin()

    def commit(self):
        """Keep the writes since :meth:`begin`."""
        self._undo.commit()
        self._array_at_begin = None

    def rollback(self):
        """Put back the rows as they were at :meth:`begin`."""
        self._undo.rollback()
        if self._array_at_begin is not None and self.array is not self._array_at_begin:
            self._swap_in(self._array_at_begin)
        self._array_at_begin = None

    def __getstate__(self):
        # The spare array and the records of a transaction hold no
        # information.
        return {"array": self.array}

    def __setstate__(self, state):
        self.__init__(state["array"])


class Scaling:
    """The scale c of lambda = eta + c (stored - eta), and the sums over the
    rows that follow from it.

    Attributes
    ----------
    scale : float
        c; 1 when the stored array is lambda.
    prior : ndarray or None
        eta in the form the compiled passes read, fixed while c < 1.
    prior_totals, excess_totals : ndarray of shape (n_components,) or None
        The sums over the rows of eta and of stored - eta, in float64.
    """

    def __init__(self):
        self.reset()

    def reset(self):
        """c = 1: the stored array is lambda."""
        self.scale = 1.0
        self.prior = None
        self.prior_totals = None
        self.excess_totals = None

    @classmethod
    def started(cls, prior, totals):
        """The scaling at c = 1 of lambda whose row sums are ``totals`` and
        whose prior is ``prior``."""
        scaling = cls()
        scaling.prior = prior
        # One column for a prior of each row, one per component otherwise.
        scaling.prior_totals = np.broadcast_to(
            prior.sum(axis=0, dtype=np.float64), np.shape(totals)
        )
        scaling.excess_totals = (
            np.asarray(totals, dtype=np.float64) - scaling.prior_totals
        )
        return scaling

    def moved(self, scale, added):
        """A new scaling: c = ``scale``, and the sums of stored - eta grown
        by ``added``."""
        moved = Scaling()
        moved.prior, moved.prior_totals = self.prior, self.prior_totals
        moved.scale, moved.excess_totals = scale, self.excess_totals + added
        return moved

    def totals(self):
        """The sums of lambda over its rows, in float64, while c < 1."""
        return self.prior_totals + self.scale * self.excess_totals


@runtime_checkable
class NaturalStore(Protocol):
    """What the online update asks of the place where lambda lives.

    Every method that changes lambda changes it as part of the model's
    transaction: the store is a part of it (``begin``, ``commit``,
    ``rollback``), and a rollback puts back every row it wrote.

    Attributes
    ----------
    shape : tuple of int
        (n_params, n_components).
    dtype : dtype
        lambda's floating point type.
    scale : float
        c of lambda = eta + c (stored - eta).
    stored : object
        What the compiled passes of a filter read with ``scale``: the stored
        array, or the handle of the blocks that hold it.
    """

    shape: tuple
    dtype: np.dtype

    @property
    def scale(self): ...

    @property
    def stored(self): ...

    def array(self):
        """All of lambda as a read-only array (gathered from the blocks)."""

    def rows_block(self, rows, column_factors=None):
        """An array holding lambda on the sorted ``rows`` at least, and the
        indices of its rows in lambda (None when it holds every row); with
        ``column_factors``, of shape (n_components,), lambda on exactly
        ``rows``, each column times its factor (rounded to lambda's type,
        as the product of the array of lambda's rows would be), and
        ``rows``."""

    def totals(self):
        """The sums of lambda over its rows, in float64."""

    def settle(self):
        """Write lambda out: c = 1 again."""

    def step_rows(self, total, total_scale, rho, prior):
        """An update of plain SVI that writes only the rows of ``total``;
        the sums of the new lambda over the rows."""

    def step_all(self, target, rho):
        """lambda <- (1 - rho) lambda + rho ``target`` on every row; the
        sums of the new lambda over the rows."""

    def project(self, projection, prior):
        """Apply the model's projection onto its feasible set; the number
        of values it changed."""

    def gathered(self):
        """A :class:`LocalStore` with the same values: what a saved model
        holds."""

    def begin(self): ...

    def commit(self): ...

    def rollback(self): ...


class ScaledStore:
    """The store's logic of the scale, once for every kind of store.

    A subclass holds the stored rows and implements, on all of them:
    ``_stored_totals()``, ``_add(total, factor)`` (see
    :meth:`StoredRows.add`), ``_step_toward(target, rho)``,
    ``_settle(prior, scale)`` and ``_project(projection, prior)``.
    """

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.scaling = Scaling()
        self._saved_scaling = None

    def __len__(self):
        return self.shape[0]

    @property
    def scale(self):
        return self.scaling.scale

    def totals(self):
        if self.scale == 1.0:
            return self._stored_totals()
        return self.scaling.totals()

    def settle(self):
        if self.scale == 1.0:
            return
        self._settle(self.scaling.prior, self.scale)
        self._rescaled(Scaling())

    def step_rows(self, total, total_scale, rho, prior):
        """One update of plain SVI with lambda kept scaled.

        lambda^ - eta is ``total_scale`` times the ``total`` on its rows
        and 0 elsewhere, so lambda - eta shrinks by 1 - rho on every row
        (c <- (1 - rho) c) and the listed rows move by
        stored <- stored + rho (lambda^ - eta) / c.

        Parameters
        ----------
        total : SparseStatistic or HeldStatistic
            The window's total (held by the blocks of a cluster).
        total_scale : float
            N / (number of statistics in the window).
        rho : float
            The step size, below 1.
        prior : ndarray
            eta in the form of the compiled passes.

        Returns
        -------
        totals : ndarray of shape (n_components,)
            The sums of the new lambda over the rows, in float64.

        Raises
        ------
        FloatingPointError
            If the new rows or sums are not finite; the transaction's
            rollback puts the rows back.
        """
        if self.scale * (1.0 - rho) < SMALLEST_SCALE:
            self.settle()
        scaling = self.scaling
        if scaling.scale == 1.0:
            scaling = Scaling.started(prior, self._stored_totals())
        scale = scaling.scale * (1.0 - rho)
        added, finite = self._add(total, rho * total_scale / scale)
        rescaled = scaling.moved(scale, added)
        totals = rescaled.totals()
        if not (finite and np.isfinite(totals).all()):
            raise non_finite_update(self.dtype)
        self._rescaled(rescaled)
        return totals

    def step_all(self, target, rho):
        self.settle()
        row_sums = self._step_toward(target, rho)
        if not np.all(np.isfinite(row_sums)):
            raise non_finite_update(self.dtype)
        return row_sums

    def project(self, projection, prior):
        self.settle()
        return self._project(projection, prior)

    def _rescaled(self, scaling):
        # A new object bound to the name: the one of ``begin`` stays as it
        # was for ``rollback``.
        self.scaling = scaling

    def begin(self):
        self._saved_scaling = self.scaling

    def commit(self):
        self._saved_scaling = None

    def rollback(self):
        if self._saved_scaling is not None:
            self.scaling = self._saved_scaling
        self._saved_scaling = None


class LocalStore(ScaledStore):
    """lambda in this process.

    Parameters
    ----------
    array : ndarray of shape (n_rows, n_components)
        lambda's stored array, or, with ``rows``, those rows of it only.
    rows : ndarray of shape (n_rows,) or None, default=None
        The rows of lambda that ``array`` holds (the copy of the model that
        a worker's local step reads); None for all of them.
    scaling : Scaling or None, default=None
        The scale of the stored array; None for c = 1.
    """

    def __init__(self, array, rows=None, scaling=None):
        super().__init__(array.shape, array.dtype)
        self.rows = StoredRows(array)
        self.held_rows = rows
        if scaling is not None:
            self.scaling = scaling

    @property
    def stored(self):
        return self.rows.array

    def array(self):
        array = self.rows.array
        if self.scale != 1.0:
            array = self.rows.rows_of(
                np.arange(len(array)), self.scaling.prior, self.scale
            )
        view = array.view()
        view.flags.writeable = False
        return view

    def rows_block(self, rows, column_factors=None):
        if column_factors is not None:
            positions = rows
            if self.held_rows is not None:
                positions = np.searchsorted(self.held_rows, rows)
            block = self.rows.rows_of(
                positions, self.scaling.prior, self.scale, column_factors
            )
            return block, rows
        if self.held_rows is not None:
            return self.rows.array, self.held_rows
        if self.scale == 1.0:
            return self.rows.array, None
        return self.rows.rows_of(rows, self.scaling.prior, self.scale), rows

    def gathered(self):
        return self

    def _stored_totals(self):
        return self.rows.totals()

    def _add(self, total, factor):
        return self.rows.add(total, factor)

    def _step_toward(self, target, rho):
        return self.rows.step_toward(target, rho)

    def _settle(self, prior, scale):
        self.rows.settle(prior, scale)

    def _project(self, projection, prior):
        return self.rows.project(projection, prior)

    def begin(self):
        super().begin()
        self.rows.begin()

    def commit(self):
        self.rows.commit()
        super().commit()

    def rollback(self):
        self.rows.rollback()
        super().rollback()

    def __getstate__(self):
        return {
            "array": self.rows.array,
            "rows": self.held_rows,
            "scaling": self.scaling,
        }

    def __setstate__(self, state):
        self.__init__(state["array"], state["rows"], state["scaling"])
