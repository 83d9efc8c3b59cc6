"""What the online update changes besides lambda, as one object.

A fit keeps its mechanisms (the smoothing window, the step size, the
annealing weights), its random state and its records in one
:class:`UpdateState`, built from the estimator's ``Mechanisms``. The update
changes it as one unit: a transaction begins, commits and rolls back the
whole state (:mod:`sklearn_svi._transaction`), a pickle drops only its spare
array, and a copy of the model for a worker leaves all of it behind.
"""

from dataclasses import dataclass, field

import numpy as np

from ._update_fast import add_to_rows, scaled_rows_of

# Most step sizes kept in the step size record.
STEP_SIZE_RECORD_CAPACITY = 10_000

# A scaled lambda is written out before its scale falls below this value, so
# that the stored deviations from eta stay far from overflow, in float32 too.
SMALLEST_SCALE = 1e-12


def _empty_evaluation_history():
    return {"n_batch_iter": [], "n_samples_seen": [], "score": []}


def _empty_step_size_history():
    return {"n_batch_iter": [], "step_size": []}


def raise_to_floor(values, floor, span):
    """Set ``values[span]`` below ``floor`` to ``floor``; return how many.

    The projection onto {lambda >= eta} of a model whose lambda is eta plus
    a non-negative statistic without annealing. ``floor`` is a scalar or
    an array that broadcasts against ``values`` (eta of each entry, or of
    each row as one column).
    """
    block = values[span]
    floor = floor if np.ndim(floor) == 0 else floor[span]
    below = int(np.count_nonzero(block < floor))
    if below:
        np.maximum(block, floor, out=block)
    return below


