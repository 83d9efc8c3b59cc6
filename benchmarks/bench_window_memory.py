"""Memory of SmoothedLDA's smoothing window: sparse blocks against dense storage.

The window of Mandt & Blei's smoothed gradients holds the last L minibatch
statistics. SmoothedLDA stores each as the indices of the words of its
minibatch and a block of those words' values; a dense window would hold
L x K x V values. This script fits SmoothedLDA for one pass on real corpora
and reports the bytes the queued statistics take, measured on the fitted
window, against dense storage of the same statistics (K x V values each),
for several window lengths.

Run ``python benchmarks/bench_window_memory.py``.
"""

from pathlib import Path

import numpy as np

from sklearn_svi import SmoothedLDA

from _common import argument_parser
from corpus import load_counts
from tables import report, simple_table

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "window_memory.rst"
CORPORA = ("NewsArticles", "healthtweets")
WINDOW_LENGTHS = (10, 100)
N_COMPONENTS = 50
BATCH_SIZE = 256


def measure(X, L):
    """Fit one pass of SmoothedLDA(L) on ``X`` and measure its window.

    Parameters
    ----------
    X : sparse matrix of shape (n_documents, n_features)
        Document-word counts, float64.
    L : int
        Window length.

    Returns
    -------
    sparse_bytes : int
        Bytes of the queued statistics (word indices and blocks).
    dense_bytes : int
        Bytes of the same statistics stored densely, K x V values each.
    n_stored : int
        Number of statistics in the window: L, or fewer if the pass had
        fewer minibatches.
    mean_words : float
        Mean number of distinct words per minibatch in the window.
    """
    model = SmoothedLDA(
        n_components=N_COMPONENTS,
        L=L,
        batch_size=BATCH_SIZE,
        total_samples=X.shape[0],
        random_state=0,
    ).partial_fit(X)
    window = model._update_state.window
    n_stored = window.count
    dense_bytes = n_stored * model.components_.size * model.components_.itemsize
    mean_words = np.mean([statistic.rows.size for statistic in window.rows.queue])
    return window.nbytes, dense_bytes, n_stored, mean_words


def main(argv=None):
    """Measure the window on each corpus, print a table and write it.

    ``argv=None`` reads the command line.
    """
    parser = argument_parser(__doc__)
    parser.parse_args(argv)
    header = [
        "Corpus",
        "V",
        "L",
        "Stored",
        "Words/minibatch",
        "Sparse MiB",
        "Dense MiB",
        "Ratio",
    ]
    rows = []
    for name in CORPORA:
        X, vocabulary = load_counts(name)
        X = X.astype(np.float64)
        for L in WINDOW_LENGTHS:
            print(f"{name}: L={L} ...", flush=True)
            sparse_bytes, dense_bytes, n_stored, mean_words = measure(X, L)
            rows.append(
                [
                    name,
                    str(len(vocabulary)),
                    str(L),
                    str(n_stored),
                    f"{mean_words:.0f}",
                    f"{sparse_bytes / 2**20:.1f}",
                    f"{dense_bytes / 2**20:.1f}",
                    f"{dense_bytes / sparse_bytes:.1f}",
                ]
            )
    table = simple_table(header, rows)
    settings = (
        f"K={N_COMPONENTS}, batch_size={BATCH_SIZE}, float64, after one pass of "
        "partial_fit. Stored: statistics in the window (L, or the number of "
        "minibatches of the pass if smaller); dense: K x V values for each."
    )
    report(RESULTS_PATH, settings, table)


if __name__ == "__main__":
    main()
