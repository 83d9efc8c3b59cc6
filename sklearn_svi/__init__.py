"""Smoothed, annealed and filtered stochastic variational inference.

scikit-learn compatible estimators fitted by stochastic variational
inference (SVI) with the improvements of Mandt & Blei (smoothed gradients),
Paisley, Fazelnia & Barr (tuneable stochastic annealing) and Houlsby & Blei
(variational filtering).
"""

# The Dask engine registers itself; it imports Dask only when it is used.
from . import _dask  # noqa: F401
from ._datasets import (
    load_python_docstrings,
    load_ratings,
    make_lda_corpus,
    match_topics,
    split_ratings,
)
from ._persistence import Checkpoint
from ._report import TopicReport
from ._version import __version__  # noqa: F401
from .factorization import SVIMatrixFactorization
from .feature_extraction import WordSketch
from .lda import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    TopicTimeline,
    seed_word_indices,
    top_words,
)
from .mixture import SVIGaussianMixture

__all__ = [
    "AnnealedLDA",
    "Checkpoint",
    "FilteredLDA",
    "SVIGaussianMixture",
    "SVIMatrixFactorization",
    "SmoothedLDA",
    "TopicReport",
    "TopicTimeline",
    "WordSketch",
    "load_python_docstrings",
    "load_ratings",
    "make_lda_corpus",
    "match_topics",
    "seed_word_indices",
    "split_ratings",
    "top_words",
]
