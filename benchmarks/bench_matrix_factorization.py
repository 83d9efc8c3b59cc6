"""SVIMatrixFactorization on MovieLens 100k against Surprise, and the papers' claims.

MovieLens 100k is read from the RecBole 1.2.1 wheel
(``pip download --no-deps recbole==1.2.1``), whose path is the argument.
Three comparisons, each run with ``python benchmarks/bench_matrix_factorization.py
WHEEL NAME`` (or ``all``):

``accuracy``
    80/20 splits of the ratings over 5 seeds: test RMSE and CPU seconds to fit
    of SVIMatrixFactorization (its defaults, batch variational Bayes, SVI,
    SVI+, smoothed and filtered SVI) and of Surprise's SVD, SVD++ and NMF
    with their default settings, one thread each, and the variational
    objective (the ELBO per training rating) of ours.
``annealing``
    Paisley, Fazelnia & Barr's Example 1: the model without offset, c = 1,
    noise variance 1/2, ranks 5 and 10; batch variational Bayes against
    SVI+ in batch mode (all users in each update, rho = 0.85, M_t = 50 t)
    from 10 random starts: the final ELBO and test RMSE.
``filtering``
    Minibatches of 64 users: the Student's t filter against the
    Robbins-Monro schedule and Ranganath et al.'s adaptive rate, over 5
    seeds: test RMSE and ELBO after 5 and 20 passes.

Each writes its table to ``benchmarks/results/matrix_factorization_NAME.rst``.
"""

import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_svi import SVIMatrixFactorization, load_ratings, split_ratings

from _common import argument_parser
from tables import mean_spread, simple_table, write_results

RESULTS = Path(__file__).resolve().parent / "results"
MEMBER = "recbole/dataset_example/ml-100k/ml-100k.inter"
TEST_SIZE = 0.2
SEEDS = range(5)

# Rank, priors and noise chosen on a validation split of the first seed's
# training ratings (see the docs), in the papers' model without biases; the
# same for every variant of ours but the estimator's defaults, which learn
# the priors and the noise, with biases.
MODEL = dict(n_components=5, prior_precision=2.0, noise_variance=1.0, biases=False)
DEFAULT = "SVIMatrixFactorization() default"
OURS = {
    DEFAULT: {},
    "batch VB": dict(learning_rate=1.0, batch_size=None, max_iter=30),
    "SVI": dict(batch_size=100, max_iter=10),
    "SVI+ (M=25)": dict(batch_size=100, max_iter=10, M=25, M_growth=5.0),
    "smoothed SVI (L=5)": dict(batch_size=100, max_iter=10, L=5),
    "filtered SVI (t)": dict(batch_size=100, max_iter=10, learning_rate="student-t"),
}


def test_rmse(model, X_train, X_test):
    """RMSE of ``model`` on the test ratings, users fitted to their training ones."""
    test = X_test.tocoo()
    predicted = model.predict_pairs(X_train, test.row, test.col)
    return float(np.sqrt(np.mean((predicted - test.data) ** 2)))


def fit_ours(settings, X_train, seed, model=MODEL):
    """Fit SVIMatrixFactorization with the hyperparameters ``model``; return
    it and the seconds it took."""
    settings = dict(settings)
    if settings.get("batch_size", 0) is None:
        settings["batch_size"] = X_train.shape[0]
    estimator = SVIMatrixFactorization(
        random_state=seed, total_samples=X_train.shape[0], **model
    ).set_params(**settings)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X_train)
    return estimator, time.process_time() - start


def surprise_models():
    """Surprise's matrix factorizations with their default settings."""
    from surprise import NMF, SVD, SVDpp

    return {"Surprise SVD": SVD, "Surprise SVD++": SVDpp, "Surprise NMF": NMF}


def fit_surprise(algorithm, X_train, X_test, seed):
    """Fit a Surprise algorithm; return its test RMSE and fit seconds."""
    import pandas as pd
    from surprise import Dataset, Reader

    train = X_train.tocoo()
    frame = pd.DataFrame({"user": train.row, "item": train.col, "rating": train.data})
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))
    trainset = data.build_full_trainset()
    model = algorithm(random_state=seed)
    start = time.process_time()
    model.fit(trainset)
    seconds = time.process_time() - start
    test = X_test.tocoo()
    predicted = np.array(
        [model.predict(user, item).est for user, item in zip(test.row, test.col)]
    )
    return float(np.sqrt(np.mean((predicted - test.data) ** 2))), seconds


