"""Held-out fit against CPU time: our local steps, scikit-learn, gensim and tomotopy.

A user picks a topic-model library by the quality it reaches in the time
they have. Every library here fits the same training documents with the
same number of topics and the same priors alpha = eta = 1/K (gensim, and
our estimators where the label says so, learn both from there, ``"auto"``),
on one thread, and is stopped at checkpoints:
the online methods after every quarter of an epoch of the same shuffled
documents, tomotopy's collapsed Gibbs sampler after 1, 2, 5, 10, 20, ...
sweeps. Only the training calls are timed (CPU seconds).

At each checkpoint the topics are scored by one held-out procedure, the
same for every library: each topic's word distribution is its normalised
parameters (lambda for the variational methods, the smoothed counts for
the sampler); each held-out document's proportions theta are fitted to the
observed half of its words by the fixed point theta_k proportional to
alpha + sum_w n_w theta_k beta_kw / sum_j theta_j beta_jw; the score is the
per-word log probability of the other half, sum_w n_w log sum_k theta_k
beta_kw (document completion, as in the papers). The held-out documents and
their halves are those of ``bench_scale.py``.

The first table gives each model's score at fixed CPU budgets, from its
last checkpoint within the budget (mean ± standard deviation over seeds);
the second, the first seed's curve.

Run ``python benchmarks/bench_quality.py NewsArticles --n-components 50
--batch-size 128``, ``python benchmarks/bench_quality.py healthtweets
--n-components 50`` or ``python benchmarks/bench_quality.py PATH --column
summary`` for a TSV file of texts. Needs gensim and tomotopy
(``pip install gensim tomotopy``).
"""

import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

from sklearn_svi import FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import log_predictive

from _common import (
    CORPUS_HELD_OUT_FRACTION,
    GensimOnlineLDA,
    argument_parser,
    completion_split,
    reshuffled,
)
from corpus import BUILT_IN_CORPORA, corpus_name, load_corpus
from tables import mean_spread, simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
CHECKPOINTS_PER_EPOCH = 4
GIBBS_SWEEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
HELD_OUT_ITERATIONS = 200


class PlugInTopics:
    """Topics of any library, with the same inference of the proportions.

    ``transform`` fits each document's proportions theta to its words by the
    EM fixed point gamma = alpha + theta (n_d / (theta beta)) beta^T with the
    normalised topics beta held fixed, ``HELD_OUT_ITERATIONS`` times from the
    uniform start, so that every library is scored by one procedure
    (:func:`sklearn_svi.metrics.log_predictive`).

    Parameters
    ----------
    topic_word : ndarray of shape (n_topics, n_features)
        Non-negative topic parameters.
    alpha : float
        The Dirichlet prior of the proportions.
    """

    def __init__(self, topic_word, alpha):
        self.components_ = topic_word
        self.alpha = alpha

    def transform(self, X):
        beta = self.components_ / self.components_.sum(axis=1, keepdims=True)
        observed = X.tocsr()
        rows = np.repeat(np.arange(observed.shape[0]), np.diff(observed.indptr))
        word_beta = beta[:, observed.indices].T
        theta = np.full((observed.shape[0], beta.shape[0]), 1.0 / beta.shape[0])
        for _ in range(HELD_OUT_ITERATIONS):
            ratio = observed.data / np.einsum("ij,ij->i", theta[rows], word_beta)
            weights = sp.csr_matrix(
                (ratio, observed.indices, observed.indptr), shape=observed.shape
            )
            gamma = self.alpha + theta * (weights @ beta.T)
            theta = gamma / gamma.sum(axis=1, keepdims=True)
        return theta


def held_out_log_predictive(topic_word, completion, alpha):
    """Per-word log probability of the predicted halves given the topics
    (:class:`PlugInTopics`)."""
    return log_predictive(PlugInTopics(topic_word, alpha), *completion)


def online_checkpoints(model, X_train, seed, max_seconds):
    """Fit an estimator with ``partial_fit`` on quarters of shuffled epochs.

    Yields the CPU seconds so far and the topic parameters after each
    quarter, until ``max_seconds`` are spent.
    """
    seconds = 0.0
    for epoch in reshuffled(X_train, seed):
        for part in np.array_split(np.arange(epoch.shape[0]), CHECKPOINTS_PER_EPOCH):
            chunk = model.prepare(epoch[part]) if hasattr(model, "prepare") else None
            start = time.process_time()
            model.partial_fit(epoch[part] if chunk is None else chunk)
            seconds += time.process_time() - start
            yield seconds, model.components_
            if seconds >= max_seconds:
                return


def gibbs_checkpoints(X_train, n_components, seed, max_seconds):
    """tomotopy's collapsed Gibbs sampler on one thread, stopped after
    ``GIBBS_SWEEPS`` sweeps until ``max_seconds`` are spent."""
    import tomotopy

    model = tomotopy.LDAModel(
        k=n_components, alpha=1.0 / n_components, eta=1.0 / n_components, seed=seed
    )
    for d in range(X_train.shape[0]):
        begin, end = X_train.indptr[d], X_train.indptr[d + 1]
        counts = X_train.data[begin:end].astype(np.intp)
        tokens = np.repeat(X_train.indices[begin:end], counts)
        if tokens.size:
            model.add_doc([str(word) for word in tokens])
    seconds, done = 0.0, 0
    for sweeps in GIBBS_SWEEPS:
        start = time.process_time()
        model.train(sweeps - done, workers=1)
        seconds += time.process_time() - start
        done = sweeps
        topic_word = np.zeros((n_components, X_train.shape[1]))
        words = [int(word) for word in model.used_vocabs]
        for k in range(n_components):
            topic_word[k, words] = model.get_topic_word_dist(k)
        yield seconds, topic_word
        if seconds >= max_seconds:
            return


