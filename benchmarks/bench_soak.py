"""Soak test: millions of samples through partial_fit, saved and reloaded on the way.

A long-running service updates a model with chunks of a stream and saves it
now and then; if it stops, it continues from the saved copy. This script
runs that service for ``--samples`` samples (10 million by default): the
chunks are the rows of a corpus, reshuffled each epoch, and one run saves the
model with joblib every ``--checkpoint-every`` chunks and continues from the
loaded copy, while the other runs without a break. Each run is a process of
its own, and records its resident memory at every checkpoint.

It prints, for each estimator and run: seconds, samples per second, the
resident memory at the first checkpoint and the largest at a later one, and
whether the saved-and-reloaded run ended with exactly the model of the
unbroken run (every fitted array equal bit for bit).

Run ``python benchmarks/bench_soak.py FILE --column summary`` on a
tab-separated file of texts (or one text per line without ``--column``) for
the LDA estimators, or ``python benchmarks/bench_soak.py --mixture --samples
50000000`` for SVIGaussianMixture on a million points of 20 Gaussians in 10
dimensions (those of ``bench_mixture.py large``), repeated the same way.
"""

import argparse
import ctypes
import gc
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA, SVIGaussianMixture

from _common import argument_parser, reshuffled
from bench_mixture import make_large
from corpus import corpus_name, load_corpus
from tables import report, simple_table

RESULTS_DIRECTORY = Path(__file__).resolve().parent / "results"
N_COMPONENTS = 20
BATCH_SIZE = 256
CHUNK_SIZE = 10_000
POINTS = dict(n_samples=1_000_000, n_features=10, n_clusters=N_COMPONENTS, seed=0)
"""The mixture's stream: ``make_large`` of ``bench_mixture.py``."""
COMMON = dict(n_components=N_COMPONENTS, batch_size=BATCH_SIZE)
LDA_ESTIMATORS = {
    "SmoothedLDA(L=10)": lambda n: SmoothedLDA(L=10, total_samples=n, **COMMON),
    "AnnealedLDA()": lambda n: AnnealedLDA(total_samples=n, **COMMON),
    "FilteredLDA()": lambda n: FilteredLDA(total_samples=n, **COMMON),
    "every mechanism: SmoothedLDA(L=10, M=64, learning_rate='student-t')": (
        lambda n: SmoothedLDA(
            L=10, M=64, learning_rate="student-t", total_samples=n, **COMMON
        )
    ),
}
MIXTURE_ESTIMATORS = {
    "SVIGaussianMixture()": lambda n: SVIGaussianMixture(total_samples=n, **COMMON),
    "every mechanism: SVIGaussianMixture(L=10, M=64, learning_rate='student-t')": (
        lambda n: SVIGaussianMixture(
            L=10, M=64, learning_rate="student-t", total_samples=n, **COMMON
        )
    ),
}
ESTIMATORS = {**LDA_ESTIMATORS, **MIXTURE_ESTIMATORS}


def resident_mib():
    """The resident memory of this process, in MiB (Linux's /proc).

    Measured after a garbage collection and after glibc has given its free
    heap memory back to the system (``malloc_trim``), so that the figure
    follows the memory in use rather than what the allocator keeps cached.
    """
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS is not in /proc/self/status")


def fitted_digest(model):
    """A digest of every fitted array of ``model`` (attributes ending in _)."""
    digest = hashlib.sha256()
    for name, value in sorted(vars(model).items()):
        if name.endswith("_") and not name.startswith("_"):
            if isinstance(value, np.ndarray):
                digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def chunks(X, n_samples, seed):
    """Chunks of CHUNK_SIZE rows of reshuffled epochs of X, n_samples in all."""
    remaining = n_samples
    for epoch in reshuffled(X, seed):
        for start in range(0, epoch.shape[0], CHUNK_SIZE):
            chunk = epoch[start : start + CHUNK_SIZE][:remaining]
            remaining -= chunk.shape[0]
            yield chunk
            if remaining == 0:
                return


def run(data_path, estimator, n_samples, checkpoint_every, checkpoint_path):
    """One run; returns its measurements (done in a process of its own).

    With ``checkpoint_path`` the model is saved there every
    ``checkpoint_every`` chunks and replaced by the loaded copy; without it
    only the memory is recorded at those chunks.
    """
    X = joblib.load(data_path)
    model = ESTIMATORS[estimator](X.shape[0]).set_params(random_state=0)
    memory, elapsed = [], []
    start = time.perf_counter()
    with threadpool_limits(1, "blas"):
        for number, chunk in enumerate(chunks(X, n_samples, seed=0), start=1):
            model.partial_fit(chunk)
            if number % checkpoint_every == 0:
                if checkpoint_path:
                    joblib.dump(model, checkpoint_path)
                    del model
                    model = joblib.load(checkpoint_path)
                memory.append(resident_mib())
                elapsed.append(time.perf_counter() - start)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "samples": int(model.n_samples_seen_),
        "updates": int(model.n_batch_iter_),
        "memory": memory,
        "elapsed": elapsed,
        "fitted": fitted_digest(model),
    }


