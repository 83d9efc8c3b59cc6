"""Held-out fit against CPU time: our local steps, scikit-learn, gensim and tomotopy.

A user picks a topic-model library by the quality it reaches in the time
they have. Every library here fits the same training documents with the
same number of topics and the same priors alpha = eta = 1/K on one thread
(gensim learns both from there, ``"auto"``, and our estimators alpha where
the label says so; tomotopy has two rows: alpha fixed, ``optim_interval=0``, and
its default, which learns alpha every 10 sweeps). Each model is stopped at
checkpoints fine enough that each budget is scored at most a tenth before
its time: the online methods every 4 updates on the same shuffled
documents (a diagnostic row, batch CVB0, which updates with all documents
at once and a step of 1, after each pass: the fixed point the online
collapsed updates approach), tomotopy's collapsed Gibbs sampler after each
of its first 20 sweeps and then after 8% more sweeps each time (a single
sweep of tomotopy's default, which learns alpha, can take longer than a
tenth of the first budgets). Only the training calls are timed (CPU seconds).

At each checkpoint the topics are scored by one held-out procedure, the
same for every library: each topic's word distribution is its normalised
parameters (lambda for the variational methods, the smoothed counts for
the sampler); each held-out document's proportions theta are fitted to the
observed half of its words by the fixed point theta_k proportional to
alpha + sum_w n_w theta_k beta_kw / sum_j theta_j beta_jw; the score is the
per-word log probability of the other half, sum_w n_w log sum_k theta_k
beta_kw (document completion, as in the papers). The held-out documents and
their halves are those of ``bench_scale.py``. The same checkpoints are also
scored with each model's own ``transform`` (tomotopy's: its Gibbs
inference), which shows how much of a margin comes from the inference at
evaluation time.

The tables give each model's score at fixed CPU budgets, from its last
checkpoint within the budget (mean ± standard deviation over seeds), by
both procedures, how far before the budget that checkpoint came, and the
first seed's curve.

Run ``python benchmarks/bench_quality.py NewsArticles --n-components 50
--batch-size 128``, ``python benchmarks/bench_quality.py healthtweets
--n-components 50`` or ``python benchmarks/bench_quality.py PATH --column
summary --batch-size 1024`` for a TSV file of texts. ``--models`` and
``--seeds`` run a part of the comparison, ``--budgets`` sets how long: each
run is kept in ``results/quality_CORPUS.json`` (replacing an earlier run of
the same model and seed) and the report is written from every run kept, so
the models and seeds of a long comparison can be run by separate commands,
at once on separate cores. Needs gensim and tomotopy (``pip install gensim
tomotopy``).
"""

import fcntl
import itertools
import json
import time
from copy import deepcopy
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import log_predictive

from _common import (
    CORPUS_HELD_OUT_FRACTION,
    GensimOnlineLDA,
    completion_split,
    corpus_parser,
    reshuffled,
)
from corpus import corpus_name, load_corpus
from tables import mean_spread, simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ONLINE_CHECKPOINT_UPDATES = 4
GIBBS_EVERY_SWEEP = 20
HELD_OUT_ITERATIONS = 200


class PlugInTopics:
    """Topics of any library, with the same inference of the proportions.

    ``transform`` fits each document's proportions theta to its words by the
    EM fixed point gamma = alpha + theta (n_d / (theta beta)) beta^T with the
    normalised topics beta held fixed, ``HELD_OUT_ITERATIONS`` times from the
    uniform start, so that every library is scored by one procedure
    (:func:`sklearn_svi.metrics.log_predictive`).

    Parameters
    ----------
    topic_word : ndarray of shape (n_topics, n_features)
        Non-negative topic parameters.
    alpha : float
        The Dirichlet prior of the proportions.
    """

    def __init__(self, topic_word, alpha):
        self.components_ = topic_word
        self.alpha = alpha

    def transform(self, X):
        beta = self.components_ / self.components_.sum(axis=1, keepdims=True)
        observed = X.tocsr()
        rows = np.repeat(np.arange(observed.shape[0]), np.diff(observed.indptr))
        word_beta = beta[:, observed.indices].T
        theta = np.full((observed.shape[0], beta.shape[0]), 1.0 / beta.shape[0])
        for _ in range(HELD_OUT_ITERATIONS):
            ratio = observed.data / np.einsum("ij,ij->i", theta[rows], word_beta)
            weights = sp.csr_matrix(
                (ratio, observed.indices, observed.indptr), shape=observed.shape
            )
            gamma = self.alpha + theta * (weights @ beta.T)
            theta = gamma / gamma.sum(axis=1, keepdims=True)
        return theta


