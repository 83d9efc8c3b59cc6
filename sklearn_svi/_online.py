"""The online update shared by every estimator of the package.

For each minibatch B_t, stochastic variational inference (Hoffman et al.
2013, Fig. 3) with the package's mechanisms does

    w_n     = 1 + eps_n - mean(eps)                annealing (Paisley et al.)
    S_t     = (1/|B_t|) sum_{n in B_t} w_n s_n    local step (the model)
    S~_t    = mean of the last L statistics        smoothing (Mandt & Blei 2014)
    lambda^ = eta + N S~_t                         noisy coordinate optimum
    rho_t   = step size                            schedule or filter (Houlsby & Blei)
    lambda  = project((1 - rho_t) lambda + rho_t lambda^)

The mixin owns this loop once. A model supplies only its initial lambda, the
local step, the prior eta, the projection onto its feasible set, and what to
show the user.

With a mean-field local step, lambda^ - lambda is a noisy natural gradient of
the ELBO. LDA's default collapsed local step makes the same loop SCVB0's
stochastic approximation of the CVB0 fixed point (Foulds et al. 2013), which
climbs no bound: the update is the same, what it converges to is not.
"""

import copy
import dataclasses
import logging
import time
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils._param_validation import Interval

from . import _cluster
from ._mechanisms import NoisyOptimum, SmoothingWindow
from ._threads import prefetch, sum_rows, thread_pool
from ._transaction import spare_like, transaction
from ._update_fast import step_toward_target
from ._validation import LISTED_ROWS, listed_rows

# Each update's local step is timed at the DEBUG level.
logger = logging.getLogger("sklearn_svi")

# Most step sizes kept in ``step_size_history_``.
STEP_SIZE_RECORD_CAPACITY = 10_000

# The attributes only the update reads, which a local step never needs.
_UPDATE_STATE = frozenset(
    {
        "_window",
        "_step_size",
        "_annealing",
        "_spare_natural",
        "random_state_",
        "evaluation_history_",
        "step_size_history_",
    }
)


def _prior_by_row(prior, n_rows, dtype):
    """eta as one value per row of lambda: a scalar prior is broadcast."""
    return np.broadcast_to(np.asarray(prior, dtype=dtype).reshape(-1), (n_rows,))


class _Minibatch:
    """A minibatch of rows in this process, and the same rows prepared for
    the model's local step."""

    def __init__(self, X_batch, prepared):
        self.X_batch = X_batch
        self.prepared = prepared

    @property
    def size(self):
        return self.X_batch.shape[0]


class InMemoryRows:
    """Training data held in this process, for the online update.

    The update asks its training data for minibatches and for their
    statistics; :class:`~sklearn_svi._cluster.ClusterRows` answers the same
    questions for data on a Dask cluster.

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

    def initialize(self, n_total, mechanisms):
        """Initialise the model from the data (``_initialize_online``)."""
        self.model._initialize_online(self.X, n_total, mechanisms)

    def minibatch(self, rows):
        """Start slicing and preparing the rows ``rows`` (an array or a
        slice) on a helper thread; the result's ``result()`` gives the
        minibatch."""
        return prefetch(self._minibatch, rows)

    def _minibatch(self, rows):
        X_batch = self.X[rows]
        return _Minibatch(X_batch, self.model._prepare_minibatch(X_batch))

    def statistic(self, minibatch, sample_weight=None, draw=0):
        """The minibatch statistic at the model's present state."""
        return self.model._local_statistic(minibatch.prepared, sample_weight, draw)

    def evaluation_score(self, minibatch):
        """The model's evaluation score of the minibatch."""
        return self.model._evaluation_score(minibatch.X_batch)

    def least_likely_samples(self, minibatch):
        """The samples of the minibatch that fit the model worst, by their
        place in it, worst first."""
        return self.model._least_likely_samples(minibatch.X_batch)