def run_in_process(*arguments):
    """:func:`run` in a fresh Python process, so that memories are apart."""
    completed = subprocess.run(
        [sys.executable, __file__, "--run-json", json.dumps(arguments)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(completed.stdout.splitlines()[-1])


def milestones(n_checkpoints):
    """The checkpoints the table shows: the first, the middle and the last."""
    return sorted({0, n_checkpoints // 2 - 1, n_checkpoints - 1})


def table_row(estimator, label, result, verdict, samples_per_checkpoint):
    """The table's row of one run: memory and samples per second at the
    milestones, and the growth of the memory after the first checkpoint."""
    memory, elapsed = result["memory"], result["elapsed"]
    shown = milestones(len(memory))
    rates = [samples_per_checkpoint * (index + 1) / elapsed[index] for index in shown]
    return [
        estimator,
        label,
        f"{result['updates']:,}",
        f"{result['seconds']:.0f}",
        " / ".join(f"{rate:,.0f}" for rate in rates),
        " / ".join(f"{memory[index]:.0f}" for index in shown),
        f"{max(memory[1:]) / memory[0]:.3f}",
        verdict,
    ]


def main(argv=None):
    """Run both runs for each estimator, print the table and write it.

    ``argv=None`` reads the command line.
    """
    parser = argument_parser(__doc__)
    parser.add_argument("corpus", nargs="?", help="a text file")
    parser.add_argument("--column", default=None)
    parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument(
        "--mixture",
        action="store_true",
        help="stream points of 20 Gaussians through SVIGaussianMixture",
    )
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--run-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_json:
        print(json.dumps(run(*json.loads(args.run_json))))
        return
    if args.mixture:
        X, estimators, name, unit = (
            make_large(**POINTS),
            MIXTURE_ESTIMATORS,
            "mixture",
            "points",
        )
        source = (
            f"{X.shape[0]:,} points of {N_COMPONENTS} Gaussians in "
            f"{X.shape[1]} dimensions"
        )
    elif args.corpus is None:
        parser.error("the corpus file is required, or --mixture")
    else:
        X = load_corpus(args.corpus, args.column, args.n_features)
        estimators, name, unit = LDA_ESTIMATORS, corpus_name(args.corpus), "documents"
        source = f"{name}: {X.shape[0]:,} documents, {X.shape[1]:,} words"
    rows = []
    per_checkpoint = args.checkpoint_every * CHUNK_SIZE
    with tempfile.TemporaryDirectory() as directory:
        data_path = str(Path(directory) / "data.joblib")
        joblib.dump(X, data_path)
        checkpoint_path = str(Path(directory) / "model.joblib")
        for estimator in estimators:
            runs = {}
            for label, checkpoint in (
                ("unbroken", None),
                ("saved and reloaded", checkpoint_path),
            ):
                print(f"{estimator}, {label} ...", flush=True)
                runs[label] = run_in_process(
                    data_path,
                    estimator,
                    args.samples,
                    args.checkpoint_every,
                    checkpoint,
                )
            same = runs["unbroken"]["fitted"] == runs["saved and reloaded"]["fitted"]
            for label, result in runs.items():
                verdict = "" if label == "unbroken" else ("yes" if same else "NO")
                rows.append(
                    table_row(estimator, label, result, verdict, per_checkpoint)
                )
    n_checkpoints = args.samples // per_checkpoint
    at = " / ".join(
        f"{per_checkpoint * (index + 1) / 1e6:g}M"
        for index in milestones(n_checkpoints)
    )
    header = [
        "Estimator",
        "Run",
        "Updates",
        "Seconds",
        f"{unit.capitalize()}/s at {at}",
        f"MiB at {at}",
        "Growth",
        "Same model",
    ]
    settings = (
        f"{source}, repeated in reshuffled epochs; K={N_COMPONENTS}, "
        f"batch_size={BATCH_SIZE}, partial_fit on chunks of {CHUNK_SIZE:,} "
        f"{unit}, {args.samples:,} {unit} in all, one thread. "
        f"{unit.capitalize()} per second and resident MiB after {at} {unit}; "
        "growth: the largest resident memory after the first milestone over "
        "the first. Same model: the saved-and-reloaded run's final fitted "
        "arrays equal the unbroken run's bit for bit."
    )
    report(RESULTS_DIRECTORY / f"soak_{name}.rst", settings, simple_table(header, rows))


if __name__ == "__main__":
    main()
