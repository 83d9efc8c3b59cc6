"""Coherence, diversity, alignment and stability of topics."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_svi import SmoothedLDA, make_lda_corpus
from sklearn_svi.metrics import (
    coherence,
    coherence_scorer,
    completion_score,
    diversity_scorer,
    seed_stability,
    stability_scorer,
    top_word_indices,
    topic_alignment,
    topic_diversity,
)


class Topics:
    """A fitted topic model reduced to its topics."""

    def __init__(self, components):
        self.components_ = np.asarray(components, dtype=float)


# Six documents over four words; word 3 occurs nowhere.
DOCUMENTS = sp.csr_matrix(
    np.array(
        [
            [2, 1, 0, 0],
            [1, 0, 1, 0],
            [0, 3, 1, 0],
            [1, 1, 1, 0],
            [0, 0, 2, 0],
            [0, 0, 0, 0],
        ]
    )
)
# Topic 0 ranks the words 0, 1, 2; topic 1 ranks them 2, 0, 1.
TOPICS = Topics([[0.5, 0.3, 0.2, 0.0], [0.3, 0.1, 0.6, 0.0]])


def by_hand(measure, order):
    """The measure of one topic written out pair by pair from the counts."""
    occurs = DOCUMENTS.toarray() > 0
    n = occurs.shape[0]

    def p(*words):
        return np.all(occurs[:, list(words)], axis=1).sum() / n

    values = []
    for i, j in itertools.permutations(range(len(order)), 2):
        w_i, w_j = order[i], order[j]
        if measure == "umass":
            if j < i:
                values.append(math.log((p(w_i, w_j) + 1e-12) / p(w_j)))
            continue
        pmi = math.log((p(w_i, w_j) + 1e-12) / (p(w_i) * p(w_j)))
        values.append(pmi if measure == "uci" else pmi / -math.log(p(w_i, w_j) + 1e-12))
    return np.mean(values)


@pytest.mark.parametrize("measure", ["npmi", "uci", "umass"])
def test_coherence_is_the_measure_written_out_pair_by_pair(measure):
    per_topic = coherence(TOPICS, DOCUMENTS, measure=measure, top_n=3, average=False)
    expected = [by_hand(measure, [0, 1, 2]), by_hand(measure, [2, 0, 1])]
    assert_allclose(per_topic, expected, rtol=1e-12)
    assert coherence(TOPICS, DOCUMENTS, measure=measure, top_n=3) == pytest.approx(
        np.mean(expected)
    )


def test_a_top_word_that_occurs_nowhere_is_a_clear_error():
    with pytest.raises(ValueError, match="Top words of topics 0, 1 occur in no"):
        coherence(TOPICS, DOCUMENTS, top_n=4)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(measure="c_v"), "measure must be one of"),
        (dict(top_n=1), "top_n must be at least 2"),
    ],
)
def test_bad_arguments_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        coherence(TOPICS, DOCUMENTS, **arguments)


def test_bad_documents_are_refused():
    with pytest.raises(ValueError, match="X has 3 features, but the topics have 4"):
        coherence(TOPICS, DOCUMENTS[:, :3], top_n=3)
    with pytest.raises(ValueError, match="Negative values"):
        coherence(TOPICS, -DOCUMENTS, top_n=3)


def test_coherence_of_a_fit_is_finite_and_npmi_is_bounded():
    X, _, _ = make_lda_corpus(n_documents=300, n_topics=5, random_state=0)
    model = SmoothedLDA(n_components=5, random_state=0).fit(X)
    for measure in ["npmi", "uci", "umass"]:
        assert np.all(np.isfinite(coherence(model, X, measure=measure, average=False)))
    npmi = coherence(model, X, average=False)
    assert np.all((npmi >= -1) & (npmi <= 1))


def test_diversity_counts_distinct_top_words():
    assert topic_diversity(TOPICS, top_n=2) == 3 / 4
    assert topic_diversity(Topics([[3, 2, 1, 0], [3, 2, 1, 0]]), top_n=3) == 1 / 2
    assert topic_diversity(Topics(np.eye(4)), top_n=1) == 1.0


def test_grid_search_over_the_number_of_topics_with_several_scorers():
    X, _, _ = make_lda_corpus(n_documents=300, n_topics=4, random_state=0)
    search = GridSearchCV(
        SmoothedLDA(max_iter=2, random_state=0),
        {"n_components": [2, 4]},
        scoring={
            "completion": completion_score,
            "coherence": coherence_scorer(),
            "diversity": diversity_scorer(top_n=10),
        },
        refit="completion",
        cv=2,
    ).fit(X)
    for name in ["completion", "coherence", "diversity"]:
        assert np.all(np.isfinite(search.cv_results_[f"mean_test_{name}"]))
    assert search.best_estimator_.n_components == search.best_params_["n_components"]


def test_coherence_of_a_pipeline_reads_its_texts():
    texts = ["apple banana apple", "banana cherry", "apple cherry banana", "cherry"]
    pipeline = make_pipeline(
        CountVectorizer(), SmoothedLDA(n_components=2, random_state=0)
    ).fit(texts)
    counts = pipeline[0].transform(texts)
    assert coherence(pipeline, texts, top_n=2) == coherence(
        pipeline[-1], counts, top_n=2
    )


def test_two_fits_with_the_same_seed_align_at_distance_zero():
    X, _, _ = make_lda_corpus(n_documents=200, n_topics=3, random_state=0)
    first = SmoothedLDA(n_components=3, random_state=0).fit(X)
    again = SmoothedLDA(n_components=3, random_state=0).fit(X)
    alignment = topic_alignment(first, again)
    assert_array_equal(alignment.index_a, alignment.index_b)
    assert_array_equal(alignment.distance, 0.0)


def test_alignment_recovers_planted_topics_in_any_order():
    X, planted, _ = make_lda_corpus(
        n_documents=1500, n_features=200, n_topics=5, random_state=0
    )
    model = SmoothedLDA(n_components=5, max_iter=10, random_state=0).fit(X)
    shuffled = planted[[3, 0, 4, 1, 2]]
    alignment = topic_alignment(model, shuffled)
    assert alignment.distance.max() < 0.35
    assert np.all(np.diff(alignment.distance) >= 0)
    # Each model topic is paired with the planted topic it was fitted to,
    # wherever that topic stands.
    direct = topic_alignment(model, planted)
    mapping = dict(zip(alignment.index_a, np.array([3, 0, 4, 1, 2])[alignment.index_b]))
    assert mapping == dict(zip(direct.index_a, direct.index_b))


def test_alignment_refuses_topics_over_other_features():
    with pytest.raises(ValueError, match="must share their features"):
        topic_alignment(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="non-negative weights"):
        topic_alignment(-np.ones((2, 3)), np.ones((2, 3)))


def test_seed_stability_scores_how_alike_seeds_are():
    X, _, _ = make_lda_corpus(
        n_documents=600, n_features=100, n_topics=3, random_state=0
    )
    stability = seed_stability(SmoothedLDA(n_components=3, max_iter=5), X, seeds=(0, 1))
    assert 0.0 < stability < 1.0
    # Fits that differ only in their seed differ: the score is below one.
    first = SmoothedLDA(n_components=3, max_iter=5, random_state=0).fit(X)
    second = SmoothedLDA(n_components=3, max_iter=5, random_state=1).fit(X)
    assert stability == pytest.approx(
        1 - topic_alignment(first, second).distance.mean()
    )
    with pytest.raises(ValueError, match="at least two different seeds"):
        seed_stability(SmoothedLDA(n_components=3), X, seeds=(0, 0))
    scorer = stability_scorer(seeds=(0, 1))
    assert scorer(SmoothedLDA(n_components=3, max_iter=5), X) == pytest.approx(
        stability
    )


def test_the_topic_word_distribution_is_the_normalised_topics():
    X, _, _ = make_lda_corpus(n_documents=100, n_topics=3, random_state=0)
    model = SmoothedLDA(n_components=3, random_state=0).fit(X)
    distribution = model.topic_word_distribution_
    assert_allclose(distribution.sum(axis=1), 1.0)
    assert_allclose(
        distribution * model.components_.sum(axis=1, keepdims=True),
        model.components_,
    )
    assert_array_equal(
        np.argsort(-distribution, axis=1, kind="stable")[:, :5],
        top_word_indices(model, 5),
    )


def test_the_coherence_scorer_can_count_in_reference_documents():
    """A fold may lack a rare top word; a reference corpus has them all."""
    scorer = coherence_scorer(top_n=3)
    fold = DOCUMENTS[[0, 4, 5]]  # word 1 occurs in document 0 only
    assert scorer(TOPICS, fold) == coherence(TOPICS, fold, top_n=3)
    with pytest.raises(ValueError, match="occur in no document"):
        scorer(TOPICS, DOCUMENTS[[4, 5]])
    referenced = coherence_scorer(top_n=3, reference=DOCUMENTS)
    assert referenced(TOPICS, DOCUMENTS[[4, 5]]) == coherence(
        TOPICS, DOCUMENTS, top_n=3
    )


def test_empty_topics_and_documents_give_finite_values_or_clear_errors():
    """An all-zero topic ranks its words by column; empty documents count."""
    empty = Topics([[0.0, 0.0, 0.0, 0.0], [0.3, 0.1, 0.6, 0.0]])
    values = coherence(empty, DOCUMENTS, top_n=3, average=False)
    assert np.all(np.isfinite(values))
    assert values[0] == coherence(TOPICS, DOCUMENTS, top_n=3, average=False)[0]
    assert topic_diversity(empty, top_n=3) == 1 / 2
    with pytest.raises(ValueError, match="each topic with some positive weight"):
        topic_alignment(empty, TOPICS)
    with pytest.raises(ValueError, match="0 sample"):
        coherence(TOPICS, DOCUMENTS[:0], top_n=3)
