"""The drift signal read from a filter's step sizes."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_svi import FilteredLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi.metrics import drift_alarms


@pytest.fixture(scope="module")
def changing_stream():
    """Documents of one set of topics, then of another: the change comes
    after update 100 in minibatches of 64."""
    parts = [
        make_lda_corpus(
            n_documents=6400, n_features=300, n_topics=8, random_state=seed
        )[0]
        for seed in (0, 1)
    ]
    return sp.vstack(parts).tocsr(), 100


def stream(model, X, batch_size=64):
    for start in range(0, X.shape[0], batch_size):
        model.partial_fit(X[start : start + batch_size])
    return model


@pytest.mark.parametrize("learning_rate", ["gaussian", "student-t", "adaptive"])
def test_the_signal_fires_soon_after_the_change_and_not_before(
    changing_stream, learning_rate
):
    X, change = changing_stream
    model = stream(
        FilteredLDA(n_components=8, learning_rate=learning_rate, random_state=0), X
    )
    alarms = drift_alarms(model)
    assert len(alarms) > 0
    assert np.all(alarms > change)
    assert alarms[0] - change <= 15


def test_a_schedule_never_fires(changing_stream):
    X, _ = changing_stream
    model = stream(SmoothedLDA(n_components=8, random_state=0), X)
    assert len(drift_alarms(model, ratio=1.0)) == 0
    assert len(drift_alarms(model, ratio=0.999, warm_up=0)) == 1


def test_the_rule_counts_raised_steps_in_a_row(changing_stream):
    X, change = changing_stream
    model = stream(FilteredLDA(n_components=8, random_state=0), X)
    history = model.step_size_history_
    updates = np.array(history["n_batch_iter"])
    schedule = (model.learning_offset + updates) ** -model.learning_decay
    raised = np.array(history["step_size"]) >= 4.0 * schedule
    for alarm in drift_alarms(model, consecutive=2, warm_up=0):
        position = alarm - 1
        assert raised[position] and raised[position - 1]
        assert position < 2 or not raised[position - 2]


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(ratio=0), "ratio"),
        (dict(consecutive=0), "consecutive"),
        (dict(warm_up=-1), "warm_up"),
    ],
)
def test_bad_settings_are_refused(changing_stream, params, message):
    model = FilteredLDA(n_components=8, random_state=0).partial_fit(
        changing_stream[0][:64]
    )
    with pytest.raises(ValueError, match=message):
        drift_alarms(model, **params)
