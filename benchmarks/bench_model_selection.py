"""Model selection by the ELBO and by the papers' held-out measure.

A GridSearchCV over the mechanisms of the package (12 candidates: the
smoothing window L of SmoothedLDA, the effective batch size M of
AnnealedLDA, the prior variance of FilteredLDA's Student's t filter) is run
twice on the training part of a real corpus, once ranking the candidates by
``score`` (the ELBO of the held-out fold, scikit-learn's default) and once
by :func:`sklearn_svi.metrics.completion_score` (the held-out per-word log
predictive probability by document completion). The candidate each picks is
refitted on the whole training part and judged on a separate test part by
document completion. The schedule is scikit-learn's, kappa = 0.7.

Then the completion-scored search is timed with ``n_jobs=1`` and
``n_jobs=2`` (joblib's process workers). The estimators have ``n_jobs=-1``:
all cores in the serial search, the worker's share of them in the parallel
one, so the machine is not oversubscribed. The peak memory of the process
tree is sampled: joblib memory-maps the corpus's arrays for the workers
instead of copying them per candidate.

Run ``python benchmarks/bench_model_selection.py`` (healthtweets, about 5
minutes on 2 cores), ``... NewsArticles --max-documents 2000`` for a short
run, or ``... npm.tsv --column summary`` for a text file.
"""

import argparse
import os
import threading
import time
from pathlib import Path

from joblib.externals.loky import get_reusable_executor
from scipy.stats import spearmanr
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import Pipeline

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import completion_score

from corpus import corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS = Path(__file__).resolve().parent / "results"


def candidate_grid(n_components, batch_size, seed):
    """Twelve candidates: four values of L, of M and of the filter's prior."""
    # n_jobs=-1: all cores in a serial search, the worker's share of them in
    # a parallel one.
    common = dict(
        n_components=n_components,
        batch_size=batch_size,
        max_iter=1,
        learning_decay=0.7,
        n_jobs=-1,
        random_state=seed,
    )
    return [
        {"lda": [SmoothedLDA(**common)], "lda__L": [1, 3, 10, 30]},
        {
            "lda": [AnnealedLDA(M_growth=0.0, **common)],
            "lda__M": [batch_size // 8, batch_size // 4, batch_size // 2, batch_size],
        },
        {
            "lda": [FilteredLDA(learning_rate="student-t", **common)],
            "lda__prior_variance": [0.0, 1.0, 10.0, 1e3],
        },
    ]


def candidate_name(params):
    """A short name of a candidate of ``candidate_grid``."""
    estimator = type(params["lda"]).__name__
    setting = next(
        f"{name.removeprefix('lda__')}={value:g}"
        for name, value in params.items()
        if name != "lda"
    )
    return f"{estimator} {setting}"


class TreeMemory:
    """Peak resident memory of this process and its descendants, sampled.

    Reads ``/proc`` every ``interval`` seconds (Linux).
    """

    def __init__(self, interval=0.05):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(os.getpid()))
            time.sleep(self.interval)


def _tree_rss(root):
    """Resident bytes of process ``root`` and its descendants."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def corpus_mib(X):
    """Memory of the arrays of a CSR matrix, in MiB."""
    return (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20


def run_search(X_train, grid, scoring, n_jobs, seed):
    """Fit the grid search; return it, its wall time and peak tree memory."""
    search = GridSearchCV(
        Pipeline([("lda", grid[0]["lda"][0])]),
        grid,
        scoring=scoring,
        cv=KFold(3, shuffle=True, random_state=seed),
        n_jobs=n_jobs,
    )
    with TreeMemory() as memory:
        start = time.perf_counter()
        search.fit(X_train)
        seconds = time.perf_counter() - start
    get_reusable_executor().shutdown(wait=True)
    return search, seconds, memory.peak


def compare_criteria(X_train, X_test, grid, seed):
    """The candidates' scores by both criteria, and the test fit of each pick."""
    by_bound = run_search(X_train, grid, None, 1, seed)[0]
    by_completion, seconds, peak = run_search(X_train, grid, completion_score, 1, seed)
    bound_scores = by_bound.cv_results_["mean_test_score"]
    completion_scores = by_completion.cv_results_["mean_test_score"]
    rows = [
        [candidate_name(params), f"{bound:.1f}", f"{completion:.4f}"]
        for params, bound, completion in zip(
            by_bound.cv_results_["params"], bound_scores, completion_scores
        )
    ]
    picks = []
    for criterion, search in (
        ("score (ELBO)", by_bound),
        ("completion", by_completion),
    ):
        test = completion_score(search.best_estimator_, X_test)
        picks.append([criterion, candidate_name(search.best_params_), f"{test:.4f}"])
    rank_correlation = spearmanr(bound_scores, completion_scores).statistic
    return rows, picks, rank_correlation, (seconds, peak)


def time_parallel(X_train, grid, seed, serial):
    """Wall time and peak memory of the completion-scored search, n_jobs=1
    (``serial``, measured before) and n_jobs=2; and the parallel search."""
    search, seconds, peak = run_search(X_train, grid, completion_score, 2, seed)
    rows = [
        [str(n_jobs), f"{seconds:.1f}", f"{peak / 2**20:.0f}"]
        for n_jobs, (seconds, peak) in ((1, serial), (2, (seconds, peak)))
    ]
    return rows, search


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "corpus",
        nargs="?",
        default="healthtweets",
        help="NewsArticles, healthtweets, or the path of a text file",
    )
    parser.add_argument("--column", help="the column of texts of a TSV file")
    parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument(
        "--max-documents", type=int, help="use the first documents only"
    )
    parser.add_argument("--n-components", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    X = load_corpus(args.corpus, args.column, args.n_features)[: args.max_documents]
    name = corpus_name(args.corpus)
    X_train, X_test = train_test_split(X, test_size=0.2, random_state=args.seed)
    grid = candidate_grid(args.n_components, args.batch_size, args.seed)
    rows, picks, rank_correlation, serial = compare_criteria(
        X_train, X_test, grid, args.seed
    )
    timing, parallel_search = time_parallel(X_train, grid, args.seed, serial)
    serial_pick = picks[1][1]
    parallel_pick = candidate_name(parallel_search.best_params_)
    sections = [
        f"Model selection on {name}: {X_train.shape[0]} training and "
        f"{X_test.shape[0]} test documents, K = {args.n_components}, minibatches "
        f"of {args.batch_size}, one pass per fit, 3-fold cross-validation.",
        "Mean cross-validated score of each candidate by each criterion:",
        simple_table(["candidate", "score (ELBO)", "completion"], rows),
        f"Spearman rank correlation of the two criteria: {rank_correlation:.2f}.",
        "The pick of each criterion, refitted on all training documents, "
        "judged by document completion on the test documents:",
        simple_table(["selected by", "candidate", "test completion"], picks),
        "The completion-scored search with joblib's process workers (each "
        "estimator with n_jobs=-1: two threads in the serial search, one per "
        "worker in the parallel one); peak resident memory of the process "
        f"tree, for a training corpus of {corpus_mib(X_train):.1f} MiB:",
        simple_table(["n_jobs", "wall seconds", "peak MiB"], timing),
        f"Pick with n_jobs=1: {serial_pick}; with n_jobs=2: {parallel_pick}.",
    ]
    print("\n\n".join(sections))
    write_results(RESULTS / f"model_selection_{name}.rst", sections)


if __name__ == "__main__":
    main()
