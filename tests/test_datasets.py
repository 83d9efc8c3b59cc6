"""The package's data sets: the standard library's docstrings, planted corpora."""

import tracemalloc

import numpy as np
import pytest

from sklearn_svi import load_python_docstrings, make_lda_corpus


def test_python_docstrings_are_a_labelled_corpus_of_long_texts():
    texts, modules = load_python_docstrings(min_words=30)
    assert len(texts) == len(modules) > 1000
    assert min(len(text.split()) for text in texts) >= 30
    assert {"email", "asyncio", "logging"} <= set(modules)


def test_documents_are_drawn_from_given_topics():
    # Two topics on disjoint halves of the vocabulary: every word of every
    # document comes from the words the topics give weight to.
    topics = np.zeros((2, 40))
    topics[0, :10] = 1.0
    topics[1, 20:25] = 3.0
    X, drawn, proportions = make_lda_corpus(300, topics=topics, random_state=0)
    assert X.shape == (300, 40) and proportions.shape == (300, 2)
    np.testing.assert_allclose(drawn, topics / topics.sum(axis=1, keepdims=True))
    used = np.asarray(X.sum(axis=0)).ravel() > 0
    assert not used[10:20].any() and not used[25:].any()
    assert used[:10].all() and used[20:25].all()
    with pytest.raises(ValueError, match="positive sum"):
        make_lda_corpus(5, topics=np.zeros((2, 4)))
    with pytest.raises(ValueError, match="Negative values"):
        make_lda_corpus(5, topics=-np.ones((2, 4)))


def test_a_large_corpus_is_drawn_without_a_dense_array_of_it():
    """20,000 documents of 5,000 words: a dense array of their counts or
    word probabilities would take 800 MB."""
    tracemalloc.start()
    try:
        X, _, _ = make_lda_corpus(
            n_documents=20_000,
            n_features=5_000,
            n_topics=10,
            mean_document_length=20,
            random_state=0,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.shape == (20_000, 5_000)
    assert peak < 100 * 2**20
