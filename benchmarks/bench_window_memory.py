"""Memory of SmoothedLDA's smoothing window: sparse blocks against dense storage.

The window of Mandt & Blei's smoothed gradients holds the last L minibatch
statistics. SmoothedLDA stores each as the indices of the words of its
minibatch and a block of those words' values; a dense window would hold
L x K x V values. This script fits SmoothedLDA for one pass on real corpora
and reports the bytes the queued statistics take, measured on the fitted
window, against the dense L x K x V, for several window lengths.

Run ``python benchmarks/bench_window_memory.py``.
"""

import argparse
from pathlib import Path

import numpy as np

from corpus import load_counts
from sklearn_svi import SmoothedLDA

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
        Bytes of L x K x V float64 values.
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
    window = model._window
    dense_bytes = L * model.components_.size * model.components_.itemsize
    mean_words = np.mean([statistic.rows.size for statistic in window.queue])
    return window.nbytes, dense_bytes, mean_words


def main(argv=None):
    """Measure the window on each corpus and print and write a table.

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments; None reads ``sys.argv``.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    header = ["Corpus", "V", "L", "Words/minibatch", "Sparse MiB", "Dense MiB", "Ratio"]
    rows = []
    for name in CORPORA:
        X, vocabulary = load_counts(name)
        X = X.astype(np.float64)
        for L in WINDOW_LENGTHS:
            print(f"{name}: L={L} ...", flush=True)
            sparse_bytes, dense_bytes, mean_words = measure(X, L)
            rows.append(
                [
                    name,
                    str(len(vocabulary)),
                    str(L),
                    f"{mean_words:.0f}",
                    f"{sparse_bytes / 2**20:.1f}",
                    f"{dense_bytes / 2**20:.1f}",
                    f"{dense_bytes / sparse_bytes:.1f}",
                ]
            )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    rule = "  ".join("=" * width for width in widths)

    def line(cells):
        return "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths))
        )

    table = "\n".join([rule, line(header), rule, *map(line, rows), rule])
    settings = (
        f"K={N_COMPONENTS}, batch_size={BATCH_SIZE}, float64, after one pass of "
        "partial_fit; dense is L x K x V values."
    )
    print()
    print(settings)
    print(table)
    RESULTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_PATH.write_text(f"{settings}\n\n{table}\n")
    print(f"Wrote {RESULTS_PATH}")


if __name__ == "__main__":
    main()
