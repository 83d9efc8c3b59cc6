"""Latent Dirichlet allocation by smoothed, annealed or filtered SVI."""

from ._estimators import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    seed_word_indices,
    top_words,
)

__all__ = [
    "AnnealedLDA",
    "FilteredLDA",
    "SmoothedLDA",
    "seed_word_indices",
    "top_words",
]
