"""One machine against a Dask LocalCluster of 1 and 2 worker processes.

The same SmoothedLDA fit (one pass, the same seed and minibatches) runs
four ways on a large corpus, for each number of topics K and minibatch
size: in this process with 1 and with 2 threads, and on a LocalCluster of
1 and of 2 worker processes with one thread each, from a Dask array whose
row blocks (one per worker) were persisted on the workers beforehand. For
each it prints the seconds of the pass; the mean time of an update's local
step as the update sees it (for the cluster: shipping the shards'
parameters, the workers' local steps and the statistics' way back); the
bytes sent to and received from the workers per update; the ratio of the
pass's time to that of one machine with one thread; and the largest
difference of the components from that fit's, relative to their largest
value.

Run ``python benchmarks/bench_dask.py FILE --column summary`` on a
tab-separated file of texts (or one text per line without ``--column``).
"""

import logging
import re
import time
from pathlib import Path

import numpy as np

from sklearn_svi import SmoothedLDA

from _common import argument_parser
from corpus import corpus_name, load_corpus
from tables import report, simple_table

RESULTS_DIRECTORY = Path(__file__).resolve().parent / "results"
N_COMPONENTS = (20, 100)
BATCH_SIZES = (1024, 16384)


class UpdateLog(logging.Handler):
    """Collects the package's DEBUG records of each update."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.local_step_seconds = []
        self.sent = []
        self.received = []

    def emit(self, record):
        message = record.getMessage()
        if match := re.search(r"in ([0-9.]+) s$", message):
            self.local_step_seconds.append(float(match.group(1)))
        elif match := re.search(r"(\d+) bytes sent, (\d+) bytes received", message):
            self.sent.append(int(match.group(1)))
            self.received.append(int(match.group(2)))


def timed_fit(X, n_components, batch_size, n_jobs=None):
    """Fit one pass; the seconds, the model and the update log."""
    log = UpdateLog()
    logger = logging.getLogger("sklearn_svi")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    try:
        started = time.perf_counter()
        model = SmoothedLDA(
            n_components=n_components,
            batch_size=batch_size,
            max_iter=1,
            random_state=0,
            n_jobs=n_jobs,
        ).fit(X)
        seconds = time.perf_counter() - started
    finally:
        logger.removeHandler(log)
        logger.setLevel(logging.NOTSET)
    return seconds, model, log


def row(way, seconds, model, log, reference):
    reference_seconds, reference_model = reference
    difference = np.max(np.abs(model.components_ - reference_model.components_))
    bytes_per_update = (
        (f"{np.mean(log.sent):,.0f}", f"{np.mean(log.received):,.0f}")
        if log.sent
        else ("0", "0")
    )
    return [
        way,
        f"{model.n_components}",
        f"{model.batch_size:,}",
        f"{model.n_batch_iter_:,}",
        f"{seconds:.2f}",
        f"{1000 * np.mean(log.local_step_seconds):.1f}",
        *bytes_per_update,
        f"{seconds / reference_seconds:.2f}",
        f"{difference / np.max(np.abs(reference_model.components_)):.1e}",
    ]


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("corpus", help="a text file of documents")
    parser.add_argument("--column", help="the column of texts of a .tsv file")
    parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=BATCH_SIZES)
    parser.add_argument("--n-components", type=int, nargs="+", default=N_COMPONENTS)
    arguments = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    X = load_corpus(arguments.corpus, arguments.column, arguments.n_features)
    cases = [
        (n_components, batch_size)
        for n_components in arguments.n_components
        for batch_size in arguments.batch_sizes
    ]
    rows = []
    references = {}
    for case in cases:
        for n_jobs in (1, 2):
            seconds, model, log = timed_fit(X, *case, n_jobs)
            if n_jobs == 1:
                references[case] = (seconds, model)
            way = f"one machine, {n_jobs} thread{'s' * (n_jobs > 1)}"
            rows.append(row(way, seconds, model, log, references[case]))
            print(rows[-1])
    for n_workers in (1, 2):
        cluster = LocalCluster(
            n_workers=n_workers, threads_per_worker=1, dashboard_address=None
        )
        with Client(cluster) as client:
            rows_per_block = -(-X.shape[0] // n_workers)
            blocks = da.from_array(X, chunks=(rows_per_block, X.shape[1]))
            blocks = client.persist(blocks)
            client.wait_for_workers(n_workers)
            for case in cases:
                seconds, model, log = timed_fit(blocks, *case)
                way = f"LocalCluster, {n_workers} worker{'s' * (n_workers > 1)}"
                rows.append(row(way, seconds, model, log, references[case]))
                print(rows[-1])
        cluster.close()

    rows.sort(key=lambda cells: (int(cells[1]), int(cells[2].replace(",", ""))))
    settings = (
        f"{corpus_name(arguments.corpus)}: {X.shape[0]:,} documents, "
        f"{X.shape[1]:,} words, {X.nnz:,} stored counts; SmoothedLDA(L=1), "
        "one pass of fit, random_state=0, on a machine "
        "with 2 cores. Local step: the mean per update as the update sees it. "
        "Bytes: per update, to the workers (the model cut to the shards' "
        "words) and back (the shards' statistics). Time ratio: against one "
        "machine with one thread. Difference: the largest of the components "
        "against that fit's, relative to their largest value."
    )
    table = simple_table(
        [
            "Way",
            "K",
            "Batch",
            "Updates",
            "Seconds",
            "Local step ms",
            "Bytes sent",
            "Bytes received",
            "Time ratio",
            "Difference",
        ],
        rows,
    )
    report(
        RESULTS_DIRECTORY / f"dask_{corpus_name(arguments.corpus)}.rst",
        settings,
        table,
    )


if __name__ == "__main__":
    main()
