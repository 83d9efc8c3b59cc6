"""Held-out fit against CPU time: our local steps, scikit-learn, gensim and samplers.

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

Two more libraries sample with MALLET's SparseLDA in Rust: pyrmallet
(0.1.2) and topica (0.62). Each has two rows:

- "fixed priors, last sample": the priors of the others, alpha = eta = 1/K
  (``alpha_sum=1``, ``beta=1/K``), none learned (``optimize_interval=0``),
  and the topics of the last state of the chain (``num_samples=1``,
  ``sample_interval=0``), as for tomotopy.
- "default (learned, averaged)": every default of the library, as its
  README and docstrings give them: ``alpha_sum=None`` (K, alpha = 1 per
  topic) and ``beta=0.01`` to start from; alpha (one per topic) and beta
  learned every ``optimize_interval=50`` sweeps after ``burn_in=200``; the
  topics averaged over ``num_samples=5`` samples ``sample_interval=25``
  sweeps apart, which both run after the sweeps asked for (125 sweeps more:
  no default fit is shorter). topica's default sampler is
  ``sampler="sparse"``; a third topica row runs ``sampler="warp"``
  (WarpLDA), which its docstring advises "when per-sweep speed dominates
  (large K, or K>=~50 ...)", with the other defaults. Its LightLDA
  (``sampler="lightlda"``, ``mh_steps``) is not run.

Neither library resumes a fit: each budget's checkpoint is a fit of its
own from the same seed, with as many sweeps as come within the budget (the
125 sweeps of the averaging included): the sweeps are set from the speed
of the fit before, and a fit is run again with fewer or more sweeps until
its time falls between 90% of the budget and the budget (at most
``MAX_BUDGET_FITS`` fits). Its time is that fit's alone, the chain's random
start included (tomotopy's is timed too, in its first sweep). Their curves
hold these fits only. The corpora are built once, untimed, as tomotopy's documents are:
the word indices as tokens, for pyrmallet ``Corpus.from_strings`` with
``token_regex`` (its ``LatentDirichletAllocation`` takes raw text and keeps
only tokens of letters, so the benchmark calls what its ``fit`` calls,
``pyrmallet._rust_mallet.train``, with the same defaults), for topica
``Corpus.from_documents``. topica's fits record no log-likelihood trace
(``check_every=0``) and keep no theta draws (``keep_theta_draws=False``):
diagnostics that change no topic.

At each checkpoint the topics are scored by one held-out procedure, the
same for every library: each topic's word distribution is its normalised
parameters (lambda for the variational methods, the smoothed counts for
the samplers: tomotopy's ``get_topic_word_dist``, pyrmallet's
``topic_word_matrix()``, topica's ``topic_word``, each smoothed by the beta
it used or learned and averaged over the samples it averages); each
held-out document's proportions theta are fitted to the
observed half of its words by the fixed point theta_k proportional to
alpha + sum_w n_w theta_k beta_kw / sum_j theta_j beta_jw; the score is the
per-word log probability of the other half, sum_w n_w log sum_k theta_k
beta_kw (document completion, as in the papers). The held-out documents and
their halves are those of ``bench_scale.py``. The same checkpoints are also
scored with each model's own ``transform`` (tomotopy's: its Gibbs
inference; pyrmallet's ``TopicModel.infer`` with the 50 sweeps of its
``n_inference_iter`` default; topica's ``LDA.transform`` with its
defaults), which shows how much of a margin comes from the inference at
evaluation time. The topics at each budget's checkpoint are also scored by
the NPMI coherence of each topic's 10 top words in the training documents
(:func:`sklearn_svi.metrics.coherence`) and their diversity, the share of
distinct words among all topics' top words
(:func:`sklearn_svi.metrics.topic_diversity`).

The tables give each model's score at fixed CPU budgets, from its last
checkpoint within the budget (mean ± standard deviation over seeds), by
both procedures, the coherence and diversity (mean over seeds), how far
before the budget that checkpoint came, and the first seed's curve.

Run ``python benchmarks/bench_quality.py NewsArticles --n-components 50
--batch-size 128``, ``python benchmarks/bench_quality.py healthtweets
--n-components 50`` or ``python benchmarks/bench_quality.py PATH --column
summary --batch-size 1024`` for a TSV file of texts. ``--models`` and
``--seeds`` run a part of the comparison, ``--budgets`` sets how long: each
run is kept in ``results/quality_CORPUS.json`` (replacing an earlier run of
the same model and seed; ``--results-dir`` keeps them elsewhere) and the
report is written from every run kept, so the models and seeds of a long
comparison can be run by separate commands, at once on separate cores.
``--n-components 1000 --tag K1000`` runs every row at a thousand topics,
kept in ``results/quality_CORPUS_K1000.json``.

``--threads 2`` gives every library that has the setting two threads: ours
and scikit-learn ``n_jobs=2``, tomotopy ``workers=2``, topica
``num_threads=2`` (its approximate parallel sampler) and BLAS two threads.
gensim's online model has no such setting, and pyrmallet has none either:
it samples on one thread. The fits are then timed in wall seconds
(``time.perf_counter``), and the runs and report are
``quality_CORPUS_threads2.json`` and ``.rst``. Needs gensim, tomotopy,
pyrmallet and topica (``pip install gensim tomotopy pyrmallet topica``).
"""

