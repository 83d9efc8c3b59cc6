"""Latent Dirichlet allocation by smoothed, annealed or filtered SVI."""

from ._estimators import AnnealedLDA, FilteredLDA, SmoothedLDA, top_words

__all__ = ["AnnealedLDA", "FilteredLDA", "SmoothedLDA", "top_words"]
