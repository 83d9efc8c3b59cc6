"""Speed and held-out fit of SmoothedLDA against scikit-learn's and gensim's online LDA.

Every model is fitted on the same 90% of the NewsArticles corpus with the
same settings, epoch by epoch through ``partial_fit`` on the same shuffled
order of the documents. Only the ``partial_fit`` calls are timed. After the
last epoch, each model is scored on the other 10% by document completion:
the per-word log predictive probability of one half of each held-out
document given the other half. The fits are repeated for several seeds (the
initial topics and the order of the documents); the table shows the mean and
the standard deviation over seeds. SmoothedLDA runs the mean-field local step
of the other two (``local_step="vb"``), and once with its default collapsed
step. The memory of the smoothing window of
``SmoothedLDA(L=10)`` is compared with dense storage of its statistics.

Run ``python benchmarks/bench_lda.py``; ``--quick`` is a short smoke test.
"""

import multiprocessing
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import scipy
import sklearn
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

import sklearn_svi
from sklearn_svi import SmoothedLDA
from sklearn_svi.metrics import log_predictive

from _common import GensimOnlineLDA, argument_parser, held_out_split, shuffled_epochs
from tables import mean_spread, simple_table, write_results

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "lda_speed.rst"
SEED = 0
N_SEEDS = 3
N_COMPONENTS = 50
BATCH_SIZE = 256
QUICK_EPOCHS = 2
QUICK_DOCUMENTS = 1000
REFERENCE = "scikit-learn online"


@dataclass(frozen=True)
class Result:
    """Measurements of one model over the seeds.

    Attributes
    ----------
    name : str
        The model's label in the table.
    seconds_per_epoch : ndarray of shape (n_seeds,)
        Mean wall-clock time of one epoch of ``partial_fit``, per seed.
    log_predictive : ndarray of shape (n_seeds,)
        Held-out log predictive probability per word, in nats, per seed.
    """

    name: str
    seconds_per_epoch: np.ndarray
    log_predictive: np.ndarray


@dataclass(frozen=True)
class Setup:
    """What every experiment of a run shares.

    Attributes
    ----------
    X_train : scipy.sparse.csr_matrix
        The training documents.
    completion : TokenSplit
        The held-out documents, split for document completion.
    n_epochs : int
        Passes over the training documents of each fit.
    seeds : range
        The seeds of the comparison of the models.
    n_rounds : int
        Rounds of each timing of threads and cores.
    """

    X_train: object
    completion: object
    n_epochs: int
    seeds: range
    n_rounds: int

    def settings(self, seed):
        """The settings every model shares, with initial topics from ``seed``."""
        return shared_settings(N_COMPONENTS, BATCH_SIZE, self.X_train.shape[0], seed)


@dataclass(frozen=True)
class ThreadTimings:
    """The timings of two threads against one, and of the machine's cores.

    Attributes
    ----------
    speedups : ndarray
        From :func:`paired_thread_speedups`.
    throughputs : ndarray
        From :func:`two_process_throughputs`.
    core_seconds : dict of int to ndarray
        From :func:`per_core_seconds`.
    """

    speedups: np.ndarray
    throughputs: np.ndarray
    core_seconds: dict


class Float32Input:
    """A model fitted on the documents in float32 (converted before timing).

    Parameters
    ----------
    model : estimator
        A scikit-learn style LDA estimator that keeps float32 input in
        float32.
    """

    def __init__(self, model):
        self.model = model

    @staticmethod
    def prepare(X):
        """The documents in float32."""
        return X.astype(np.float32)

    def partial_fit(self, X):
        """One online pass over the prepared documents."""
        self.model.partial_fit(X)
        return self

    def transform(self, X):
        """Normalised topic proportions of the documents of ``X``."""
        return self.model.transform(self.prepare(X))

    @property
    def components_(self):
        """The variational Dirichlet parameters of the topics."""
        return self.model.components_


def shared_settings(n_components, batch_size, n_train, seed):
    """The settings every model of the comparison shares, by scikit-learn's names.

    Parameters
    ----------
    n_components : int
        Number of topics K.
    batch_size : int
        Number of documents per minibatch.
    n_train : int
        Number of training documents, the ``total_samples`` of the updates.
    seed : int
        Seed of the initial topics.

    Returns
    -------
    settings : dict
    """
    return dict(
        n_components=n_components,
        batch_size=batch_size,
        learning_offset=10.0,
        learning_decay=0.7,
        total_samples=n_train,
        max_doc_update_iter=100,
        mean_change_tol=1e-3,
        random_state=seed,
    )