class ScaledRows:
    """lambda kept as eta + c (stored - eta), so that rows move by scaling.

    An update of plain SVI moves every row of lambda by
    lambda <- (1 - rho) lambda + rho lambda^, and on the rows that the
    minibatch's statistic does not list lambda^ = eta, so there
    lambda - eta only shrinks by 1 - rho. Kept as one scale c for all rows,
    c <- (1 - rho) c, the update writes only the listed rows:
    stored <- stored + rho (lambda^ - eta) / c. The sums of lambda over the rows follow
    from the sums of stored - eta. With c = 1 the stored array is lambda.

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

    def start(self, prior, totals):
        """Begin scaling at c = 1 from lambda whose row sums are ``totals``
        and whose prior is ``prior``."""
        self.prior = prior
        # One column for a prior of each row, one per component otherwise.
        self.prior_totals = np.broadcast_to(
            prior.sum(axis=0, dtype=np.float64), np.shape(totals)
        )
        self.excess_totals = np.asarray(totals, dtype=np.float64) - self.prior_totals

    def rows_of(self, stored, rows):
        """lambda on ``rows``: eta + c (stored - eta)."""
        out = np.empty((len(rows), stored.shape[1]), dtype=stored.dtype)
        scaled_rows_of(stored, rows, self.prior, self.scale, out)
        return out

    def settled(self, stored):
        """All of lambda, as a new array."""
        return self.rows_of(stored, np.arange(len(stored)))

    def step(self, stored, total, total_scale, rho):
        """One update of plain SVI on the scaled lambda.

        lambda^ - eta is ``total_scale`` times the ``total`` on its rows
        and 0 elsewhere; the listed rows of ``stored`` are rewritten in
        place.

        Parameters
        ----------
        stored : ndarray of shape (n_params, n_components) or RowShards
            The stored array, or the handle of its blocks of rows on a
            cluster's workers, which update their rows themselves.
        total : SparseStatistic or HeldStatistic
            The window's total, on its rows; with a handle, the statistic
            whose pieces the handle's blocks hold.
        total_scale : float
            N / (number of statistics in the window).
        rho : float
            The step size, below 1.

        Returns
        -------
        totals : ndarray of shape (n_components,)
            The sums of the new lambda over the rows, in float64.

        Raises
        ------
        FloatingPointError
            If the new rows or sums are not finite; nothing changes then.
        """
        scale = self.scale * (1.0 - rho)
        factor = rho * total_scale / scale
        if isinstance(stored, np.ndarray):
            saved = np.empty_like(total.block)
            added, finite = add_to_rows(stored, total.rows, total.block, factor, saved)
            change = (stored, total.rows, saved)
        else:
            added, finite = stored.step(factor)
            change = None
        excess_totals = self.excess_totals + added
        totals = self.prior_totals + scale * excess_totals
        if not (finite and np.all(np.isfinite(totals))):
            # Blocks of rows on a cluster undo their rows with the update.
            if change is not None:
                stored[total.rows] = saved
            raise FloatingPointError(
                "The update from this minibatch would make the global "
                f"parameters non-finite in {stored.dtype}: the data's values "
                "are too large for the model's floating point type."
            )
        if change is not None:
            self._undo.append(change)
        self.scale, self.excess_totals = scale, excess_totals
        return totals

    # -- one part of a transaction ------------------------------------------------

    def begin(self):
        """Start recording the changes, for :meth:`rollback`."""
        self._saved = dict(vars(self))
        self._undo = []

    def commit(self):
        """Keep the changes since :meth:`begin`."""
        del self._saved, self._undo

    def rollback(self):
        """Put back the rows written and the scale."""
        for stored, rows, block in reversed(self._undo):
            stored[rows] = block
        saved = self._saved
        vars(self).clear()
        vars(self).update(saved)

    def __getstate__(self):
        state = dict(vars(self))
        state.pop("_saved", None)
        state.pop("_undo", None)
        return state


@dataclass
class UpdateState:
    """The state of the online update that only the update reads.

    Parameters
    ----------
    window : SmoothingWindow
        The last L minibatch statistics.
    step_size : StepSize
        The schedule or filter that gives rho_t.
    annealing : AnnealingWeights or None
        The samples' annealing weights, None for plain minibatches.
    random_state : RandomState
        The source of the passes' orders, the annealing weights and a
        filter's start.
    evaluation_history : dict of lists
        ``n_batch_iter``, ``n_samples_seen`` and ``score`` of each
        evaluation.
    step_size_history : dict of lists
        ``n_batch_iter`` and ``step_size`` of the recorded updates.
    step_size_record_every : int, default=1
        Record every this many updates' step size.
    spare_natural : ndarray or None, default=None
        The array lambda was in before the last update, into which the next
        update writes; it holds no information.
    scaled_rows : ScaledRows
        The scale of lambda's deviations from eta, below 1 after updates
        that wrote only the rows of their statistic.
    fit_position : dict or None, default=None
        Where a ``fit`` that has not ended is: its pass ``"pass_index"`` (from 0),
        the first position of the order still to visit ``"next_row"``, the
        number of samples ``"n_samples"`` and the key of the pass's order
        ``"order_key"`` (a :class:`~sklearn_svi._permutation.KeyedPermutation`;
        None before it is drawn).
        None when no fit is under way.
    """

    window: object
    step_size: object
    annealing: object
    random_state: np.random.RandomState
    evaluation_history: dict = field(default_factory=_empty_evaluation_history)
    step_size_history: dict = field(default_factory=_empty_step_size_history)
    step_size_record_every: int = 1
    spare_natural: np.ndarray | None = None
    scaled_rows: ScaledRows = field(default_factory=ScaledRows)
    fit_position: dict | None = None

    @classmethod
    def build(cls, mechanisms, shape, dtype, random_state, exchangeable_columns=False):
        """The state of a new fit of lambda of ``shape`` and ``dtype``;
        ``exchangeable_columns`` as for ``Mechanisms.build_step_size``."""
        return cls(
            window=mechanisms.build_window(shape, dtype),
            step_size=mechanisms.build_step_size(
                shape, dtype, exchangeable_columns=exchangeable_columns
            ),
            annealing=mechanisms.build_annealing(),
            random_state=random_state,
        )

    def record_step_size(self, n_batch_iter, rho):
        """Keep rho of update ``n_batch_iter``, thinned to a bounded record.

        Every update is kept until the record holds
        ``STEP_SIZE_RECORD_CAPACITY`` values; then every second one is
        dropped and only every second update is kept from there on, and so
        on, so that the record always spans the whole run.
        """
        if n_batch_iter % self.step_size_record_every:
            return
        history = self.step_size_history
        history["n_batch_iter"].append(n_batch_iter)
        history["step_size"].append(float(rho))
        if len(history["step_size"]) == STEP_SIZE_RECORD_CAPACITY:
            # New lists, which a rollback can leave behind for the old ones.
            self.step_size_history = {
                name: values[1::2] for name, values in history.items()
            }
            self.step_size_record_every *= 2

    def record_evaluation(self, n_batch_iter, n_samples_seen, score):
        """Keep the evaluation score after update ``n_batch_iter``."""
        history = self.evaluation_history
        history["n_batch_iter"].append(n_batch_iter)
        history["n_samples_seen"].append(n_samples_seen)
        history["score"].append(float(score))

    # -- one unit of a transaction ------------------------------------------------

    def _parts(self):
        return [
            part
            for part in (self.window, self.step_size, self.scaled_rows)
            if part is not None
        ]

    def _lists(self):
        return [
            values
            for history in (self.evaluation_history, self.step_size_history)
            for values in history.values()
        ]

    def begin(self):
        """Start recording the changes, for :meth:`rollback`."""
        self._saved = (
            dict(vars(self)),
            self.random_state.get_state(),
            [(values, len(values)) for values in self._lists()],
        )
        for part in self._parts():
            part.begin()

    def commit(self):
        """Keep the changes since :meth:`begin`."""
        for part in self._parts():
            part.commit()
        del self._saved

    def rollback(self):
        """Undo the changes since :meth:`begin`."""
        fields, random_state, lengths = self._saved
        for part in self._parts():
            part.rollback()
        vars(self).clear()
        vars(self).update(fields)
        self.random_state.set_state(random_state)
        for values, length in lengths:
            del values[length:]

    def __getstate__(self):
        state = dict(vars(self))
        state["spare_natural"] = None
        state.pop("_saved", None)
        return state

    def __setstate__(self, state):
        # A state saved before lambda could be scaled holds lambda itself.
        state.setdefault("scaled_rows", ScaledRows())
        state.setdefault("fit_position", None)
        vars(self).update(state)
