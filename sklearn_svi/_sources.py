"""Where a model's data are: the row-source protocol and the engines.

The online update reads its training data through a :class:`RowSource`: a
number of samples, minibatches of rows, and what the model computes from a
minibatch (its statistic, its score, its worst samples). Data held in this
process are :class:`InMemoryRows`. Data held elsewhere belong to an
:class:`Engine`, which registers itself here (:func:`register_engine`) and
answers with a row source of its own; the Dask engine,
:mod:`sklearn_svi._dask`, is the only one. The core never imports an
engine: it asks the registered ones.

The models' public methods take an engine's collections too. A method that
maps each row of ``X`` to a row of its result is declared with
:func:`rowwise`; a method that adds up the rows' parts and finishes from the
sum calls :func:`summed_over_rows`. Their bodies only see arrays of this
process: on an engine's collection the same NumPy code runs on each row
block where it is.
"""

import contextlib
import functools
from typing import Protocol

import numpy as np
from sklearn.utils import gen_batches
from sklearn.utils.validation import check_is_fitted

from ._permutation import PermutedSpan
from ._store import LocalStore


def evenly_spaced_rows(n_samples, size):
    """``size`` row indices (all when there are fewer rows) spread evenly
    from the first row to the last: a sample that reaches every part of
    data sorted by any order, the same wherever the rows are."""
    size = min(n_samples, max(1, size))
    return np.unique(np.linspace(0, n_samples - 1, size).astype(np.intp))


class Minibatch(Protocol):
    """A minibatch of a row source; ``size`` is its number of samples."""

    size: int


class PendingMinibatch(Protocol):
    """A minibatch whose slicing and preparation may still be under way."""

    def result(self) -> Minibatch:
        """The minibatch, once it is ready."""


class RowSource(Protocol):
    """Training data that the online update reads in minibatches.

    Attributes
    ----------
    n_samples : int
        The number of rows.
    dtype : numpy.dtype
        The rows' floating point type.
    """

    n_samples: int
    dtype: object

    def initial_rows(self):
        """The rows the model is initialised from (``_initialize_online``)."""

    def minibatch(self, rows) -> PendingMinibatch:
        """Start cutting and preparing the minibatch of the rows ``rows``
        (an array of indices, a slice, or the ``PermutedSpan`` of a pass of
        ``fit``)."""

    def holding_natural(self, model):
        """A context in which lambda may be held where the rows are; the
        model's store is then the blocks that hold it, and the statistics
        are handed to them."""

    def stored_columns(self, shape, dtype, columns):
        """lambda's store made of its initial ``columns`` (batches of
        (first column, block), ``_initial_columns``): a
        :class:`~sklearn_svi._store.LocalStore`, or the blocks of rows that
        hold it where the rows are."""

    def statistic(self, minibatch, sample_weight=None, draw=0):
        """The minibatch statistic at the model's present state, a
        ``SparseStatistic`` (``_local_statistic``), or, while the source
        holds lambda, the handle of the pieces it handed to it."""

    def evaluation_score(self, minibatch):
        """The model's evaluation score of the minibatch."""

    def least_likely_samples(self, minibatch):
        """The samples of the minibatch that fit the model worst, by their
        place in it, worst first."""


class Engine(Protocol):
    """A place other than this process where the rows of data are."""

    def holds(self, X) -> bool:
        """Whether ``X`` is one of the engine's collections of rows."""

    def fits(self, X) -> bool:
        """Whether the engine runs the fit on the training data ``X``."""

    def row_source(self, model, X, reset, dtype) -> RowSource:
        """The training data ``X`` validated by ``model``, where they are."""

    def map_row_blocks(self, method, model, X, n_columns, dtype):
        """``method(model, block)`` on each row block of ``X``, as one
        collection of the results' rows (``n_columns`` of ``dtype`` each,
        None for one value)."""

    def sum_row_blocks(self, part, model, X):
        """The sum of ``part(model, block)`` over the row blocks of ``X``,
        added in the blocks' order, computed where the blocks are."""


_ENGINES = []


def register_engine(engine):
    """Make the collections of ``engine`` acceptable to every model."""
    _ENGINES.append(engine)


def _engine_holding(X):
    return next((engine for engine in _ENGINES if engine.holds(X)), None)


def training_rows(model, X, reset, dtype):
    """The training data ``X`` validated by ``model``, as a row source.

    In this process, unless a registered engine runs the fit (for the Dask
    engine: on a Dask collection, or inside
    ``joblib.parallel_backend("dask")``).
    """
    for engine in _ENGINES:
        if engine.fits(X):
            return engine.row_source(model, X, reset, dtype)
    return InMemoryRows(model, model._check_training_data(X, reset, dtype))


def rowwise(n_columns=None, dtype=None):
    """Declare a method ``method(self, X)`` whose result has a row per row
    of ``X``.

    On an engine's collection the method runs on each row block where it
    is, and returns the engine's collection of the results.

    Parameters
    ----------
    n_columns : callable, default=None
        ``n_columns(model)``, the number of values in each row of the
        result; None for one value per row.
    dtype : dtype, default=None
        The type of the result; None for that of the model's lambda.
    """

    def declare(method):
        @functools.wraps(method)
        def on_any_rows(self, X):
            engine = _engine_holding(X)
            if engine is None:
                return method(self, X)
            check_is_fitted(self)
            return engine.map_row_blocks(
                on_any_rows,
                self,
                X,
                None if n_columns is None else n_columns(self),
                self._natural_store.dtype if dtype is None else dtype,
            )

        return on_any_rows

    return declare


