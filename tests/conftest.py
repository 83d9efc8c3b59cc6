import os
import signal

# scikit-learn's check that array API dispatch leaves NumPy results unchanged
# runs only when SciPy's array API support is on, which must be set before
# SciPy is first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402

from sklearn_svi import _threads, make_lda_corpus  # noqa: E402


@pytest.fixture(scope="session")
def planted_corpus():
    """A small corpus drawn from LDA: (X, topics, doc_topic)."""
    return make_lda_corpus(
        n_documents=600,
        n_features=120,
        n_topics=4,
        mean_document_length=60,
        doc_topic_prior=0.2,
        topic_word_prior=0.1,
        random_state=0,
    )


@pytest.fixture
def svi_params():
    """Parameters of a short SVI run on ``planted_corpus``."""
    return dict(
        n_components=4,
        batch_size=50,
        total_samples=5000,
        learning_offset=5.0,
        learning_decay=0.6,
        random_state=0,
    )


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler for the test, whatever an earlier test of
    the session (a library it started) installed; put back afterwards."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def all_work_shared(monkeypatch):
    """Every job that the threads may share is shared however small, as a
    large model's and minibatch's are: the row jobs in blocks of a few
    entries, the compiled passes on a team however few their entries."""
    monkeypatch.setattr(_threads, "MIN_BLOCK_ENTRIES", 1)
    monkeypatch.setattr(_threads, "MIN_TEAM_ENTRIES", 1)
    # The passes whose sums go block by block get a block per row.
    monkeypatch.setattr(_threads, "FIXED_BLOCK_ENTRIES", 1)
    monkeypatch.setattr(_threads, "FIXED_BLOCK_MIN_ROWS", 1)