def plain_svi(n_jobs, **settings):
    """``SmoothedLDA(L=1)`` with the mean-field local step of scikit-learn and
    gensim, on ``n_jobs`` threads (picklable through partial)."""
    return SmoothedLDA(L=1, local_step="vb", n_jobs=n_jobs, **settings)


def make_models(settings, n_features):
    """The models compared, with identical settings.

    Parameters
    ----------
    settings : dict
        The shared settings, from :func:`shared_settings`.
    n_features : int
        Vocabulary size.

    Returns
    -------
    models : dict of str to estimator
        Unfitted models by label, scikit-learn's first.
    """
    # The default: the collapsed steps (sampled below 64 tokens, CVB0 above)
    # with their own numbers of sweeps (max_doc_update_iter="auto") and
    # their own learning_decay; then each collapsed step for every document.
    default_settings = {
        key: value
        for key, value in settings.items()
        if key not in ("max_doc_update_iter", "learning_decay")
    }
    return {
        REFERENCE: LatentDirichletAllocation(
            learning_method="online", n_jobs=1, **settings
        ),
        "SmoothedLDA L=1": plain_svi(1, **settings),
        "SmoothedLDA L=10": SmoothedLDA(L=10, local_step="vb", n_jobs=1, **settings),
        "SmoothedLDA() default": SmoothedLDA(n_jobs=1, **default_settings),
        'SmoothedLDA(local_step="cvb0")': SmoothedLDA(
            local_step="cvb0", n_jobs=1, **default_settings
        ),
        'SmoothedLDA(local_step="gibbs")': SmoothedLDA(
            local_step="gibbs", n_jobs=1, **default_settings
        ),
        "SmoothedLDA L=1 n_jobs=2": plain_svi(2, **settings),
        "scikit-learn online float32": Float32Input(
            LatentDirichletAllocation(learning_method="online", n_jobs=1, **settings)
        ),
        "SmoothedLDA L=1 float32": Float32Input(plain_svi(1, **settings)),
        "gensim LdaModel online": GensimOnlineLDA(
            n_features=n_features,
            **{key: value for key, value in settings.items() if key != "total_samples"},
        ),
    }


def run_model(model, epochs, completion):
    """Fit a model epoch by epoch and score it on the held-out documents.

    Parameters
    ----------
    model : estimator
        An unfitted model with ``partial_fit``.
    epochs : list of scipy.sparse.csr_matrix
        The shuffled training documents of each epoch.
    completion : TokenSplit
        The held-out documents.

    Returns
    -------
    seconds_per_epoch : float
        Mean time of one epoch's ``partial_fit``.
    log_predictive : float
        Held-out per-word log predictive probability after the last epoch.
    """
    seconds = epoch_seconds(model, epochs)
    return float(np.mean(seconds)), log_predictive(model, *completion)


def epoch_seconds(model, epochs):
    """Seconds of ``partial_fit`` on each epoch, BLAS on one thread.

    A model with a ``prepare`` method (gensim's, or one fitted in float32)
    gets each epoch converted by it before the timed call.

    Parameters
    ----------
    model : estimator
        A model with ``partial_fit``, fitted further in place.
    epochs : list of scipy.sparse.csr_matrix
        The training documents of each epoch.

    Returns
    -------
    seconds : list of float
    """
    seconds = []
    with threadpool_limits(limits=1, user_api="blas"):
        for X_epoch in epochs:
            data = model.prepare(X_epoch) if hasattr(model, "prepare") else X_epoch
            start = time.perf_counter()
            model.partial_fit(data)
            seconds.append(time.perf_counter() - start)
    return seconds