def held_out_log_predictive(topic_word, completion, alpha):
    """Per-word log probability of the predicted halves given the topics
    (:class:`PlugInTopics`)."""
    return log_predictive(PlugInTopics(topic_word, alpha), *completion)


class TomotopyLDA:
    """tomotopy's collapsed Gibbs sampler behind the interface of the others.

    Parameters
    ----------
    X_train : scipy.sparse.csr_matrix
        The training counts; each document becomes its tokens, the word
        index as the token.
    n_components : int
        Number of topics K.
    seed : int
        Seed of the sampler.
    optim_interval : int
        Sweeps between tomotopy's updates of alpha; 0 keeps alpha = 1/K.
    """

    def __init__(self, X_train, n_components, seed, optim_interval):
        import tomotopy

        self.model = tomotopy.LDAModel(
            k=n_components,
            alpha=1.0 / n_components,
            eta=1.0 / n_components,
            seed=seed,
        )
        self.model.optim_interval = optim_interval
        self.n_features = X_train.shape[1]
        for tokens in _token_lists(X_train):
            if tokens:
                self.model.add_doc(tokens)

    def train(self, n_sweeps):
        """``n_sweeps`` more sweeps of the sampler, on one thread."""
        self.model.train(n_sweeps, workers=1)

    @property
    def components_(self):
        """Each topic's smoothed word distribution, over all the columns."""
        topic_word = np.zeros((self.model.k, self.n_features))
        words = [int(word) for word in self.model.used_vocabs]
        for k in range(self.model.k):
            topic_word[k, words] = self.model.get_topic_word_dist(k)
        return topic_word

    def transform(self, X):
        """tomotopy's own inference of the documents' proportions.

        Words the training documents never held are left out, as tomotopy
        does; a document with no known word gets uniform proportions.
        """
        known = {str(word) for word in self.model.used_vocabs}
        theta = np.full((X.shape[0], self.model.k), 1.0 / self.model.k)
        documents, rows = [], []
        for d, tokens in enumerate(_token_lists(X)):
            tokens = [token for token in tokens if token in known]
            if tokens:
                documents.append(self.model.make_doc(tokens))
                rows.append(d)
        if documents:
            # tomotopy 0.14 returns the documents' topic distributions.
            distributions, _ = self.model.infer(documents, workers=1)
            theta[rows] = np.asarray(distributions)
        return theta

    def snapshot(self):
        """A copy of the sampler's state, not timed."""
        copy = object.__new__(TomotopyLDA)
        copy.model = type(self.model).loads(self.model.saves(full=False))
        copy.n_features = self.n_features
        return copy


def _token_lists(X):
    """Each row of counts as a list of tokens, the word index as text."""
    X = sp.csr_matrix(X)
    for d in range(X.shape[0]):
        begin, end = X.indptr[d], X.indptr[d + 1]
        counts = np.rint(X.data[begin:end]).astype(np.intp)
        yield [str(word) for word in np.repeat(X.indices[begin:end], counts)]


