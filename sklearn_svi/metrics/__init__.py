"""Metrics of topic models and recommenders.

Document completion (:func:`completion_score`) is the measure of the papers
the package implements; coherence and diversity judge the topics' top
words; alignment and stability compare the topics of two fits; precision,
recall and NDCG at k judge a recommender's top items
(:func:`ranking_score`). Each has a scorer form for ``GridSearchCV``.
:func:`drift_alarms` reads a filter's step sizes as a signal that a stream
changed.
"""

from ._coherence import (
    coherence,
    coherence_scorer,
    diversity_scorer,
    top_word_indices,
    topic_diversity,
)
from ._completion import (
    TokenSplit,
    completion_score,
    log_predictive,
    split_tokens,
)
from ._drift import drift_alarms
from ._ranking import ranking_score, ranking_scorer
from ._stability import (
    TopicAlignment,
    seed_stability,
    stability_scorer,
    topic_alignment,
)

__all__ = [
    "TokenSplit",
    "TopicAlignment",
    "coherence",
    "coherence_scorer",
    "completion_score",
    "diversity_scorer",
    "drift_alarms",
    "log_predictive",
    "ranking_score",
    "ranking_scorer",
    "seed_stability",
    "split_tokens",
    "stability_scorer",
    "top_word_indices",
    "topic_alignment",
    "topic_diversity",
]
