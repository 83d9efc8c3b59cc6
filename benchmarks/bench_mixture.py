"""SVIGaussianMixture against scikit-learn's BayesianGaussianMixture.

Four comparisons, each run with ``python benchmarks/bench_mixture.py NAME``
(or ``all``):

``real``
    scikit-learn's real data sets (digits reduced to 10 dimensions by PCA,
    wine, breast_cancer, iris), standardised and split in half: held-out
    mean log-likelihood (``score``) and adjusted Rand index of the predicted
    components against the classes, over several seeds.
``large``
    1,000,000 x 10 points from 20 Gaussians: BayesianGaussianMixture's fit
    time, held-out log-likelihood and peak memory; then SVIGaussianMixture
    fed by ``partial_fit`` in chunks, timed until its held-out
    log-likelihood is within 1% of BayesianGaussianMixture's, and its peak
    memory.
``small``
    3,000 points of three blobs (``make_blobs``), one data set per seed:
    the CPU seconds of ``fit`` with the default settings of both, their
    ratio, the mean log-likelihood (``score``) and the lower bound per
    sample of each, and whether ``fit`` warned.
``clusters``
    The experiment of Paisley, Fazelnia & Barr: 2-D data from 4 Gaussians,
    50 components with a Dirichlet prior of alpha / K, and the number of
    components that hold at least 1% of the points, for batch variational
    Bayes, SVI and SVI+, over 10 seeds.

Each writes its table to ``benchmarks/results/mixture_NAME.rst``.
"""

import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_blobs,
)
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_svi import SVIGaussianMixture

from _common import argument_parser
from tables import mean_spread, simple_table, write_results

RESULTS = Path(__file__).resolve().parent / "results"


def real_data_sets():
    """The four data sets as (name, X, y), before scaling."""
    digits = load_digits()
    yield (
        "digits (PCA 10)",
        PCA(10, random_state=0).fit_transform(digits.data),
        (digits.target),
    )
    for name, loader in [
        ("wine", load_wine),
        ("breast_cancer", load_breast_cancer),
        ("iris", load_iris),
    ]:
        data = loader()
        yield name, data.data, data.target


def run_real(n_seeds):
    """Held-out log-likelihood and ARI on the real data sets."""
    header = [
        "Data set",
        "Model",
        "Held-out log-lik.",
        "vs BayesianGMM",
        "ARI",
    ]
    rows = []
    for name, X, y in real_data_sets():
        n_classes = len(np.unique(y))
        scores = {"BayesianGaussianMixture": [], "SVIGaussianMixture": []}
        for seed in range(n_seeds):
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.5, stratify=y, random_state=seed
            )
            scaler = StandardScaler().fit(X_train)
            X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
            common = dict(n_components=n_classes, random_state=seed)
            models = {
                "BayesianGaussianMixture": BayesianGaussianMixture(
                    max_iter=500, **common
                ),
                "SVIGaussianMixture": SVIGaussianMixture(
                    batch_size=32, max_iter=50, **common
                ),
            }
            for model_name, model in models.items():
                model.fit(X_train)
                scores[model_name].append(
                    (
                        model.score(X_test),
                        adjusted_rand_score(y_test, model.predict(X_test)),
                    )
                )
        reference = np.array([s for s, _ in scores["BayesianGaussianMixture"]])
        for model_name, values in scores.items():
            held_out, ari = map(np.array, zip(*values))
            rows.append(
                [
                    name,
                    model_name,
                    mean_spread(held_out, 3),
                    mean_spread(held_out - reference, 3, sign="+"),
                    mean_spread(ari, 3),
                ]
            )
            print(rows[-1], flush=True)
    settings = (
        "Standardised, split in half (stratified) per seed; K = number of "
        "classes, full covariances, default priors; BayesianGaussianMixture "
        "with max_iter=500; SVIGaussianMixture with minibatches of 32, at "
        "most 50 passes (fit stops when the bound per sample changes by less "
        f"than tol=1e-3), step size (10 + t)^-0.7; {n_seeds} seeds (mean ± standard "
        "deviation; differences taken per seed)."
    )
    return settings, simple_table(header, rows)


def make_large(n_samples, n_features, n_clusters, seed):
    """Points from ``n_clusters`` Gaussians with random means and covariances."""
    rng = np.random.RandomState(seed)
    means = rng.uniform(-10, 10, size=(n_clusters, n_features))
    factors = rng.normal(scale=0.6, size=(n_clusters, n_features, n_features))
    labels = rng.randint(n_clusters, size=n_samples)
    noise = rng.normal(size=(n_samples, n_features))
    X = means[labels] + np.einsum("nij,nj->ni", factors[labels], noise)
    return X


def measured(function):
    """Run ``function``; return its value, seconds and peak traced MiB."""
    tracemalloc.start()
    start = time.perf_counter()
    value = function()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return value, seconds, peak