class OnlineModel:
    """An online estimator fitted by ``partial_fit`` on parts of shuffled epochs.

    Parameters
    ----------
    model : estimator
        An unfitted model with ``partial_fit``, ``transform`` and
        ``components_`` (and ``prepare`` if its input needs converting).
    X_train : scipy.sparse.csr_matrix
        The training documents.
    seed : int
        Seed of the order of the documents in each epoch.
    part_size : int
        Documents of each ``partial_fit`` call between two checkpoints.
    """

    def __init__(self, model, X_train, seed, part_size):
        self.model = model
        self._parts = self._shuffled_parts(X_train, seed, part_size)

    def _shuffled_parts(self, X_train, seed, part_size):
        for epoch in reshuffled(X_train, seed):
            for begin in range(0, epoch.shape[0], part_size):
                part = epoch[begin : begin + part_size]
                yield (
                    self.model.prepare(part) if hasattr(self.model, "prepare") else part
                )

    def train(self, n_parts):
        """``partial_fit`` on the next ``n_parts`` parts."""
        for _ in range(n_parts):
            self.model.partial_fit(next(self._parts))

    @property
    def components_(self):
        return self.model.components_

    def transform(self, X):
        return self.model.transform(X)

    def snapshot(self):
        """A copy of the fitted model, not timed."""
        copy = object.__new__(OnlineModel)
        copy.model = deepcopy(self.model)
        return copy


def score_marks(budgets):
    """The times before which a checkpoint is scored: the budgets and a
    geometric ladder (0.1 s, 0.15 s, ...) for the curves."""
    return sorted({*budgets, *(0.1 * 1.5**n for n in range(20))})


def timed_checkpoints(model, steps, budgets):
    """Train ``model`` by ``model.train(n)`` for each n of ``steps``.

    Yields the CPU seconds of training so far and a snapshot of the model
    after a step whose successor may pass one of :func:`score_marks` (it
    would if it took twice as long as this one), and after the last step,
    once the largest budget and 5% more are spent. Copying the model after
    every step would cost more than the fit of a fast model.
    """
    marks = score_marks(budgets)
    max_seconds = max(budgets) * 1.05
    seconds = 0.0
    for n in steps:
        start = time.process_time()
        model.train(n)
        duration = time.process_time() - start
        seconds += duration
        if seconds >= max_seconds:
            yield seconds, model.snapshot()
            return
        if any(seconds < mark <= seconds + 2 * duration for mark in marks):
            yield seconds, model.snapshot()


def gibbs_sweeps():
    """Sweeps between the sampler's checkpoints: one at a time for the
    first ``GIBBS_EVERY_SWEEP``, then 8% more each time, so that a budget's
    last checkpoint comes less than a tenth before it."""
    done = 0
    while True:
        step = 1 if done < GIBBS_EVERY_SWEEP else max(1, round(done * 0.08))
        done += step
        yield step


MODELS = {
    "plain": "SmoothedLDA() default, plain SVI (L=1)",
    "cvb0": 'SmoothedLDA(local_step="cvb0"), every document by CVB0',
    "gibbs": 'SmoothedLDA(local_step="gibbs"), every document sampled',
    "scikit-learn-decay": (
        'SmoothedLDA(local_step="cvb0", learning_decay=0.7), scikit-learn\'s schedule'
    ),
    "window": "SmoothedLDA(L=10)",
    "filtered": "FilteredLDA() default",
    "annealed": "AnnealedLDA() default",
    "learned-alpha": "SmoothedLDA(L=1), learned alpha",
    "batch": "batch CVB0: SmoothedLDA, all documents per update, step 1",
    "scikit-learn": "scikit-learn online",
    "gensim": "gensim online, auto priors",
    "tomotopy-fixed": "tomotopy collapsed Gibbs, fixed priors",
    "tomotopy-default": "tomotopy collapsed Gibbs, default (learned alpha)",
}
"""The models compared: the name ``--models`` takes, and the label of the
tables, in the tables' order."""
GIBBS_OPTIM_INTERVALS = {"tomotopy-fixed": 0, "tomotopy-default": 10}
"""tomotopy's ``optim_interval`` of each of its rows."""


