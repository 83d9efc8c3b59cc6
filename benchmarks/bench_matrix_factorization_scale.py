"""SVIMatrixFactorization on ten million ratings: time, memory and fit.

The ratings are drawn from the model itself with the skew of real rating
data: users' numbers of ratings and items' popularities follow power laws
(a few users rate thousands of items, the median user 17, from 5 to 5,000;
a few items get most ratings), user and item biases, rank-10 factors and
Gaussian noise of variance 0.5, rounded to the half-star scale 0.5 to 5 as
MovieLens does.
A random 1% of the ratings is held out. Compared on one thread:

- ``SVIMatrixFactorization()`` with its defaults (minibatches of 256 users,
  10 passes), CPU seconds per pass;
- the same with ``n_jobs=2``, for two passes (wall seconds: two threads
  share the users of each minibatch);
- the default on a Dask LocalCluster of two one-thread worker processes,
  which hold the training ratings in four row blocks, for one pass (wall
  seconds; peak memory: the client's);
- batch variational Bayes (every user in each update, step 1), as many
  passes;
- Surprise's SVD with its defaults (20 epochs of stochastic gradient
  descent).

Each model's peak memory is that of Python's allocations during its fit
(``tracemalloc``; numpy's arrays included), the training ratings excluded.
The test RMSE is that of the held-out ratings, each user's factors fitted
to its training ratings.

Run ``python benchmarks/bench_matrix_factorization_scale.py`` (``--n-ratings``
for another size; the table is written to
``results/matrix_factorization_scale.rst`` at the default size only). Needs
scikit-surprise.
"""

import time
import tracemalloc
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from surprise import SVD
from threadpoolctl import threadpool_limits

from sklearn_svi import SVIMatrixFactorization, split_ratings

from _common import argument_parser
from bench_dask import blocks_on_workers
from bench_matrix_factorization import fit_surprise, test_rmse
from tables import simple_table, write_results

RESULTS = Path(__file__).resolve().parent / "results" / "matrix_factorization_scale.rst"
DEFAULT_RATINGS = 10_000_000
RANK = 10
NOISE_VARIANCE = 0.5
ACTIVITY_EXPONENT = 0.9
"""The r-th most active user rates about r^-0.9 times as many items as the
first (before the cap and the floor below)."""
POPULARITY_EXPONENT = 0.9
"""The r-th most popular item is rated about r^-0.9 times as often as the
first."""
FEWEST, MOST = 5, 5_000
"""The fewest and the most ratings of a user."""
HEAVY = 200
"""Users with more ratings draw them without replacement directly."""


def user_activity(n_ratings, n_users, rng):
    """Each user's number of ratings: power-law, between FEWEST and MOST,
    about ``n_ratings`` in all."""
    weights = rng.permutation(np.arange(1, n_users + 1) ** -ACTIVITY_EXPONENT)
    low, high = 0.0, float(n_ratings)
    for _ in range(60):
        scale = (low + high) / 2
        counts = np.clip(np.round(scale * weights / weights.max()), FEWEST, MOST)
        low, high = (scale, high) if counts.sum() < n_ratings else (low, scale)
    return counts.astype(np.int64)