import fcntl
import itertools
import json
import time
from copy import copy, deepcopy
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import LatentDirichletAllocation
from threadpoolctl import threadpool_limits

from sklearn_svi import AnnealedLDA, FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import coherence, log_predictive, topic_diversity

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
MAX_BUDGET_FITS = 6
"""The most fits of a sampler that cannot resume to find the sweeps of a
budget."""
HELD_OUT_ITERATIONS = 200
AVERAGED_SWEEPS = 5 * 25
"""The sweeps pyrmallet and topica run by default after those asked for:
``num_samples=5`` samples ``sample_interval=25`` sweeps apart."""
TOP_WORDS = 10


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
    threads : int, default=1
        tomotopy's ``workers`` in training and inference.
    """

    refits = False

    def __init__(self, X_train, n_components, seed, optim_interval, threads=1):
        import tomotopy

        self.model = tomotopy.LDAModel(
            k=n_components,
            alpha=1.0 / n_components,
            eta=1.0 / n_components,
            seed=seed,
        )
        self.model.optim_interval = optim_interval
        self.n_features = X_train.shape[1]
        self.threads = threads
        for tokens in _token_lists(X_train):
            if tokens:
                self.model.add_doc(tokens)

    def train(self, n_sweeps):
        """``n_sweeps`` more sweeps of the sampler, on ``threads`` workers."""
        self.model.train(n_sweeps, workers=self.threads)

    @property
    def components_(self):
        """Each topic's smoothed word distribution, over all the columns."""
        topic_word = [self.model.get_topic_word_dist(k) for k in range(self.model.k)]
        return _over_columns(topic_word, self.model.used_vocabs, self.n_features)

    def transform(self, X):
        """tomotopy's own inference of the documents' proportions.

        Words the training documents never held are left out, as tomotopy
        does; a document with no known word gets uniform proportions.
        """

        def infer(documents):
            # tomotopy 0.14 returns the documents' topic distributions.
            documents = [self.model.make_doc(tokens) for tokens in documents]
            return self.model.infer(documents, workers=self.threads)[0]

        return _inferred_proportions(X, self.model.used_vocabs, self.model.k, infer)

    def snapshot(self):
        """A copy of the sampler's state, not timed."""
        copy = object.__new__(TomotopyLDA)
        copy.model = type(self.model).loads(self.model.saves(full=False))
        copy.n_features = self.n_features
        copy.threads = self.threads
        return copy


