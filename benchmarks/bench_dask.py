"""One machine against a Dask LocalCluster of 1 and 2 worker processes.

The same SmoothedLDA fit (one pass, the same seed and minibatches) runs
four ways on a large corpus, for each number of topics K and minibatch
size: in this process with 1 and with 2 threads, and on a LocalCluster of
1 and of 2 worker processes with one thread each, from a Dask array whose
row blocks (one per worker) were persisted on the workers beforehand. For
each it prints the seconds of the pass; the mean time of an update's local
step as the update sees it (for the cluster: shipping the model's
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
import scipy.sparse as sp

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


def blocks_on_workers(client, X, n_blocks):
    """X in ``n_blocks`` row blocks sent to the workers, as a Dask array."""
    import dask.array as da

    bounds = np.linspace(0, X.shape[0], n_blocks + 1).astype(int)
    parts = [X[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]
    return da.concatenate(
        [
            da.from_delayed(
                future, shape=part.shape, dtype=X.dtype, meta=sp.csr_matrix((0, 0))
            )
            for future, part in zip(client.scatter(parts, hash=False), parts)
        ]
    )


def measured(way, n_workers, seconds, model, log, reference):
    """The numbers of one fit, against the one-thread fit ``reference``."""
    reference_seconds, reference_model = reference
    difference = np.max(np.abs(model.components_ - reference_model.components_))
    return dict(
        way=way,
        n_workers=n_workers,
        n_components=model.n_components,
        batch_size=model.batch_size,
        updates=model.n_batch_iter_,
        seconds=seconds,
        local_step=np.mean(log.local_step_seconds),
        sent=np.mean(log.sent) if log.sent else 0.0,
        received=np.mean(log.received) if log.received else 0.0,
        ratio=seconds / reference_seconds,
        difference=difference / np.max(np.abs(reference_model.components_)),
    )


def measurement_row(fit, predicted=None):
    return [
        fit["way"],
        f"{fit['n_components']}",
        f"{fit['batch_size']:,}",
        f"{fit['updates']:,}",
        f"{fit['seconds']:.2f}",
        f"{1000 * fit['local_step']:.1f}",
        "" if predicted is None else f"{1000 * predicted:.1f}",
        f"{fit['sent']:,.0f}",
        f"{fit['received']:,.0f}",
        f"{fit['ratio']:.2f}",
        f"{fit['difference']:.1e}",
    ]


def _echo(payload):
    return payload


def round_trip_costs(client, megabytes=8, repeats=30):
    """The round trip L of a task and the time beta per MB moved, measured.

    L is the median time of a task with no data; beta that of a task that
    takes ``megabytes`` straight to a worker and brings them back, less L,
    per megabyte moved (twice ``megabytes``).
    """

    def median_seconds(payload):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            if payload:
                sent = client.scatter(payload, direct=True, hash=False)
                client.gather(client.submit(_echo, sent, pure=False), direct=True)
            else:
                client.submit(_echo, payload, pure=False).result()
            times.append(time.perf_counter() - started)
        return float(np.median(times))

    latency = median_seconds(b"")
    moved = median_seconds(bytes(int(megabytes * 1e6)))
    return latency, (moved - latency) / (2 * megabytes)


def per_document_costs(fits):
    """One thread's local step per document, for each K (one machine, the
    largest minibatch)."""
    return {
        fit["n_components"]: fit["local_step"] / fit["batch_size"]
        for fit in sorted(fits, key=lambda fit: fit["batch_size"])
        if fit["way"] == "one machine, 1 thread"
    }


def predicted_local_step(fit, t_doc, latency, beta):
    """T(W) of the cost model for a measured cluster fit."""
    return (
        t_doc[fit["n_components"]] * fit["batch_size"] / fit["n_workers"]
        + latency
        + beta * (fit["sent"] + fit["received"]) / 1e6
    )


def extrapolation_rows(fits, t_doc, latency, beta, n_features, shard_size=16384):
    """The model's seconds per update and hours per epoch of 10^9 documents
    for W workers, each with a part of ``shard_size`` documents, at the
    largest K measured, as the package moves the bytes: the client sends
    the minibatch's rows of lambda once and receives one sum (at most the
    whole vocabulary each way), the workers copy the rows along a binary
    tree (ceil(log2 W) rounds) and add the statistics along a tree of
    fan-in 8 (ceil(log8 W) rounds), each round moving a part's bytes."""
    n_components = max(t_doc)
    part = next(
        fit
        for fit in fits
        if fit["n_workers"] == 1
        and fit["n_components"] == n_components
        and fit["batch_size"] == shard_size
    )
    part_megabytes = (part["sent"] + part["received"]) / 2e6
    vocabulary_megabytes = 8 * (n_components + 1) * n_features / 1e6
    rows = []
    for n_workers in (1, 2, 10, 100):
        documents = n_workers * shard_size
        client_megabytes = 2 * min(vocabulary_megabytes, n_workers * part_megabytes)
        rounds = int(np.ceil(np.log2(n_workers))) + int(
            np.ceil(np.log(n_workers) / np.log(8))
        )
        seconds = (
            t_doc[n_components] * shard_size
            + latency
            + beta * client_megabytes
            + rounds * (latency + beta * part_megabytes)
        )
        rows.append(
            [
                f"{n_workers}",
                f"{documents:,}",
                f"{client_megabytes:,.0f}",
                f"{rounds}",
                f"{seconds:.2f}",
                f"{1e9 / documents * seconds / 3600:.2f}",
            ]
        )
    return n_components, rows


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("corpus", help="a text file of documents")
    parser.add_argument("--column", help="the column of texts of a .tsv file")
    parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=BATCH_SIZES)
    parser.add_argument("--n-components", type=int, nargs="+", default=N_COMPONENTS)
    arguments = parser.parse_args()

    from distributed import Client, LocalCluster

    X = load_corpus(arguments.corpus, arguments.column, arguments.n_features)
    cases = [
        (n_components, batch_size)
        for n_components in arguments.n_components
        for batch_size in arguments.batch_sizes
    ]
    fits = []
    references = {}
    for case in cases:
        for n_jobs in (1, 2):
            seconds, model, log = timed_fit(X, *case, n_jobs)
            if n_jobs == 1:
                references[case] = (seconds, model)
            way = f"one machine, {n_jobs} thread{'s' * (n_jobs > 1)}"
            fits.append(measured(way, 0, seconds, model, log, references[case]))
            print(measurement_row(fits[-1]))
    for n_workers in (1, 2):
        cluster = LocalCluster(
            n_workers=n_workers, threads_per_worker=1, dashboard_address=None
        )
        with Client(cluster) as client:
            client.wait_for_workers(n_workers)
            if n_workers == 1:
                latency, beta = round_trip_costs(client)
            blocks = blocks_on_workers(client, X, n_workers)
            for case in cases:
                seconds, model, log = timed_fit(blocks, *case)
                way = f"LocalCluster, {n_workers} worker{'s' * (n_workers > 1)}"
                fits.append(
                    measured(way, n_workers, seconds, model, log, references[case])
                )
                print(measurement_row(fits[-1]))
        cluster.close()

    fits.sort(key=lambda fit: (fit["n_components"], fit["batch_size"]))
    t_doc = per_document_costs(fits)
    rows = [
        measurement_row(
            fit,
            predicted_local_step(fit, t_doc, latency, beta)
            if fit["n_workers"]
            else None,
        )
        for fit in fits
    ]
    name = corpus_name(arguments.corpus)
    settings = (
        f"{name}: {X.shape[0]:,} documents, "
        f"{X.shape[1]:,} words, {X.nnz:,} stored counts; SmoothedLDA(L=1), "
        "one pass of fit, random_state=0, on a machine "
        "with 2 cores. Local step: the mean per update as the update sees it. "
        "Bytes: per update, from the client (the model cut to the minibatch's "
        "words) and back to it (the sum of the parts' statistics). Time "
        "ratio: against one machine with one thread. Difference: the largest "
        "of the components against that fit's, relative to their largest "
        "value. Model: the "
        "local step that the cost model below predicts."
    )
    table = simple_table(
        [
            "Way",
            "K",
            "Batch",
            "Updates",
            "Seconds",
            "Local step ms",
            "Model ms",
            "Bytes sent",
            "Bytes received",
            "Time ratio",
            "Difference",
        ],
        rows,
    )
    report(RESULTS_DIRECTORY / f"dask_{name}.rst", settings, table)

    n_components, rows = extrapolation_rows(fits, t_doc, latency, beta, X.shape[1])
    model_settings = (
        "Cost model of an update's local step on W workers: T(W) = t_doc B / W "
        "+ L + beta (MB sent + MB received); t_doc is one thread's local step "
        "per document (one machine, the largest minibatch), L the median round "
        "trip of an empty task and beta the time per MB of a task that takes "
        "8 MB to a worker and back, both measured on the one-worker cluster: "
        "t_doc = "
        + ", ".join(f"{1e6 * t:.1f} us (K={k})" for k, t in sorted(t_doc.items()))
        + f", L = {1000 * latency:.0f} ms and beta = {1000 * beta:.1f} ms per MB. "
        f"Extrapolated for K={n_components}, each of W workers with a part of "
        f"16,384 {name} documents, to an epoch of 10^9 documents: the client "
        "sends the minibatch's rows once and receives one sum (each at most "
        "the vocabulary), and the workers copy the rows and add the "
        "statistics in trees (rounds: ceil(log2 W) + ceil(log8 W), each "
        "moving a part's bytes)."
    )
    model_table = simple_table(
        [
            "Workers W",
            "Batch",
            "Client MB per update",
            "Worker rounds",
            "s per update",
            "Hours per 10^9 docs",
        ],
        rows,
    )
    report(
        RESULTS_DIRECTORY / f"dask_cost_model_{name}.rst", model_settings, model_table
    )


if __name__ == "__main__":
    main()
