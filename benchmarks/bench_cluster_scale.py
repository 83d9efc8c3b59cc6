"""What the client of a Dask cluster pays per update, against the number of
workers, with lambda on the client and with lambda held by the workers.

A scheduler and W worker processes of one thread each are started as their
own processes (``dask scheduler``, ``dask worker``), as on a real cluster,
for each W of ``--workers``; the corpus is cut into ``--blocks`` row blocks,
which the workers compute and keep. ``SmoothedLDA`` then makes
``--updates`` updates of ``fit`` on that Dask array (minibatches drawn at
random, so that each touches every block), twice: with lambda on the client,
which sends each update the rows that the minibatch reads and receives its
statistic, and with ``"sklearn-svi.partition-model"``, where the workers
hold lambda in blocks of rows. Between the end of the first update and the
last, the script records per update, as the client sees it:

- the bytes its process sends and receives over its TCP connections to the
  scheduler and the workers, as the kernel counts them (``ss``);
- its CPU seconds (cutting minibatches, serialising payloads, submitting
  the tasks, the update itself);
- the peak of the memory it allocates (``tracemalloc``) during those
  updates, and apart from them at the start (until the first update
  ends: lambda's initial draw, the first minibatch) and at the end (lambda
  returned to the client);
- the wall seconds, which on a machine with fewer cores than workers say
  little about a real cluster.

It then extrapolates an update at K=1000 topics, 10^6 words, minibatches of
2^20 documents and 100 workers of 16 threads, with the constants measured:
the client's CPU seconds per worker and per megabyte, and the local step's
CPU seconds per document at K=1000 (timed here on one thread).

Run ``python benchmarks/bench_cluster_scale.py FILE --column summary`` on a
tab-separated file of texts, or on a built-in corpus (``healthtweets``).
"""

import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from sklearn_svi import SmoothedLDA
from sklearn_svi.lda._model import INITIAL_BATCH_BYTES

from _common import corpus_parser
from corpus import corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS_DIRECTORY = Path(__file__).resolve().parent / "results"


PARTITION_KEY = "sklearn-svi.partition-model"


class ClientLog(logging.Handler):
    """The number of parts of each update, from the package's DEBUG records."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.parts = []

    def emit(self, record):
        if match := re.search(r"update \d+: (\d+) parts", record.getMessage()):
            self.parts.append(int(match.group(1)))


def process_bytes():
    """Bytes this process has sent and received over its open TCP
    connections, as the kernel counts them (``ss``; Dask keeps its
    connections open)."""
    listing = subprocess.run(
        ["ss", "-tinpH"], capture_output=True, text=True, check=True
    ).stdout
    owner = f"pid={os.getpid()},"
    sent = received = 0
    lines = listing.splitlines()
    for socket, details in zip(lines[::2], lines[1::2]):
        if owner in socket:
            sent += int(re.search(r"bytes_sent:(\d+)", details or "x").group(1))
            if match := re.search(r"bytes_received:(\d+)", details):
                received += int(match.group(1))
    return sent, received


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


class UpdateMeter:
    """Record the client's bytes and CPU seconds after the first update and
    after the last, and stop the fit there."""

    def __init__(self, n_updates):
        self.n_updates = n_updates
        self.marks = []

    def __call__(self, estimator, progress):
        if progress.n_batch_iter == 1:
            self.start_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
        if progress.n_batch_iter == self.n_updates:
            self.peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
        if progress.n_batch_iter in (1, self.n_updates):
            self.marks.append(
                (*process_bytes(), time.process_time(), time.perf_counter())
            )
        return progress.n_batch_iter >= self.n_updates

    def per_update(self):
        """Bytes sent and received, CPU and wall seconds, per update."""
        first, last = np.array(self.marks[0]), np.array(self.marks[-1])
        return (last - first) / (self.n_updates - 1)


def measured_fit(client, blocks, n_components, batch_size, n_updates, partitioned):
    """The client's costs per update of a fit on the workers."""
    import dask

    meter = UpdateMeter(n_updates)
    model = SmoothedLDA(
        n_components=n_components,
        batch_size=batch_size,
        max_iter=1,
        random_state=0,
        callback=meter,
    )
    log = ClientLog()
    logger = logging.getLogger("sklearn_svi")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    tracemalloc.start()
    try:
        with dask.config.set({PARTITION_KEY: partitioned}):
            model.fit(blocks)
        end_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        logger.removeHandler(log)
        logger.setLevel(logging.NOTSET)
    sent, received, cpu, wall = meter.per_update()
    return dict(
        parts=float(np.mean(log.parts)),
        sent=sent,
        received=received,
        cpu=cpu,
        wall=wall,
        start_peak=meter.start_peak,
        peak=meter.peak,
        end_peak=end_peak,
        lambda_bytes=model.components_.nbytes,
    )


