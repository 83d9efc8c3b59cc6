"""Saved models: the version that saved them, and saves during a fit.

Every estimator's state (``pickle``, ``joblib``, ``skops.io``) records the
package's version, and loading a state saved by another version warns with
:class:`~sklearn_svi.exceptions.InconsistentVersionWarning`, as
scikit-learn does for its own estimators. :class:`Checkpoint` saves a model
as its fit goes on, so that a fit that stops can continue.
"""

import copy
import os
import warnings

import joblib

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


class Checkpoint:
    """Save a model every ``every`` updates of its fit, as its ``callback``.

    A fit that stops before its end (a lost machine, a killed process, an
    error) continues from the last save: load it and call ``fit`` on the
    same data with ``warm_start=True``. The saved model holds where the fit
    was, its pass and the next minibatch of that pass's order, so the
    continued fit makes the same updates as a fit that never stopped, and
    ends with the same model. During ``partial_fit`` the saved model is as
    after its last update: give it the rest of the stream from the sample
    after that update's minibatch. The saved model's ``callback`` is None (a
    function of a script could not be loaded by another process): set it
    again to go on saving.

    Parameters
    ----------
    target : str, path-like or callable
        The file that ``joblib.dump`` writes (a new file under another name
        first, which then replaces it, so that the file always holds a
        whole model), or a function ``target(estimator)`` that saves the
        estimator itself.
    every : int, default=1000
        Save after every ``every``-th update.

    Examples
    --------
    >>> import joblib
    >>> from sklearn_svi import Checkpoint, SmoothedLDA, make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_documents=200, random_state=0)
    >>> saved = []
    >>> lda = SmoothedLDA(n_components=5, batch_size=50, max_iter=2,
    ...                   callback=Checkpoint(saved.append, every=3))
    >>> lda = lda.fit(X)
    >>> len(saved)
    2
    """

    def __init__(self, target, every=1000):
        if not callable(target) and not isinstance(target, (str, os.PathLike)):
            raise TypeError(
                "target must be a path or a function of the estimator, got "
                f"{type(target).__name__}."
            )
        if int(every) != every or every < 1:
            raise ValueError(f"every must be a positive integer, got {every!r}.")
        self.target = target
        self.every = int(every)

    def __call__(self, estimator, progress):
        """Save ``estimator`` when ``progress.n_batch_iter`` is a multiple of
        ``every``; never ask the fit to stop."""
        if progress.n_batch_iter % self.every == 0:
            self._save(estimator)
        return False

    def _save(self, estimator):
        # Without its callback, which may be a function of a script that
        # another process cannot load.
        estimator = copy.copy(estimator).set_params(callback=None)
        if callable(self.target):
            self.target(estimator)
            return
        path = os.fspath(self.target)
        partial = f"{path}.partial"
        joblib.dump(estimator, partial)
        os.replace(partial, path)
