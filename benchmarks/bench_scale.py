"""Every estimator's default against plain SVI and scikit-learn on a large corpus.

A user's first fit: each estimator with its defaults (only the number of
topics, the minibatch size and the corpus size are set), the default filter
observing every topic, the other filters, SVI+ with a fixed M, the filters
as published (the papers' prior variance and moment estimates on every
coordinate, no lower bound of the step), plain SVI
(``SmoothedLDA(L=1)``, with the default collapsed local step and with the
mean-field one, each also with priors learned online: alpha alone for the
collapsed step, whose learned eta is biased) and scikit-learn's
online LDA, all on the same minibatches of the same shuffled documents, one
thread each. The corpus is a text file
given on the command line (one text per line, or a column of a
tab-separated file with a header) or one of the corpora of ``corpus.py``;
its ``--n-features`` most frequent words are kept (English stop words
removed) and 5% of the documents are held out. Held-out
fit is the per-word log predictive probability by document completion, as
in ``bench_lda.py``; a unigram model of the training words gives the floor
any topic model should clear. The fits are repeated for several seeds (the
initial topics and the order of the documents); the table shows the mean
and the standard deviation over seeds, and the difference from plain SVI.
A second table traces the step sizes of the filters and of the
Robbins-Monro schedule over the first updates of the first seed.

Run ``python benchmarks/bench_scale.py PATH --column summary`` for a TSV
file, or ``python benchmarks/bench_scale.py healthtweets``.
"""

import time
from pathlib import Path

import numpy as np
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import log_predictive

from _common import (
    CORPUS_HELD_OUT_FRACTION,
    completion_split,
    corpus_parser,
    shuffled_epochs,
)
from corpus import corpus_name, load_corpus
from tables import mean_spread, simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REFERENCE = "plain SVI: SmoothedLDA(L=1)"
TRACED_UPDATES = [1, 2, 5, 10, 20, 50, 100, 200, 500]


def make_models(n_components, batch_size, n_train, seed):
    """The models compared, by label: the reference first.

    Parameters
    ----------
    n_components : int
        Number of topics K.
    batch_size : int
        Documents per minibatch.
    n_train : int
        Number of training documents, the N of the updates.
    seed : int
        Seed of the initial topics.

    Returns
    -------
    models : dict of str to estimator
    """
    common = dict(
        n_components=n_components,
        batch_size=batch_size,
        total_samples=n_train,
        random_state=seed,
    )
    learned = dict(doc_topic_prior="auto", topic_word_prior="auto")
    return {
        REFERENCE: SmoothedLDA(L=1, **common),
        "plain SVI, CVB0 step": SmoothedLDA(L=1, local_step="cvb0", **common),
        "plain SVI, mean-field step": SmoothedLDA(L=1, local_step="vb", **common),
        "plain SVI, learned alpha": SmoothedLDA(L=1, doc_topic_prior="auto", **common),
        "plain SVI, mean-field step, learned priors": SmoothedLDA(
            L=1, local_step="vb", **learned, **common
        ),
        "scikit-learn online": LatentDirichletAllocation(
            learning_method="online", **common
        ),
        "SmoothedLDA() default": SmoothedLDA(**common),
        "AnnealedLDA() default": AnnealedLDA(**common),
        "FilteredLDA() default": FilteredLDA(**common),
        "FilteredLDA, every topic observed": FilteredLDA(
            observed_components=None, **common
        ),
        "FilteredLDA Student's t": FilteredLDA(learning_rate="student-t", **common),
        "FilteredLDA adaptive": FilteredLDA(learning_rate="adaptive", **common),
        "AnnealedLDA M=64 fixed": AnnealedLDA(M=64, M_growth=0, **common),
        "AnnealedLDA M_t=64t": AnnealedLDA(M=64, M_growth=64.0, **common),
        "FilteredLDA Student's t, published": FilteredLDA(
            learning_rate="student-t",
            prior_variance=1e3,
            bias_correction=False,
            min_step_size=None,
            observed_components=None,
            **common,
        ),
        "FilteredLDA adaptive, published": FilteredLDA(
            learning_rate="adaptive",
            bias_correction=False,
            min_step_size=None,
            observed_components=None,
            **common,
        ),
    }


def unigram_log_predictive(X_train, completion):
    """Held-out per-word log probability under the training words' frequencies.

    Each word's probability is its training count plus one half, normalised.
    """
    counts = np.asarray(X_train.sum(axis=0)).ravel() + 0.5
    log_probability = np.log(counts / counts.sum())
    predicted = completion.predicted
    return float(predicted.data @ log_probability[predicted.indices] / predicted.sum())


def fit_and_score(model, epochs, completion):
    """CPU seconds of ``partial_fit`` over the epochs, and the held-out fit."""
    seconds = 0.0
    with threadpool_limits(limits=1, user_api="blas"):
        for X_epoch in epochs:
            start = time.process_time()
            model.partial_fit(X_epoch)
            seconds += time.process_time() - start
    return seconds, log_predictive(model, *completion)


