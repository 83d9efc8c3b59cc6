"""Which mechanisms an estimator has, and the one place they are built.

An estimator states its mechanisms as :class:`Mechanisms`, a record of
plain settings; the online update builds the smoothing window, the annealing
weights and the step size from it here. The names of the step sizes live in
one registry, which also gives the estimators' parameter constraints.
"""

import warnings
from dataclasses import dataclass
from numbers import Integral, Real

from sklearn.utils._param_validation import Hidden, Interval, StrOptions

from ._annealing import AnnealingWeights
from ._filters import AdaptiveGain, GaussianFilter, StudentTFilter
from ._smoothing import SmoothingWindow
from ._step_sizes import ConstantStepSize, FilteredStepSize, RobbinsMonroStepSize

# Minibatches drawn at the initial lambda to start a filter's noise estimates.
MONTE_CARLO_BATCHES = 5

# The schedules by name, from the settings.
SCHEDULES = {
    "robbins-monro": lambda settings: RobbinsMonroStepSize(
        settings.learning_offset, settings.learning_decay
    ),
}

# The filters' gains by name, from the settings and the size of lambda.
FILTERS = {
    "adaptive": lambda settings, size: AdaptiveGain(),
    "gaussian": lambda settings, size: GaussianFilter(settings.prior_variance),
    "student-t": lambda settings, size: StudentTFilter(
        settings.prior_variance, settings.prior_dof, size
    ),
}


def learning_rate_constraint(*, schedules=True, filters=True):
    """The constraint of a ``learning_rate`` parameter.

    Parameters
    ----------
    schedules : bool, default=True
        Whether the schedules' names and a constant step size in (0, 1] are
        allowed.
    filters : bool, default=True
        Whether the filters' names are allowed.

    Returns
    -------
    constraint : list
        For an estimator's ``_parameter_constraints``.
    """
    names = {*(SCHEDULES if schedules else ()), *(FILTERS if filters else ())}
    constraint = [StrOptions(names)]
    if schedules:
        constraint.append(Interval(Real, 0, 1, closed="right"))
    return constraint


def renamed_constraint(constraint):
    """The constraint of a deprecated parameter renamed to one with
    ``constraint``: its values, or the hidden default "deprecated"."""
    return [Hidden(StrOptions({"deprecated"})), *constraint]


# Constraints of the settings' other parameters, for the estimators that
# expose them.
SCHEDULE_CONSTRAINTS = {
    "learning_offset": [Interval(Real, 0, None, closed="left")],
    "learning_decay": [Interval(Real, 0, 1, closed="both")],
}
FILTER_CONSTRAINTS = {
    "prior_variance": [Interval(Real, 0, None, closed="left")],
    "prior_dof": [Interval(Real, 2, None, closed="neither")],
    "bias_correction": ["boolean"],
    "min_step_size": [
        None,
        StrOptions(set(SCHEDULES)),
        Interval(Real, 0, 1, closed="right"),
    ],
}


