"""The parameters the estimators share: declared, constrained and kept once.

Every estimator takes the parameters of the online update
(``UPDATE_PARAMETERS``) and of all its mechanisms
(:data:`~sklearn_svi._mechanisms.MECHANISM_PARAMETERS`), so that smoothing,
annealing and every step size combine in each of them. An estimator states
its own parameters and its defaults in ``_init_parameters``
(:func:`init_parameters`), and writes out its ``__init__`` as scikit-learn's
estimators do, every parameter in the signature that a reader, an editor,
``get_params``, ``clone`` and the documentation read. The registries stay
the one source of the defaults: ``tests/test_estimator_api.py`` checks each
written ``__init__`` against :func:`init_source` of its ``_init_parameters``,
and prints the source to write when a registry changes.
"""

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval

from ._mechanisms import MECHANISM_PARAMETERS, Mechanisms

# The parameters of the update loop, which every estimator takes, and their
# constraints; the estimators' docstrings describe them for their data.
UPDATE_PARAMETERS = {
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "total_samples": [Interval(Real, 0, None, closed="neither")],
    "evaluate_every": [Integral],
    "callback": [None, callable],
    "warm_start": ["boolean"],
    "n_jobs": [None, Integral],
    "verbose": ["verbose"],
    "random_state": ["random_state"],
}

# The entry of ``callback`` in every estimator's docstring.
WARM_START_PARAMETER = """\
    warm_start : bool, default=False
        If True, ``fit`` continues from the fitted state instead of starting
        again: it finishes a fit that stopped before its end (one saved by
        :class:`~sklearn_svi.Checkpoint`, or one that an error ended) from the
        update where it stopped, on the same ``X``, and otherwise makes
        ``max_iter`` more passes.
"""

CALLBACK_PARAMETER = """\
    callback : callable, default=None
        Called after every update as ``callback(estimator, progress)``, with
        a ``Progress`` named tuple of ``n_batch_iter``, ``n_samples_seen``,
        ``n_iter``, ``step_size``, ``score`` (the evaluation score recorded
        after the update, or None) and ``elapsed`` (seconds since ``fit`` or
        ``partial_fit`` was called). When it returns True, the fit stops
        after that update: the model keeps every update made.
        :class:`~sklearn_svi.Checkpoint` saves the model as it goes.
"""

# Their defaults, unless an estimator sets others.
UPDATE_DEFAULTS = {
    "batch_size": 128,
    "max_iter": 10,
    "total_samples": 1e6,
    "evaluate_every": -1,
    "callback": None,
    "warm_start": False,
    "n_jobs": None,
    "verbose": 0,
    "random_state": None,
}


def init_parameters(own, defaults=None, deprecated=()):
    """Every parameter of an estimator with its default, in the order of its
    ``__init__``.

    Parameters
    ----------
    own : dict
        The model's own parameters and their defaults, ``n_components``
        first: it alone may also be passed by position.
    defaults : dict, default=None
        The estimator's defaults of shared parameters, where they differ.
    deprecated : tuple of str, default=()
        Deprecated spellings of parameters that the estimator still takes,
        with the default "deprecated".

    Returns
    -------
    parameters : dict
        The model's own parameters, then those of every mechanism and of
        the update loop.
    """
    return {
        **own,
        **{name: parameter.default for name, parameter in MECHANISM_PARAMETERS.items()},
        **UPDATE_DEFAULTS,
        **(defaults or {}),
        **dict.fromkeys(deprecated, "deprecated"),
    }


def init_source(parameters):
    """The source of the ``__init__`` that takes ``parameters`` (from
    :func:`init_parameters`), as an estimator's class writes it: each
    parameter kept as an attribute of the same name, as scikit-learn
    requires, the first one also by position."""
    first, *rest = parameters

    def literal(value):
        return f'"{value}"' if isinstance(value, str) else repr(value)

    return "\n".join(
        [
            "    def __init__(",
            "        self,",
            f"        {first}={literal(parameters[first])},",
            "        *,",
            *(f"        {name}={literal(parameters[name])}," for name in rest),
            "    ):",
            *(f"        self.{name} = {name}" for name in parameters),
        ]
    )


class OnlineParameters:
    """What every estimator's parameters give the online update.

    ``_renamed_learning_rate`` names the deprecated spelling of
    ``learning_rate`` that an estimator still takes, if any.
    """

    _shared_parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        **UPDATE_PARAMETERS,
        **{
            name: parameter.constraint
            for name, parameter in MECHANISM_PARAMETERS.items()
        },
    }

    _renamed_learning_rate = None

    def _mechanism_settings(self):
        """The mechanisms the parameters set, a ``Mechanisms``."""
        return Mechanisms.of_estimator(self, self._renamed_learning_rate)

    def _checked_mechanisms(self):
        """The mechanism settings, checked against the other parameters."""
        settings = self._mechanism_settings()
        settings.check(self.batch_size)
        return settings