class OnlineUpdateMixin(metaclass=ABCMeta):
    """Drive ``fit`` and ``partial_fit`` through the shared SVI update.

    The abstract methods are the model's part of the contract: its data, its
    initial lambda, its local step, its prior and feasible set, its score and
    its mechanisms. The other hooks do nothing unless a model overrides them.
    lambda is an array of shape (n_params, n_components), kept in
    ``_natural``.

    The mixin reads the estimator's parameters ``batch_size``, ``max_iter``,
    ``total_samples``, ``evaluate_every``, ``n_jobs``, ``verbose``,
    ``random_state`` and, when it has one, ``warm_start``; everything about
    the mechanisms comes from ``_mechanism_settings``. A fit runs on one pool
    of ``n_jobs`` threads (:func:`~sklearn_svi._threads.thread_pool`), which
    the model's local step and every row-wise array operation of the update
    share.
    """

    _online_parameter_constraints = {
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "total_samples": [Interval(Real, 0, None, closed="neither")],
        "evaluate_every": [Integral],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    # -- the model's part ------------------------------------------------------

    @abstractmethod
    def _mechanism_settings(self):
        """The estimator's mechanisms, a ``_mechanisms.Mechanisms``."""

    @abstractmethod
    def _check_training_data(self, X, reset, dtype=None):
        """``X`` validated for an update; ``reset`` on the first one.

        The result has the floating point type ``dtype``, or for None that
        of ``X`` when it is float32 or float64, and float64 otherwise.
        """

    @abstractmethod
    def _initial_natural(self, X, n_total, random_state):
        """The initial lambda for a data set of ``n_total`` samples like ``X``."""

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
        number of samples: a shard of a larger minibatch divides by the
        minibatch's size, so that the shards' statistics add up to S_t.
        """

    @abstractmethod
    def _prior_natural(self):
        """eta, a scalar or an array shaped like lambda (or one column of it)."""

    @abstractmethod
    def _project_natural(self):
        """Make lambda feasible after an annealed update; return the number
        of coordinates changed."""

    @abstractmethod
    def _evaluation_score(self, X):
        """A score of ``X``, higher is better, for ``evaluation_history_``."""

    @abstractmethod
    def _fit_converged(self):
        """Whether ``fit`` can stop after the pass just made."""

    def _prepare_minibatch(self, X_batch):
        """The minibatch in the form ``_local_statistic`` takes: X_batch itself.

        It is prepared on a helper thread while the minibatch before it is
        processed, so it must only read ``X_batch``.
        """
        return X_batch

    def _rows_read(self, minibatch):
        """The rows of lambda that the local step of ``minibatch`` reads,
        sorted, or None for all of them."""
        return None

    def _local_copy(self, rows=None):
        """A copy of the model that holds what the local step needs.

        What only the update uses (the mechanisms, the histories, the random
        state) is left out, and lambda is cut to the rows ``rows`` when they
        are given; the copy keeps their indices in ``_natural_rows``. This
        is what travels to a worker of a cluster (:mod:`sklearn_svi._cluster`).
        """
        local = copy.copy(self)
        local.__dict__ = {
            name: value
            for name, value in self.__dict__.items()
            if name not in _UPDATE_STATE
        }
        if rows is not None:
            local._natural = self._natural[rows]
            local._natural_rows = rows
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

    def _after_fit(self, converged):
        """Hook run at the end of ``fit``."""

    # -- the update ------------------------------------------------------------

    def _renamed_parameter(self, name, old_name):
        """The value of ``name``, or of its deprecated spelling ``old_name``
        when the user set that one (with a FutureWarning)."""
        old_value = getattr(self, old_name)
        if isinstance(old_value, str) and old_value == "deprecated":
            return getattr(self, name)
        warnings.warn(
            f"The parameter '{old_name}' was renamed '{name}' in 0.1 and will be "
            f"removed in 0.3; use '{name}' instead.",
            FutureWarning,
            stacklevel=2,
        )
        return old_value

    def _learning_rate_settings(self, old_name):
        """The ``Mechanisms`` fields of the schedule: ``learning_rate`` (or
        its deprecated spelling ``old_name``), ``learning_offset`` and
        ``learning_decay``, for the estimators that have them."""
        return dict(
            learning_rate=self._renamed_parameter("learning_rate", old_name),
            learning_offset=self.learning_offset,
            learning_decay=self.learning_decay,
        )

    def _filter_settings(self):
        """The ``Mechanisms`` fields of the filters, for the estimators that
        have them."""
        return dict(
            prior_variance=self.prior_variance,
            prior_dof=self.prior_dof,
            bias_correction=self.bias_correction,
            min_step_size=self.min_step_size,
        )

    def __getstate__(self):
        # The spare array of lambda holds no information.
        state = super().__getstate__()
        state.pop("_spare_natural", None)
        return state

    def _checked_mechanisms(self):
        """The mechanism settings, checked against the other parameters."""
        settings = self._mechanism_settings()
        settings.check(self.batch_size)
        return settings

    def _initialize_online(self, X, n_total, mechanisms):
        """Reset lambda, the mechanisms, the counters and the random state."""
        self.random_state_ = check_random_state(self.random_state)
        self._natural = self._initial_natural(X, n_total, self.random_state_)
        shape, dtype = self._natural.shape, self._natural.dtype
        self._window = mechanisms.build_window(shape, dtype)
        self._step_size = mechanisms.build_step_size(shape, dtype)
        self._annealing = mechanisms.build_annealing()
        if self._annealing is not None:
            self.n_projected_ = 0
        self.n_batch_iter_ = 0
        self.n_iter_ = 0
        self.n_samples_seen_ = 0
        self.evaluation_history_ = {
            "n_batch_iter": [],
            "n_samples_seen": [],
            "score": [],
        }
        self.step_size_history_ = {"n_batch_iter": [], "step_size": []}
        self._step_size_record_every = 1

    def _transaction(self):
        """A context in which the model changes completely or not at all.

        Whatever the body raises, ``KeyboardInterrupt`` included, the model
        is put back as it was on entry (see :mod:`sklearn_svi._transaction`).
        """
        parts = [
            part
            for part in (
                getattr(self, "_window", None),
                getattr(self, "_step_size", None),
            )
            if part is not None
        ]
        lists = [
            values
            for history in (
                getattr(self, "evaluation_history_", {}),
                getattr(self, "step_size_history_", {}),
            )
            for values in history.values()
        ]
        return transaction(self, parts, getattr(self, "random_state_", None), lists)

    def _online_step(self, data, minibatch, n_total, X_val):
        """One SVI update from a minibatch of the training data ``data``.

        It runs in the caller's transaction: if anything fails or is
        interrupted, the model is left as after the previous update.
        """
        step = self.n_batch_iter_ + 1
        weights = None
        if self._annealing is not None:
            weights = self._annealing(minibatch.size, step, self.random_state_)
        started = time.perf_counter()
        statistic = data.statistic(minibatch, weights, draw=step)
        if weights is not None and weights.min() < 0:
            statistic = dataclasses.replace(statistic, negatively_weighted=True)
        logger.debug(
            "update %d: local step of %d samples in %.6f s",
            step,
            minibatch.size,
            time.perf_counter() - started,
        )
        self._window.push(statistic)
        self.n_batch_iter_ = step
        self.n_samples_seen_ += minibatch.size

        # lambda^ = eta + N S~_t (Mandt & Blei 2014, Alg. 1; Hoffman et al.
        # 2013, eq. 25 when L = 1), never formed as an array: the filters and
        # the update compute it on the fly.
        target = self._noisy_optimum(self._window, n_total)
        rho = self._step_size(self.n_batch_iter_, target, self._natural)
        self._move_natural(target, rho)
        if self._window.negatively_weighted:
            # Negative weights can take lambda^ out of the feasible set;
            # without them every iterate stays in it, as in plain SVI.
            self.n_projected_ += self._project_natural()
        self._after_update(rho, statistic)

        self._record_step_size(rho)
        if self.evaluate_every > 0 and self.n_batch_iter_ % self.evaluate_every == 0:
            self._record_evaluation(
                data.evaluation_score(minibatch)
                if X_val is None
                else self._evaluation_score(X_val)
            )

    def _move_natural(self, target, rho):
        """lambda = (1 - rho) lambda + rho lambda^, refused if not finite.

        One pass over each row block writes the new lambda to a spare array
        and sums its rows; the new lambda replaces the old one only when
        every sum is finite, so an overflow or a NaN never reaches the model.
        """
        updated = spare_like(self._natural, getattr(self, "_spare_natural", None))
        row_sums = sum_rows(
            lambda span: step_toward_target(
                self._natural,
                updated,
                *target.restricted_to(span),
                rho,
                span.start,
                span.stop,
            ),
            len(self._natural),
        )
        if not np.all(np.isfinite(row_sums)):
            raise FloatingPointError(
                "The update from this minibatch would make the global "
                f"parameters non-finite in {self._natural.dtype}: the data's "
                "values are too large for the model's floating point type."
            )
        self._spare_natural, self._natural = self._natural, updated
        self._natural_updated(row_sums)

    def _noisy_optimum(self, window, n_total):
        """lambda^ = eta + N / (statistics in ``window``) * ``window.sum``."""
        prior = _prior_by_row(
            self._prior_natural(), len(self._natural), self._natural.dtype
        )
        return NoisyOptimum(window.sum, n_total / window.count, prior)

    def _start_step_size(self, data, n_total):
        """Start the step size's noise estimates at the initial lambda.

        Its ``monte_carlo_batches`` minibatches are bootstrap samples of
        ``batch_size`` rows of the training data ``data`` (fewer if it is
        smaller), whose spread is that of minibatches drawn from the data
        even when it holds a single minibatch.
        """
        size = min(self.batch_size, data.n_samples)
        window = SmoothingWindow(1, self._natural.shape, self._natural.dtype)

        def targets():
            for draw in range(1, self._step_size.monte_carlo_batches + 1):
                rows = self.random_state_.randint(data.n_samples, size=size)
                minibatch = data.minibatch(rows).result()
                window.push(data.statistic(minibatch, draw=-draw))
                yield self._noisy_optimum(window, n_total)

        self._step_size.start(targets(), self._natural)

    def _record_step_size(self, rho):
        """Keep rho in ``step_size_history_``, thinned to a bounded size.

        Every update is kept until the record holds
        ``STEP_SIZE_RECORD_CAPACITY`` values; then every second one is
        dropped and only every second update is kept from there on, and so
        on, so that the record always spans the whole run.
        """
        if self.n_batch_iter_ % self._step_size_record_every:
            return
        history = self.step_size_history_
        history["n_batch_iter"].append(self.n_batch_iter_)
        history["step_size"].append(float(rho))
        if len(history["step_size"]) == STEP_SIZE_RECORD_CAPACITY:
            # New lists, which a rollback can leave behind for the old ones.
            self.step_size_history_ = {
                name: values[1::2] for name, values in history.items()
            }
            self._step_size_record_every *= 2

    def _record_evaluation(self, score):
        history = self.evaluation_history_
        history["n_batch_iter"].append(self.n_batch_iter_)
        history["n_samples_seen"].append(self.n_samples_seen_)
        history["score"].append(float(score))
        if self.verbose:
            print(
                f"[{type(self).__name__}] update {self.n_batch_iter_}: "
                f"evaluation score {history['score'][-1]:.5f}"
            )

    def _run_pass(self, data, n_total, X_val, order=None):
        """Run the SVI update on consecutive minibatches of the training
        data ``data`` (``InMemoryRows`` or a cluster's ``ClusterRows``)."""
        # A filter's start belongs to the first update, and is undone with it.
        start_step_size = (
            self.n_batch_iter_ == 0 and self._step_size.monte_carlo_batches > 0
        )
        spans = gen_batches(data.n_samples, self.batch_size)

        def rows_of(span):
            return span if order is None else order[span]

        # Each minibatch is sliced and prepared while the one before it is
        # processed.
        span = next(spans)
        upcoming = data.minibatch(rows_of(span))
        first = True
        while span is not None:
            minibatch = upcoming.result()
            following = next(spans, None)
            if following is not None:
                upcoming = data.minibatch(rows_of(following))
            try:
                with self._transaction():
                    if first and start_step_size:
                        self._start_step_size(data, n_total)
                    self._online_step(data, minibatch, n_total, X_val)
            except (ValueError, FloatingPointError) as error:
                samples = np.arange(data.n_samples)[rows_of(span)]
                raise self._refused_update(
                    error, data.least_likely_samples(minibatch), samples
                ) from error
            span, first = following, False
        with self._transaction():
            self.n_iter_ += 1
            self._after_pass()

    def _refused_update(self, error, least_likely, samples):
        """The error that says why the update from a minibatch was refused.

        Called after the update was undone. ``samples`` numbers the
        minibatch's samples in the caller's ``X``, and ``least_likely``
        lists those that fit the model worst by their place in the
        minibatch.
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
            f"was undone; the model is as after update {self.n_batch_iter_}. "
            f"{error}{hint}"
        )

    def _training_rows(self, X, reset, dtype):
        """The training data ``X`` validated, where its local steps run.

        In this process for data in memory; on a Dask cluster for a Dask
        collection, or for data in memory inside
        ``joblib.parallel_backend("dask")`` (:mod:`sklearn_svi._cluster`).
        """
        if _cluster.is_dask_collection(X) or _cluster.active_client() is not None:
            return _cluster.ClusterRows.from_data(self, X, reset, dtype)
        return InMemoryRows(self, self._check_training_data(X, reset, dtype))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, X_val=None):
        """Fit the model with ``max_iter`` passes of SVI over shuffled ``X``.

        Each pass visits ``X`` in a new random order, in minibatches of
        ``batch_size`` samples, with the number of samples N equal to
        ``X.shape[0]``. A Dask collection of row blocks is fitted where its
        blocks are, on the cluster; see :ref:`cluster`.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape \
                (n_samples, n_features)
            Training data.
        y : Ignored
            Not used, present for API consistency by convention.
        X_val : {array-like, sparse matrix} of shape (n_val, n_features), \
                default=None
            Data scored every ``evaluate_every`` updates. When None, the
            minibatch just used for the update is scored.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        mechanisms = self._checked_mechanisms()
        warm = getattr(self, "warm_start", False) and hasattr(self, "_natural")
        data = self._training_rows(
            X, reset=not warm, dtype=self._natural.dtype if warm else None
        )
        X_val = self._check_evaluation_data(X_val, data.dtype)
        n_samples = data.n_samples
        converged = False
        with thread_pool(self.n_jobs):
            if not warm:
                with self._transaction():
                    data.initialize(n_samples, mechanisms)
            for _ in range(self.max_iter):
                order = self.random_state_.permutation(n_samples)
                self._run_pass(data, n_samples, X_val, order=order)
                if self.verbose:
                    print(
                        f"[{type(self).__name__}] pass {self.n_iter_} "
                        f"of {self.max_iter}"
                    )
                converged = self._fit_converged()
                if converged:
                    break
        self._after_fit(converged)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, *, X_val=None):
        """Update the model with one pass of SVI over ``X``, in order.

        The number of samples N of the update is ``total_samples``. The first
        call initialises the model; later calls continue from its state.
        Invalid input raises before anything changes, so a failed call leaves
        the model as it was. A Dask collection of row blocks is fitted where
        its blocks are, on the cluster; see :ref:`cluster`.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape \
                (n_samples, n_features)
            Training data.
        y : Ignored
            Not used, present for API consistency by convention.
        X_val : {array-like, sparse matrix} of shape (n_val, n_features), \
                default=None
            Data scored every ``evaluate_every`` updates. When None, the
            minibatch just used for the update is scored.

        Returns
        -------
        self : object
            The updated estimator.
        """
        mechanisms = self._checked_mechanisms()
        first_call = not hasattr(self, "_natural")
        data = self._training_rows(
            X, reset=first_call, dtype=None if first_call else self._natural.dtype
        )
        X_val = self._check_evaluation_data(X_val, data.dtype)
        with thread_pool(self.n_jobs):
            if first_call:
                with self._transaction():
                    data.initialize(self.total_samples, mechanisms)
            self._run_pass(data, self.total_samples, X_val)
        return self

    def _check_evaluation_data(self, X_val, dtype):
        if X_val is None:
            return None
        return self._check_training_data(X_val, reset=False, dtype=dtype)
