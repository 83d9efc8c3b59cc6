"""Word counts for topic models: hashed counts of an open vocabulary."""

from ._word_sketch import WordSketch

__all__ = ["WordSketch"]
