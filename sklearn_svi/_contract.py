"""The model's part of the online update: the hooks every model fills in.

:class:`~sklearn_svi._online.OnlineUpdateMixin` runs the update and asks the
model, through the hooks of :class:`OnlineModel`, for what depends on it:
its data checks, its initial lambda, its local step, its prior and feasible
set and its score. The abstract hooks are the contract; the others do
nothing unless a model overrides them. (Its mechanisms come from its
parameters, :mod:`sklearn_svi._parameters`.)
"""

from abc import ABCMeta, abstractmethod

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._store import LocalStore


class OnlineModel(metaclass=ABCMeta):
    """The hooks through which a model takes part in the online update.

    lambda is an array of shape (n_params, n_components), read as
    ``_natural`` and kept in its store, ``_natural_store``
    (:mod:`sklearn_svi._store`); the update's own state is
    ``_update_state``.
    """

    # Minibatches' worth of rows that ``_initialize_online`` reads when the
    # data are not in this process (all of them are read when they are).
    _initial_sample_batches = 3

    @abstractmethod
    def _check_training_data(self, X, reset, dtype=None):
        """``X`` validated for an update; ``reset`` on the first one.

        The result has the floating point type ``dtype``, or for None that
        of ``X`` when it is float32 or float64, and float64 otherwise.
        """

    @abstractmethod
    def _initial_natural(self, X, n_total, random_state):
        """The initial lambda for a data set of ``n_total`` samples like ``X``."""

    def _initial_columns(self, X, n_total, random_state):
        """The initial lambda by batches of columns, for a start that never
        holds all of it in one place: its shape, its type and an iterator of
        (first column, block of columns), which draw from ``random_state``
        as ``_initial_natural`` does. By default, one block: all of it."""
        natural = self._initial_natural(X, n_total, random_state)
        return natural.shape, natural.dtype, iter([(0, natural)])

    @abstractmethod
    def _local_statistic(self, minibatch, sample_weight=None, draw=0, n_batch=None):
        """The mean statistic S_t of a minibatch, a ``SparseStatistic``.

        ``minibatch`` is what ``_prepare_minibatch`` returned; each sample's
        statistic is multiplied by its weight in ``sample_weight`` (None for
        ones). ``draw`` numbers the minibatch (the update number t, or -j for
        the j-th minibatch of a filter's start): a local step that draws
        random numbers takes them from a stream of that number alone, and
        each sample's part of it depends on that sample alone. The sum of
        the samples' statistics is divided by ``n_batch``, by default the
        number of samples: a part of a larger minibatch divides by the
        minibatch's size, so that the parts' statistics add up to S_t.
        """

    @abstractmethod
    def _prior_natural(self):
        """eta, a scalar or an array shaped like lambda (or one column of it)."""

    @abstractmethod
    def _projection(self):
        """The projection onto lambda's feasible set after an annealed
        update: a function ``projection(natural, prior)`` that makes an
        array of lambda's rows feasible in place and returns the number of
        values changed, ``prior`` being eta of those rows in the form of the
        compiled passes. A model that keeps lambda scaled (``_scales_rows``)
        projects row by row, so that blocks of rows can apply it apart."""

    @abstractmethod
    def _evaluation_score(self, X):
        """A score of ``X``, higher is better, for ``evaluation_history_``."""

    @abstractmethod
    def _fit_converged(self):
        """Whether ``fit`` can stop after the pass just made."""

    def _check_fitted_data(self, X):
        """``X`` validated for a fitted model, in the type of lambda."""
        check_is_fitted(self)
        return self._check_training_data(
            X, reset=False, dtype=self._natural_store.dtype
        )

    def _prepare_minibatch(self, X_batch):
        """The minibatch in the form ``_local_statistic`` takes: X_batch itself.

        On a cluster it runs on the worker that holds the rows while the
        client processes the minibatch before it, so it must only read
        ``X_batch``.
        """
        return X_batch

    def _prepare_rows(self, X, rows):
        """The rows ``rows`` (an array of indices or a slice) of the
        validated training data ``X``, prepared as by
        ``_prepare_minibatch``; a model may cut them from ``X`` itself,
        without forming the minibatch.
        """
        return self._prepare_minibatch(X[rows])

    def _rows_read(self, minibatch):
        """The rows of lambda that the local step of ``minibatch`` reads,
        sorted, or None for all of them."""
        return None

    def _learns_priors(self):
        """Whether the updates learn a prior from what their statistics
        carry besides lambda's rows (``sample_mean``) or from all of
        lambda."""
        return False

    def _local_copy(self, rows=None):
        """A copy of the model that holds what the local step needs.

        What only the update uses (its ``UpdateState``) is left out, and
        lambda is cut to the rows ``rows`` when they are given (a store of
        those rows, which knows their indices). This is what travels to a
        worker of a cluster.
        """
        # A new instance of the class with a copy of the attributes: a copy
        # by the pickling protocol would write out lambda held elsewhere.
        local = type(self).__new__(type(self))
        local.__dict__ = dict(self.__dict__)
        del local.__dict__["_update_state"]
        if rows is None:
            local._natural = self._natural
        else:
            block, block_rows = self._natural_store.rows_block(rows)
            if block_rows is None:
                block = block[rows]
            local._natural_store = LocalStore(block, rows=rows)
        return local

    def _least_likely_samples(self, X_batch):
        """Indices of the samples of ``X_batch`` that fit the model worst,
        worst first, named when an update from them is refused."""
        return np.empty(0, dtype=np.intp)

    def _natural_updated(self, row_sums):
        """Hook run after lambda moved, with the float64 sums of its rows,
        which the update computes as it writes them."""

    def _after_update(self, rho, statistic):
        """Hook run after each update of lambda, whose step size was ``rho``
        and whose minibatch statistic was ``statistic``."""

    def _after_pass(self):
        """Hook run after each pass of ``fit`` and each ``partial_fit``."""

    def _after_fit(self, converged, stopped):
        """Hook run at the end of ``fit``; ``stopped`` when the ``callback``
        ended it."""
