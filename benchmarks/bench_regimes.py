"""Where each mechanism beats plain SVI: a search on real corpora.

Each of the three papers names the regime its mechanism is for. This script
runs each mechanism there, against plain SVI on the same minibatches, for
several seeds (the initial topics and the order of the documents), and
prints the held-out per-word log predictive probability by document
completion (mean ± standard deviation over seeds, and the difference from
plain SVI per seed):

- **smoothing** (Mandt & Blei): a constant step size and small minibatches,
  many noisy updates; ``L`` = 1, 10 and 30;
- **filtering** (Houlsby & Blei): a stream whose topics change, the texts of
  the corpus file followed by the healthtweets corpus, with a vocabulary
  built from both; the held-out documents are tweets;
- **annealing** (Paisley, Fazelnia & Barr): batch mode on NewsArticles,
  every update on all the documents with a step of 0.85, plain against
  annealed with M_t = 50 t; and online SVI+ with large minibatches of 1024.

Every model uses the mean-field local step (``local_step="vb"``), the
step of the papers, except the rows of the stream that say "collapsed";
the stream's Robbins-Monro schedules have scikit-learn's kappa = 0.7.

Run ``python benchmarks/bench_regimes.py PATH --column summary`` with a TSV
file of short texts (one text per line without ``--column``).
"""

import itertools
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from threadpoolctl import threadpool_limits

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi._topics import read_texts
from sklearn_svi.metrics import log_predictive

from _common import argument_parser, completion_split, reshuffled
from corpus import load_corpus, load_texts
from tables import mean_spread, simple_table, write_results

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "regimes.rst"
HELD_OUT_FRACTION = 0.05


def compare(make_models, fit, completion, n_seeds):
    """Held-out fit of each model over the seeds.

    Parameters
    ----------
    make_models : callable
        ``make_models(seed)`` returns the unfitted models by label, plain
        SVI first.
    fit : callable
        ``fit(model, seed)`` trains a model.
    completion : TokenSplit
        The held-out documents.
    n_seeds : int
        Number of seeds.

    Returns
    -------
    scores : dict of str to list of float
    """
    scores = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for seed in range(n_seeds):
            for label, model in make_models(seed).items():
                fit(model, seed)
                score = log_predictive(model, *completion)
                scores.setdefault(label, []).append(score)
                print(f"  seed {seed} {label}: {score:.4f}", flush=True)
    return scores


def format_scores(title, scores):
    """A table of the scores and of their differences from the first model."""
    reference = np.array(next(iter(scores.values())))
    rows = [
        [
            label,
            mean_spread(values, 4),
            mean_spread(np.array(values) - reference, 4, sign="+"),
        ]
        for label, values in scores.items()
    ]
    return f"{title}\n\n" + simple_table(
        ["Model", "Log pred./word", "vs first row"], rows
    )


def shuffled_passes(model, X, n_epochs, seed):
    """``partial_fit`` over ``n_epochs`` copies of ``X``, each shuffled anew."""
    for X_epoch in itertools.islice(reshuffled(X, seed), n_epochs):
        model.partial_fit(X_epoch)


def smoothing(X, n_documents, n_seeds):
    """Constant step size 0.05, minibatches of 64, one epoch, L = 1, 10, 30."""
    rng = np.random.default_rng(0)
    X = X[rng.permutation(X.shape[0])[:n_documents]]
    X_train, completion = completion_split(X, HELD_OUT_FRACTION, rng)

    def make_models(seed):
        common = dict(
            local_step="vb",
            n_components=100,
            learning_rate=0.05,
            batch_size=64,
            total_samples=X_train.shape[0],
            random_state=seed,
        )
        return {f"SmoothedLDA L={L}": SmoothedLDA(L=L, **common) for L in (1, 10, 30)}

    def fit(model, seed):
        shuffled_passes(model, X_train, 1, seed)

    scores = compare(make_models, fit, completion, n_seeds)
    return format_scores(
        f"Smoothing: {X_train.shape[0]} documents, K=100, minibatches of 64, "
        f"constant step 0.05, one epoch ({-(-X_train.shape[0] // 64)} updates).",
        scores,
    )


