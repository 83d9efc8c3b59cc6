"""What a fit tells as it goes: the ``callback``'s progress, and the lines
that ``verbose`` prints."""

import time
from typing import NamedTuple


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


def report(estimator, rho, score, started):
    """Call the estimator's ``callback`` with the progress of the update
    just made, whose step size was ``rho`` and evaluation ``score`` (or
    None); ``started`` is when the call began (``time.perf_counter``).
    Returns whether the callback asks to stop."""
    if estimator.callback is None:
        return False
    progress = Progress(
        estimator.n_batch_iter_,
        estimator.n_samples_seen_,
        estimator.n_iter_,
        float(rho),
        None if score is None else float(score),
        time.perf_counter() - started,
    )
    return bool(estimator.callback(estimator, progress))


def tell(estimator, message):
    """Print ``message`` under the estimator's name when it is ``verbose``."""
    if estimator.verbose:
        print(f"[{type(estimator).__name__}] {message}")