def run_large(n_samples, chunk):
    """Time and memory to BayesianGaussianMixture's held-out fit."""
    n_features, n_clusters = 10, 20
    data = make_large(n_samples + 100_000, n_features, n_clusters, seed=0)
    X, X_test = data[:n_samples], data[n_samples:]
    reference = BayesianGaussianMixture(
        n_components=n_clusters, max_iter=200, random_state=0
    )
    _, reference_seconds, reference_peak = measured(lambda: reference.fit(X))
    target = reference.score(X_test)
    print(
        f"BayesianGaussianMixture: {reference_seconds:.1f} s, "
        f"{reference.n_iter_} iterations, held-out {target:.4f}, "
        f"peak {reference_peak:.0f} MiB",
        flush=True,
    )

    model = SVIGaussianMixture(
        n_components=n_clusters,
        batch_size=2000,
        total_samples=n_samples,
        random_state=0,
    )
    order = np.random.RandomState(1).permutation(n_samples)

    # Only the partial_fit calls are timed and traced, not the scoring.
    seconds, svi_peak, n_seen = 0.0, 0.0, None
    tracemalloc.start()
    for start in range(0, 10 * n_samples, chunk):
        rows = order[np.arange(start, start + chunk) % n_samples]
        X_chunk = X[rows]
        tracemalloc.reset_peak()
        began = time.perf_counter()
        model.partial_fit(X_chunk)
        seconds += time.perf_counter() - began
        svi_peak = max(svi_peak, tracemalloc.get_traced_memory()[1] / 2**20)
        del X_chunk
        score = model.score(X_test)
        print(f"  {start + chunk} samples: held-out {score:.4f}", flush=True)
        if score >= target - 0.01 * abs(target):
            n_seen = start + chunk
            break
    tracemalloc.stop()
    header = ["Model", "Seconds", "Samples seen", "Held-out log-lik.", "Peak MiB"]
    rows = [
        [
            "BayesianGaussianMixture",
            f"{reference_seconds:.1f}",
            f"{reference.n_iter_} x {n_samples:,}",
            f"{target:.4f}",
            f"{reference_peak:.0f}",
        ],
        [
            "SVIGaussianMixture",
            f"{seconds:.1f}",
            "not reached" if n_seen is None else f"{n_seen:,}",
            f"{score:.4f}",
            f"{svi_peak:.0f}",
        ],
    ]
    settings = (
        f"{n_samples:,} x {n_features} training points and 100,000 held-out "
        f"points from {n_clusters} Gaussians; K = {n_clusters}, full "
        "covariances, default priors and k-means initialisation for both; "
        "BayesianGaussianMixture with max_iter=200 and tol=1e-3; "
        "SVIGaussianMixture with minibatches of 2,000 and step size "
        f"(10 + t)^-0.7, fed {chunk:,} samples per partial_fit call and "
        "stopped at the first call after which its held-out log-likelihood is "
        "within 1% of BayesianGaussianMixture's. Seconds count fit or "
        "partial_fit only; peak memory is the peak of Python allocations "
        "(tracemalloc) during them, the training data excluded (the chunk "
        "passed to partial_fit and the fitted model included). Speed-up: "
        f"{reference_seconds / seconds:.1f}x; memory ratio "
        f"{reference_peak / svi_peak:.1f}x."
    )
    return settings, simple_table(header, rows)


