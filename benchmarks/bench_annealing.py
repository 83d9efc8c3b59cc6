"""SVI+ against plain SVI on NewsArticles, after equal numbers of documents.

The LDA comparison of Paisley, Fazelnia & Barr: plain SVI with minibatches
of 2b documents, plain SVI with minibatches of b, and SVI+ (AnnealedLDA) with
minibatches of 2b and the noise of b (M = b); and SVI+ whose M grows from b
to 2b over the first half of the updates, ending as plain SVI. Every model sees the same
documents in the same order (the same number of epochs over the same
shuffles), so the models with minibatches of 2b make half as many updates.
After the last epoch each model is scored by the held-out per-word log
predictive probability (document completion, as in ``bench_lda.py``) and by
its training ELBO per document. The fits are repeated for several seeds.

Every model uses the mean-field local step (``local_step="vb"``), the
step of the papers.

Run ``python benchmarks/bench_annealing.py``.
"""

import time
from pathlib import Path

import numpy as np

from sklearn_svi import AnnealedLDA, SmoothedLDA
from sklearn_svi.metrics import log_predictive

from _common import argument_parser, held_out_split, shuffled_epochs
from tables import mean_spread, report, simple_table

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "annealing.rst"
N_COMPONENTS = 50


def make_models(b, n_train, n_epochs, seed):
    """Plain SVI at 2b and b, and SVI+ at 2b with M = b, fixed or growing.

    Parameters
    ----------
    b : int
        The small minibatch size.
    n_train : int
        Number of training documents, the N of the updates.
    n_epochs : int
        Number of passes, which sets the growth of M.
    seed : int
        Seed of the initial topics and of the annealing noise.

    Returns
    -------
    models : dict of str to estimator
    """
    common = dict(
        local_step="vb",
        n_components=N_COMPONENTS,
        total_samples=n_train,
        learning_offset=10.0,
        learning_decay=0.7,
        random_state=seed,
    )
    n_updates = n_epochs * -(-n_train // (2 * b))
    growth = b / (n_updates / 2)
    return {
        f"SVI B={2 * b}": SmoothedLDA(L=1, batch_size=2 * b, **common),
        f"SVI B={b}": SmoothedLDA(L=1, batch_size=b, **common),
        f"SVI+ B={2 * b}, M={b}": AnnealedLDA(
            M=b, M_growth=0.0, batch_size=2 * b, **common
        ),
        f"SVI+ B={2 * b}, M={b} to {2 * b}": AnnealedLDA(
            M=b, M_growth=growth, batch_size=2 * b, **common
        ),
        f"SVI+ B={2 * b}, M_t=64t": AnnealedLDA(
            M=64, M_growth=64.0, batch_size=2 * b, **common
        ),
    }


def fit_seeds(args, X_train, completion):
    """Fit every model of :func:`make_models` for each seed and score it.

    Returns
    -------
    scores : dict of str to list of tuple
        For each model, the held-out log predictive probability per word,
        the training ELBO per document and the seconds of the fit, per seed.
    """
    n_train = X_train.shape[0]
    scores = {}
    for seed in range(args.seeds):
        epochs = shuffled_epochs(X_train, args.epochs, seed)
        for name, model in make_models(args.b, n_train, args.epochs, seed).items():
            start = time.perf_counter()
            for X_epoch in epochs:
                model.partial_fit(X_epoch)
            seconds = time.perf_counter() - start
            elbo = model.score(X_train) / n_train
            scores.setdefault(name, []).append(
                (log_predictive(model, *completion), elbo, seconds)
            )
            print(f"seed {seed}: {name}: {scores[name][-1]}", flush=True)
    return scores


def format_table(scores):
    """The scores of :func:`fit_seeds`, mean ± standard deviation over seeds."""
    header = ["Model", "Log pred./word", "Training ELBO/doc", "Seconds"]
    rows = []
    for name, values in scores.items():
        predictive, elbo, seconds = map(np.array, zip(*values))
        rows.append(
            [
                name,
                mean_spread(predictive, 4),
                mean_spread(elbo, 1),
                mean_spread(seconds, 1),
            ]
        )
    return simple_table(header, rows)


def parse_args(argv):
    """The command-line options; ``argv=None`` reads ``sys.argv``."""
    parser = argument_parser(__doc__)
    parser.add_argument("--b", type=int, default=64, help="small minibatch size")
    parser.add_argument("--epochs", type=int, default=3, help="passes over the data")
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds")
    return parser.parse_args(argv)


def describe(args, n_train):
    """The settings of the comparison, a sentence above the table."""
    return (
        f"NewsArticles, {n_train} training documents, K={N_COMPONENTS}, "
        f"{args.epochs} epochs ({args.epochs * n_train} documents seen by every "
        f"model), step size (10 + t)^-0.7, {args.seeds} seeds (mean ± standard "
        "deviation)."
    )


def main(argv=None):
    """Compare SVI+ with plain SVI, print the table and write it."""
    args = parse_args(argv)
    _, _, X_train, completion = held_out_split(np.random.default_rng(0))
    scores = fit_seeds(args, X_train, completion)
    report(RESULTS_PATH, describe(args, X_train.shape[0]), format_table(scores))


if __name__ == "__main__":
    main()
