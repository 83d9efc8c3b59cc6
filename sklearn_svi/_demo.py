"""A demonstration on a corpus drawn from LDA with planted topics."""

import time

import numpy as np

from ._datasets import make_lda_corpus, match_topics
from ._lda import SmoothedLDA, top_words

N_TOPICS = 8
N_WORDS_SHOWN = 6
# SVI converges to a local optimum that depends on its random start.
N_STARTS = 3


def _fit(L, X_train, X_test, random_state):
    """The best of ``N_STARTS`` fits by the ELBO on the training documents.

    Returns the kept model, the mean seconds of a fit, and the held-out
    bound per word of the kept model.
    """
    models, seconds = [], []
    for _ in range(N_STARTS):
        model = SmoothedLDA(
            n_components=N_TOPICS,
            L=L,
            batch_size=256,
            max_iter=10,
            learning_offset=1.0,
            learning_decay=0.5,
            random_state=random_state.randint(2**31),
        )
        start = time.perf_counter()
        models.append(model.fit(X_train))
        seconds.append(time.perf_counter() - start)
    best = max(models, key=lambda model: model.score(X_train))
    return best, float(np.mean(seconds)), -np.log(best.perplexity(X_test))


def run_demo(seed=0):
    """Fit SmoothedLDA to planted topics and print what it recovers.

    Draws a corpus from the LDA generative process, fits SmoothedLDA with
    L=10, prints each planted topic's top words beside those of the
    estimated topic paired with it, with the share of probability mass they
    have in common, and compares L=1 (plain SVI) with L=10. Each L is fitted
    from ``N_STARTS`` random starts, and the fit with the highest ELBO on the
    training documents is kept; the planted topics play no part in the
    choice.

    Parameters
    ----------
    seed : int, default=0
        Seed of the corpus and of the fits.
    """
    X, planted, _ = make_lda_corpus(
        n_documents=4000,
        n_features=500,
        n_topics=N_TOPICS,
        mean_document_length=100,
        doc_topic_prior=0.2,
        topic_word_prior=0.05,
        random_state=seed,
    )
    X_train, X_test = X[:3500], X[3500:]
    vocabulary = np.array([f"w{index:03d}" for index in range(X.shape[1])])
    print(
        f"Corpus drawn from LDA: {X.shape[0]} documents, {X.shape[1]} words, "
        f"{N_TOPICS} planted topics; 3500 to fit, 500 held out.\n"
    )

    random_state = np.random.RandomState(seed)
    results = {L: _fit(L, X_train, X_test, random_state) for L in (1, 10)}
    model = results[10][0]
    planted_index, estimated_index, overlap = match_topics(model.components_, planted)
    estimated_words = top_words(model, vocabulary, N_WORDS_SHOWN)
    planted_words = [
        vocabulary[np.argsort(-topic)[:N_WORDS_SHOWN]] for topic in planted
    ]

    print("Planted topics and the SmoothedLDA(L=10) topics paired with them")
    print("(match = probability mass the two topics share, 1 is identical):\n")
    for p, e, score in zip(planted_index, estimated_index, overlap):
        print(f"  planted {p}: {' '.join(planted_words[p])}")
        print(f"  fitted  {e}: {' '.join(estimated_words[e])}   match {score:.2f}\n")

    print("L = 1 is plain SVI; L = 10 averages the last 10 minibatch statistics.")
    print(
        f"SVI finds a local optimum that depends on its random start: each L is\n"
        f"fitted from {N_STARTS} starts, and the fit with the highest ELBO on the\n"
        f"training documents is kept.\n"
    )
    header = (
        f"{'L':>4}  {'mean match':>10}  {'held-out bound/word':>19}  {'s per fit':>9}"
    )
    print(header)
    print("-" * len(header))
    for L, (fitted, seconds, bound) in results.items():
        match = match_topics(fitted.components_, planted)[2].mean()
        print(f"{L:>4}  {match:>10.3f}  {bound:>19.4f}  {seconds:>9.2f}")