def step_size_trace(model):
    """The step sizes of the traced updates, from the model's record."""
    if hasattr(model, "step_size_history_"):
        history = dict(
            zip(
                model.step_size_history_["n_batch_iter"],
                model.step_size_history_["step_size"],
            )
        )
        return [history.get(update) for update in TRACED_UPDATES]
    # scikit-learn's schedule, (tau_0 + t) ** -kappa.
    return [
        (model.learning_offset + update) ** -model.learning_decay
        for update in TRACED_UPDATES
    ]


def format_results(labels, seconds, scores, unigram):
    """The table of held-out fit and CPU time, mean ± standard deviation."""
    reference = np.array(scores[REFERENCE])
    rows = [
        [
            label,
            mean_spread(scores[label], 4),
            mean_spread(np.array(scores[label]) - reference, 4, sign="+"),
            mean_spread(seconds[label], 1),
        ]
        for label in labels
    ]
    rows.append(["unigram baseline", f"{unigram:.4f}", "", ""])
    return simple_table(
        ["Model", "Log pred./word", "vs plain SVI", "CPU s"],
        rows,
    )


def final_state(model):
    """What the mechanisms of a fitted model ended with, as table cells.

    The filters' drift Q, noise R (per coordinate) and window tau, and the
    number of coordinates of lambda that annealing's projection raised to
    the prior, summed over the updates.
    """
    cells = ["", "", "", ""]
    if hasattr(model, "filter_state_"):
        state = model.filter_state_
        cells[:3] = [
            f"{state['drift']:.3g}",
            f"{state['noise']:.3g}",
            f"{state['window']:.1f}",
        ]
    if hasattr(model, "n_projected_"):
        cells[3] = str(model.n_projected_)
    return cells


def format_states(states):
    """The final state of each mechanism of the first seed."""
    rows = [[label, *cells] for label, cells in states.items()]
    return simple_table(
        ["Model", "Drift Q", "Noise R", "Window", "Coordinates projected"], rows
    )


def format_trace(traces):
    """The step sizes of the first seed at the traced updates."""
    rows = [
        [label, *("" if rho is None else f"{rho:.4f}" for rho in trace)]
        for label, trace in traces.items()
    ]
    return simple_table(["Update", *map(str, TRACED_UPDATES)], rows)


def main(argv=None):
    parser = corpus_parser(__doc__)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--models", nargs="*", help="labels of the models to run (default: all)"
    )
    parser.add_argument(
        "--results-name",
        help="the name of the results file (default: scale_CORPUS)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: 5,000 documents, one seed",
    )
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    X = load_corpus(args.corpus, args.column, args.n_features)
    if args.quick:
        X = X[rng.permutation(X.shape[0])[:5000]]
        args.seeds = 1
    X_train, completion = completion_split(X, CORPUS_HELD_OUT_FRACTION, rng)
    n_train = X_train.shape[0]
    n_updates = args.epochs * -(-n_train // args.batch_size)
    name = corpus_name(args.corpus)
    print(
        f"{name}: {n_train} training documents ({X_train.sum() / n_train:.1f} words "
        f"each), {X.shape[1]} words, {completion.predicted.shape[0]} held out; "
        f"K={args.n_components}, batch {args.batch_size}, {args.epochs} epoch(s), "
        f"{n_updates} updates, {args.seeds} seed(s)",
        flush=True,
    )

    seconds, scores, traces, states = {}, {}, {}, {}
    for seed in range(args.seeds):
        epochs = shuffled_epochs(X_train, args.epochs, seed)
        models = make_models(args.n_components, args.batch_size, n_train, seed)
        for label, model in models.items():
            if args.models and label != REFERENCE and label not in args.models:
                continue
            cpu, score = fit_and_score(model, epochs, completion)
            seconds.setdefault(label, []).append(cpu)
            scores.setdefault(label, []).append(score)
            if seed == 0 and ("Filtered" in label or label == REFERENCE):
                traces[label] = step_size_trace(model)
            if seed == 0 and ("Filtered" in label or "Annealed" in label):
                states[label] = final_state(model)
            print(f"seed {seed} {label}: {score:.4f} ({cpu:.1f} s)", flush=True)

    unigram = unigram_log_predictive(X_train, completion)
    n_lambda = args.n_components * X.shape[1]
    table = format_results(list(scores), seconds, scores, unigram)
    trace = format_trace(traces)
    state = format_states(states)
    print(table)
    print(trace)
    print(state)
    if not args.quick:
        write_results(
            RESULTS_DIR / f"{args.results_name or f'scale_{name}'}.rst",
            [
                f"{name}: {n_train} training documents, {X.shape[1]} words; "
                f"K={args.n_components}, batch {args.batch_size}, "
                f"{args.epochs} epoch(s) ({n_updates} updates), "
                f"{args.seeds} seeds; one thread, CPU seconds of the fit.",
                table,
                "Step sizes of the first seed:",
                trace,
                "State of the mechanisms after the last update of the first "
                f"seed (lambda has {n_lambda} coordinates):",
                state,
            ],
        )


if __name__ == "__main__":
    main()