def accuracy(X):
    """Test RMSE and fit time of ours and Surprise's over the seeds."""
    results = {}
    for seed in SEEDS:
        X_train, X_test = split_ratings(X, TEST_SIZE, random_state=seed)
        for name, settings in OURS.items():
            print(f"seed {seed}: {name} ...", flush=True)
            model, seconds = fit_ours(
                settings, X_train, seed, {} if name == DEFAULT else MODEL
            )
            bound = model.lower_bound(X_train) / X_train.nnz
            record = results.setdefault(name, {"rmse": [], "seconds": [], "bound": []})
            record["rmse"].append(test_rmse(model, X_train, X_test))
            record["seconds"].append(seconds)
            record["bound"].append(bound)
        for name, algorithm in surprise_models().items():
            print(f"seed {seed}: {name} ...", flush=True)
            rmse, seconds = fit_surprise(algorithm, X_train, X_test, seed)
            record = results.setdefault(name, {"rmse": [], "seconds": []})
            record["rmse"].append(rmse)
            record["seconds"].append(seconds)
    svd = results["Surprise SVD"]
    rows = [
        [
            name,
            mean_spread(record["rmse"], 4),
            mean_spread(record["seconds"], 2),
            f"{np.mean(record['seconds']) / np.mean(svd['seconds']):.2f}",
            mean_spread(record["bound"], 4) if "bound" in record else "",
        ]
        for name, record in results.items()
    ]
    header = ["Model", "Test RMSE", "Fit CPU s", "Time / SVD", "ELBO / rating"]
    settings = (
        f"MovieLens 100k ({X.shape[0]} users, {X.shape[1]} items, {X.nnz:,} "
        f"ratings), {len(SEEDS)} random 80/20 splits of the ratings, one "
        "thread. Ours: "
        + ", ".join(f"{key}={value}" for key, value in MODEL.items())
        + ", offset the mean training rating; batch VB 30 passes, the others "
        "10 passes of minibatches of 100 users. The default: every parameter "
        "at its default (the priors' precisions and the noise variance "
        "learned, biases). Surprise: default settings."
    )
    return settings, simple_table(header, rows)


def annealing(X):
    """Batch VB against SVI+ in batch mode, Paisley et al.'s Example 1."""
    X_train, X_test = split_ratings(X, TEST_SIZE, random_state=0)
    paper = dict(prior_precision=1.0, noise_variance=0.5, rating_offset=0.0)
    methods = {
        "batch VB": dict(learning_rate=1.0, batch_size=None, max_iter=100),
        "SVI+ batch (rho=0.85, M_t=50t)": dict(
            learning_rate=0.85, batch_size=None, max_iter=100, M=50, M_growth=50.0
        ),
    }
    rows = []
    for rank in (5, 10):
        for name, settings in methods.items():
            bounds, rmses = [], []
            for seed in range(10):
                print(f"rank {rank}: {name}, start {seed} ...", flush=True)
                model, _ = fit_ours(
                    settings, X_train, seed, {**MODEL, "n_components": rank, **paper}
                )
                bounds.append(model.lower_bound(X_train) / X_train.nnz)
                rmses.append(test_rmse(model, X_train, X_test))
            rows.append(
                [
                    str(rank),
                    name,
                    mean_spread(bounds, 4),
                    f"{np.max(bounds):.4f}",
                    mean_spread(rmses, 4),
                ]
            )
    header = ["Rank", "Method", "ELBO / rating", "Best start", "Test RMSE"]
    settings = (
        "MovieLens 100k, one 80/20 split; the model of Paisley, Fazelnia & Barr's "
        "Example 1 (no offset, c = 1, noise variance 1/2); 100 iterations, each "
        "over all users; 10 random starts per row (mean ± sd over the starts)."
    )
    return settings, simple_table(header, rows)


def filtering(X):
    """The Student's t filter against Robbins-Monro and the adaptive rate."""
    rates = ("robbins-monro", "student-t", "adaptive")
    checkpoints = (5, 20)
    results = {(rate, passes): ([], []) for rate in rates for passes in checkpoints}
    for seed in SEEDS:
        X_train, X_test = split_ratings(X, TEST_SIZE, random_state=seed)
        for rate in rates:
            print(f"seed {seed}: {rate} ...", flush=True)
            model = SVIMatrixFactorization(
                learning_rate=rate,
                batch_size=64,
                max_iter=1,
                warm_start=True,
                total_samples=X_train.shape[0],
                random_state=seed,
                **MODEL,
            )
            for passes in range(1, max(checkpoints) + 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X_train)
                if passes in checkpoints:
                    bounds, rmses = results[rate, passes]
                    bounds.append(model.lower_bound(X_train) / X_train.nnz)
                    rmses.append(test_rmse(model, X_train, X_test))
    rows = [
        [rate, str(passes), mean_spread(bounds, 4), mean_spread(rmses, 4)]
        for (rate, passes), (bounds, rmses) in results.items()
    ]
    header = ["Step size", "Passes", "ELBO / rating", "Test RMSE"]
    settings = (
        f"MovieLens 100k, {len(SEEDS)} random 80/20 splits; "
        + ", ".join(f"{key}={value}" for key, value in MODEL.items())
        + "; minibatches of 64 users, N = the number of users."
    )
    return settings, simple_table(header, rows)


COMPARISONS = {"accuracy": accuracy, "annealing": annealing, "filtering": filtering}


def main(argv=None):
    """Run the chosen comparisons, print their tables and write them.

    ``argv=None`` reads the command line.
    """
    parser = argument_parser(__doc__)
    parser.add_argument("wheel", help="the RecBole 1.2.1 wheel")
    parser.add_argument("name", choices=[*COMPARISONS, "all"], default="all", nargs="?")
    args = parser.parse_args(argv)
    X = load_ratings(args.wheel, member=MEMBER)[0]
    names = list(COMPARISONS) if args.name == "all" else [args.name]
    with threadpool_limits(1):
        for name in names:
            settings, table = COMPARISONS[name](X)
            print()
            print(settings)
            print(table)
            write_results(
                RESULTS / f"matrix_factorization_{name}.rst", [settings, table]
            )


if __name__ == "__main__":
    main()
