"""Seeded topics on planted documents: does a seed draw its topic, at what cost?

Documents are drawn from LDA with planted topics. Each estimator's default
is fitted without seeds; three planted topics that none of the fitted
topics 0, 1 and 2 found are then chosen, and the same estimator is fitted
again with ``seed_topics`` giving topics 0, 1 and 2 five of the top words
of one of them each, at several ``seed_strength`` values. The table gives,
per estimator and strength, how many of the seeded topic's ten most
probable words are among its planted topic's ten (10 is a perfect match,
and the unseeded row shows what fitted topics 0 to 2 share with the same
planted topics), and the held-out log predictive probability per word
(document completion) minus the unseeded fit's. Every fit sees the same
documents; the mean and standard deviation are over the seeds of the
corpus and the fit.

Run ``python benchmarks/bench_seeded_topics.py``.
"""

from pathlib import Path

import numpy as np

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi.metrics import log_predictive

from _common import argument_parser, completion_split
from tables import mean_spread, report, simple_table

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "seeded_topics.rst"
ESTIMATORS = {
    "SmoothedLDA()": SmoothedLDA,
    "AnnealedLDA()": AnnealedLDA,
    "FilteredLDA()": FilteredLDA,
}
SEEDED = (0, 1, 2)
SEED_WORDS = 5


def shared_top_words(components, topic, planted_words, n_words=10):
    """How many of a fitted topic's top words are among a planted topic's."""
    fitted = np.argsort(-components[topic])[:n_words]
    return len(set(fitted) & set(planted_words[:n_words]))


def missed_planted_topics(components, ranked_words):
    """The planted topics that none of the fitted ``SEEDED`` topics found
    (fewer than half of the top ten words shared)."""
    return [
        planted
        for planted, words in enumerate(ranked_words)
        if max(shared_top_words(components, k, words) for k in SEEDED) < 5
    ]


def compare(args, seed):
    """Every estimator unseeded and seeded at each strength, on one corpus.

    Returns
    -------
    rows : dict of (str, float or None) to tuple
        For each estimator and strength (None: unseeded), the mean number of
        top words the seeded topics share with their planted topics, and
        the held-out log predictive probability per word.
    """
    X, topics, _ = make_lda_corpus(
        n_documents=args.documents,
        n_features=args.features,
        n_topics=args.topics,
        mean_document_length=args.length,
        random_state=seed,
    )
    ranked_words = np.argsort(-topics, axis=1)
    rng = np.random.default_rng(seed)
    X_train, completion = completion_split(X.astype(np.float64), 0.1, rng)
    params = dict(
        n_components=args.topics, batch_size=args.batch_size, max_iter=args.epochs
    )
    results = {}
    for name, estimator in ESTIMATORS.items():
        unseeded = estimator(random_state=seed, **params).fit(X_train)
        missed = missed_planted_topics(unseeded.components_, ranked_words)[
            : len(SEEDED)
        ]
        pairs = list(zip(SEEDED, missed))
        results[name, None] = (
            np.mean(
                [
                    shared_top_words(unseeded.components_, k, ranked_words[j])
                    for k, j in pairs
                ]
            ),
            log_predictive(unseeded, *completion),
        )
        seeds = {k: ranked_words[j, :SEED_WORDS].tolist() for k, j in pairs}
        for strength in args.strengths:
            seeded = estimator(
                seed_topics=seeds, seed_strength=strength, random_state=seed, **params
            ).fit(X_train)
            results[name, strength] = (
                np.mean(
                    [
                        shared_top_words(seeded.components_, k, ranked_words[j])
                        for k, j in pairs
                    ]
                ),
                log_predictive(seeded, *completion),
            )
            print(
                f"seed {seed}, {name}, strength {strength}: {results[name, strength]}"
            )
    return results


def format_table(runs):
    """The runs of :func:`compare`, mean ± standard deviation over seeds."""
    header = ["Estimator", "seed_strength", "Shared top words", "Log pred. change"]
    rows = []
    for key in runs[0]:
        name, strength = key
        shared = [run[key][0] for run in runs]
        change = [run[key][1] - run[name, None][1] for run in runs]
        rows.append(
            [
                name,
                "no seeds" if strength is None else f"{strength:g}",
                mean_spread(shared, 1),
                "" if strength is None else mean_spread(change, 4, "+"),
            ]
        )
    return simple_table(header, rows)


def parse_args(argv):
    """The command-line options; ``argv=None`` reads ``sys.argv``."""
    parser = argument_parser(__doc__)
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=2_000)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--length", type=float, default=50.0)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--strengths", type=float, nargs="+", default=[0.001, 0.01, 0.05, 0.25]
    )
    parser.add_argument("--seeds", type=int, default=3)
    return parser.parse_args(argv)


def main(argv=None):
    """Run the comparison, print the table and write it."""
    args = parse_args(argv)
    runs = [compare(args, seed) for seed in range(args.seeds)]
    settings = (
        f"{args.documents:,} documents of {args.topics} planted topics "
        f"(make_lda_corpus, {args.features:,} words, {args.length:g} tokens on "
        f"average), 10% held out; K={args.topics}, minibatches of "
        f"{args.batch_size}, {args.epochs} epochs; topics 0, 1 and 2 seeded "
        f"with {SEED_WORDS} words each of three planted topics that the "
        f"unseeded fit missed; {args.seeds} seeds (mean ± standard deviation)."
    )
    report(RESULTS_PATH, settings, format_table(runs))


if __name__ == "__main__":
    main()
