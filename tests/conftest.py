import pytest

from sklearn_svi import make_lda_corpus


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