class RefittedSampler:
    """A Gibbs sampler of a library that cannot resume training.

    ``train(n)`` fits anew from the same seed with ``n`` sweeps
    (``refits``: a checkpoint's time is that fit's alone;
    :func:`budget_fits` chooses ``n``). The training documents are converted to
    the library's corpus once, untimed. A subclass fits by ``_fit(n_sweeps)``
    and reads the fitted model's topics by ``_topic_word()`` and its own
    inference by ``_infer(documents)``; the fitted model has the
    ``vocabulary`` of its columns, the word indices as text.

    Parameters
    ----------
    X_train : scipy.sparse.csr_matrix
        The training counts.
    n_components : int
        Number of topics K.
    seed : int
        Seed of the sampler and of its inference.
    settings : dict or tuple of dict
        The library's settings of the row (:func:`sampler_settings`).
    threads : int
        The library's threads.
    """

    refits = True

    def __init__(self, X_train, n_components, seed, settings, threads):
        self.n_features = X_train.shape[1]
        self.n_components = n_components
        self.seed = seed
        self.settings = settings
        self.threads = threads
        self.sweeps = 0
        self.fitted = None
        self.corpus = self._corpus([t for t in _token_lists(X_train) if t])

    def train(self, n_sweeps):
        """Fit anew with ``n_sweeps`` sweeps."""
        self.sweeps = n_sweeps
        self.fitted = self._fit(n_sweeps)

    @property
    def components_(self):
        """Each topic's word distribution as the library estimates it (the
        smoothed counts, averaged over its samples if it averages), over all
        the columns."""
        return _over_columns(
            self._topic_word(), self.fitted.vocabulary, self.n_features
        )

    def transform(self, X):
        """The library's own inference of the documents' proportions; words
        the training documents never held are left out and a document with no
        known word gets uniform proportions, as for tomotopy."""
        return _inferred_proportions(
            X, self.fitted.vocabulary, self.n_components, self._infer
        )

    def snapshot(self):
        """The sampler as fitted so far: the next ``train`` makes a new fit
        and leaves this one as it is."""
        return copy(self)


class PyrmalletLDA(RefittedSampler):
    """pyrmallet's SparseLDA sampler (``pyrmallet._rust_mallet.train``, what
    its ``LatentDirichletAllocation.fit`` calls) on the word indices as
    tokens (``token_regex``), and its inference ``TopicModel.infer`` with
    ``n_inference_iter``'s default of 50 sweeps."""

    def _corpus(self, documents):
        from pyrmallet import _rust_mallet

        return _rust_mallet.Corpus.from_strings(
            [" ".join(tokens) for tokens in documents], token_regex=r"\S+"
        )

    def _fit(self, n_sweeps):
        from pyrmallet import _rust_mallet

        return _rust_mallet.train(
            self.corpus,
            num_topics=self.n_components,
            iterations=n_sweeps,
            seed=self.seed,
            **self.settings,
        )

    def _topic_word(self):
        return np.array(self.fitted.topic_word_matrix())

    def _infer(self, documents):
        index = {word: i for i, word in enumerate(self.fitted.vocabulary)}
        theta = []
        # Its inference takes dense counts over the vocabulary: a few
        # documents at a time.
        for begin in range(0, len(documents), 64):
            part = documents[begin : begin + 64]
            counts = np.zeros((len(part), len(index)))
            for row, tokens in enumerate(part):
                np.add.at(counts[row], [index[token] for token in tokens], 1.0)
            theta += self.fitted.infer(counts.tolist(), n_iter=50, seed=self.seed)
        return theta


class TopicaLDA(RefittedSampler):
    """topica's ``LDA`` fitted on a ``topica.Corpus`` of the word indices as
    tokens, and its own inference ``LDA.transform`` with its defaults."""

    def _corpus(self, documents):
        import topica

        return topica.Corpus.from_documents(documents)

    def _fit(self, n_sweeps):
        import topica

        model_settings, fit_settings = self.settings
        model = topica.LDA(
            self.n_components,
            seed=self.seed,
            num_threads=self.threads,
            **model_settings,
        )
        # The log-likelihood trace and the kept theta draws are diagnostics
        # that change no topic: left out.
        return model.fit(
            self.corpus,
            iters=n_sweeps,
            check_every=0,
            keep_theta_draws=False,
            **fit_settings,
        )

    def _topic_word(self):
        return self.fitted.topic_word

    def _infer(self, documents):
        return self.fitted.transform(documents, seed=self.seed)