def paired_thread_speedups(make_model, epochs, n_rounds):
    """Speed-ups of two threads over one, from epochs timed side by side.

    A virtual machine's cores change speed with the load of its neighbours,
    often for seconds at a time, so two fits timed one after the other can
    meet different machines. Here, in each round, a model with
    ``n_jobs=1`` and one with ``n_jobs=2`` fit the same epochs, epoch by
    epoch in alternating order, and each epoch gives the ratio of their
    times.

    Parameters
    ----------
    make_model : callable
        ``make_model(n_jobs)`` returns an unfitted model.
    epochs : list of scipy.sparse.csr_matrix
        The shuffled training documents of each epoch.
    n_rounds : int
        Number of pairs of fits.

    Returns
    -------
    speedups : ndarray of shape (n_rounds * n_epochs,)
        The time with ``n_jobs=1`` over the time with ``n_jobs=2``, per epoch.
    """
    speedups = []
    for round_index in range(n_rounds):
        models = {n_jobs: make_model(n_jobs) for n_jobs in (1, 2)}
        for epoch_index, X_epoch in enumerate(epochs):
            order = (1, 2) if (round_index + epoch_index) % 2 == 0 else (2, 1)
            seconds = {
                n_jobs: epoch_seconds(models[n_jobs], [X_epoch])[0] for n_jobs in order
            }
            speedups.append(seconds[1] / seconds[2])
    return np.array(speedups)


def two_process_throughputs(make_model, epochs, n_rounds):
    """How much work the machine does with both cores busy, as a ceiling.

    Each round times a single-threaded fit alone in one worker process,
    then two identical fits at the same time in two processes, which share
    nothing. Their throughput relative to the fit alone is what two
    perfectly independent copies of the workload get from this machine at
    that moment: the most two threads could gain.

    Parameters
    ----------
    make_model : callable
        ``make_model(n_jobs)`` returns an unfitted model; it must be
        picklable.
    epochs : list of scipy.sparse.csr_matrix
        The shuffled training documents of each epoch.
    n_rounds : int
        Number of rounds.

    Returns
    -------
    throughputs : ndarray of shape (n_rounds,)
        2 x (seconds alone) / (seconds of the slower of the two together).
    """
    throughputs = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as processes:
        # Start both workers and import everything before timing.
        list(processes.map(epoch_seconds, [make_model(1)] * 2, [epochs[:1]] * 2))
        for _ in range(n_rounds):
            alone = sum(processes.submit(epoch_seconds, make_model(1), epochs).result())
            fits = [
                processes.submit(epoch_seconds, make_model(1), epochs) for _ in range(2)
            ]
            together = max(sum(fit.result()) for fit in fits)
            throughputs.append(2 * alone / together)
    return np.array(throughputs)


def per_core_seconds(make_model, epochs, n_rounds):
    """Seconds per epoch of a single-threaded fit pinned to each core.

    The cores of a virtual machine need not run at the same speed (their
    host cores may be shared with other machines). Each round fits the
    epochs once on each of the first two cores of this process, pinned
    there, the order of the cores alternating from round to round.

    Parameters
    ----------
    make_model : callable
        ``make_model(n_jobs)`` returns an unfitted model.
    epochs : list of scipy.sparse.csr_matrix
        The shuffled training documents of each epoch.
    n_rounds : int
        Number of rounds.

    Returns
    -------
    seconds : dict of int to ndarray
        For each core, the seconds of each epoch over all rounds; empty
        where the platform cannot pin a thread to a core.
    """
    if not hasattr(os, "sched_setaffinity"):
        return {}
    allowed = os.sched_getaffinity(0)
    cores = sorted(allowed)[:2]
    seconds = {core: [] for core in cores}
    try:
        for round_index in range(n_rounds):
            for core in cores if round_index % 2 == 0 else cores[::-1]:
                os.sched_setaffinity(0, {core})
                seconds[core].extend(epoch_seconds(make_model(1), epochs))
    finally:
        os.sched_setaffinity(0, allowed)
    return {core: np.array(values) for core, values in seconds.items()}


def core_summary(core_seconds):
    """A sentence on the speed of each core, empty without measurements."""
    if len(core_seconds) < 2:
        return ""
    medians = {core: float(np.median(values)) for core, values in core_seconds.items()}
    fast, slow = sorted(medians.values())
    per_core = ", ".join(
        f"core {core} {value:.3f} s" for core, value in medians.items()
    )
    return (
        f" One thread pinned to each core in turn: median seconds per epoch "
        f"{per_core}; two threads that share the documents as they free up can "
        f"gain at most {1 + fast / slow:.2f} over one thread on the faster core."
    )


