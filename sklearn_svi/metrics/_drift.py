"""A drift signal from a filter's step sizes."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, validate_params
from sklearn.utils.validation import check_is_fitted

DEFAULT_RATIO = 4.0
"""The step size, in multiples of the schedule, at which the signal fires."""


@validate_params(
    {
        "estimator": [HasMethods(["partial_fit"])],
        "ratio": [Interval(Real, 0, None, closed="neither")],
        "consecutive": [Interval(Integral, 1, None, closed="left")],
        "warm_up": [Interval(Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def drift_alarms(estimator, *, ratio=DEFAULT_RATIO, consecutive=3, warm_up=50):
    """The updates at which a filter's step sizes signal that the data drift.

    A filter's step size (Houlsby & Blei 2014) rises when the minibatches
    disagree with the model more than their noise explains, which is what a
    change of the stream does; the Robbins-Monro schedule that bounds it
    from below only falls. The signal fires at the update that makes
    ``consecutive`` updates in a row whose step size is at least ``ratio``
    times the schedule (learning_offset + t) ** -learning_decay, after the
    first ``warm_up`` updates, in which the filter's steps rise above the
    schedule while the topics form.

    Parameters
    ----------
    estimator : fitted estimator
        An estimator of the package fitted with a filter
        (``learning_rate`` of ``"gaussian"``, ``"student-t"`` or
        ``"adaptive"``, e.g. :class:`~sklearn_svi.FilteredLDA`). With a
        schedule its steps are the schedule's, and the signal never fires.
    ratio : float, default=4.0
        The multiple of the schedule's step that counts as raised.
    consecutive : int, default=3
        The number of raised steps in a row that fire the signal.
    warm_up : int, default=50
        The updates at the start of the fit in which the signal does not
        fire.

    Returns
    -------
    alarms : ndarray of int
        The update numbers (``n_batch_iter_``) at which the signal fired,
        in order; the latest update is among them when the stream has just
        changed. Beyond 10,000 updates, the thinned record of
        ``step_size_history_`` counts only the updates it kept.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_svi import FilteredLDA, make_lda_corpus
    >>> from sklearn_svi.metrics import drift_alarms
    >>> X, _, _ = make_lda_corpus(n_documents=2000, random_state=0)
    >>> model = FilteredLDA(n_components=10, random_state=0)
    >>> for start in range(0, 2000, 128):
    ...     model.partial_fit(X[start : start + 128])
    >>> drift_alarms(model)
    array([], dtype=int64)
    """
    check_is_fitted(estimator)
    history = estimator.step_size_history_
    updates = np.asarray(history["n_batch_iter"], dtype=np.int64)
    schedule = (estimator.learning_offset + updates) ** -estimator.learning_decay
    raised = np.asarray(history["step_size"]) >= ratio * schedule
    # The length of the run of raised steps that ends at each update.
    runs = np.zeros(len(raised), dtype=np.int64)
    for position in np.flatnonzero(raised):
        runs[position] = runs[position - 1] + 1 if position else 1
    return updates[(runs == consecutive) & (updates > warm_up)]