def _over_columns(topic_word, vocabulary, n_features):
    """A library's topics over its ``vocabulary`` (the word indices as text)
    spread over all ``n_features`` columns, zero where the training documents
    never held the word."""
    topic_word = np.asarray(topic_word)
    spread = np.zeros((topic_word.shape[0], n_features))
    spread[:, [int(word) for word in vocabulary]] = topic_word
    return spread


def _inferred_proportions(X, vocabulary, n_components, infer):
    """The proportions ``infer`` gives the documents of ``X`` (as token
    lists without the words out of ``vocabulary``); uniform for a document
    with no word of it."""
    known = {str(word) for word in vocabulary}
    theta = np.full((X.shape[0], n_components), 1.0 / n_components)
    documents, rows = [], []
    for d, tokens in enumerate(_token_lists(X)):
        tokens = [token for token in tokens if token in known]
        if tokens:
            documents.append(tokens)
            rows.append(d)
    if documents:
        theta[rows] = np.asarray(infer(documents))
    return theta


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

    refits = False

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


def timed_checkpoints(model, steps, budgets, clock=time.process_time):
    """Train ``model`` by ``model.train(n)`` for each n of ``steps``.

    Yields the seconds of training so far by ``clock`` (CPU seconds, or
    ``time.perf_counter``'s wall seconds) and a snapshot of the model after
    a step whose successor may pass one of :func:`score_marks` (it would if
    it took twice as long as this one), and after the last step, once the
    largest budget and 5% more are spent. Copying the model after every step
    would cost more than the fit of a fast model. For a model that
    ``refits``, the seconds are those of its last fit alone.
    """
    marks = score_marks(budgets)
    max_seconds = max(budgets) * 1.05
    seconds = 0.0
    for n in steps:
        start = clock()
        model.train(n)
        duration = clock() - start
        seconds = duration if model.refits else seconds + duration
        if seconds >= max_seconds:
            yield seconds, model.snapshot()
            return
        if any(seconds < mark <= seconds + 2 * duration for mark in marks):
            yield seconds, model.snapshot()


def budget_fits(sampler, budgets, extra, clock=time.process_time):
    """Fit a sampler that cannot resume once per budget (and again while
    needed): yields the seconds and a snapshot of each budget's fit, the
    last whose time fell within the budget, in the order of the budgets.

    The sweeps of a fit are those that the fits so far give 95% of the
    budget (:func:`sweeps_for`); a fit is accepted when its time lies
    between 90% of the budget and the budget, and after ``MAX_BUDGET_FITS``
    fits the last within the budget is kept. A budget shorter than the fit
    of a single sweep has no checkpoint.
    """
    # The sweeps, ``extra`` included, and the seconds of every fit so far.
    fits = []
    for budget in sorted(budgets):
        kept = None
        for _ in range(MAX_BUDGET_FITS):
            sweeps = sweeps_for(0.95 * budget, fits) - extra if fits else 1
            if sweeps < 1:
                break
            start = clock()
            sampler.train(sweeps)
            seconds = clock() - start
            fits.append((sweeps + extra, seconds))
            if seconds <= budget:
                kept = (seconds, sampler.snapshot())
                if seconds >= 0.9 * budget:
                    break
        if kept is not None:
            yield kept