def features_out(model):
    """The number of features that ``model.transform`` gives."""
    return model._n_features_out


def features_in(model):
    """The number of features that ``model`` was fitted on."""
    return model.n_features_in_


def summed_over_rows(model, X, part, finish):
    """``finish(model, part(model, X))`` for a ``part`` that adds over rows.

    On an engine's collection the parts of the row blocks are computed where
    they are and added there: a score is a number wherever the rows are, as
    scikit-learn's model selection needs.
    """
    engine = _engine_holding(X)
    if engine is None:
        return finish(model, part(model, X))
    check_is_fitted(model)
    return finish(model, engine.sum_row_blocks(part, model, X))


class _Minibatch:
    """A minibatch of rows in this process, prepared for the model's local
    step; the rows themselves are cut from the data when first read.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The training data.
    rows : ndarray of int or slice
        The minibatch's rows of ``X``.
    prepared : object
        The rows prepared by the model (``_prepare_rows``).
    """

    def __init__(self, X, rows, prepared):
        self._X = X
        self._rows = rows
        self.prepared = prepared
        if isinstance(rows, slice):
            rows = range(X.shape[0])[rows]
        self.size = len(rows)

    @functools.cached_property
    def X_batch(self):
        """The minibatch's rows of the training data."""
        return self._X[self._rows]


def prefetched_minibatches(data, batch_size, order=None, first_row=0):
    """The minibatches of a pass over the ``RowSource`` ``data``, each with
    its span of the pass: consecutive rows from ``first_row`` on, of
    ``order`` (a ``KeyedPermutation``) when it is given. The next minibatch
    is asked for before the caller processes one, so that a source that
    prepares it elsewhere (a cluster's workers) does so meanwhile."""
    spans = [
        span
        for span in gen_batches(data.n_samples, batch_size)
        if span.start >= first_row
    ]

    def rows_of(span):
        return span if order is None else PermutedSpan(order, span)

    upcoming = data.minibatch(rows_of(spans[0])) if spans else None
    for index, span in enumerate(spans):
        minibatch = upcoming.result()
        if index + 1 < len(spans):
            upcoming = data.minibatch(rows_of(spans[index + 1]))
        yield span, minibatch


def local_store(shape, dtype, columns):
    """lambda's store in this process (:class:`~sklearn_svi._store.LocalStore`),
    made of its initial ``columns`` (:func:`assembled_columns`)."""
    return LocalStore(assembled_columns(shape, dtype, columns))


# The rows of a block that ``assembled_columns`` copies at a time: a block
# stored column by column (a transposed draw) is read in tiles that stay in
# the cache, which copies 10,000 x 1,000 values 2.5 times as fast as one
# copy of the whole block.
ASSEMBLED_TILE_ROWS = 256


def assembled_columns(shape, dtype, columns):
    """The array of ``shape`` and ``dtype`` made of ``columns``, batches of
    (first column, block) that cover it; a single C-ordered block of the
    type is the array."""
    array = None
    for first, block in columns:
        if (
            array is None
            and block.shape == tuple(shape)
            and block.dtype == dtype
            and block.flags.c_contiguous
        ):
            array = block
            continue
        if array is None:
            array = np.empty(shape, dtype=dtype)
        for start in range(0, block.shape[0], ASSEMBLED_TILE_ROWS):
            tile = slice(start, start + ASSEMBLED_TILE_ROWS)
            array[tile, first : first + block.shape[1]] = block[tile]
    return array


class _PreparedWhenAsked:
    """A minibatch of :class:`InMemoryRows` (a :class:`PendingMinibatch`),
    sliced and prepared on the calling thread when its result is asked for.

    The helper threads are left to the local step: a helper busy preparing
    the next minibatch made two-thread fits slower, not faster.
    """

    def __init__(self, source, rows):
        self._source = source
        self._rows = rows

    def result(self):
        return self._source._minibatch(self._rows)


class InMemoryRows:
    """Training data held in this process: a :class:`RowSource`.

    Parameters
    ----------
    model : OnlineUpdateMixin
        The model that is fitted.
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The validated data.
    """

    def __init__(self, model, X):
        self.model = model
        self.X = X

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def dtype(self):
        return self.X.dtype

    def initial_rows(self):
        return self.X

    def minibatch(self, rows):
        """The rows ``rows``, sliced and prepared when they are asked for."""
        return _PreparedWhenAsked(self, rows)

    def _minibatch(self, rows):
        if isinstance(rows, PermutedSpan):
            rows = rows.rows()
        return _Minibatch(self.X, rows, self.model._prepare_rows(self.X, rows))

    def holding_natural(self, model):
        """lambda stays in this process."""
        return contextlib.nullcontext()

    def stored_columns(self, shape, dtype, columns):
        return local_store(shape, dtype, columns)

    def statistic(self, minibatch, sample_weight=None, draw=0):
        return self.model._local_statistic(minibatch.prepared, sample_weight, draw)

    def evaluation_score(self, minibatch):
        return self.model._evaluation_score(minibatch.X_batch)

    def least_likely_samples(self, minibatch):
        return self.model._least_likely_samples(minibatch.X_batch)