def distinct_items(wanted, popularity, rng):
    """Rows (user, item) of distinct items for each user, ``wanted[u]`` of
    them, drawn with probabilities ``popularity`` without replacement.

    A user with many ratings takes the items of the largest keys
    log(u) / p (Efraimidis & Spirakis 2006); the others draw with
    replacement and draw again what repeated, which is rare for them.
    """
    n_items = len(popularity)
    heavy = np.flatnonzero(wanted > HEAVY)
    codes = [
        user * n_items
        + np.argpartition(np.log(rng.random(n_items)) / popularity, -wanted[user])[
            -wanted[user] :
        ]
        for user in heavy
    ]
    light = np.where(wanted > HEAVY, 0, wanted)
    drawn = np.zeros(0, dtype=np.int64)
    missing = light
    while missing.sum():
        users = np.repeat(np.arange(len(wanted)), missing)
        items = rng.choice(n_items, size=len(users), p=popularity)
        drawn = np.unique(np.concatenate([drawn, users * n_items + items]))
        missing = light - np.bincount(drawn // n_items, minlength=len(wanted))
    pairs = np.sort(np.concatenate([drawn, *codes]))
    return pairs // n_items, pairs % n_items


def skewed_ratings(n_ratings, n_users, n_items, seed):
    """Ratings drawn from the model, with power-law users and items.

    Each user rates its number of distinct items (``user_activity``), drawn
    with probability proportional to the items' power-law popularity.
    """
    rng = np.random.default_rng(seed)
    wanted = user_activity(n_ratings, n_users, rng)
    popularity = rng.permutation(np.arange(1, n_items + 1) ** -POPULARITY_EXPONENT)
    popularity /= popularity.sum()
    users, items = distinct_items(wanted, popularity, rng)
    user_factors = rng.normal(size=(n_users, RANK)) / RANK**0.25
    item_factors = rng.normal(size=(n_items, RANK)) / RANK**0.25
    means = (
        np.einsum("nk,nk->n", user_factors[users], item_factors[items])
        + rng.normal(scale=0.4, size=n_users)[users]
        + rng.normal(scale=0.4, size=n_items)[items]
        + 3.5
    )
    values = means + np.sqrt(NOISE_VARIANCE) * rng.normal(size=len(means))
    values = np.clip(np.round(2 * values) / 2, 0.5, 5.0)
    return sp.csr_matrix((values, (users, items)), shape=(n_users, n_items))


def measured(fit):
    """Run ``fit``; return its value, CPU and wall seconds, peak MiB."""
    tracemalloc.start()
    cpu, wall = time.process_time(), time.perf_counter()
    value = fit()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return value, cpu, wall, peak


def fit_ours(X_train, **settings):
    """A fitted SVIMatrixFactorization with ``settings``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SVIMatrixFactorization(random_state=0, **settings).fit(X_train)


def cluster_row(X_train, X_test):
    """The table's row of one pass of the default on a LocalCluster of two
    one-thread workers that hold the training ratings in four row blocks."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        blocks = blocks_on_workers(client, X_train, 4)
        model, _, wall, peak = measured(partial(fit_ours, blocks, max_iter=1))
    return [
        "the same on 2 Dask workers (wall s)",
        f"{test_rmse(model, X_train, X_test):.4f}",
        f"{model.n_iter_}",
        f"{wall / model.n_iter_:.2f}",
        f"{peak:.0f}",
        f"{model.noise_variance_:.3f}",
    ]


def main(argv=None):
    parser = argument_parser(__doc__)
    parser.add_argument("--n-ratings", type=int, default=DEFAULT_RATINGS)
    args = parser.parse_args(argv)
    n_users, n_items = args.n_ratings // 50, max(args.n_ratings // 500, 100)
    X = skewed_ratings(args.n_ratings, n_users, n_items, seed=0)
    X_train, X_test = split_ratings(X, test_size=0.01, random_state=0)
    per_user = np.diff(X.indptr)
    setup = (
        f"{X.nnz:,} ratings of {n_users:,} users and {n_items:,} items drawn "
        f"from the model (rank {RANK}, noise variance {NOISE_VARIANCE}, "
        f"power-law users and items: ratings per user median "
        f"{np.median(per_user):.0f}, largest {per_user.max():,}; the most "
        f"rated item has {np.bincount(X.indices).max():,}), rounded to half "
        "stars; 1% held out. One thread unless stated. Peak memory: "
        "Python's allocations during the fit (on Dask, the client's), the "
        "training ratings excluded."
    )
    print(setup, flush=True)
    ours = {
        "SVIMatrixFactorization() default": dict(),
        "the same, n_jobs=2 (wall s)": dict(n_jobs=2, max_iter=2),
        "batch VB (all users per update, step 1)": dict(
            batch_size=n_users, learning_rate=1.0
        ),
    }
    rows = []
    with threadpool_limits(1):
        for name, settings in ours.items():
            model, cpu, wall, peak = measured(partial(fit_ours, X_train, **settings))
            rmse = test_rmse(model, X_train, X_test)
            seconds = wall if "n_jobs" in settings else cpu
            rows.append(
                [
                    name,
                    f"{rmse:.4f}",
                    f"{model.n_iter_}",
                    f"{seconds / model.n_iter_:.2f}",
                    f"{peak:.0f}",
                    f"{model.noise_variance_:.3f}",
                ]
            )
            print(*rows[-1], flush=True)
        rows.insert(2, cluster_row(X_train, X_test))
        print(*rows[2], flush=True)
        # The fit's own CPU seconds; the peak includes Surprise's copy of
        # the training ratings, which it fits from.
        (rmse, cpu), _, _, peak = measured(
            lambda: fit_surprise(SVD, X_train, X_test, 0)
        )
        epochs = SVD().n_epochs
        rows.append(
            [
                f"Surprise SVD ({epochs} epochs)",
                f"{rmse:.4f}",
                f"{epochs}",
                f"{cpu / epochs:.2f}",
                f"{peak:.0f}",
                "",
            ]
        )
        print(*rows[-1], flush=True)
    header = [
        "Model",
        "Test RMSE",
        "Passes",
        "CPU s / pass",
        "Peak MiB",
        "Noise variance",
    ]
    table = simple_table(header, rows)
    print(table)
    if args.n_ratings == DEFAULT_RATINGS:
        write_results(RESULTS, [setup, table])


if __name__ == "__main__":
    main()
