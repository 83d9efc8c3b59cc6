"""What the online update changes besides lambda, as one object.

A fit keeps its mechanisms (the smoothing window, the step size, the
annealing weights), its random state and its records in one
:class:`UpdateState`, built from the estimator's ``Mechanisms``. The update
changes it as one unit: a transaction begins, commits and rolls back the
whole state (:mod:`sklearn_svi._transaction`), and a copy of the model for a
worker leaves all of it behind. lambda itself is in its store
(:mod:`sklearn_svi._store`).
"""

from dataclasses import dataclass, field

import numpy as np

from ._mechanisms import RowState
from ._permutation import KeyedPermutation

# Most step sizes kept in the step size record.
STEP_SIZE_RECORD_CAPACITY = 10_000


def _empty_evaluation_history():
    return {"n_batch_iter": [], "n_samples_seen": [], "score": []}


def _empty_step_size_history():
    return {"n_batch_iter": [], "step_size": []}


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
    random_source : RandomState
        The source of the passes' orders, the annealing weights and a
        filter's start; drawn from through :attr:`random_state`.
    evaluation_history : dict of lists
        ``n_batch_iter``, ``n_samples_seen`` and ``score`` of each
        evaluation.
    step_size_history : dict of lists
        ``n_batch_iter`` and ``step_size`` of the recorded updates.
    step_size_record_every : int, default=1
        Record every this many updates' step size.
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
    random_source: np.random.RandomState
    evaluation_history: dict = field(default_factory=_empty_evaluation_history)
    step_size_history: dict = field(default_factory=_empty_step_size_history)
    step_size_record_every: int = 1
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
            random_source=random_state,
        )

    @property
    def random_state(self):
        """The random state to draw from.

        In a transaction its state is recorded the first time it is asked
        for, before anything is drawn, so that :meth:`rollback` puts it
        back. An update that draws nothing (every update of plain SVI and of
        the filter after the first) skips the record, a copy of the
        generator's 624 words that took about 30 microseconds.
        """
        saved = vars(self).get("_saved")
        if saved is not None and saved[1] is None:
            self._saved = (saved[0], self.random_source.get_state(), saved[2])
        return self.random_source

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

    # -- where a fit is ---------------------------------------------------------------

    def resume_fit(self, n_samples, estimator_name):
        """Start, or resume, a ``fit`` over ``n_samples`` samples: the
        position of a fit that did not end (saved by a ``Checkpoint`` or
        left by an error) is kept, a new fit starts at the first pass."""
        position = self.fit_position
        if position is None:
            self.fit_position = dict(
                pass_index=0, next_row=0, n_samples=n_samples, order_key=None
            )
        elif position["n_samples"] != n_samples:
            raise ValueError(
                f"This {estimator_name} holds a fit that stopped in pass "
                f"{position['pass_index'] + 1} over {position['n_samples']} "
                f"samples; X has {n_samples}. Resume it with the same X, or "
                "set warm_start=False to start a new fit."
            )

    def pass_order(self):
        """The order of the pass at ``fit_position``: a permutation of the
        samples given by a key drawn from the random state when the pass
        starts, and recorded in the position."""
        position = self.fit_position
        if position["order_key"] is None:
            key = int(self.random_state.randint(2**63))
            self.fit_position = position = dict(position, order_key=key)
        return KeyedPermutation(position["n_samples"], position["order_key"])

    def advance_fit(self, next_row):
        """The pass of the fit under way goes on at ``next_row`` of its order."""
        if self.fit_position is not None:
            self.fit_position = dict(self.fit_position, next_row=next_row)

    def end_fit_pass(self):
        """The pass of the fit under way ended: the next one starts."""
        position = self.fit_position
        if position is not None:
            self.fit_position = dict(
                position,
                pass_index=position["pass_index"] + 1,
                next_row=0,
                order_key=None,
            )

    # -- one unit of a transaction ------------------------------------------------

    def _parts(self):
        return [part for part in (self.window, self.step_size) if part is not None]

    def row_keepers(self):
        """The mechanisms that keep a state of each row of lambda, in their
        ``rows`` (a :class:`~sklearn_svi._mechanisms.RowState`)."""
        return [
            part
            for part in self._parts()
            if isinstance(getattr(part, "rows", None), RowState)
        ]

    def _lists(self):
        return [
            values
            for history in (self.evaluation_history, self.step_size_history)
            for values in history.values()
        ]

    def begin(self):
        """Start recording the changes, for :meth:`rollback`."""
        # The random state is recorded when it is first drawn from.
        self._saved = (
            dict(vars(self)),
            None,
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
        if random_state is not None:
            self.random_source.set_state(random_state)
        for values, length in lengths:
            del values[length:]

    def __getstate__(self):
        state = dict(vars(self))
        state.pop("_saved", None)
        return state


class UpdateRecords:
    """The fitted attributes that a fit's ``UpdateState`` records."""

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
