"""Updates that write only the minibatch's rows and scale the others."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_svi import AnnealedLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi._store import SMALLEST_SCALE


@pytest.fixture(scope="module")
def documents():
    return make_lda_corpus(
        n_documents=1200,
        n_features=3000,
        n_topics=6,
        mean_document_length=20,
        random_state=0,
    )[0]


def fit_both(estimator, X, monkeypatch, partial=False):
    """The fit with scaled rows, and the same fit writing every row."""
    scaled = estimator.fit(X) if not partial else estimator.partial_fit(X)
    dense = type(estimator)(**estimator.get_params())
    with monkeypatch.context() as patch:
        patch.setattr(type(estimator), "_scales_rows", False)
        dense = dense.fit(X) if not partial else dense.partial_fit(X)
    return scaled, dense


@pytest.mark.parametrize(
    "params",
    [
        dict(),
        dict(learning_rate=0.5),
        dict(learning_rate="gaussian"),
        dict(learning_rate="student-t", seed_topics={0: [1, 2, 3]}),
        dict(learning_rate="adaptive"),
        dict(topic_word_prior="auto", local_step="vb"),
        dict(seed_topics={0: [1, 2, 3]}),
        dict(doc_topic_prior="auto"),
    ],
    ids=[
        "schedule",
        "constant-step",
        "gaussian-filter",
        "t-filter-seeds",
        "adaptive",
        "learned-eta",
        "seeds",
        "learned-alpha",
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scaled_rows_follow_the_update_of_every_row(
    documents, params, dtype, monkeypatch
):
    X = documents.astype(dtype)
    estimator = SmoothedLDA(
        n_components=6, batch_size=40, max_iter=3, random_state=0, **params
    )
    scaled, dense = fit_both(estimator, X, monkeypatch)
    assert scaled.n_batch_iter_ == dense.n_batch_iter_ == 90
    assert dense._natural_store.scale == 1.0
    tolerance = 1e-9 if dtype == np.float64 else 2e-3
    assert_allclose(scaled.components_, dense.components_, rtol=tolerance)
    assert_allclose(scaled._topic_totals, dense._topic_totals, rtol=tolerance)
    assert_allclose(
        scaled.transform(X[:50]), dense.transform(X[:50]), rtol=tolerance, atol=1e-6
    )
    assert scaled.score(X[:50]) == pytest.approx(dense.score(X[:50]), rel=1e-6)
    assert_allclose(scaled.topic_word_prior_, dense.topic_word_prior_, rtol=tolerance)


def test_a_scale_near_underflow_is_written_out(documents):
    # Steps of 0.5 halve the scale each update: it is written out (and
    # restarted) before it falls below SMALLEST_SCALE.
    model = SmoothedLDA(
        n_components=6, batch_size=20, learning_rate=0.5, random_state=0
    )
    scales = []
    for start in range(0, 1200, 20):
        model.partial_fit(documents[start : start + 20])
        scales.append(model._natural_store.scale)
    assert min(scales) >= SMALLEST_SCALE
    assert max(np.diff(np.log2(scales))) > 30  # restarted at least once


def test_reading_lambda_changes_nothing_and_cannot_write_it(documents):
    params = dict(n_components=6, batch_size=40, random_state=0)
    read = SmoothedLDA(**params).partial_fit(documents[:400])
    unread = SmoothedLDA(**params).partial_fit(documents[:400])
    assert read._natural_store.scale < 1.0
    components = read.components_
    with pytest.raises(ValueError, match="read-only"):
        components[0, 0] = 1.0
    read.transform(documents[:10])
    read.score(documents[:10])
    read.partial_fit(documents[400:800])
    unread.partial_fit(documents[400:800])
    assert_array_equal(read.components_, unread.components_)


def test_an_interrupted_update_puts_back_the_rows_and_the_scale(documents, monkeypatch):
    model = SmoothedLDA(n_components=6, batch_size=40, random_state=0)
    model.partial_fit(documents[:200])
    stored = model._natural_store.stored.copy()
    scale = model._natural_store.scale
    components = model.components_.copy()

    def interrupted(rho, statistic):
        raise KeyboardInterrupt

    monkeypatch.setattr(model, "_after_update", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(documents[200:400])
    assert_array_equal(model._natural_store.stored, stored)
    assert model._natural_store.scale == scale
    assert_array_equal(model.components_, components)


@pytest.mark.parametrize(
    "estimator",
    [
        AnnealedLDA(M=5, M_growth=0),
        SmoothedLDA(L=4, learning_rate=0.3),
        SmoothedLDA(learning_rate=1.0),
    ],
    ids=["negative-weights", "window", "step-one"],
)
def test_updates_that_read_or_move_every_row_write_every_row(documents, estimator):
    model = estimator.set_params(n_components=6, batch_size=40, random_state=0)
    model.partial_fit(documents[:400])
    assert model._natural_store.scale == 1.0