def sweeps_for(seconds, fits):
    """The sweeps a fit of ``seconds`` runs, from the (sweeps, seconds) of
    the fits so far: on the line through the last two fits of different
    sweeps (a fit's start costs time of its own, and a sampler that learns
    its priors sweeps more slowly after its burn-in), or in proportion to the
    last fit when there is only one or the line does not rise."""
    last_sweeps, last_seconds = fits[-1]
    earlier = [fit for fit in fits[:-1] if fit[0] != last_sweeps]
    if earlier:
        other_sweeps, other_seconds = earlier[-1]
        slope = (last_seconds - other_seconds) / (last_sweeps - other_sweeps)
        if slope > 0:
            return int(last_sweeps + (seconds - last_seconds) / slope)
    return int(last_sweeps * seconds / last_seconds)


def gibbs_sweeps():
    """Sweeps between tomotopy's checkpoints: one at a time for the first
    ``GIBBS_EVERY_SWEEP``, then 8% more each time, so that a budget's last
    checkpoint comes less than a tenth before it."""
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
    "pyrmallet-fixed": "pyrmallet SparseLDA, fixed priors, last sample",
    "pyrmallet-default": "pyrmallet SparseLDA, default (learned, averaged)",
    "topica-fixed": "topica SparseLDA, fixed priors, last sample",
    "topica-default": "topica SparseLDA, default (learned, averaged)",
    "topica-warp": 'topica sampler="warp", otherwise default',
}
"""The models compared: the name ``--models`` takes, and the label of the
tables, in the tables' order."""
GIBBS_OPTIM_INTERVALS = {"tomotopy-fixed": 0, "tomotopy-default": 10}
"""tomotopy's ``optim_interval`` of each of its rows."""
REFITTED_SAMPLERS = {
    "pyrmallet-fixed": PyrmalletLDA,
    "pyrmallet-default": PyrmalletLDA,
    "topica-fixed": TopicaLDA,
    "topica-default": TopicaLDA,
    "topica-warp": TopicaLDA,
}
"""The sampler of each row of a library that cannot resume training."""


def sampler_settings(name, n_components):
    """The settings of the row ``MODELS[name]`` of pyrmallet or topica.

    The fixed rows set alpha = eta = 1/K (an alpha sum of 1), learn no
    prior and keep the last sample; the others keep every default of the
    library (``sampler="warp"`` aside). For topica, the settings of
    ``topica.LDA`` and those of its ``fit``.
    """
    fixed = dict(alpha_sum=1.0, beta=1.0 / n_components, optimize_interval=0)
    last_sample = dict(num_samples=1, sample_interval=0)
    return {
        "pyrmallet-fixed": {**fixed, **last_sample},
        "pyrmallet-default": {},
        "topica-fixed": (fixed, last_sample),
        "topica-default": ({}, {}),
        "topica-warp": ({"sampler": "warp"}, {}),
    }[name]