def cpu_fit(model, X):
    """Fit ``model`` to ``X``; return its CPU seconds and whether it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        started = time.process_time()
        model.fit(X)
        seconds = time.process_time() - started
    return seconds, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def run_small(n_seeds, n_repeats):
    """CPU time, score and bound of both on 3,000 points of three blobs."""
    header = [
        "Seed",
        "Ours (s)",
        "BGM (s)",
        "Ratio",
        "Our score",
        "BGM score",
        "Our bound",
        "BGM bound",
        "Passes / updates",
        "BGM iter.",
        "Warned",
    ]
    rows, ratios = [], []
    for seed in range(n_seeds):
        X = make_blobs(n_samples=3000, centers=3, random_state=seed)[0]
        models = {
            "ours": SVIGaussianMixture(n_components=3, random_state=seed),
            "bgm": BayesianGaussianMixture(n_components=3, random_state=seed),
        }
        seconds = {name: [] for name in models}
        warned, fitted = {}, {}
        # Alternated, so that both see the same load of the machine.
        for _ in range(n_repeats):
            for name, unfitted in models.items():
                model = clone(unfitted)
                took, warned[name] = cpu_fit(model, X)
                seconds[name].append(took)
                fitted[name] = model
        ours, bgm = fitted["ours"], fitted["bgm"]
        median = {name: float(np.median(values)) for name, values in seconds.items()}
        ratios.append(median["ours"] / median["bgm"])
        rows.append(
            [
                str(seed),
                f"{median['ours']:.4f}",
                f"{median['bgm']:.4f}",
                f"{ratios[-1]:.2f}",
                f"{ours.score(X):.4f}",
                f"{bgm.score(X):.4f}",
                f"{ours.lower_bound_ / len(X):.4f}",
                f"{bgm.lower_bound_ / len(X):.4f}",
                f"{ours.n_iter_} / {ours.n_batch_iter_}",
                str(bgm.n_iter_),
                " / ".join(
                    f"{name} {'yes' if warned[name] else 'no'}" for name in models
                ),
            ]
        )
        print(rows[-1], flush=True)
    settings = (
        "3,000 points of make_blobs(n_samples=3000, centers=3, "
        "random_state=seed), one data set per seed; both with n_components=3, "
        "random_state=seed and every other setting at its default "
        "(SVIGaussianMixture: minibatches of 1,024, at most 20 passes, tol=1e-3 "
        "on the bound per sample; BayesianGaussianMixture: at most 100 "
        "iterations, tol=1e-3 on the bound). Seconds are the median CPU "
        f"seconds (time.process_time) of {n_repeats} fits of each, alternated; "
        "the score is the mean log-likelihood on the training points and the "
        "bound is the lower bound (lower_bound\\_) per sample; Warned says "
        "whether fit raised a "
        "ConvergenceWarning. Median ratio over the seeds: "
        f"{np.median(ratios):.2f} (from {min(ratios):.2f} to {max(ratios):.2f})."
    )
    return settings, simple_table(header, rows)


def make_four_clusters(n_samples, seed):
    rng = np.random.RandomState(seed)
    centers = np.array([[-4.0, -4.0], [-4.0, 4.0], [4.0, -4.0], [4.0, 4.0]])
    labels = rng.randint(4, size=n_samples)
    return centers[labels] + rng.normal(size=(n_samples, 2))


def clusters_found(model, X):
    """Components that hold at least 1% of the points."""
    counts = np.bincount(model.predict(X), minlength=model.n_components)
    return int(np.sum(counts >= 0.01 * len(X)))


def run_clusters(n_seeds, n_samples):
    """Number of clusters found by batch VB, SVI and SVI+."""
    n_components, alpha = 50, 1.0
    common = dict(
        n_components=n_components,
        weight_concentration_prior_type="dirichlet_distribution",
        weight_concentration_prior=alpha / n_components,
        init_params="random_from_data",
    )
    found = {"Batch VB": [], "SVI": [], "SVI+": []}
    for seed in range(n_seeds):
        X = make_four_clusters(n_samples, seed)
        models = {
            "Batch VB": BayesianGaussianMixture(
                max_iter=1000, random_state=seed, **common
            ),
            # 20 passes each, as in the paper.
            "SVI": SVIGaussianMixture(
                batch_size=500, max_iter=20, tol=0.0, random_state=seed, **common
            ),
            "SVI+": SVIGaussianMixture(
                batch_size=500,
                M=50,
                M_growth=50 / 20,
                max_iter=20,
                tol=0.0,
                random_state=seed,
                **common,
            ),
        }
        for name, model in models.items():
            found[name].append(clusters_found(model.fit(X), X))
        print(seed, {name: values[-1] for name, values in found.items()}, flush=True)
    header = ["Clusters found", *[str(k) for k in range(1, 9)], "Mean"]
    rows = []
    for name, values in found.items():
        counts = np.bincount(values, minlength=9)
        rows.append(
            [name, *[str(count) for count in counts[1:9]], f"{np.mean(values):.1f}"]
        )
    settings = (
        f"{n_samples:,} points from 4 well separated 2-D Gaussians; "
        f"{n_components} components with a Dirichlet prior of "
        f"{alpha}/{n_components} on the weights, initialised from random "
        "points; a cluster is found when at least 1% of the points are "
        "assigned to it. Batch VB is BayesianGaussianMixture (max_iter=1000); "
        "SVI and SVI+ make 20 passes with minibatches of 500 and step size "
        "(10 + t)^-0.7, SVI+ with M growing from 50 by 2.5 per update; "
        f"counts of seeds out of {n_seeds}."
    )
    return settings, simple_table(header, rows)


def main(argv=None):
    """Run the chosen comparisons and write their tables."""
    parser = argument_parser(__doc__)
    parser.add_argument("name", choices=["real", "large", "small", "clusters", "all"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=20_000)
    args = parser.parse_args(argv)
    runs = {
        "real": lambda: run_real(args.seeds),
        "large": lambda: run_large(args.n_samples, args.chunk),
        "small": lambda: run_small(8, 5),
        "clusters": lambda: run_clusters(10, 5000),
    }
    names = list(runs) if args.name == "all" else [args.name]
    warnings.simplefilter("ignore", ConvergenceWarning)
    for name in names:
        with threadpool_limits(1):
            settings, table = runs[name]()
        print(settings)
        print(table)
        write_results(RESULTS / f"mixture_{name}.rst", [settings, table])


if __name__ == "__main__":
    main()