def online_model(name, X_train, n_components, batch_size, seed):
    """The unfitted online model of ``MODELS[name]``."""
    common = dict(
        n_components=n_components,
        batch_size=batch_size,
        total_samples=X_train.shape[0],
        random_state=seed,
    )
    if name == "plain":
        return SmoothedLDA(**common)
    if name in ("cvb0", "gibbs"):
        return SmoothedLDA(local_step=name, **common)
    if name == "scikit-learn-decay":
        return SmoothedLDA(local_step="cvb0", learning_decay=0.7, **common)
    if name == "window":
        return SmoothedLDA(L=10, **common)
    if name == "filtered":
        return FilteredLDA(**common)
    if name == "annealed":
        return AnnealedLDA(**common)
    if name == "learned-alpha":
        return SmoothedLDA(L=1, doc_topic_prior="auto", **common)
    if name == "batch":
        return SmoothedLDA(
            **dict(common, batch_size=X_train.shape[0]),
            learning_rate=1.0,
            local_step="cvb0",
        )
    if name == "scikit-learn":
        return LatentDirichletAllocation(learning_method="online", **common)
    return GensimOnlineLDA(
        n_components=n_components,
        batch_size=batch_size,
        learning_offset=10.0,
        learning_decay=0.7,
        max_doc_update_iter=50,
        mean_change_tol=1e-3,
        n_features=X_train.shape[1],
        random_state=seed,
        learned_priors=True,
    )


def make_run(name, X_train, n_components, batch_size, seed, budgets):
    """The checkpoint generator of the model ``MODELS[name]``.

    The online models are checked every ``ONLINE_CHECKPOINT_UPDATES``
    updates (batch CVB0 after each of its passes), the sampler after each
    of its first sweeps and then every 8% more sweeps
    (:func:`gibbs_sweeps`).
    """
    if name in GIBBS_OPTIM_INTERVALS:
        sampler = TomotopyLDA(X_train, n_components, seed, GIBBS_OPTIM_INTERVALS[name])
        return timed_checkpoints(sampler, gibbs_sweeps(), budgets)
    model = online_model(name, X_train, n_components, batch_size, seed)
    part_size = min(ONLINE_CHECKPOINT_UPDATES * model.batch_size, X_train.shape[0])
    return timed_checkpoints(
        OnlineModel(model, X_train, seed, part_size),
        itertools.repeat(1),
        budgets,
    )


def scored_checkpoints(checkpoints, budgets):
    """The checkpoints worth scoring: the last one before each of
    :func:`score_marks`, and the last one. Scoring every checkpoint of a
    fast model would cost more than its fit.

    Yields the seconds, the model, and whether the checkpoint is the last
    before a budget or the last of all.
    """
    marks = score_marks(budgets)
    pending = None
    for seconds, model in checkpoints:
        if pending is not None and any(pending[0] <= mark < seconds for mark in marks):
            at_budget = any(pending[0] <= budget < seconds for budget in budgets)
            yield (*pending, at_budget)
        pending = (seconds, model)
    yield (*pending, True)


def score_curve(checkpoints, budgets, completion, alpha):
    """CPU seconds and the two held-out scores at each scored checkpoint.

    Returns
    -------
    curve : list of tuple
        (seconds, plug-in score, the model's own score): the topics scored
        by :class:`PlugInTopics`, and by the model's own ``transform``. The
        own score, which only the table of the budgets shows, is computed at
        the budgets' checkpoints alone (NaN elsewhere): tomotopy's inference
        costs seconds.
    """
    curve = []
    for seconds, model, at_budget in scored_checkpoints(checkpoints, budgets):
        plug_in = held_out_log_predictive(model.components_, completion, alpha)
        own = log_predictive(model, *completion) if at_budget else np.nan
        curve.append((seconds, plug_in, own))
    return curve