def online_model(name, X_train, n_components, batch_size, seed, threads=1):
    """The unfitted online model of ``MODELS[name]``, with ``n_jobs=threads``
    (gensim's online model, which has no such setting, aside)."""
    common = dict(
        n_components=n_components,
        batch_size=batch_size,
        total_samples=X_train.shape[0],
        random_state=seed,
        n_jobs=threads,
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


def make_run(name, X_train, n_components, batch_size, seed, budgets, threads=1):
    """The checkpoint generator of the model ``MODELS[name]``.

    The online models are checked every ``ONLINE_CHECKPOINT_UPDATES``
    updates (batch CVB0 after each of its passes), tomotopy after each of
    its first sweeps and then every 8% more sweeps (:func:`gibbs_sweeps`),
    the samplers that cannot resume once per budget (:func:`budget_fits`).
    On one thread the time is CPU seconds, on more wall seconds.
    """
    clock = time.process_time if threads == 1 else time.perf_counter
    if name in GIBBS_OPTIM_INTERVALS:
        optim_interval = GIBBS_OPTIM_INTERVALS[name]
        sampler = TomotopyLDA(X_train, n_components, seed, optim_interval, threads)
        return timed_checkpoints(sampler, gibbs_sweeps(), budgets, clock)
    if name in REFITTED_SAMPLERS:
        settings = sampler_settings(name, n_components)
        sampler = REFITTED_SAMPLERS[name](
            X_train, n_components, seed, settings, threads
        )
        extra = 0 if name.endswith("-fixed") else AVERAGED_SWEEPS
        return budget_fits(sampler, budgets, extra, clock)
    model = online_model(name, X_train, n_components, batch_size, seed, threads)
    part_size = min(ONLINE_CHECKPOINT_UPDATES * model.batch_size, X_train.shape[0])
    return timed_checkpoints(
        OnlineModel(model, X_train, seed, part_size),
        itertools.repeat(1),
        budgets,
        clock,
    )


def scored_checkpoints(checkpoints, budgets):
    """The checkpoints worth scoring: the last one before each of
    :func:`score_marks`, and the last one. Scoring every checkpoint of a
    fast model would cost more than its fit.

    Yields the seconds, the model, and whether the checkpoint is the last
    before a budget or the last of all; nothing for a model none of whose
    fits ended within a budget.
    """
    marks = score_marks(budgets)
    pending = None
    for seconds, model in checkpoints:
        if pending is not None and any(pending[0] <= mark < seconds for mark in marks):
            at_budget = any(pending[0] <= budget < seconds for budget in budgets)
            yield (*pending, at_budget)
        pending = (seconds, model)
    if pending is not None:
        yield (*pending, True)


def topic_quality(topic_word, X_train):
    """NPMI coherence in the training documents and diversity of the topics'
    ``TOP_WORDS`` top words."""
    topics = PlugInTopics(topic_word, alpha=None)
    return (
        coherence(topics, X_train, measure="npmi", top_n=TOP_WORDS),
        topic_diversity(topics, top_n=TOP_WORDS),
    )


def score_curve(checkpoints, budgets, completion, alpha, X_train):
    """Seconds, the two held-out scores and the topics' coherence and
    diversity at each scored checkpoint.

    Returns
    -------
    curve : list of tuple
        (seconds, plug-in score, the model's own score, NPMI coherence,
        topic diversity): the topics scored by :class:`PlugInTopics`, by the
        model's own ``transform``, and by :func:`topic_quality`. All but the
        plug-in score, which only the tables of the budgets show, are
        computed at the budgets' checkpoints alone (NaN elsewhere):
        tomotopy's inference costs seconds.
    """
    curve = []
    for seconds, model, at_budget in scored_checkpoints(checkpoints, budgets):
        topic_word = model.components_
        plug_in = held_out_log_predictive(topic_word, completion, alpha)
        if at_budget:
            own = log_predictive(model, *completion)
            curve.append((seconds, plug_in, own, *topic_quality(topic_word, X_train)))
        else:
            curve.append((seconds, plug_in, *(np.nan,) * 3))
    return curve


def score_at_budgets(run, budgets, column=1):
    """The score ``column`` of the last checkpoint of ``run`` within each
    budget; None if there is none, if the run was not given that budget, or
    if it was stored before that score was measured."""
    points = run["points"]
    scores = []
    for budget in budgets:
        point = max((point for point in points if point[0] <= budget), default=())
        reached = budget <= max(run["budgets"]) and column < len(point)
        scores.append(point[column] if reached else None)
    return scores


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


def format_topic_quality(runs, budgets):
    """The mean over seeds of the NPMI coherence and the topic diversity at
    each budget ("-" where a seed did not reach or run to it, or was stored
    without them)."""
    rows = []
    for label, seeds in runs.items():
        cells = []
        for budget in budgets:
            for column in (3, 4):
                scores = [score_at_budgets(run, [budget], column)[0] for run in seeds]
                cells.append("-" if None in scores else f"{np.mean(scores):.3f}")
        rows.append([label, *cells])
    header = [f"{budget:g} s {name}" for budget in budgets for name in ("npmi", "div")]
    return simple_table(["Model", *header], rows)


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


def format_curves(runs, clock_name="CPU"):
    """The first seed's checkpoints: seconds and plug-in score."""
    rows = [
        [
            label,
            "  ".join(
                f"{point[0]:.1f}s:{point[1]:.3f}" for point in seeds[0]["points"]
            ),
        ]
        for label, seeds in runs.items()
    ]
    return simple_table(["Model", f"{clock_name} s : held-out log predictive"], rows)


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
                name,
                X_train,
                args.n_components,
                args.batch_size,
                seed,
                args.budgets,
                args.threads,
            )
            points = score_curve(checkpoints, args.budgets, completion, alpha, X_train)
            if points:
                seconds, plug_in, own, npmi, diversity = points[-1]
                print(
                    f"seed {seed} {MODELS[name]}: {plug_in:.4f}, own {own:.4f}, "
                    f"npmi {npmi:.3f}, diversity {diversity:.3f} ({seconds:.1f} s)",
                    flush=True,
                )
            else:
                print(f"seed {seed} {MODELS[name]}: no fit within a budget", flush=True)
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


