"""The parameters the estimators share: constrained and kept in one place.

Every estimator takes the parameters of the online update and of all its
mechanisms (:class:`OnlineParameters`), so that smoothing, annealing and
every step size combine in each of them; the mixture and the matrix
factorization also stop on a tolerance (:class:`ToleranceParameter`). An
estimator lists its parameters in its own ``__init__``, as scikit-learn
requires, hands the shared ones to these classes, and keeps only its own.
Their descriptions are written once too, in
:mod:`sklearn_svi._mechanisms._docstrings`.
"""

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval

from ._mechanisms import MECHANISM_CONSTRAINTS, Mechanisms


class OnlineParameters:
    """The parameters of the online update, which every estimator takes.

    Deprecated spellings of a parameter (``deprecated``) are kept as they
    are given; ``_renamed_learning_rate`` names the one of ``learning_rate``
    that an estimator still takes, if any.
    """

    _shared_parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "total_samples": [Interval(Real, 0, None, closed="neither")],
        "evaluate_every": [Integral],
        "warm_start": ["boolean"],
        "n_jobs": [None, Integral],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        **MECHANISM_CONSTRAINTS,
    }

    _renamed_learning_rate = None

    def __init__(
        self,
        *,
        n_components,
        L,
        M,
        M_growth,
        learning_rate,
        learning_offset,
        learning_decay,
        prior_variance,
        prior_dof,
        bias_correction,
        min_step_size,
        batch_size,
        max_iter,
        total_samples,
        evaluate_every,
        warm_start,
        n_jobs,
        verbose,
        random_state,
        **deprecated,
    ):
        self.n_components = n_components
        self.L = L
        self.M = M
        self.M_growth = M_growth
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.evaluate_every = evaluate_every
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        for name, value in deprecated.items():
            setattr(self, name, value)

    def _mechanism_settings(self):
        """The mechanisms the parameters set, a ``Mechanisms``."""
        return Mechanisms.of_estimator(self, self._renamed_learning_rate)


class ToleranceParameter(OnlineParameters):
    """:class:`OnlineParameters` and ``tol``, the tolerance on which
    ``fit`` stops."""

    _shared_parameter_constraints: dict = {
        **OnlineParameters._shared_parameter_constraints,
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, tol, **shared):
        super().__init__(**shared)
        self.tol = tol