def score_at_budgets(run, budgets, column=1):
    """The score ``column`` of the last checkpoint of ``run`` within each
    budget; None if there is none, or if the run was not given that budget."""
    points = run["points"]
    return [
        max(
            (point for point in points if point[0] <= budget),
            default=(None,) * 3,
        )[column]
        if budget <= max(run["budgets"])
        else None
        for budget in budgets
    ]


def format_budgets(runs, budgets, column=1):
    """Mean ± standard deviation over seeds of the score ``column`` at each
    budget ("-" where a seed did not reach or run to it)."""
    rows = []
    for label, seeds in runs.items():
        cells = []
        for scores in zip(*(score_at_budgets(run, budgets, column) for run in seeds)):
            reached = [score for score in scores if score is not None]
            cells.append(
                mean_spread(reached, 3) if len(reached) == len(scores) else "-"
            )
        rows.append([label, str(len(seeds)), *cells])
    return simple_table(
        ["Model", "seeds", *(f"{budget:g} s" for budget in budgets)], rows
    )


def format_against_plain_svi(runs, budgets):
    """Each default of the mechanisms minus plain SVI, seed by seed (the
    same random_state): the mean difference ± its
    standard error over the seeds that both ran, at each budget."""
    plain = {run["seed"]: run for run in runs.get(MODELS["plain"], [])}
    rows = []
    for name in ("filtered", "annealed"):
        paired = [run for run in runs.get(MODELS[name], []) if run["seed"] in plain]
        if len(paired) < 2:
            continue
        differences = np.array(
            [
                np.array(score_at_budgets(run, budgets), dtype=float)
                - np.array(score_at_budgets(plain[run["seed"]], budgets), dtype=float)
                for run in paired
            ]
        )
        means = differences.mean(axis=0)
        errors = differences.std(axis=0, ddof=1) / np.sqrt(len(paired))
        rows.append(
            [
                MODELS[name],
                str(len(paired)),
                *(
                    "-" if np.isnan(mean) else f"{mean:+.4f} ± {error:.4f}"
                    for mean, error in zip(means, errors)
                ),
            ]
        )
    return simple_table(
        ["Model minus plain SVI", "seeds", *(f"{budget:g} s" for budget in budgets)],
        rows,
    )


def format_lateness(runs, budgets):
    """How far below each budget the last checkpoint within it came, at most
    over seeds, as a share of the budget."""
    rows = []
    for label, seeds in runs.items():
        cells = []
        for budget in budgets:
            times = [score_at_budgets(run, [budget], column=0)[0] for run in seeds]
            cells.append(
                "-"
                if None in times
                else f"{max(1 - seconds / budget for seconds in times):.0%}"
            )
        rows.append([label, *cells])
    return simple_table(["Model", *(f"{budget:g} s" for budget in budgets)], rows)


def format_curves(runs):
    """The first seed's checkpoints: CPU seconds and plug-in score."""
    rows = [
        [
            label,
            "  ".join(
                f"{point[0]:.1f}s:{point[1]:.3f}" for point in seeds[0]["points"]
            ),
        ]
        for label, seeds in runs.items()
    ]
    return simple_table(["Model", "CPU s : held-out log predictive"], rows)


def fit_and_score(args, X_train, completion, alpha):
    """Fit and score each model of ``args.models`` for each seed.

    Yields
    ------
    run : dict
        The model's ``label``, the ``seed``, the ``budgets`` and the
        ``points`` of :func:`score_curve`.
    """
    for seed in args.seeds:
        for name in args.models:
            checkpoints = make_run(
                name, X_train, args.n_components, args.batch_size, seed, args.budgets
            )
            points = score_curve(checkpoints, args.budgets, completion, alpha)
            print(
                f"seed {seed} {MODELS[name]}: {points[-1][1]:.4f}, "
                f"own {points[-1][2]:.4f} ({points[-1][0]:.1f} s)",
                flush=True,
            )
            yield {
                "label": MODELS[name],
                "seed": seed,
                "budgets": list(args.budgets),
                "points": [list(point) for point in points],
            }