def write_report(path, header, runs, clock_name="CPU"):
    """Print and write the tables of every run kept."""
    runs = by_label(runs)
    budgets = sorted(
        {b for seeds in runs.values() for run in seeds for b in run["budgets"]}
    )
    seeds = sorted({run["seed"] for label_runs in runs.values() for run in label_runs})
    scores = format_budgets(runs, budgets)
    paired = format_against_plain_svi(runs, budgets)
    own = format_budgets(runs, budgets, column=2)
    quality = format_topic_quality(runs, budgets)
    lateness = format_lateness(runs, budgets)
    detail = format_curves(runs, clock_name)
    print(scores, paired, own, quality, lateness, detail, sep="\n\n")
    write_results(
        path,
        [
            f"{header}, seeds {', '.join(map(str, seeds))}; held-out per-word log "
            f"predictive at each {clock_name} budget, every model's topics scored by "
            'the same plug-in inference ("-": the model was not run to that budget).',
            scores,
            "Each mechanism's default minus plain SVI, seed by seed (the same "
            "random_state; mean ± standard error):",
            paired,
            "The same checkpoints scored by each model's own transform "
            "(tomotopy, pyrmallet, topica: their Gibbs inference):",
            own,
            f"NPMI coherence in the training documents (npmi) and topic diversity "
            f"(div) of each topic's top {TOP_WORDS} words at the same "
            "checkpoints (mean over seeds):",
            quality,
            "How far before each budget the last checkpoint within it came "
            "(the largest share over seeds):",
            lateness,
            "Checkpoints of the first seed (plug-in score):",
            detail,
        ],
    )


def main(argv=None):
    parser = corpus_parser(__doc__)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads of every library that has the setting; more than one "
        "times the fits in wall seconds and writes quality_CORPUS_threadsN",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where the runs and the report are kept",
    )
    parser.add_argument(
        "--tag",
        default="",
        help="a suffix of the runs' and report's names, for a setting kept "
        "beside the corpus's usual one (e.g. K1000)",
    )
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
    name = corpus_name(args.corpus) + (f"_{args.tag}" if args.tag else "")
    threads = "one thread"
    clock_name = "CPU"
    if args.threads > 1:
        name += f"_threads{args.threads}"
        threads = f"{args.threads} threads, wall seconds"
        clock_name = "wall"
    header = (
        f"{corpus_name(args.corpus)}: {X_train.shape[0]} training documents "
        f"({X_train.sum() / X_train.shape[0]:.1f} words each), {X.shape[1]} words, "
        f"{completion.predicted.shape[0]} held out; K={args.n_components}, "
        f"minibatches of {args.batch_size}, {threads}"
    )
    print(header, flush=True)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    store = RunStore(args.results_dir / f"quality_{name}.json", header)

    # The same threads for every library, BLAS included: the fits, whose
    # time is the budget, and the scoring.
    with threadpool_limits(limits=args.threads):
        for run in fit_and_score(args, X_train, completion, alpha):
            runs = store.add(run)
    write_report(args.results_dir / f"quality_{name}.rst", header, runs, clock_name)


if __name__ == "__main__":
    main()
