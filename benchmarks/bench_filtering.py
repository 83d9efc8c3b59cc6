"""Filtered step sizes against schedules on NewsArticles, after equal documents.

The comparison of Houlsby & Blei: FilteredLDA with the Student's t filter,
the Gaussian filter and Ranganath et al.'s adaptive rate, against plain SVI
with the Robbins-Monro schedule (kappa = 0.7, tau_0 = 1000) and with a
constant step size from 1e-1 to 1e-5, the best of which is chosen in
hindsight. The filters run with the package's defaults (bias-corrected
estimates of the drift and the noise, prior variance 0, steps bounded below
by the Robbins-Monro schedule, drift and noise estimated on an eighth of
the topics), and the t filter and the adaptive rate also as published
(plain moment estimates on every coordinate, the paper's prior variance
1e3, no lower bound of the step). Every model sees the
same documents in the same order. The held-out per-word log predictive
probability (document completion, as in ``bench_lda.py``) is measured every
few updates, and each run is scored by the mean of its last 10% of
measurements. The fits are repeated for several seeds.

Every model uses the mean-field local step (``local_step="vb"``), the
step of the papers, and scikit-learn's kappa = 0.7 for the Robbins-Monro
schedules (the filters' lower bound included).

Run ``python benchmarks/bench_filtering.py``.
"""

import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_svi import FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import log_predictive

from _common import argument_parser, held_out_split, shuffled_epochs
from tables import mean_spread, report, simple_table

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "filtering.rst"
N_COMPONENTS = 50
REFERENCE = "Robbins-Monro"
CONSTANT_RATES = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]


def make_models(batch_size, n_train, seed):
    """The filters, the adaptive rate, Robbins-Monro and the constant rates.

    Parameters
    ----------
    batch_size : int
        Documents per minibatch.
    n_train : int
        Number of training documents, the N of the updates.
    seed : int
        Seed of the initial topics (the same for every model).

    Returns
    -------
    models : dict of str to estimator
    """
    common = dict(
        local_step="vb",
        n_components=N_COMPONENTS,
        batch_size=batch_size,
        total_samples=n_train,
        learning_decay=0.7,
        random_state=seed,
    )
    models = {
        "Adaptive": FilteredLDA(learning_rate="adaptive", **common),
        "Student's t filter": FilteredLDA(learning_rate="student-t", **common),
        "Gaussian filter (the default)": FilteredLDA(**common),
        "Adaptive, published": FilteredLDA(
            learning_rate="adaptive",
            bias_correction=False,
            min_step_size=None,
            observed_components=None,
            **common,
        ),
        "Student's t filter, published": FilteredLDA(
            learning_rate="student-t",
            prior_variance=1e3,
            bias_correction=False,
            min_step_size=None,
            observed_components=None,
            **common,
        ),
        REFERENCE: SmoothedLDA(L=1, learning_offset=1000.0, **common),
    }
    for rate in CONSTANT_RATES:
        models[f"Constant {rate:.0e}"] = SmoothedLDA(L=1, learning_rate=rate, **common)
    return models


def run_model(model, epochs, batch_size, evaluate_every, completion):
    """Fit ``model`` on the epochs and measure it every few updates.

    Parameters
    ----------
    model : estimator
        A sklearn_svi LDA estimator.
    epochs : list of sparse matrix
        The training documents of each epoch, in the order they are seen.
    batch_size : int
        Documents per minibatch.
    evaluate_every : int
        Number of updates between two measurements.
    completion : TokenSplit
        The held-out documents.

    Returns
    -------
    scores : ndarray
        The held-out log predictive probability per word of each measurement.
    seconds : float
        Time spent in ``partial_fit``.
    """
    chunk = evaluate_every * batch_size
    scores = []
    seconds = 0.0
    for X_epoch in epochs:
        for start in range(0, X_epoch.shape[0], chunk):
            began = time.perf_counter()
            model.partial_fit(X_epoch[start : start + chunk])
            seconds += time.perf_counter() - began
            scores.append(log_predictive(model, *completion))
    return np.array(scores), seconds


def final_score(scores):
    """Mean of the last 10% of the measurements (at least one)."""
    return scores[-max(1, len(scores) // 10) :].mean()


def fit_seeds(args, X_train, completion):
    """Fit every model of :func:`make_models` for each seed and score it.

    Returns
    -------
    results : dict of str to list of tuple
        For each model, the final score (:func:`final_score`), the last step
        size and the seconds of ``partial_fit``, per seed.
    """
    results = {}
    for seed in range(args.seeds):
        epochs = shuffled_epochs(X_train, args.epochs, seed)
        models = make_models(args.batch_size, X_train.shape[0], seed)
        for name, model in models.items():
            with threadpool_limits(1):
                scores, seconds = run_model(
                    model, epochs, args.batch_size, args.evaluate_every, completion
                )
            last_step = model.step_size_history_["step_size"][-1]
            results.setdefault(name, []).append(
                (final_score(scores), last_step, seconds)
            )
            print(f"seed {seed}: {name}: {results[name][-1]}", flush=True)
    return results


def format_table(results):
    """The results of :func:`fit_seeds` over the seeds, the best constant
    rate marked; differences from Robbins-Monro are taken per seed."""
    best_constant = max(
        (name for name in results if name.startswith("Constant")),
        key=lambda name: np.mean([score for score, _, _ in results[name]]),
    )
    reference = np.array([score for score, _, _ in results[REFERENCE]])
    header = [
        "Model",
        "Log pred./word",
        f"vs {REFERENCE}",
        "Last step size",
        "Seconds",
    ]
    rows = []
    for name, values in results.items():
        scores, last_steps, seconds = map(np.array, zip(*values))
        label = f"{name} (best constant)" if name == best_constant else name
        rows.append(
            [
                label,
                mean_spread(scores, 4),
                mean_spread(scores - reference, 4, sign="+"),
                f"{np.median(last_steps):.2e}",
                mean_spread(seconds, 1),
            ]
        )
    return simple_table(header, rows)


def parse_args(argv):
    """The command-line options; ``argv=None`` reads ``sys.argv``."""
    parser = argument_parser(__doc__)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5, help="passes over the data")
    parser.add_argument(
        "--evaluate-every", type=int, default=10, help="updates between measurements"
    )
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds")
    return parser.parse_args(argv)


def describe(args, n_train):
    """The settings of the comparison, a sentence above the table."""
    n_updates = args.epochs * -(-n_train // args.batch_size)
    return (
        f"NewsArticles, {n_train} training documents, K={N_COMPONENTS}, "
        f"minibatches of {args.batch_size}, {args.epochs} epochs "
        f"({n_updates} updates, {args.epochs * n_train} documents seen by every "
        f"model), measured every {args.evaluate_every} updates and scored by "
        f"the mean of the last 10% of measurements; {args.seeds} seeds "
        "(mean ± standard deviation; differences taken per seed; last step "
        "size is the median over seeds)."
    )


def main(argv=None):
    """Compare the step sizes, print the table and write it."""
    args = parse_args(argv)
    _, _, X_train, completion = held_out_split(np.random.default_rng(0))
    results = fit_seeds(args, X_train, completion)
    report(RESULTS_PATH, describe(args, X_train.shape[0]), format_table(results))


if __name__ == "__main__":
    main()