def filtering(texts, n_documents, n_seeds):
    """A stream of the file's texts, then tweets; held-out tweets."""
    rng = np.random.default_rng(0)
    tweets = load_texts("healthtweets")
    first = [texts[i] for i in rng.permutation(len(texts))[:n_documents]]
    second = [tweets[i] for i in rng.permutation(len(tweets))[:n_documents]]
    vectorizer = CountVectorizer(stop_words="english", max_features=10_000)
    X = vectorizer.fit_transform(first + second).astype(np.float64)
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    is_first = np.arange(X.shape[0]) < len(first)
    X_first, X_second = X[keep & is_first], X[keep & ~is_first]
    X_second, completion = completion_split(X_second, HELD_OUT_FRACTION, rng)
    n_total = X_first.shape[0] + X_second.shape[0]

    def make_models(seed):
        common = dict(
            local_step="vb",
            n_components=50,
            batch_size=256,
            total_samples=n_total,
            learning_decay=0.7,
            random_state=seed,
        )
        collapsed = dict(common, local_step="cvb0")
        adaptive = dict(common, learning_rate="adaptive")
        return {
            "plain SVI: SmoothedLDA(L=1)": SmoothedLDA(L=1, **common),
            "FilteredLDA adaptive": FilteredLDA(**adaptive),
            "FilteredLDA Student's t": FilteredLDA(learning_rate="student-t", **common),
            "FilteredLDA adaptive, unbounded": FilteredLDA(
                min_step_size=None, **adaptive
            ),
            "SmoothedLDA() default": SmoothedLDA(**common),
            "plain SVI, collapsed step": SmoothedLDA(L=1, **collapsed),
            "FilteredLDA adaptive, collapsed step": FilteredLDA(
                **dict(adaptive, local_step="cvb0")
            ),
            "FilteredLDA adaptive, collapsed, unbounded": FilteredLDA(
                min_step_size=None, **dict(adaptive, local_step="cvb0")
            ),
        }

    def fit(model, seed):
        shuffled_passes(model, X_first, 1, seed)
        shuffled_passes(model, X_second, 1, seed)

    scores = compare(make_models, fit, completion, n_seeds)
    return format_scores(
        f"Filtering: {X_first.shape[0]} texts of the file, then "
        f"{X_second.shape[0]} tweets, minibatches of 256, K=50; held-out tweets.",
        scores,
    )


def annealing(n_seeds):
    """Batch mode with a step of 0.85, and online SVI+ with minibatches of 1024."""
    X = load_corpus("NewsArticles", None, None)
    X_train, completion = completion_split(
        X, HELD_OUT_FRACTION, np.random.default_rng(0)
    )
    n_train = X_train.shape[0]

    def batch_models(seed):
        common = dict(
            local_step="vb",
            n_components=50,
            learning_rate=0.85,
            batch_size=n_train,
            max_iter=100,
            perp_tol=0.0,
            random_state=seed,
        )
        return {
            "batch VB, step 0.85": SmoothedLDA(L=1, **common),
            "batch SVI+, M_t=50t": AnnealedLDA(M=50, M_growth=50, **common),
        }

    def batch_fit(model, _):
        model.fit(X_train)

    batch = compare(batch_models, batch_fit, completion, n_seeds)

    def online_models(seed):
        common = dict(
            local_step="vb",
            n_components=50,
            batch_size=1024,
            total_samples=n_train,
            random_state=seed,
        )
        return {
            "plain SVI, minibatches of 1024": SmoothedLDA(L=1, **common),
            "SVI+ M=256, M_growth=20": AnnealedLDA(M=256, M_growth=20, **common),
            "SVI+ M_t=64t": AnnealedLDA(M=64, M_growth=64.0, **common),
        }

    def online_fit(model, seed):
        shuffled_passes(model, X_train, 20, seed)

    online = compare(online_models, online_fit, completion, n_seeds)
    return [
        format_scores(
            f"Annealing, batch mode: NewsArticles, {n_train} documents, K=50, "
            f"100 updates on all of them.",
            batch,
        ),
        format_scores(
            "Annealing, online: NewsArticles, minibatches of 1024, 20 epochs "
            f"({20 * -(-n_train // 1024)} updates).",
            online,
        ),
    ]


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("corpus", help="a text file of short texts")
    parser.add_argument("--column", help="the column of texts of a TSV file")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-documents", type=int, default=60_000)
    args = parser.parse_args(argv)

    texts = read_texts(args.corpus, args.column)
    X = load_corpus(args.corpus, args.column, 10_000)
    name = Path(args.corpus).stem
    sections = []
    for title, run in [
        (f"smoothing on {name}", lambda: [smoothing(X, args.n_documents, args.seeds)]),
        (
            "smoothing on healthtweets",
            lambda: [
                smoothing(
                    load_corpus("healthtweets", None, None),
                    args.n_documents,
                    args.seeds,
                )
            ],
        ),
        ("filtering", lambda: [filtering(texts, args.n_documents // 2, args.seeds)]),
        ("annealing", lambda: annealing(args.seeds)),
    ]:
        print(title, flush=True)
        for section in run():
            print(section, flush=True)
            sections.append(section)
    write_results(RESULTS_PATH, sections)


if __name__ == "__main__":
    main()