# Constraints of the parameters of the mechanisms, which every estimator
# takes.
MECHANISM_CONSTRAINTS = {
    "L": [Interval(Integral, 1, None, closed="left")],
    "M": [None, Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "M_growth": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    "learning_rate": learning_rate_constraint(),
    **SCHEDULE_CONSTRAINTS,
    **FILTER_CONSTRAINTS,
}


def renamed_parameter(estimator, name, old_name):
    """The value of the parameter ``name`` of ``estimator``, or of its
    deprecated spelling ``old_name`` when the user set that one (with a
    FutureWarning)."""
    old_value = getattr(estimator, old_name)
    if isinstance(old_value, str) and old_value == "deprecated":
        return getattr(estimator, name)
    warnings.warn(
        f"The parameter '{old_name}' was renamed '{name}' in 0.1 and will be "
        f"removed in 0.3; use '{name}' instead.",
        FutureWarning,
        stacklevel=4,
    )
    return old_value


@dataclass(frozen=True)
class Mechanisms:
    """The mechanisms of an estimator's updates, as plain settings.

    Parameters
    ----------
    window_length : int, default=1
        L, the number of minibatch statistics averaged (Mandt & Blei 2014);
        1 is no smoothing.
    effective_batch_size : int or None, default=None
        M of the annealing noise (Paisley, Fazelnia & Barr); None is no
        annealing.
    effective_batch_growth : float, default=0.0
        Growth of M per update.
    learning_rate : str or float, default="robbins-monro"
        A name of ``SCHEDULES`` or ``FILTERS``, or a constant step size.
    learning_offset, learning_decay : float, default=10.0, 0.7
        tau_0 and kappa of the Robbins-Monro schedule.
    prior_variance : float, default=0.0
        Sigma_0 of the filters.
    prior_dof : float, default=3.0
        Degrees of freedom of the Student's t filter.
    bias_correction : bool, default=True
        Whether the filters correct their noise estimates.
    min_step_size : str, float or None, default=None
        A schedule's name or a constant that bounds a filter's step from
        below; None for none.
    """

    window_length: int = 1
    effective_batch_size: int | None = None
    effective_batch_growth: float = 0.0
    learning_rate: str | float = "robbins-monro"
    learning_offset: float = 10.0
    learning_decay: float = 0.7
    prior_variance: float = 0.0
    prior_dof: float = 3.0
    bias_correction: bool = True
    min_step_size: str | float | None = None

    @classmethod
    def of_estimator(cls, estimator, renamed_learning_rate=None):
        """The settings of an estimator's parameters (``MECHANISM_CONSTRAINTS``).

        ``M="auto"`` is ``batch_size // 4`` (at least 1) and
        ``M_growth="auto"`` is M, so that M_t = M t; ``renamed_learning_rate``
        names the deprecated spelling of ``learning_rate`` the estimator
        still takes, if any.
        """
        M = estimator.M
        if M == "auto":
            M = max(1, estimator.batch_size // 4)
        growth = estimator.M_growth
        if growth == "auto":
            growth = 0.0 if M is None else M
        learning_rate = estimator.learning_rate
        if renamed_learning_rate is not None:
            learning_rate = renamed_parameter(
                estimator, "learning_rate", renamed_learning_rate
            )
        return cls(
            window_length=estimator.L,
            effective_batch_size=M,
            effective_batch_growth=growth,
            learning_rate=learning_rate,
            learning_offset=estimator.learning_offset,
            learning_decay=estimator.learning_decay,
            **{name: getattr(estimator, name) for name in FILTER_CONSTRAINTS},
        )

    def check(self, batch_size):
        """Raise if the settings contradict each other or ``batch_size``."""
        if (
            self.effective_batch_size is not None
            and self.effective_batch_size > batch_size
        ):
            raise ValueError(
                f"The effective minibatch size M={self.effective_batch_size} "
                f"must not exceed batch_size={batch_size}."
            )

    def build_window(self, shape, dtype):
        """The smoothing window for lambda of ``shape`` and ``dtype``."""
        return SmoothingWindow(self.window_length, shape, dtype)

    def build_annealing(self):
        """The annealing weights, or None for plain minibatches."""
        if self.effective_batch_size is None:
            return None
        return AnnealingWeights(self.effective_batch_size, self.effective_batch_growth)

    def build_step_size(self, shape, dtype):
        """The step size named by ``learning_rate``, for lambda of ``shape``."""
        if self.learning_rate in FILTERS:
            size = shape[0] * shape[1]
            return FilteredStepSize(
                FILTERS[self.learning_rate](self, size),
                shape,
                dtype,
                MONTE_CARLO_BATCHES,
                corrected=self.bias_correction,
                floor=self._schedule(self.min_step_size),
            )
        return self._schedule(self.learning_rate)

    def _schedule(self, choice):
        """The schedule named by ``choice``, a constant one, or None."""
        if choice is None:
            return None
        if isinstance(choice, str):
            return SCHEDULES[choice](self)
        return ConstantStepSize(choice)
