"""CPU time of one update: each estimator's default against plain SVI.

The mechanisms add work to each update: the smoothing window's running sum,
the annealing weights, the filter's moments. This script measures what that
work costs next to the local step, which all of them share, on the same
minibatches of a corpus: the CPU time per update of ``SmoothedLDA()``
(plain SVI, the reference, which writes only the rows of the minibatch's
words), of plain SVI writing every row of lambda, of ``FilteredLDA()``
(which observes an eighth of 50 or 100 topics) and of the filter observing
every topic, of ``AnnealedLDA()`` and
``SmoothedLDA(L=10)``, each with its defaults, of plain SVI with five seed
words for one topic (which make the prior an array of every topic and
word), and of scikit-learn's online
``LatentDirichletAllocation`` (its ``partial_fit``, the mean-field step) as
the anchor. A file corpus is read at each vocabulary size of
``--n-features``, since the work of the mechanisms that pass over all of
lambda grows with the vocabulary and that of the local step does not.

Each model runs ``--repeats`` times with one thread on the same ``--updates``
minibatches of shuffled documents (fewer when the corpus is smaller); the
table gives the median CPU time per update (the first update, which holds a
filter's start, included) and its ratio to plain SVI's. The runs of the
models alternate, so that a change of the machine's speed falls on all.

Run ``python benchmarks/bench_update_cost.py healthtweets --n-components
50 --batch-size 256`` or ``python benchmarks/bench_update_cost.py PATH
--column summary --batch-size 1024 --n-features 10000 50000``.
"""

import time
from pathlib import Path

import numpy as np
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA

from _common import EveryRowSVI, corpus_parser
from corpus import BUILT_IN_CORPORA, corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"


MODELS = {
    "SmoothedLDA(), plain SVI": lambda **common: SmoothedLDA(**common),
    "plain SVI writing every row": lambda **common: EveryRowSVI(**common),
    "FilteredLDA()": lambda **common: FilteredLDA(**common),
    "FilteredLDA(observed_components=None)": lambda **common: FilteredLDA(
        observed_components=None, **common
    ),
    "AnnealedLDA()": lambda **common: AnnealedLDA(**common),
    "SmoothedLDA(L=10)": lambda **common: SmoothedLDA(L=10, **common),
    # Seeds make eta an array of every topic and word, which the update reads.
    "SmoothedLDA(seed_topics=...)": lambda **common: SmoothedLDA(
        seed_topics={0: [0, 1, 2, 3, 4]}, **common
    ),
    "scikit-learn online": lambda n_components, batch_size, total_samples, **rest: (
        LatentDirichletAllocation(
            n_components=n_components,
            learning_method="online",
            batch_size=batch_size,
            total_samples=total_samples,
            doc_topic_prior=1.0 / n_components,
            topic_word_prior=1.0 / n_components,
            **rest,
        )
    ),
}


def update_seconds(model, minibatches):
    """CPU seconds per ``partial_fit`` of ``model`` over ``minibatches``."""
    started = time.process_time()
    for minibatch in minibatches:
        model.partial_fit(minibatch)
    return (time.process_time() - started) / len(minibatches)


def measure(X, n_components, batch_size, n_updates, repeats):
    """Median CPU seconds per update of each of ``MODELS`` on ``X``."""
    order = np.random.RandomState(0).permutation(X.shape[0])
    X = X[order[: n_updates * batch_size]]
    minibatches = [
        X[start : start + batch_size]
        for start in range(0, X.shape[0] - batch_size + 1, batch_size)
    ]
    seconds = {label: [] for label in MODELS}
    for repeat in range(repeats):
        for label, build in MODELS.items():
            model = build(
                n_components=n_components,
                batch_size=batch_size,
                total_samples=X.shape[0],
                random_state=repeat,
                n_jobs=1,
            )
            seconds[label].append(update_seconds(model, minibatches))
    medians = {label: float(np.median(values)) for label, values in seconds.items()}
    return medians, len(minibatches)


def main():
    parser = corpus_parser(__doc__, several_vocabularies=True)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--updates", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    vocabulary_sizes = [None] if args.corpus in BUILT_IN_CORPORA else args.n_features
    rows, settings = [], []
    with threadpool_limits(1):
        for n_features in vocabulary_sizes:
            X = load_corpus(args.corpus, args.column, n_features)
            seconds, n_updates = measure(
                X, args.n_components, args.batch_size, args.updates, args.repeats
            )
            settings.append(f"{X.shape[1]} words: {n_updates} updates")
            reference = seconds["SmoothedLDA(), plain SVI"]
            for label, value in seconds.items():
                rows.append(
                    [
                        f"{label}, {X.shape[1]} words",
                        f"{1e3 * value:.2f}",
                        f"{value / reference:.2f}",
                    ]
                )
    name = corpus_name(args.corpus)
    header = f"{name}: K={args.n_components}, minibatches of {args.batch_size}, "
    header += f"one thread, median of {args.repeats} runs; " + ", ".join(settings)
    table = simple_table(["Model", "ms per update", "× plain SVI"], rows)
    print(header)
    print(table)
    write_results(RESULTS_DIR / f"update_cost_{name}.rst", [header, table])


if __name__ == "__main__":
    main()
