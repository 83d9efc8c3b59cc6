"""Model-agnostic mechanisms of the online update.

Each mechanism changes one line of the stochastic variational inference
update (see :class:`sklearn_svi._online.OnlineUpdateMixin`) and knows nothing
about the model: it sees the global variational parameter lambda only as an
array of shape (n_params, n_components) and minibatch statistics only as
row blocks of such an array.
"""

from ._annealing import AnnealingWeights
from ._filter_rows import FilterRows
from ._filtered import FilteredStepSize
from ._filters import AdaptiveGain, GaussianFilter, StudentTFilter
from ._row_state import RowState
from ._settings import (
    FILTERS,
    MECHANISM_PARAMETERS,
    SCHEDULES,
    Mechanisms,
    learning_rate_constraint,
    renamed_constraint,
)
from ._smoothing import (
    SmoothingWindow,
    SparseStatistic,
    WindowRows,
    added_statistics,
)
from ._step_sizes import (
    ConstantStepSize,
    NoisyOptimum,
    RobbinsMonroStepSize,
    StepSize,
    frozen_prior,
)

__all__ = [
    "FILTERS",
    "MECHANISM_PARAMETERS",
    "SCHEDULES",
    "AdaptiveGain",
    "AnnealingWeights",
    "ConstantStepSize",
    "FilterRows",
    "FilteredStepSize",
    "GaussianFilter",
    "Mechanisms",
    "NoisyOptimum",
    "RobbinsMonroStepSize",
    "RowState",
    "SmoothingWindow",
    "SparseStatistic",
    "StepSize",
    "StudentTFilter",
    "WindowRows",
    "added_statistics",
    "frozen_prior",
    "learning_rate_constraint",
    "renamed_constraint",
]
