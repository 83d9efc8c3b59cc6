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
the ELBO. LDA's collapsed local steps make the same loop SCVB0's stochastic
approximation of the CVB0 fixed point (Foulds et al. 2013) or, with sampled
documents, of the topics whose documents' posterior expected counts,
estimated by Gibbs sweeps (Mimno et al. 2012), reproduce them. Neither climbs
a bound: the update is the same, what it converges to is not.
"""

import dataclasses
import logging
import time

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state

from ._contract import OnlineModel
from ._mechanisms import NoisyOptimum
from ._parameters import OnlineParameters
from ._persistence import VersionedState
from ._progress import report, tell
from ._sources import local_store, prefetched_minibatches, training_rows
from ._store import LocalStore, compiled_prior
from ._threads import thread_pool
from ._transaction import transaction
from ._update_state import UpdateRecords, UpdateState
from ._validation import refused_update

# Each update's local step is timed at the DEBUG level.
logger = logging.getLogger("sklearn_svi")


class OnlineUpdateMixin(OnlineModel, OnlineParameters, UpdateRecords, VersionedState):
    """Drive ``fit`` and ``partial_fit`` through the shared SVI update.

    The model supplies its part through the hooks of :class:`OnlineModel`;
    a model that overrides ``_initialize_online`` calls it. lambda, of shape
    (n_params, n_components), is read as ``_natural`` and kept in its store,
    ``_natural_store`` (:mod:`sklearn_svi._store`), through which alone the
    update moves it; everything else the update changes is the fit's
    ``UpdateState``.

    The mixin reads the estimator's parameters (:class:`OnlineParameters`)
    ``batch_size``, ``max_iter``, ``total_samples``, ``evaluate_every``,
    ``warm_start``, ``n_jobs``, ``verbose`` and ``random_state``; everything
    about the mechanisms comes from ``_mechanism_settings``. A fit runs on
    one pool of ``n_jobs`` threads (:func:`~sklearn_svi._threads.thread_pool`),
    which the model's local step and every row-wise array operation of the
    update share.
    """

    # Whether an update of plain SVI may write only the rows of its
    # statistic, keeping lambda - eta on the others scaled (``ScaledStore``):
    # for models whose minibatches touch few rows of lambda.
    _scales_rows = False

    # Whether lambda's columns are alike before the data are seen (LDA's
    # topics, started at random), so that a filter may estimate its moments
    # from some of them (``observed_components="auto"``).
    _exchangeable_columns = False

    @property
    def _natural(self):
        """lambda, of shape (n_params, n_components), read-only: the one
        reader of lambda's store (``_natural_store``)."""
        return self._natural_store.array()

    @_natural.setter
    def _natural(self, value):
        # The one writer: a new lambda, in a new store of this process.
        self._natural_store = LocalStore(value)

    def _initialize_online(self, X, n_total, mechanisms, store=local_store):
        """Reset lambda, the update's state and the counters.

        A model that overrides it calls it; ``X`` holds the rows the model
        starts from (all of the data in memory, a sample of a cluster's);
        ``store`` makes lambda's store from its initial columns (the
        training data's ``stored_columns``: a cluster's workers may hold
        them).
        """
        random_state = check_random_state(self.random_state)
        self._natural_store = store(*self._initial_columns(X, n_total, random_state))
        store = self._natural_store
        self._update_state = UpdateState.build(
            mechanisms,
            store.shape,
            store.dtype,
            random_state,
            exchangeable_columns=self._exchangeable_columns,
        )
        if self._update_state.annealing is not None:
            self.n_projected_ = 0
        self.n_batch_iter_ = 0
        self.n_iter_ = 0
        self.n_samples_seen_ = 0

    def __getstate__(self):
        # lambda held by a cluster's workers is saved as one array.
        state = super().__getstate__()
        if "_natural_store" in state:
            state = {**state, "_natural_store": state["_natural_store"].gathered()}
        return state

    def _transaction(self):
        """A context in which the model changes completely or not at all.

        Whatever the body raises, ``KeyboardInterrupt`` included, the model
        is put back as it was on entry (see :mod:`sklearn_svi._transaction`).
        """
        parts = (vars(self).get(name) for name in ("_update_state", "_natural_store"))
        return transaction(self, [part for part in parts if part is not None])

    def _online_step(self, data, minibatch, n_total, X_val):
        """One SVI update from a minibatch of the training data ``data``.

        It runs in the caller's transaction: if anything fails or is
        interrupted, the model is left as after the previous update.
        """
        state = self._update_state
        step = self.n_batch_iter_ + 1
        weights = None
        if state.annealing is not None:
            weights = state.annealing(minibatch.size, step, state.random_state)
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
        self.n_batch_iter_ = step
        self.n_samples_seen_ += minibatch.size
        rho = self._update_natural(statistic, n_total)
        self._after_update(rho, statistic)

        state.record_step_size(self.n_batch_iter_, rho)
        score = None
        if self.evaluate_every > 0 and self.n_batch_iter_ % self.evaluate_every == 0:
            score = (
                data.evaluation_score(minibatch)
                if X_val is None
                else self._evaluation_score(X_val)
            )
            state.record_evaluation(self.n_batch_iter_, self.n_samples_seen_, score)
            tell(
                self,
                f"update {self.n_batch_iter_}: evaluation score {float(score):.5f}",
            )
        return rho, score

    def _update_natural(self, statistic, n_total):
        """Push the statistic into the window and move lambda toward the
        noisy optimum by the step size's rho; return rho."""
        state = self._update_state
        store = self._natural_store
        state.window.push(statistic)
        # lambda^ = eta + N S~_t (Mandt & Blei 2014, Alg. 1; Hoffman et al.
        # 2013, eq. 25 when L = 1), never formed as an array: the filters and
        # the update compute it on the fly.
        target = NoisyOptimum.of_window(state.window, n_total, self._compiled_prior())
        rho = state.step_size(self.n_batch_iter_, target, store.stored, store.scale)
        # lambda = (1 - rho) lambda + rho lambda^ (Hoffman et al. 2013, eq. 26),
        # refused if not finite.
        if self._may_scale_rows(target, rho):
            row_sums = store.step_rows(target.total, target.scale, rho, target.prior)
        else:
            row_sums = store.step_all(target, rho)
        self._natural_updated(row_sums)
        if state.window.negatively_weighted:
            # Negative weights can take lambda^ out of the feasible set;
            # without them every iterate stays in it, as in plain SVI.
            projected = store.project(self._projection(), target.prior)
            if projected:
                self._natural_updated(store.totals())
            self.n_projected_ += projected
        return rho

    def _may_scale_rows(self, target, rho):
        """Whether this update may write only the rows of its statistic:
        the model allows it, the update only shrinks lambda - eta on the
        rows that its statistic does not list (a statistic that lists some
        rows only, no negative weights, rho below 1)."""
        return (
            self._scales_rows
            and not target.negatively_weighted
            and rho < 1.0
            and not target.lists_all(len(self._natural_store))
        )

    def _compiled_prior(self):
        """eta in the form the compiled passes read."""
        store = self._natural_store
        return compiled_prior(self._prior_natural(), store.shape, store.dtype)

    def _start_step_size(self, data, n_total):
        """Start the step size's noise estimates at the initial lambda.

        Its ``monte_carlo_batches`` minibatches are bootstrap samples of
        ``batch_size`` rows of the training data ``data`` (fewer if it is
        smaller), whose spread is that of minibatches drawn from the data
        even when it holds a single minibatch.
        """
        size = min(self.batch_size, data.n_samples)
        state = self._update_state
        store = self._natural_store

        def targets():
            for draw in range(1, state.step_size.monte_carlo_batches + 1):
                rows = state.random_state.randint(data.n_samples, size=size)
                minibatch = data.minibatch(rows).result()
                statistic = data.statistic(minibatch, draw=-draw)
                yield NoisyOptimum(
                    statistic.in_type(store.dtype), n_total, self._compiled_prior()
                )

        # lambda is not scaled before the first update.
        state.step_size.start(targets(), store.stored)

    def _run_pass(self, data, n_total, X_val, started, order=None):
        """Run the SVI update on consecutive minibatches of the training
        data ``data``, a ``RowSource``; ``started`` is when the call began
        (``time.perf_counter``). With the ``order`` of a pass of ``fit``, the
        pass starts at the update state's ``fit_position`` and records there
        how far it went after each update. Returns whether the ``callback``
        stopped the pass."""
        state = self._update_state
        # A filter's start belongs to the first update, and is undone with it.
        start_step_size = (
            self.n_batch_iter_ == 0 and state.step_size.monte_carlo_batches > 0
        )
        first_row = 0 if order is None else state.fit_position["next_row"]
        minibatches = prefetched_minibatches(data, self.batch_size, order, first_row)
        stopped = False
        for index, (span, minibatch) in enumerate(minibatches):
            try:
                with self._transaction():
                    if index == 0 and start_step_size:
                        self._start_step_size(data, n_total)
                    rho, score = self._online_step(data, minibatch, n_total, X_val)
                    state.advance_fit(span.stop)
            except (ValueError, FloatingPointError) as error:
                samples = np.arange(data.n_samples)[
                    span if order is None else order[span]
                ]
                raise refused_update(
                    error,
                    data.least_likely_samples(minibatch),
                    samples,
                    self.n_batch_iter_,
                ) from error
            stopped = report(self, rho, score, started)
            if stopped:
                break
        with self._transaction():
            self.n_iter_ += 1
            state.end_fit_pass()
            self._after_pass()
        return stopped

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
        started = time.perf_counter()
        warm = self.warm_start and hasattr(self, "_natural_store")
        data, X_val = self._training_data(X, X_val, new_fit=not warm)
        n_samples = data.n_samples
        converged = stopped = False
        with thread_pool(self.n_jobs):
            with self._transaction():
                if not warm:
                    self._start_fit(data, n_samples)
                self._update_state.resume_fit(n_samples, type(self).__name__)
            with data.holding_natural(self):
                while self._update_state.fit_position["pass_index"] < self.max_iter:
                    with self._transaction():
                        order = self._update_state.pass_order()
                    stopped = self._run_pass(data, n_samples, X_val, started, order)
                    tell(self, f"pass {self.n_iter_} of {self.max_iter}")
                    converged = self._fit_converged()
                    if converged or stopped:
                        break
        self._update_state.fit_position = None
        self._after_fit(converged, stopped)
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
        started = time.perf_counter()
        first_call = not hasattr(self, "_natural_store")
        data, X_val = self._training_data(X, X_val, new_fit=first_call)
        with thread_pool(self.n_jobs):
            if first_call:
                with self._transaction():
                    self._start_fit(data, self.total_samples)
            with data.holding_natural(self):
                self._run_pass(data, self.total_samples, X_val, started)
        return self

    def _training_data(self, X, X_val, new_fit):
        """The training data's ``RowSource`` and the checked ``X_val``, in
        lambda's type unless the call starts a new fit; the mechanisms'
        settings are checked first."""
        self._checked_mechanisms()
        data = training_rows(
            self,
            X,
            reset=new_fit,
            dtype=None if new_fit else self._natural_store.dtype,
        )
        return data, self._check_evaluation_data(X_val, data.dtype)

    def _start_fit(self, data, n_total):
        """Initialise the model from the training data ``data``, whose
        source keeps lambda's initial columns where it holds the rows."""
        self._initialize_online(
            data.initial_rows(),
            n_total,
            self._checked_mechanisms(),
            store=data.stored_columns,
        )

    def _check_evaluation_data(self, X_val, dtype):
        if X_val is None:
            return None
        return self._check_training_data(X_val, reset=False, dtype=dtype)
