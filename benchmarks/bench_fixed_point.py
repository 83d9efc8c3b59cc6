"""Full-batch updates started from the sampler's topics: does a local step keep them?

tomotopy's collapsed Gibbs sampler (fixed priors alpha = eta = 1/K) runs
for a CPU budget on one thread; its topic-word counts plus eta then become
the lambda of ``SmoothedLDA``, and full-batch updates (every training
document, step size 1: the iteration whose fixed point the online updates
approach) run from there, once with the CVB0 step for every document and
once with the sampled step. Each step is scored by the same plug-in
document completion as ``bench_quality.py``. Where the score falls from
the sampler's, the local step's fixed point near the sampler's topics is
below them, and no schedule of the online updates with that step can reach
the sampler's score.

Run ``python benchmarks/bench_fixed_point.py CORPUS [--column summary]``
(a TSV file of texts, or NewsArticles / healthtweets). Needs tomotopy.
"""

import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_svi import SmoothedLDA
from sklearn_svi._mechanisms import ConstantStepSize

from _common import CORPUS_HELD_OUT_FRACTION, completion_split, corpus_parser
from bench_quality import TomotopyLDA, held_out_log_predictive
from corpus import corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def sampler_counts(sampler, n_features):
    """The sampler's topic-word counts n_kw, over all the columns."""
    model = sampler.model
    words = [int(word) for word in model.used_vocabs]
    eta = model.eta
    totals = np.asarray(model.get_count_by_topics(), dtype=np.float64)
    counts = np.zeros((model.k, n_features))
    for k in range(model.k):
        smoothed = np.asarray(model.get_topic_word_dist(k))
        # The distribution is (n_kw + eta) / (n_k + V eta) over used words.
        counts[k, words] = smoothed * (totals[k] + len(words) * eta) - eta
    return np.maximum(counts, 0.0)


def batch_steps(topics, X_train, completion, local_step, args):
    """Rows of ``args.steps`` full-batch updates with ``local_step`` from
    the topic-word parameters ``topics``, each timed and scored."""
    n_documents, K = X_train.shape[0], args.n_components
    model = SmoothedLDA(
        n_components=K,
        batch_size=n_documents,
        total_samples=n_documents,
        local_step=local_step,
        random_state=args.seed,
    ).partial_fit(X_train[:1])
    model._natural = np.ascontiguousarray(topics.T, dtype=model._natural.dtype)
    model._natural_updated(model._natural_store.totals())
    model._update_state.step_size = ConstantStepSize(1.0)
    rows = []
    for step in range(1, args.steps + 1):
        started = time.process_time()
        model.partial_fit(X_train)
        spent = time.process_time() - started
        score = held_out_log_predictive(model.components_, completion, 1.0 / K)
        rows.append(
            [f"then batch {local_step} step {step}", f"{spent:.1f}", f"{score:.4f}"]
        )
        print(*rows[-1], flush=True)
    return rows


def main(argv=None):
    parser = corpus_parser(__doc__)
    parser.add_argument("--budget", type=float, default=300.0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X = load_corpus(args.corpus, args.column, args.n_features)
    X_train, completion = completion_split(
        X, CORPUS_HELD_OUT_FRACTION, np.random.default_rng(0)
    )
    n_documents, K = X_train.shape[0], args.n_components
    alpha = eta = 1.0 / K
    rows = []
    with threadpool_limits(limits=1):
        sampler = TomotopyLDA(X_train, K, args.seed, optim_interval=0)
        cpu = 0.0
        while cpu < args.budget:
            started = time.process_time()
            sampler.train(10)
            cpu += time.process_time() - started
        topics = eta + sampler_counts(sampler, X_train.shape[1])
        rows.append(
            [
                "tomotopy, fixed priors",
                f"{cpu:.0f}",
                f"{held_out_log_predictive(topics, completion, alpha):.4f}",
            ]
        )
        print(*rows[-1], flush=True)
        for local_step in ("cvb0", "gibbs"):
            rows += batch_steps(topics, X_train, completion, local_step, args)
    header = (
        f"{corpus_name(args.corpus)}: {n_documents} training documents, K={K}, "
        f"seed {args.seed}, one thread; held-out per-word log predictive "
        "(plug-in document completion, as bench_quality.py)"
    )
    table = simple_table(["fit", "CPU s", "held-out"], rows)
    print(table)
    write_results(
        RESULTS_DIR / f"fixed_point_{corpus_name(args.corpus)}.rst", [header, table]
    )


if __name__ == "__main__":
    main()