def window_memory(model):
    """Bytes held by a fitted SmoothedLDA's window, and by a dense window.

    Parameters
    ----------
    model : SmoothedLDA
        A fitted model.

    Returns
    -------
    sparse_bytes : int
        The queued statistics as stored: word indices and blocks of the
        words each minibatch contains.
    dense_bytes : int
        The same statistics stored densely, K x V values of the model's
        dtype for each.
    """
    dense_bytes = (
        model._update_state.window.count
        * model.components_.size
        * model.components_.itemsize
    )
    return model._update_state.window.nbytes, dense_bytes


def format_table(results):
    """The results as a reStructuredText simple table.

    Parameters
    ----------
    results : list of Result
        The measurements, scikit-learn's first. Speed-ups and differences
        are taken per seed, then averaged; ± is the standard deviation over
        seeds.

    Returns
    -------
    table : str
        The table, also readable as plain text.
    """
    reference = results[0]
    header = [
        "Model",
        "s/epoch",
        "Speed-up",
        "Log pred./word",
        "Diff. (nats/word)",
    ]

    rows = [
        [
            result.name,
            mean_spread(result.seconds_per_epoch, 2),
            f"{np.mean(reference.seconds_per_epoch / result.seconds_per_epoch):.2f}",
            mean_spread(result.log_predictive, 4),
            mean_spread(result.log_predictive - reference.log_predictive, 4, "+"),
        ]
        for result in results
    ]
    return simple_table(header, rows)


def processor_name():
    """The processor's model name where Linux tells it, else the platform's.

    The speed-ups depend on the processor (how fast it divides, how it
    handles subnormal numbers), so the results name it.
    """
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def parse_args(argv):
    """The command-line options; ``argv=None`` reads ``sys.argv``."""
    parser = argument_parser(__doc__)
    parser.add_argument(
        "--epochs", type=int, default=5, help="passes over the training documents"
    )
    parser.add_argument(
        "--seeds", type=int, default=N_SEEDS, help="number of seeds (default 3)"
    )
    parser.add_argument(
        "--thread-rounds",
        type=int,
        default=10,
        help="rounds of the paired n_jobs=1 / n_jobs=2 timing (default 10)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=(
            f"smoke test: {QUICK_EPOCHS} epochs on the first {QUICK_DOCUMENTS} "
            f"training documents; {RESULTS_PATH.name} is not written"
        ),
    )
    return parser.parse_args(argv)


def load_setup(args):
    """Split NewsArticles and set the budget of the run.

    Parameters
    ----------
    args : argparse.Namespace
        The options, from :func:`parse_args`.

    Returns
    -------
    setup : Setup
    facts : list of str
        The machine, the corpus and the settings, one sentence each.
    """
    X, vocabulary, X_train, completion = held_out_split(np.random.default_rng(SEED))
    if args.quick:
        X_train = X_train[:QUICK_DOCUMENTS]
    setup = Setup(
        X_train=X_train,
        completion=completion,
        n_epochs=QUICK_EPOCHS if args.quick else args.epochs,
        seeds=range(SEED, SEED + (1 if args.quick else args.seeds)),
        n_rounds=1 if args.quick else args.thread_rounds,
    )
    return setup, run_facts(setup, X, vocabulary)


def run_facts(setup, X, vocabulary):
    """The machine, the corpus and the settings of the run, one sentence each."""
    completion = setup.completion
    return [
        f"Machine: {processor_name()} ({platform.machine()}), {os.cpu_count()} "
        f"CPUs; Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"sklearn_svi {sklearn_svi.__version__}.",
        f"Corpus: NewsArticles, {X.shape[0]} documents x {len(vocabulary)} words, "
        f"{int(X.sum())} tokens; {setup.X_train.shape[0]} training documents, "
        f"{completion.observed.shape[0]} held-out documents "
        f"({int(completion.predicted.sum())} predicted tokens).",
        f"Settings: K={N_COMPONENTS}, batch_size={BATCH_SIZE}, "
        f"{setup.n_epochs} epochs, "
        "alpha=eta=1/K, learning_offset=10, learning_decay=0.7, "
        f"max_doc_update_iter=100, mean_change_tol=1e-3 (SmoothedLDA() "
        "default: its own learning_decay=0.6 and sweeps); "
        f"{len(setup.seeds)} seed(s); BLAS limited to one thread.",
    ]