class RunStore:
    """The runs of one corpus and setting, kept in a JSON file beside the
    report, so that models and seeds can be run by separate commands (and
    processes) and reported together.

    Parameters
    ----------
    path : pathlib.Path
        The JSON file.
    setup : str
        What was fitted; a file written for another setup is refused.
    """

    def __init__(self, path, setup):
        self.path = path
        self.setup = setup

    def add(self, run):
        """Keep ``run``, replacing an earlier run of its model and seed;
        return every run kept."""
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            runs = self._load()
            runs = [
                kept
                for kept in runs
                if (kept["label"], kept["seed"]) != (run["label"], run["seed"])
            ]
            runs.append(run)
            self.path.write_text(
                json.dumps({"setup": self.setup, "runs": runs}, indent=0)
            )
        return runs

    def _load(self):
        if not self.path.exists():
            return []
        stored = json.loads(self.path.read_text())
        if stored["setup"] != self.setup:
            raise ValueError(
                f"{self.path} holds runs of another setup:\n{stored['setup']}\n"
                "Move it away to start afresh."
            )
        return stored["runs"]


def by_label(runs):
    """The runs by label, in the order of ``MODELS``, each by seed."""
    ordered = {}
    for label in MODELS.values():
        seeds = sorted(
            (run for run in runs if run["label"] == label), key=lambda run: run["seed"]
        )
        if seeds:
            ordered[label] = seeds
    return ordered


def write_report(path, header, runs):
    """Print and write the tables of every run kept."""
    runs = by_label(runs)
    budgets = sorted(
        {b for seeds in runs.values() for run in seeds for b in run["budgets"]}
    )
    seeds = sorted({run["seed"] for label_runs in runs.values() for run in label_runs})
    scores = format_budgets(runs, budgets)
    paired = format_against_plain_svi(runs, budgets)
    own = format_budgets(runs, budgets, column=2)
    lateness = format_lateness(runs, budgets)
    detail = format_curves(runs)
    print(scores, paired, own, lateness, detail, sep="\n\n")
    write_results(
        path,
        [
            f"{header}, seeds {', '.join(map(str, seeds))}; held-out per-word log "
            "predictive at each CPU budget, every model's topics scored by the "
            'same plug-in inference ("-": the model was not run to that budget).',
            scores,
            "Each mechanism's default minus plain SVI, seed by seed (the same "
            "random_state; mean ± standard error):",
            paired,
            "The same checkpoints scored by each model's own transform "
            "(tomotopy: its Gibbs inference):",
            own,
            "How far before each budget the last checkpoint within it came "
            "(the largest share over seeds):",
            lateness,
            "Checkpoints of the first seed (plug-in score):",
            detail,
        ],
    )


def main(argv=None):
    parser = corpus_parser(__doc__)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--budgets", type=float, nargs="+", default=[1.0, 5.0, 20.0, 60.0, 300.0]
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=list(MODELS),
        default=list(MODELS),
        help="the models to run; the report holds every model run so far",
    )
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    X = load_corpus(args.corpus, args.column, args.n_features)
    X_train, completion = completion_split(X, CORPUS_HELD_OUT_FRACTION, rng)
    alpha = 1.0 / args.n_components
    name = corpus_name(args.corpus)
    header = (
        f"{name}: {X_train.shape[0]} training documents "
        f"({X_train.sum() / X_train.shape[0]:.1f} words each), {X.shape[1]} words, "
        f"{completion.predicted.shape[0]} held out; K={args.n_components}, "
        f"minibatches of {args.batch_size}, one thread"
    )
    print(header, flush=True)
    store = RunStore(RESULTS_DIR / f"quality_{name}.json", header)

    # One thread for every library, BLAS included: the fits, whose CPU time
    # is the budget, and the scoring.
    with threadpool_limits(limits=1):
        for run in fit_and_score(args, X_train, completion, alpha):
            runs = store.add(run)
    write_report(RESULTS_DIR / f"quality_{name}.rst", header, runs)


if __name__ == "__main__":
    main()
