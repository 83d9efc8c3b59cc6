"""Saved models that say which version saved them.

Every estimator's state (``pickle``, ``joblib``, ``skops.io``) records the
package's version, and loading a state saved by another version warns with
:class:`~sklearn_svi.exceptions.InconsistentVersionWarning`, as
scikit-learn does for its own estimators.
"""

import warnings

from ._version import __version__
from .exceptions import InconsistentVersionWarning

# The key of the version in a saved state.
VERSION_KEY = "_sklearn_svi_version"


class VersionedState:
    """Record the package's version in the saved state, and check it on
    loading."""

    def __getstate__(self):
        # A copy: the state may be the instance's own ``__dict__``.
        state = dict(super().__getstate__())
        state[VERSION_KEY] = __version__
        return state

    def __setstate__(self, state):
        state = dict(state)
        version = state.pop(VERSION_KEY, "unknown")
        if version != __version__:
            warnings.warn(
                InconsistentVersionWarning(
                    estimator_name=type(self).__name__,
                    current_version=__version__,
                    original_version=version,
                ),
                stacklevel=2,
            )
        super().__setstate__(state)
