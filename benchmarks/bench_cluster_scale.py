"""What the client of a Dask cluster pays per update, against the number of
workers.

A scheduler and W worker processes of one thread each are started as their
own processes (``dask scheduler``, ``dask worker``), as on a real cluster,
for each W of ``--workers``; the corpus is cut into ``--blocks`` row blocks,
which the workers compute and keep. ``SmoothedLDA`` then makes
``--updates`` updates of ``fit`` on that Dask array (minibatches drawn at
random, so that each touches every block), and the script records, per
update, as the client sees it:

- the bytes it sends (the model's rows that the minibatch reads) and
  receives (the minibatch's statistic), from the package's DEBUG records;
- its CPU seconds (this process: cutting minibatches, serialising the
  model's rows, submitting the tasks and the update itself);
- the peak of the memory it allocates during the fit (``tracemalloc``);
- the wall seconds, which on a machine with fewer cores than workers say
  little about a real cluster.

It then extrapolates the client's share of an update to a model of
K=1000 topics and 10^6 words with the client's CPU seconds per byte that
it sent and received.

Run ``python benchmarks/bench_cluster_scale.py FILE --column summary`` on a
tab-separated file of texts, or on a built-in corpus (``healthtweets``).
"""

import logging
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from sklearn_svi import SmoothedLDA

from _common import corpus_parser
from corpus import corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS_DIRECTORY = Path(__file__).resolve().parent / "results"


class ClientLog(logging.Handler):
    """The bytes of each update, from the package's DEBUG records."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.parts, self.sent, self.received = [], [], []

    def emit(self, record):
        message = record.getMessage()
        if match := re.search(
            r"(\d+) parts, (\d+) bytes sent, (\d+) bytes received", message
        ):
            parts, sent, received = map(int, match.groups())
            self.parts.append(parts)
            self.sent.append(sent)
            self.received.append(received)


class Cluster:
    """A scheduler and ``n_workers`` one-thread workers, each its own
    process, started with Dask's command line."""

    def __init__(self, n_workers):
        self.n_workers = n_workers
        self.directory = tempfile.TemporaryDirectory()
        self.scheduler_file = Path(self.directory.name) / "scheduler.json"
        self.processes = []

    def __enter__(self):
        dask = [sys.executable, "-m", "dask"]
        where = ["--scheduler-file", str(self.scheduler_file), "--no-dashboard"]
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(
            subprocess.Popen([*dask, "scheduler", "--port", "0", *where], **quiet)
        )
        worker = [*dask, "worker", *where, "--nthreads", "1", "--memory-limit", "0"]
        for _ in range(self.n_workers):
            self.processes.append(subprocess.Popen(worker, **quiet))
        from distributed import Client

        for _ in range(600):
            if self.scheduler_file.exists():
                break
            time.sleep(0.1)
        self.client = Client(scheduler_file=str(self.scheduler_file), timeout=120)
        self.client.wait_for_workers(self.n_workers, timeout=600)
        return self.client

    def __exit__(self, *exception):
        self.client.close()
        for process in self.processes[::-1]:
            process.terminate()
            process.wait(timeout=60)
        self.directory.cleanup()


class StopAfter:
    """Stop the fit after ``n_updates`` updates."""

    def __init__(self, n_updates):
        self.n_updates = n_updates

    def __call__(self, estimator, progress):
        return progress.n_batch_iter >= self.n_updates