def measured_fits(client, X, n_blocks, n_components, batch_size, n_updates):
    """:func:`measured_fit` with lambda on the client and on the workers."""
    import dask.array as da
    from distributed import wait

    rows_per_block = -(-X.shape[0] // n_blocks)
    blocks = client.persist(
        da.from_array(X, chunks=(rows_per_block, X.shape[1]), asarray=False)
    )
    wait(blocks)
    return {
        where: measured_fit(
            client, blocks, n_components, batch_size, n_updates, partitioned
        )
        for where, partitioned in (("client", False), ("workers", True))
    }


def local_step_seconds(X, n_components, n_documents=2048):
    """CPU seconds of the default local step per document at ``n_components``
    topics, on one thread."""
    model = SmoothedLDA(
        n_components=n_components, batch_size=n_documents, max_iter=1, random_state=0
    ).partial_fit(X[:n_documents])
    prepared = model._prepare_minibatch(X[n_documents : 2 * n_documents])
    cpu = time.process_time()
    model._local_statistic(prepared)
    return (time.process_time() - cpu) / n_documents


def measurement_row(n_workers, n_components, where, fit):
    return [
        f"{n_workers}",
        f"{n_components}",
        where,
        f"{fit['parts']:.1f}",
        f"{fit['sent'] / 1e6:.3f}",
        f"{fit['received'] / 1e6:.3f}",
        f"{1000 * fit['cpu']:.0f}",
        f"{1000 * fit['wall']:.0f}",
        f"{fit['start_peak'] / 2**20:.1f}",
        f"{fit['peak'] / 2**20:.1f}",
        f"{fit['end_peak'] / 2**20:.1f}",
        f"{fit['lambda_bytes'] / 2**20:.1f}",
    ]


def client_cost_model(fits, where):
    """Least squares fit of the client's CPU seconds per update with lambda
    on the ``where`` side.

    On the client: a + b W + c (MB sent and received), a fixed cost, a cost
    per worker (the tasks submitted for it) and a cost per megabyte moved
    (the rows of lambda and the statistic). On the workers the client moves
    a few kilobytes per worker, so its bytes follow W and the fit is
    a + b W (c = 0).
    """
    cases = [(case, by_side[where]) for case, by_side in fits.items()]
    seconds = np.array([fit["cpu"] for _, fit in cases])
    if where == "workers":
        design = np.array([[1.0, n_workers] for (n_workers, _), _ in cases])
        return (*np.linalg.lstsq(design, seconds, rcond=None)[0], 0.0)
    design = np.array(
        [
            [1.0, n_workers, (fit["sent"] + fit["received"]) / 1e6]
            for (n_workers, _), fit in cases
        ]
    )
    return np.linalg.lstsq(design, seconds, rcond=None)[0]


def held_bytes_model(fits):
    """Least squares fit of the client's bytes per update (sent plus
    received) with lambda on the workers, a + b W + c W K: the tasks'
    payload of each worker, and what grows with the components (the
    topics' totals), not with the words."""
    cases = [(case, by_side["workers"]) for case, by_side in fits.items()]
    design = np.array(
        [
            [1.0, n_workers, n_workers * n_components]
            for (n_workers, n_components), _ in cases
        ]
    )
    moved = np.array([fit["sent"] + fit["received"] for _, fit in cases])
    return np.linalg.lstsq(design, moved, rcond=None)[0]


def end_memory_model(fits):
    """Least squares fit of the client's peak at the end with lambda on the
    workers beyond lambda and one block on its way twice (as its message
    and as its array), a + b W: what does not grow with the model."""
    cases = [(case, by_side["workers"]) for case, by_side in fits.items()]
    design = np.array([[1.0, n_workers] for (n_workers, _), _ in cases])
    beyond = np.array(
        [
            fit["end_peak"] - fit["lambda_bytes"] * (1 + 2 / n_workers)
            for (n_workers, _), fit in cases
        ]
    )
    return np.linalg.lstsq(design, beyond, rcond=None)[0]


def extrapolation(
    fits,
    seconds_per_document,
    rows_read_per_document,
    target,
    network_bytes_per_second=1.25e9,
):
    """An update and an epoch of 10^9 documents at the ``target`` model,
    minibatch and cluster (K, V, B, W, threads per worker), with the
    constants measured here.

    Lambda on the client: the minibatch reads every word (2^20 documents of
    a 10^6-word vocabulary read most of it), so the client sends K V entries
    of lambda and receives as many of the statistic; its seconds are its
    CPU (:func:`client_cost_model`) and those bytes on a network of
    ``network_bytes_per_second`` (10 Gbit/s).

    Lambda on the workers: the client moves what :func:`held_bytes_model`
    gives; a worker's part of B / W documents reads at most
    ``rows_read_per_document`` rows per document (the corpus's mean number
    of distinct words per document: words shared by documents are read
    once), and moves each such row
    four times (it reads the row and sends its statistic; its own block
    serves as many rows and receives as many pieces): an update takes the
    client's CPU, the local step on the worker's threads at the measured
    seconds per document, and those bytes on the network.
    """
    n_components, n_features, batch_size, n_workers, threads = target
    updates = 1e9 / batch_size
    each_way = 8 * n_components * n_features
    fixed, per_worker, per_megabyte = client_cost_model(fits, "client")
    local_step = seconds_per_document * batch_size / (n_workers * threads)
    central = (
        fixed
        + per_worker * n_workers
        + per_megabyte * 2 * each_way / 1e6
        + 2 * each_way / network_bytes_per_second
    )
    fixed_held, per_worker_held, per_megabyte_held = client_cost_model(fits, "workers")
    base_bytes, bytes_per_worker, bytes_per_worker_topic = held_bytes_model(fits)
    client_bytes = (
        base_bytes
        + bytes_per_worker * n_workers
        + bytes_per_worker_topic * n_workers * n_components
    )
    client_held = (
        fixed_held
        + per_worker_held * n_workers
        + per_megabyte_held * client_bytes / 1e6
    )
    rows_per_part = min(n_features, rows_read_per_document * batch_size / n_workers)
    exchange = 4 * 8 * n_components * rows_per_part / (2 * network_bytes_per_second)
    held = client_held + local_step + exchange
    # The fitted lambda and one block on its way, as its message and as its
    # array, in float32, and what the end holds beyond them.
    end_fixed, end_per_worker = end_memory_model(fits)
    end_bytes = (
        4 * n_components * n_features * (1 + 2 / n_workers)
        + end_fixed
        + end_per_worker * n_workers
    )
    return [
        [
            f"measured: local step at K={n_components}, one thread, per document",
            f"{1e3 * seconds_per_document:.3f} ms",
        ],
        [
            "measured: distinct words per document",
            f"{rows_read_per_document:.1f}",
        ],
        [
            f"target: K={n_components}, V={n_features:,}, B={batch_size:,}, "
            f"W={n_workers} workers of {threads} threads",
            f"{updates:,.0f} updates per 10^9 documents",
        ],
        ["local step per update on the workers", f"{local_step:.2f} s"],
        [
            "lambda on the client: client CPU and network per update",
            f"{central:.1f} s",
        ],
        [
            "lambda on the client: hours per epoch of 10^9 documents (local step "
            "overlapped)",
            f"{max(central, local_step) * updates / 3600:.1f}",
        ],
        [
            "lambda on the client: client memory (lambda, rows sent, statistic)",
            f"{3 * each_way / 1e9:.0f} GB",
        ],
        [
            "fitted, lambda on the workers: client CPU per update, fixed and "
            "per worker",
            f"{1e3 * fixed_held:.1f} ms + {1e3 * per_worker_held:.1f} ms W",
        ],
        [
            "lambda on the workers: client bytes per update",
            f"{client_bytes / 1e6:.2f} MB",
        ],
        ["lambda on the workers: client CPU per update", f"{client_held:.2f} s"],
        [
            "lambda on the workers: rows exchanged per worker per update, "
            "duplex seconds",
            f"{rows_per_part:,.0f} rows, {exchange:.2f} s",
        ],
        [
            "lambda on the workers: hours per epoch of 10^9 documents",
            f"{held * updates / 3600:.2f}",
        ],
        [
            "lambda on the workers: client memory during the updates (measured)",
            f"{max(fit['workers']['peak'] for fit in fits.values()) / 2**20:.0f} MiB",
        ],
        [
            "lambda on the workers: client memory at the start (one batch of the "
            "initial topics' float64 draws)",
            f"{INITIAL_BATCH_BYTES / 2**20:.0f} MiB",
        ],
        [
            "fitted, lambda on the workers: client memory at the end beyond "
            "lambda and one block on its way, twice, fixed and per worker",
            f"{end_fixed / 2**20:.1f} MiB + {end_per_worker / 2**20:.2f} MiB W",
        ],
        [
            "lambda on the workers: client memory at the end, float32 (the "
            "fitted lambda, one block on its way, twice, and the rest)",
            f"{end_bytes / 1e9:.2f} GB = {end_bytes / 2**30:.2f} GiB",
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
            fits[n_workers, n_components] = measured_fits(
                client,
                X,
                arguments.blocks,
                n_components,
                arguments.batch_size,
                arguments.updates,
            )
        for where, fit in fits[n_workers, n_components].items():
            print(measurement_row(n_workers, n_components, where, fit), flush=True)
    seconds_per_document = local_step_seconds(X, 1000)
    name = corpus_name(arguments.corpus)
    header = (
        f"{name}: {X.shape[0]:,} documents, {X.shape[1]:,} words, "
        f"{arguments.blocks} row blocks; SmoothedLDA, "
        f"minibatches of {arguments.batch_size:,}, {arguments.updates} updates "
        "of fit; a scheduler and one-thread workers started as processes of "
        "their own on one machine (loopback); per update after the first, as "
        "the client sees it."
    )
    measured = simple_table(
        [
            "workers",
            "K",
            "lambda on",
            "tasks of local steps",
            "MB sent",
            "MB received",
            "client CPU ms",
            "wall ms",
            "client peak MiB: start",
            "updates",
            "end",
            "lambda MiB",
        ],
        [
            measurement_row(*case, where, fit)
            for case, by_side in fits.items()
            for where, fit in by_side.items()
        ],
    )
    extrapolated = simple_table(
        ["extrapolated", "value"],
        extrapolation(
            fits,
            seconds_per_document,
            float(X.getnnz(axis=1).mean()),
            target=(1000, 10**6, 2**20, 100, 16),
        ),
    )
    print(header, measured, extrapolated, sep="\n")
    write_results(
        RESULTS_DIRECTORY / f"cluster_scale_{name}.rst",
        [header, measured, extrapolated],
    )


if __name__ == "__main__":
    main()
