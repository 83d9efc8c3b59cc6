"""TopicTimeline: topics followed slice after slice."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from sklearn_svi import SmoothedLDA, TopicTimeline, make_lda_corpus


def test_prevalence_follows_a_topic_that_fades_in():
    # Slices of two planted themes; the second theme's share grows from 0
    # to 1 over the slices, and its fitted topic's prevalence with it.
    rng = np.random.default_rng(0)
    themes = [
        make_lda_corpus(
            n_documents=2000, n_features=200, n_topics=1, random_state=seed
        )[0]
        for seed in (0, 1)
    ]
    shares = np.linspace(0.0, 1.0, 6)
    model = SmoothedLDA(n_components=2, total_samples=2400, random_state=0)
    timeline = TopicTimeline(n_words=5)
    for label, share in enumerate(shares):
        n_second = round(400 * share)
        rows = [
            themes[0][rng.choice(2000, 400 - n_second, replace=False)],
            themes[1][rng.choice(2000, n_second, replace=False)],
        ]
        X = sp.vstack(rows).tocsr()
        model.partial_fit(X)
        timeline.record(model, X, label=f"slice {label}")
    assert timeline.labels_ == [f"slice {label}" for label in range(6)]
    assert timeline.prevalence_.shape == (6, 2)
    assert_allclose(timeline.prevalence_.sum(axis=1), 1.0)
    second = np.argmax(timeline.prevalence_[-1])
    assert np.all(np.diff(timeline.prevalence_[1:, second]) > 0)
    assert timeline.top_word_indices_.shape == (6, 2, 5)
    names = np.array([f"w{index}" for index in range(200)])
    words = timeline.words(second, names)
    assert list(words) == timeline.labels_
    assert all(len(topic_words) == 5 for topic_words in words.values())


def test_a_timeline_follows_one_model():
    X = make_lda_corpus(n_documents=100, random_state=0)[0]
    timeline = TopicTimeline().record(
        SmoothedLDA(n_components=3, random_state=0).fit(X), X
    )
    assert timeline.labels_ == [0]
    with pytest.raises(ValueError, match="a timeline follows one model"):
        timeline.record(SmoothedLDA(n_components=4, random_state=0).fit(X), X)