def measured_fit(client, X, n_blocks, n_components, batch_size, n_updates):
    """The client's costs of ``n_updates`` updates of a fit on the workers."""
    import dask.array as da
    from distributed import wait

    rows_per_block = -(-X.shape[0] // n_blocks)
    blocks = client.persist(
        da.from_array(X, chunks=(rows_per_block, X.shape[1]), asarray=False)
    )
    wait(blocks)
    model = SmoothedLDA(
        n_components=n_components,
        batch_size=batch_size,
        max_iter=1,
        random_state=0,
        callback=StopAfter(n_updates),
    )
    log = ClientLog()
    logger = logging.getLogger("sklearn_svi")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    tracemalloc.start()
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        model.fit(blocks)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        logger.removeHandler(log)
        logger.setLevel(logging.NOTSET)
    updates = model.n_batch_iter_
    return dict(
        updates=updates,
        parts=float(np.mean(log.parts)),
        sent=float(np.mean(log.sent)),
        received=float(np.mean(log.received)),
        cpu=cpu / updates,
        wall=wall / updates,
        peak=peak,
        lambda_bytes=model.components_.nbytes,
    )


def measurement_row(n_workers, n_components, fit):
    return [
        f"{n_workers}",
        f"{n_components}",
        f"{fit['parts']:.1f}",
        f"{fit['sent'] / 1e6:.2f}",
        f"{fit['received'] / 1e6:.2f}",
        f"{1000 * fit['cpu']:.0f}",
        f"{1000 * fit['wall']:.0f}",
        f"{fit['peak'] / 2**20:.0f}",
        f"{fit['lambda_bytes'] / 2**20:.0f}",
    ]


def client_cost_model(fits):
    """Least squares fit of the client's CPU seconds per update,
    a + b W + c (MB sent and received): a fixed cost, a cost per worker
    (the tasks submitted for it), and a cost per megabyte moved."""
    cases = list(fits.items())
    design = np.array(
        [
            [1.0, n_workers, (fit["sent"] + fit["received"]) / 1e6]
            for (n_workers, _), fit in cases
        ]
    )
    seconds = np.array([fit["cpu"] for _, fit in cases])
    return np.linalg.lstsq(design, seconds, rcond=None)[0]


def extrapolation(fits, target, network_bytes_per_second=1.25e9):
    """The client's share of an update and of an epoch of 10^9 documents at
    the ``target`` model, minibatch and cluster (K, V, B, W), with the
    constants of :func:`client_cost_model`.

    The minibatch of the target is taken to read every word (2^20 documents
    of a 10^6-word vocabulary read most of it), so the rows sent and the
    statistic received are K V entries each; the network moves
    ``network_bytes_per_second`` (10 Gbit/s).
    """
    fixed, per_worker, per_megabyte = client_cost_model(fits)
    n_components, n_features, batch_size, n_workers = target
    each_way = 8 * n_components * n_features
    cpu = fixed + per_worker * n_workers + per_megabyte * 2 * each_way / 1e6
    seconds = cpu + 2 * each_way / network_bytes_per_second
    updates = 1e9 / batch_size
    return [
        ["fitted: client CPU per update, fixed", f"{1e3 * fixed:.1f} ms"],
        ["fitted: client CPU per worker", f"{1e3 * per_worker:.1f} ms"],
        ["fitted: client CPU per MB sent or received", f"{1e3 * per_megabyte:.1f} ms"],
        [
            f"K={n_components}, V={n_features:,}, W={n_workers}: GB each way",
            f"{each_way / 1e9:.0f}",
        ],
        ["client seconds per update (CPU and network)", f"{seconds:.0f}"],
        [f"updates of {batch_size:,} documents per 10^9", f"{updates:,.0f}"],
        ["client hours per epoch of 10^9 documents", f"{seconds * updates / 3600:.1f}"],
        [
            "client memory: lambda, the rows sent and the statistic (GB)",
            f"{3 * each_way / 1e9:.0f}",
        ],
    ]


def main():
    parser = corpus_parser(__doc__)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--blocks", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--updates", type=int, default=30)
    arguments = parser.parse_args()

    X = load_corpus(arguments.corpus, arguments.column, arguments.n_features)
    # Every number of workers at K, and the fewest at K / 4 too, which
    # separates the cost per megabyte from the fixed cost.
    cases = [(n_workers, arguments.n_components) for n_workers in arguments.workers]
    cases.insert(0, (min(arguments.workers), arguments.n_components // 4))
    fits = {}
    for n_workers, n_components in cases:
        with Cluster(n_workers) as client:
            fits[n_workers, n_components] = measured_fit(
                client,
                X,
                arguments.blocks,
                n_components,
                arguments.batch_size,
                arguments.updates,
            )
        print(measurement_row(n_workers, n_components, fits[n_workers, n_components]))
    name = corpus_name(arguments.corpus)
    header = (
        f"{name}: {X.shape[0]:,} documents, {X.shape[1]:,} words, "
        f"{arguments.blocks} row blocks; SmoothedLDA, "
        f"minibatches of {arguments.batch_size:,}, {arguments.updates} updates "
        "of fit; a scheduler and one-thread workers started as processes of "
        "their own on one machine (loopback); per update, as the client sees it."
    )
    measured = simple_table(
        [
            "workers",
            "K",
            "tasks of local steps",
            "MB sent",
            "MB received",
            "client CPU ms",
            "wall ms",
            "client peak MiB",
            "lambda MiB",
        ],
        [measurement_row(*case, fit) for case, fit in fits.items()],
    )
    extrapolated = simple_table(
        ["extrapolated", "value"],
        extrapolation(fits, target=(1000, 10**6, 2**20, 100)),
    )
    print(header, measured, extrapolated, sep="\n")
    write_results(
        RESULTS_DIRECTORY / f"cluster_scale_{name}.rst",
        [header, measured, extrapolated],
    )


if __name__ == "__main__":
    main()
