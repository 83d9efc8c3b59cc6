"""Tokens per CPU second of a default pass, at 100 and 1,000 topics.

A pass of the default ``SmoothedLDA()`` (its own minibatches of 128
documents, the sampled step for short documents and the collapsed one for
long ones) over the first ``--n-documents`` documents of a corpus, on one
thread, from a new model: the initial topics, the local steps and the
updates, the work that a first epoch costs. Beside it, scikit-learn's online
``LatentDirichletAllocation`` and gensim's online ``LdaModel`` make one pass
over the same documents in minibatches of the same size, with alpha = eta =
1/K. Each fit is timed ``--repeats`` times in CPU seconds, the models in
turn, and the table gives the median, the tokens per second and the ratio of
each anchor's time to ours; a last line gives how much longer our pass takes
at the largest K than at the smallest.

Run ``python benchmarks/bench_pass_cost.py healthtweets``, ``python
benchmarks/bench_pass_cost.py NewsArticles --n-documents 3000`` or ``python
benchmarks/bench_pass_cost.py PATH --column summary`` for a TSV file of
texts; ``--no-anchors`` times ours alone.
"""

import time
from pathlib import Path

import numpy as np
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

from sklearn_svi import SmoothedLDA

from _common import GensimOnlineLDA, corpus_parser
from corpus import corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
BATCH_SIZE = SmoothedLDA().batch_size


def ours(X, n_components, documents):
    SmoothedLDA(n_components=n_components, max_iter=1, random_state=0).fit(X)


def scikit_learn(X, n_components, documents):
    LatentDirichletAllocation(
        n_components=n_components,
        learning_method="online",
        batch_size=BATCH_SIZE,
        max_iter=1,
        doc_topic_prior=1.0 / n_components,
        topic_word_prior=1.0 / n_components,
        random_state=0,
    ).fit(X)


def gensim(X, n_components, documents):
    GensimOnlineLDA(
        n_components=n_components,
        batch_size=BATCH_SIZE,
        learning_offset=10.0,
        learning_decay=0.7,
        max_doc_update_iter=100,
        mean_change_tol=1e-3,
        n_features=X.shape[1],
        random_state=0,
    ).partial_fit(documents)


MODELS = {
    "SmoothedLDA() default": ours,
    "scikit-learn online": scikit_learn,
    "gensim LdaModel online": gensim,
}


def pass_seconds(run_pass, X, n_components, documents):
    """The CPU seconds of one pass of a new model: its initial topics
    included, gensim's documents prepared before."""
    started = time.process_time()
    run_pass(X, n_components, documents)
    return time.process_time() - started


def main(argv=None):
    parser = corpus_parser(__doc__)
    parser.set_defaults(n_components=None)
    parser.add_argument("--n-topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--n-documents", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-anchors", action="store_true")
    args = parser.parse_args(argv)
    X = load_corpus(args.corpus, args.column, args.n_features)[: args.n_documents]
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    n_tokens = float(X.sum())
    names = list(MODELS)[:1] if args.no_anchors else list(MODELS)
    documents = None if args.no_anchors else GensimOnlineLDA.prepare(X)
    rows, ours_seconds = [], {}
    with threadpool_limits(1):
        for n_components in args.n_topics:
            seconds = {name: [] for name in names}
            # The models in turn, so that a change of the machine's speed
            # falls on all of them.
            for _ in range(args.repeats):
                for name in names:
                    seconds[name].append(
                        pass_seconds(MODELS[name], X, n_components, documents)
                    )
            reference = float(np.median(seconds[names[0]]))
            ours_seconds[n_components] = reference
            for name in names:
                median = float(np.median(seconds[name]))
                rows.append(
                    [
                        name,
                        str(n_components),
                        f"{median:.2f}",
                        f"{n_tokens / median / 1e6:.3f}",
                        f"{median / reference:.2f}",
                    ]
                )
    table = simple_table(["Model", "K", "CPU s per pass", "M tokens/s", "× ours"], rows)
    smallest, largest = min(args.n_topics), max(args.n_topics)
    header = (
        f"{corpus_name(args.corpus)}: {X.shape[0]} documents, {X.shape[1]} words, "
        f"{n_tokens:.0f} tokens; one pass in minibatches of {BATCH_SIZE} from a new "
        f"model, one thread, median of {args.repeats}"
    )
    footer = (
        f"Our pass at K={largest} takes "
        f"{ours_seconds[largest] / ours_seconds[smallest]:.1f} times as long as "
        f"at K={smallest}."
    )
    write_results(
        RESULTS_DIR / f"pass_cost_{corpus_name(args.corpus)}.rst",
        [header, table, footer],
    )


if __name__ == "__main__":
    main()
