"""A demonstration on a stream of documents whose topics change half-way."""

import time

import numpy as np

from ._datasets import make_lda_corpus, match_topics
from .lda import AnnealedLDA, FilteredLDA, SmoothedLDA
from .metrics import log_predictive, split_tokens

N_TOPICS = 10
N_DOCUMENTS = 20_000
BATCH_SIZE = 100
HELD_OUT = 2_000
PLAIN = "SmoothedLDA(), plain SVI"
FILTERED = "FilteredLDA()"


def _draw_half(seed):
    """One half of the stream: documents, the planted topics, held-out halves."""
    X, topics, _ = make_lda_corpus(
        n_documents=N_DOCUMENTS,
        n_features=500,
        n_topics=N_TOPICS,
        mean_document_length=50,
        doc_topic_prior=0.1,
        topic_word_prior=0.05,
        random_state=seed,
    )
    completion = split_tokens(X[:HELD_OUT], random_state=np.random.default_rng(seed))
    return X[HELD_OUT:], topics, completion


def _models(seed):
    """Each estimator with its defaults, on the stream's minibatches."""
    common = dict(
        n_components=N_TOPICS,
        batch_size=BATCH_SIZE,
        total_samples=N_DOCUMENTS - HELD_OUT,
        random_state=seed,
    )
    return {
        PLAIN: SmoothedLDA(**common),
        "AnnealedLDA()": AnnealedLDA(**common),
        FILTERED: FilteredLDA(**common),
    }


def run_demo(seed=0):
    """Fit each estimator to a stream whose topics change, and compare.

    The stream is two corpora drawn from LDA with different planted topics,
    one after the other, fed to ``partial_fit``. Every estimator runs with
    its defaults on the same minibatches. After each half, the held-out fit
    on that half's topics is measured by document completion: the per-word
    log predictive probability of half of each held-out document's words
    given the other half. The Robbins-Monro step of plain SVI has decayed by
    the time the topics change; the step of FilteredLDA, learned from the
    noise of the updates, rises again.

    Parameters
    ----------
    seed : int, default=0
        Seed of the corpora and of the fits.
    """
    first, _, first_completion = _draw_half(seed)
    second, second_topics, second_completion = _draw_half(seed + 1)
    n_updates = -(-first.shape[0] // BATCH_SIZE)
    print(
        f"A stream of {2 * first.shape[0]} documents drawn from LDA, "
        f"{first.shape[1]} words, {N_TOPICS} topics,\nin minibatches of "
        f"{BATCH_SIZE}; after {n_updates} updates the topics change for "
        f"new ones.\nEach estimator runs with its defaults. Held-out fit: "
        f"log probability per word of\nhalf of each held-out document given "
        f"the other half (higher is better).\n"
    )
    header = (
        f"{'model':<28}{'fit, topics 1':>14}{'fit, topics 2':>14}"
        f"{'step before':>12}{'step after':>12}{'seconds':>9}"
    )
    print(header)
    print("-" * len(header))
    results = {}
    for name, model in _models(seed).items():
        start = time.perf_counter()
        model.partial_fit(first)
        before = log_predictive(model, *first_completion)
        model.partial_fit(second)
        seconds = time.perf_counter() - start
        after = log_predictive(model, *second_completion)
        steps = model.step_size_history_["step_size"]
        step_before, step_after = steps[n_updates - 1], max(steps[n_updates:])
        results[name] = (model, before, after, step_before, step_after)
        print(
            f"{name:<28}{before:>14.4f}{after:>14.4f}"
            f"{step_before:>12.4f}{step_after:>12.4f}{seconds:>9.2f}"
        )
    print("(step before: the last step on topics 1; step after: the largest on")
    print("topics 2)\n")
    _conclude(results, second_topics)


def _conclude(results, planted):
    """Say what the table shows, from its own numbers."""
    filtered, filtered_first, filtered_second, step_before, step_after = results[
        FILTERED
    ]
    plain, plain_first, plain_second, plain_step, _ = results[PLAIN]
    print(
        f"When the topics changed, plain SVI's Robbins-Monro step was "
        f"{plain_step:.4f}\nand could only fall further. FilteredLDA's step "
        f"went from {step_before:.4f} to\n{step_after:.4f}: the new minibatches "
        f"disagreed with its topics more than their\nnoise explains, so it "
        f"trusted them more."
    )
    print(
        f"On the new topics it predicts held-out words\n"
        f"{_compare(filtered_second, plain_second)} plain SVI; on the first, "
        f"stable half it was\n{_compare(filtered_first, plain_first)} it."
    )
    print(
        f"Probability mass its topics share with the new planted ones:"
        f"\n{_mean_match(filtered, planted):.2f} for FilteredLDA, "
        f"{_mean_match(plain, planted):.2f} for plain SVI (1 is identical)."
    )


def _compare(score, reference):
    """``score`` against ``reference`` in words: "0.123 nats per word better than"."""
    difference = score - reference
    direction = "better" if difference > 0 else "worse"
    return f"{abs(difference):.3f} nats per word {direction} than"


def _mean_match(model, planted):
    """Mean overlap of the planted topics with the model's topics paired with them."""
    return float(match_topics(model.components_, planted)[2].mean())
