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
from ._filtered import FilteredStepSize, auto_observed_components
from ._filters import AdaptiveGain, GaussianFilter, StudentTFilter
from ._smoothing import SmoothingWindow
from ._step_sizes import ConstantStepSize, RobbinsMonroStepSize

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


@dataclass(frozen=True)
class Parameter:
    """A parameter that estimators take, declared once.

    Parameters
    ----------
    default : object
        Its default, unless an estimator sets another.
    constraint : list
        Its constraint, for ``_parameter_constraints``.
    kind : str
        Its type, as the docstrings' entry names it.
    description : str
        The entry's text, each line indented by eight spaces.
    """

    default: object
    constraint: list
    kind: str
    description: str


# The parameters of the mechanisms, which every estimator takes, in the
# order of the estimators' signatures; ``Mechanisms.of_estimator`` reads
# them into the fields of the same names (``MECHANISM_FIELDS`` renames).
MECHANISM_PARAMETERS = {
    "L": Parameter(
        1,
        [Interval(Integral, 1, None, closed="left")],
        "int",
        """\
        Length of the smoothing window (Mandt & Blei 2014): each update
        uses the mean of the last ``L`` minibatch statistics; 1 is no
        smoothing.""",
    ),
    "M": Parameter(
        None,
        [None, Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        'int, "auto" or None',
        """\
        The effective minibatch size of the first update (SVI+, Paisley,
        Fazelnia & Barr), at most ``batch_size``: each sample's statistic is
        weighted by 1 + eps - mean(eps) with eps ~ N(0, batch_size / M - 1),
        which keeps the statistic unbiased with about the noise of M
        samples. ``"auto"`` is ``batch_size // 4``; None is no annealing.""",
    ),
    "M_growth": Parameter(
        0.0,
        [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        'float or "auto"',
        """\
        Increase of the effective minibatch size per update: update t uses
        ``M + M_growth * (t - 1)``, and plain SVI once that reaches
        ``batch_size``. ``"auto"`` is ``M``, so that M_t = M t, the form of
        the paper's schedule.""",
    ),
    "learning_rate": Parameter(
        "robbins-monro",
        learning_rate_constraint(),
        "{" + ", ".join(f'"{name}"' for name in [*SCHEDULES, *FILTERS]) + "} or float",
        """\
        The step size. ``"robbins-monro"`` is ``(learning_offset + t) **
        -learning_decay`` for the t-th update; ``"gaussian"`` and
        ``"student-t"`` are the gains of a Gaussian and a Student's t
        variational filter (Houlsby & Blei 2014), and ``"adaptive"``
        Ranganath et al.'s adaptive rate Q / (Q + R); a float in (0, 1] is a
        constant step size.""",
    ),
    "learning_offset": Parameter(
        10.0,
        [Interval(Real, 0, None, closed="left")],
        "float",
        """\
        tau_0 of the Robbins-Monro schedule.""",
    ),
    "learning_decay": Parameter(
        0.7,
        [Interval(Real, 0, 1, closed="both")],
        "float",
        """\
        kappa of the Robbins-Monro schedule.""",
    ),
    "prior_variance": Parameter(
        0.0,
        [Interval(Real, 0, None, closed="left")],
        "float",
        """\
        Sigma_0 of the filters: the prior variance (the scale for the
        Student's t filter) of each coordinate of the optimum, beyond the
        drift that the minibatches of the filter's start measure. Unused by
        ``"adaptive"``.""",
    ),
    "prior_dof": Parameter(
        3,
        [Interval(Real, 2, None, closed="neither")],
        "float",
        """\
        Degrees of freedom, above 2, of the Student's t filter's prior of
        the optimum and of its drift and noise; the filter tends to the
        Gaussian one as they grow.""",
    ),
    "bias_correction": Parameter(
        True,
        ["boolean"],
        "bool",
        """\
        Correct the filters' moving-average estimates of the drift Q and the
        noise R for the noise of the averages themselves, which uncorrected
        is taken for drift (the package's variant). False gives Ranganath et
        al.'s estimates, as the papers use them.""",
    ),
    "min_step_size": Parameter(
        None,
        [None, StrOptions(set(SCHEDULES)), Interval(Real, 0, 1, closed="right")],
        '"robbins-monro", float or None',
        """\
        A lower bound of a filter's step size (the package's variant): the
        filter may raise the step above it, when the minibatches disagree
        with the model more than their noise explains, but not lower it.
        ``"robbins-monro"`` is the schedule ``(learning_offset + t) **
        -learning_decay``, a float in (0, 1] a constant bound, None no bound
        (the published filters).""",
    ),
    "observed_components": Parameter(
        "auto",
        [None, StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        '"auto", int or None',
        """\
        The components (columns of the global parameter) whose coordinates a
        filter's drift and noise are estimated on, from the first (the
        package's variant): over components that are alike their
        per-coordinate averages are the same in expectation, and the
        filter's pass reads fewer values. ``"auto"`` is every component up to 32, and
        above an eighth of them, at least 8, for LDA, whose topics start at
        random; every column for the mixture and the factorisation. An int
        is that many (at most all), None every one (the published
        filters).""",
    ),
}

# The fields of ``Mechanisms`` whose parameters have other names.
MECHANISM_FIELDS = {
    "L": "window_length",
    "M": "effective_batch_size",
    "M_growth": "effective_batch_growth",
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
    observed_components : "auto", int or None, default="auto"
        The number of columns a filter observes; "auto" for
        ``auto_observed_components`` of them when the columns are alike.
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
    observed_components: str | int | None = "auto"

    @classmethod
    def of_estimator(cls, estimator, renamed_learning_rate=None):
        """The settings of an estimator's parameters (``MECHANISM_PARAMETERS``).

        ``M="auto"`` is ``batch_size // 4`` (at least 1) and
        ``M_growth="auto"`` is M, so that M_t = M t; ``renamed_learning_rate``
        names the deprecated spelling of ``learning_rate`` the estimator
        still takes, if any.
        """
        values = {name: getattr(estimator, name) for name in MECHANISM_PARAMETERS}
        if values["M"] == "auto":
            values["M"] = max(1, estimator.batch_size // 4)
        if values["M_growth"] == "auto":
            values["M_growth"] = 0.0 if values["M"] is None else values["M"]
        if renamed_learning_rate is not None:
            values["learning_rate"] = renamed_parameter(
                estimator, "learning_rate", renamed_learning_rate
            )
        fields = {
            MECHANISM_FIELDS.get(name, name): value for name, value in values.items()
        }
        return cls(**fields)

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

    def build_step_size(self, shape, dtype, exchangeable_columns=False):
        """The step size named by ``learning_rate``, for lambda of ``shape``.

        ``exchangeable_columns`` says whether lambda's columns are alike a
        priori, where ``observed_components="auto"`` observes some of them.
        """
        if self.learning_rate in FILTERS:
            n_observed = self._observed_columns(shape[1], exchangeable_columns)
            return FilteredStepSize(
                FILTERS[self.learning_rate](self, shape[0] * n_observed),
                shape,
                dtype,
                MONTE_CARLO_BATCHES,
                corrected=self.bias_correction,
                floor=self._schedule(self.min_step_size),
                n_observed=n_observed,
            )
        return self._schedule(self.learning_rate)

    def _observed_columns(self, n_columns, exchangeable_columns):
        """How many of ``n_columns`` a filter observes."""
        if self.observed_components is None:
            return n_columns
        if self.observed_components == "auto":
            if exchangeable_columns:
                return auto_observed_components(n_columns)
            return n_columns
        return min(self.observed_components, n_columns)

    def _schedule(self, choice):
        """The schedule named by ``choice``, a constant one, or None."""
        if choice is None:
            return None
        if isinstance(choice, str):
            return SCHEDULES[choice](self)
        return ConstantStepSize(choice)