def compare_models(setup):
    """Fit and score every model of :func:`make_models` for each seed.

    Parameters
    ----------
    setup : Setup

    Returns
    -------
    results : list of Result
        The measurements of each model, scikit-learn's first.
    window_bytes : tuple of int
        The bytes of the smoothing window of ``SmoothedLDA L=10`` after
        the last seed, as stored and stored densely (:func:`window_memory`).
    """
    measurements = {}
    # scikit-learn and gensim call BLAS for small products; one BLAS thread
    # keeps every model single-threaded unless it says otherwise.
    with threadpool_limits(limits=1, user_api="blas"):
        for seed in setup.seeds:
            epochs = shuffled_epochs(setup.X_train, setup.n_epochs, seed)
            models = make_models(setup.settings(seed), setup.X_train.shape[1])
            for name, model in models.items():
                print(f"Seed {seed}: fitting {name} ...", flush=True)
                measurements.setdefault(name, []).append(
                    run_model(model, epochs, setup.completion)
                )
            window_bytes = window_memory(models["SmoothedLDA L=10"])
    results = [
        Result(name, *map(np.array, zip(*values)))
        for name, values in measurements.items()
    ]
    return results, window_bytes


def time_threads(setup):
    """Time two threads against one, two processes, and each core.

    Every timing fits ``SmoothedLDA(L=1)`` with the shared settings of the
    first seed on the epochs of the first seed.

    Parameters
    ----------
    setup : Setup

    Returns
    -------
    timings : ThreadTimings
    """
    make_plain_svi = partial(plain_svi, **setup.settings(SEED))
    epochs = shuffled_epochs(setup.X_train, setup.n_epochs, SEED)
    print("Timing n_jobs=1 against n_jobs=2 epoch by epoch ...", flush=True)
    speedups = paired_thread_speedups(make_plain_svi, epochs, setup.n_rounds)
    print("Timing two single-threaded fits in two processes ...", flush=True)
    throughputs = two_process_throughputs(make_plain_svi, epochs, setup.n_rounds)
    print("Timing a single-threaded fit on each core ...", flush=True)
    core_seconds = per_core_seconds(make_plain_svi, epochs, setup.n_rounds)
    return ThreadTimings(speedups, throughputs, core_seconds)


def thread_summary(setup, timings):
    """The speed-up of two threads, and the machine's ceiling, in sentences."""
    speedups, throughputs = timings.speedups, timings.throughputs
    return (
        f"SmoothedLDA L=1, n_jobs=2 vs n_jobs=1, {speedups.size} epochs timed "
        f"side by side ({setup.n_rounds} rounds of {setup.n_epochs}): speed-up "
        f"median {np.median(speedups):.2f}, quartiles "
        f"{np.percentile(speedups, 25):.2f} "
        f"to {np.percentile(speedups, 75):.2f}, best {np.max(speedups):.2f}. "
        f"The machine itself, running two single-threaded fits in two "
        f"processes at once ({setup.n_rounds} rounds): throughput median "
        f"{np.median(throughputs):.2f} times one fit alone, range "
        f"{np.min(throughputs):.2f} to {np.max(throughputs):.2f}."
        f"{core_summary(timings.core_seconds)}"
    )


def window_summary(sparse_bytes, dense_bytes):
    """The memory of the smoothing window against dense storage, a sentence."""
    return (
        f"Smoothing window of SmoothedLDA L=10 after the last epoch: "
        f"{sparse_bytes / 2**20:.1f} MiB stored sparsely, against "
        f"{dense_bytes / 2**20:.1f} MiB for the same statistics stored densely "
        f"({dense_bytes / sparse_bytes:.1f} times more)."
    )


def main(argv=None):
    """Run the experiments, print their results and, unless ``--quick``,
    write them to ``RESULTS_PATH``; ``argv=None`` reads ``sys.argv``."""
    args = parse_args(argv)
    setup, facts = load_setup(args)
    print("\n".join(facts))
    print()
    results, window_bytes = compare_models(setup)
    timings = time_threads(setup)
    table = format_table(results)
    summary = f"{thread_summary(setup, timings)}\n\n{window_summary(*window_bytes)}"
    print()
    print(table)
    print()
    print(summary)
    if not args.quick:
        facts_list = "\n".join(f"- {fact}" for fact in facts)
        write_results(RESULTS_PATH, [facts_list, table, summary])


if __name__ == "__main__":
    main()
