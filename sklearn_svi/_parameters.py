"""The parameters the estimators share: declared, constrained and kept once.

Every estimator takes the parameters of the online update
(``UPDATE_PARAMETERS``) and of all its mechanisms
(:data:`~sklearn_svi._mechanisms.MECHANISM_PARAMETERS`), so that smoothing,
annealing and every step size combine in each of them. An estimator states
its own parameters and its defaults, and :func:`estimator_init` makes its
``__init__``: one function that keeps every parameter as it is given, as
scikit-learn requires, with the signature that ``get_params``, ``clone`` and
the documentation read. A parameter added to a registry reaches every
estimator from there.
"""

import inspect
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


def estimator_init(own, defaults=None, deprecated=()):
    """An estimator's ``__init__``.

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
    __init__ : function
        Keeps each parameter as an attribute of the same name.
    """
    values = {
        **own,
        **{name: parameter.default for name, parameter in MECHANISM_PARAMETERS.items()},
        **UPDATE_DEFAULTS,
        **(defaults or {}),
        **dict.fromkeys(deprecated, "deprecated"),
    }
    first, *rest = values
    signature = inspect.Signature(
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter(
                first, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=values[first]
            ),
            *(
                inspect.Parameter(
                    name, inspect.Parameter.KEYWORD_ONLY, default=values[name]
                )
                for name in rest
            ),
        ]
    )

    def __init__(self, *args, **kwargs):
        arguments = signature.bind(self, *args, **kwargs)
        arguments.apply_defaults()
        for name, value in list(arguments.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature
    return __init__


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
