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
from typing import NamedTuple

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state, gen_batches

from ._contract import OnlineModel
from ._mechanisms import NoisyOptimum
from ._parameters import OnlineParameters
from ._permutation import KeyedPermutation, PermutedSpan
from ._persistence import VersionedState
from ._sources import local_store, training_rows
from ._store import LocalStore
from ._threads import thread_pool
from ._transaction import transaction
from ._update_state import UpdateState
from ._validation import refused_update

# Each update's local step is timed at the DEBUG level.
logger = logging.getLogger("sklearn_svi")


class Progress(NamedTuple):
    """What the estimators' ``callback`` receives after each update.

    Attributes
    ----------
    n_batch_iter : int
        Number of updates made.
    n_samples_seen : int
        Number of samples the updates used.
    n_iter : int
        Number of passes completed.
    step_size : float
        rho of the update.
    score : float or None
        The evaluation score recorded after the update (see
        ``evaluate_every``), None when it was not evaluated.
    elapsed : float
        Seconds since ``fit`` or ``partial_fit`` was called.
    """

    n_batch_iter: int
    n_samples_seen: int
    n_iter: int
    step_size: float
    score: float | None
    elapsed: float


def _prior_of_entries(prior, shape, dtype):
    """eta in the form the compiled passes read: an array of shape
    (n_params, 1), a broadcast view for a scalar, or, for a prior of every
    entry of lambda, a C-contiguous array of lambda's ``shape``."""
    prior = np.asarray(prior, dtype=dtype)
    if prior.ndim == 2:
        return np.ascontiguousarray(prior)
    return np.broadcast_to(prior.reshape(-1, 1), (shape[0], 1))


