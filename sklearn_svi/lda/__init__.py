"""Latent Dirichlet allocation by smoothed, annealed or filtered SVI."""

from ._estimators import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    seed_word_indices,
    top_words,
)
from ._timeline import TopicTimeline

__all__ = [
    "AnnealedLDA",
    "FilteredLDA",
    "SmoothedLDA",
    "TopicTimeline",
    "seed_word_indices",
    "top_words",
]