def make_runs(X_train, n_components, batch_size, seed, max_seconds):
    """The checkpoint generators of the models compared, by label."""
    common = dict(
        n_components=n_components,
        batch_size=batch_size,
        total_samples=X_train.shape[0],
        random_state=seed,
    )
    learned = dict(doc_topic_prior="auto", topic_word_prior="auto")
    online = {
        "SmoothedLDA(L=1), collapsed step (default)": SmoothedLDA(L=1, **common),
        "SmoothedLDA(L=1), mean-field step": SmoothedLDA(
            L=1, local_step="vb", **common
        ),
        "SmoothedLDA(L=1), learned priors": SmoothedLDA(L=1, **learned, **common),
        "SmoothedLDA(L=1), mean-field step, learned priors": SmoothedLDA(
            L=1, local_step="vb", **learned, **common
        ),
        "FilteredLDA() default": FilteredLDA(**common),
        "scikit-learn online": LatentDirichletAllocation(
            learning_method="online", **common
        ),
        "gensim online, auto priors": GensimOnlineLDA(
            n_components=n_components,
            batch_size=batch_size,
            learning_offset=10.0,
            learning_decay=0.7,
            max_doc_update_iter=50,
            mean_change_tol=1e-3,
            n_features=X_train.shape[1],
            random_state=seed,
            learned_priors=True,
        ),
    }
    runs = {
        label: online_checkpoints(model, X_train, seed, max_seconds)
        for label, model in online.items()
    }
    runs["tomotopy collapsed Gibbs"] = gibbs_checkpoints(
        X_train, n_components, seed, max_seconds
    )
    return runs


def scored_checkpoints(checkpoints, budgets):
    """The checkpoints worth scoring: the last one before each budget and
    before each time of a geometric ladder (0.1 s, 0.15 s, ...), and the
    last one. Scoring every quarter epoch of a fast model would cost more
    than its fit."""
    marks = sorted({*budgets, *(0.1 * 1.5**n for n in range(20))})
    pending = None
    for seconds, topic_word in checkpoints:
        if pending is not None and any(pending[0] <= mark < seconds for mark in marks):
            yield pending
        pending = (seconds, topic_word.copy())
    yield pending


def score_at_budgets(curve, budgets):
    """The score of the last checkpoint within each budget (None if none)."""
    return [
        max(
            ((seconds, score) for seconds, score in curve if seconds <= budget),
            default=(None, None),
        )[1]
        for budget in budgets
    ]


def format_budgets(curves, budgets):
    """Mean ± standard deviation over seeds of the score at each budget."""
    rows = []
    for label, seeds in curves.items():
        cells = []
        for column in zip(*(score_at_budgets(curve, budgets) for curve in seeds)):
            reached = [score for score in column if score is not None]
            cells.append(
                mean_spread(reached, 3) if len(reached) == len(column) else "-"
            )
        rows.append([label, *cells])
    return simple_table(["Model", *(f"{budget:g} s" for budget in budgets)], rows)


def format_curves(curves):
    """The first seed's checkpoints: CPU seconds and score."""
    rows = [
        [label, "  ".join(f"{seconds:.1f}s:{score:.3f}" for seconds, score in seeds[0])]
        for label, seeds in curves.items()
    ]
    return simple_table(["Model", "CPU s : held-out log predictive"], rows)


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument(
        "corpus", help=f"a text file, or one of {', '.join(BUILT_IN_CORPORA)}"
    )
    parser.add_argument("--column", help="the column of texts of a TSV file")
    parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument("--n-components", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budgets", type=float, nargs="+", default=[1.0, 5.0, 20.0])
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    X = load_corpus(args.corpus, args.column, args.n_features)
    X_train, completion = completion_split(X, CORPUS_HELD_OUT_FRACTION, rng)
    alpha = 1.0 / args.n_components
    name = corpus_name(args.corpus)
    header = (
        f"{name}: {X_train.shape[0]} training documents "
        f"({X_train.sum() / X_train.shape[0]:.1f} words each), {X.shape[1]} words, "
        f"{completion.predicted.shape[0]} held out; K={args.n_components}, "
        f"minibatches of {args.batch_size}, {args.seeds} seeds, one thread"
    )
    print(header, flush=True)

    curves = {}
    for seed in range(args.seeds):
        runs = make_runs(
            X_train,
            args.n_components,
            args.batch_size,
            seed,
            max(args.budgets) * 1.05,
        )
        for label, checkpoints in runs.items():
            with threadpool_limits(limits=1):
                curve = [
                    (seconds, held_out_log_predictive(topic_word, completion, alpha))
                    for seconds, topic_word in scored_checkpoints(
                        checkpoints, args.budgets
                    )
                ]
            curves.setdefault(label, []).append(curve)
            print(f"seed {seed} {label}: {curve[-1][1]:.4f} ({curve[-1][0]:.1f} s)")

    budgets = format_budgets(curves, args.budgets)
    detail = format_curves(curves)
    print(budgets)
    print(detail)
    write_results(
        RESULTS_DIR / f"quality_{name}.rst",
        [
            header + "; held-out per-word log predictive at each CPU budget.",
            budgets,
            "Checkpoints of the first seed:",
            detail,
        ],
    )


if __name__ == "__main__":
    main()