class OnlineUpdateMixin(OnlineModel, OnlineParameters, VersionedState):
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

    def _checked_mechanisms(self):
        """The mechanism settings, checked against the other parameters."""
        settings = self._mechanism_settings()
        settings.check(self.batch_size)
        return settings

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

    @property
    def random_state_(self):
        """The random state of the fit, drawn from as it goes on."""
        return self._update_state.random_state

    @property
    def evaluation_history_(self):
        """The evaluation scores: ``n_batch_iter``, ``n_samples_seen`` and
        ``score``, one entry per evaluation."""
        return self._update_state.evaluation_history

    @property
    def step_size_history_(self):
        """The step sizes: ``n_batch_iter`` and ``step_size``, thinned to a
        bounded record that spans the whole run."""
        return self._update_state.step_size_history

    def _transaction(self):
        """A context in which the model changes completely or not at all.

        Whatever the body raises, ``KeyboardInterrupt`` included, the model
        is put back as it was on entry (see :mod:`sklearn_svi._transaction`).
        """
        parts = [
            part
            for part in (
                getattr(self, "_update_state", None),
                self.__dict__.get("_natural_store"),
            )
            if part is not None
        ]
        return transaction(self, parts)

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
            self._record_evaluation(score)
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
        target = self._noisy_optimum(state.window, n_total)
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
            and not target.total.lists_all(len(self._natural_store))
        )

    def _noisy_optimum(self, window, n_total):
        """lambda^ = eta + N / (statistics in ``window``) * ``window.sum``."""
        return NoisyOptimum(
            window.sum,
            n_total / window.count,
            self._compiled_prior(),
            window.negatively_weighted,
        )

    def _compiled_prior(self):
        """eta in the form the compiled passes read (``_prior_of_entries``)."""
        store = self._natural_store
        return _prior_of_entries(self._prior_natural(), store.shape, store.dtype)

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

    def _record_evaluation(self, score):
        self._update_state.record_evaluation(
            self.n_batch_iter_, self.n_samples_seen_, score
        )
        if self.verbose:
            print(
                f"[{type(self).__name__}] update {self.n_batch_iter_}: "
                f"evaluation score {float(score):.5f}"
            )

    def _run_pass(self, data, n_total, X_val, started, order=None, position=None):
        """Run the SVI update on consecutive minibatches of the training
        data ``data``, a ``RowSource``; ``started`` is when the call began
        (``time.perf_counter``). ``position`` is the ``fit_position`` of a
        pass of ``fit``: the pass starts at its ``"next_row"`` of ``order``
        and records there how far it went after each update. Returns whether
        the ``callback`` stopped the pass."""
        # A filter's start belongs to the first update, and is undone with it.
        start_step_size = (
            self.n_batch_iter_ == 0
            and self._update_state.step_size.monte_carlo_batches > 0
        )
        first_row = 0 if position is None else position["next_row"]
        spans = (
            span
            for span in gen_batches(data.n_samples, self.batch_size)
            if span.start >= first_row
        )

        def rows_of(span):
            return span if order is None else PermutedSpan(order, span)

        # Each minibatch is sliced and prepared while the one before it is
        # processed.
        span = next(spans, None)
        if span is not None:
            upcoming = data.minibatch(rows_of(span))
        first, stopped = True, False
        while span is not None and not stopped:
            minibatch = upcoming.result()
            following = next(spans, None)
            if following is not None:
                upcoming = data.minibatch(rows_of(following))
            try:
                with self._transaction():
                    if first and start_step_size:
                        self._start_step_size(data, n_total)
                    rho, score = self._online_step(data, minibatch, n_total, X_val)
                    if position is not None:
                        self._update_state.fit_position = dict(
                            position, next_row=span.stop
                        )
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
            span, first = following, False
            stopped = self._report(rho, score, started)
        with self._transaction():
            self.n_iter_ += 1
            if position is not None:
                self._update_state.fit_position = dict(
                    position,
                    pass_index=position["pass_index"] + 1,
                    next_row=0,
                    order_key=None,
                )
            self._after_pass()
        return stopped

    def _pass_order(self, position):
        """The order of the pass at ``position``: a permutation of the
        samples given by a key drawn from the fit's random state when the
        pass starts, and recorded in the position."""
        if position["order_key"] is None:
            key = int(self._update_state.random_state.randint(2**63))
            position = dict(position, order_key=key)
            self._update_state.fit_position = position
        return KeyedPermutation(position["n_samples"], position["order_key"]), position

    def _resumed_position(self, n_samples):
        """Where a warm ``fit`` starts: the position of a fit that did not
        end (saved by a ``Checkpoint`` or left by an error), or a new one."""
        position = self._update_state.fit_position
        if position is None:
            return dict(pass_index=0, next_row=0, n_samples=n_samples, order_key=None)
        if position["n_samples"] != n_samples:
            raise ValueError(
                f"This {type(self).__name__} holds a fit that stopped in pass "
                f"{position['pass_index'] + 1} over {position['n_samples']} "
                f"samples; X has {n_samples}. Resume it with the same X, or "
                "set warm_start=False to start a new fit."
            )
        return position

    def _report(self, rho, score, started):
        """Call the ``callback`` with the progress of the update just made;
        whether it asks to stop."""
        if self.callback is None:
            return False
        progress = Progress(
            self.n_batch_iter_,
            self.n_samples_seen_,
            self.n_iter_,
            float(rho),
            None if score is None else float(score),
            time.perf_counter() - started,
        )
        return bool(self.callback(self, progress))

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
        mechanisms = self._checked_mechanisms()
        warm = self.warm_start and hasattr(self, "_natural_store")
        data = training_rows(
            self,
            X,
            reset=not warm,
            dtype=self._natural_store.dtype if warm else None,
        )
        X_val = self._check_evaluation_data(X_val, data.dtype)
        n_samples = data.n_samples
        converged = stopped = False
        with thread_pool(self.n_jobs):
            if not warm:
                with self._transaction():
                    self._initialize_online(
                        data.initial_rows(),
                        n_samples,
                        mechanisms,
                        store=data.stored_columns,
                    )
            position = self._resumed_position(n_samples)
            with data.holding_natural(self):
                while position["pass_index"] < self.max_iter:
                    order, position = self._pass_order(position)
                    stopped = self._run_pass(
                        data, n_samples, X_val, started, order=order, position=position
                    )
                    position = self._update_state.fit_position
                    if self.verbose:
                        print(
                            f"[{type(self).__name__}] pass {self.n_iter_} "
                            f"of {self.max_iter}"
                        )
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
        mechanisms = self._checked_mechanisms()
        first_call = not hasattr(self, "_natural_store")
        data = training_rows(
            self,
            X,
            reset=first_call,
            dtype=None if first_call else self._natural_store.dtype,
        )
        X_val = self._check_evaluation_data(X_val, data.dtype)
        with thread_pool(self.n_jobs):
            if first_call:
                with self._transaction():
                    self._initialize_online(
                        data.initial_rows(),
                        self.total_samples,
                        mechanisms,
                        store=data.stored_columns,
                    )
            with data.holding_natural(self):
                self._run_pass(data, self.total_samples, X_val, started)
        return self

    def _check_evaluation_data(self, X_val, dtype):
        if X_val is None:
            return None
        return self._check_training_data(X_val, reset=False, dtype=dtype)
