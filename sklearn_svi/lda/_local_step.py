"""The LDA local step: each document's topic proportions at the current topics.

The compiled kernel fits one document at a time; this module prepares the
documents and the topics' weights of their words, runs the kernel on the
active threads, and turns its result into the minibatch statistic of the
online update (Hoffman et al. 2013, Fig. 6; Foulds et al. 2013 for the
collapsed step).
"""

import functools
import importlib
from dataclasses import dataclass

import numpy as np

from .._mechanisms import SparseStatistic
from .._threads import team_size, team_threads
from . import _fast


def _select_kernel():
    """The compiled local step for this processor: the widest vectors it runs."""
    builds = []
    if _fast.cpu_has_avx512():
        builds.append("_fast_avx512")
    if _fast.cpu_has_avx2_fma():
        builds.append("_fast_avx2")
    for name in builds:
        try:
            return importlib.import_module(f".{name}", __package__)
        except ImportError:  # not built on this platform
            continue
    return _fast


_kernel = _select_kernel()

# In the updates, the local step starts document d from
# gamma_dk = (alpha + n_d / K) exp(s z_dk), z_dk ~ N(0, 1), with the spread
# s of START_SPREAD: the total mass of the fixed point, in a random
# direction. From the symmetric start gamma_dk = alpha + n_d / K (or
# scikit-learn's nearly symmetric Gamma(100, 1/100) draw) every short
# document of the first minibatches spreads evenly over topics that are
# still alike, and the topics stay alike; random directions break the tie,
# as the random first assignments of a Gibbs sampler do. The mean-field
# step iterates to its fixed point, which a spread of 1 reached best (a
# wider one lands documents in poorer fixed points: the learned alpha of
# planted documents fell from 0.17 to 0.08 at a spread of 2). The collapsed
# step sweeps a short document once, its start stays in the
# responsibilities, and a wider spread keeps the statistic as varied as a
# sampler's assignments throughout the fit: 2 was better than 1 by about
# 0.09 nats per held-out word on two corpora of short texts, and level on
# long articles. Inference outside the updates (transform, score,
# evaluation) starts from the symmetric point: it is deterministic, and on
# short documents its spread-out proportions predict held-out words better.
# See the user guide's section on the local step for the measurements.
START_SPREAD = {"vb": 1.0, "cvb0": 2.0}


def start_spread(collapsed):
    """The spread of the documents' random starts in the updates."""
    return START_SPREAD["cvb0" if collapsed else "vb"]


@dataclass(frozen=True)
class _CompactDocuments:
    """Documents in CSR form with their words renumbered 0..n_words-1.

    Attributes
    ----------
    words : ndarray of shape (n_words,)
        The vocabulary indices present in the documents, sorted.
    indptr, indices : ndarray of intp
        CSR structure; ``indices`` point into ``words``.
    counts : ndarray
        The word counts, aligned with ``indices``.
    """

    words: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_csr(cls, X, rows=None):
        """The documents of the CSR matrix ``X``, or of its rows ``rows``
        only (an array of indices or a slice), cut from its arrays."""
        n_rows = X.shape[0]
        if rows is None:
            rows = np.arange(n_rows)
        elif isinstance(rows, slice):
            rows = np.arange(*rows.indices(n_rows))
        words, indptr, indices, counts = _kernel.compact_rows(
            X.indptr, X.indices, X.data, rows.astype(np.intp, copy=False), X.shape[1]
        )
        return cls(words=words, indptr=indptr, indices=indices, counts=counts)

    @property
    def n_documents(self):
        return self.indptr.size - 1


@dataclass(frozen=True)
class _SparseResponsibility:
    """The responsibilities of the documents that the sampled step keeps
    sparsely: n_dw phi_dwk = a_dwk + s_dw alpha_k E[beta_kw], with a_dw
    on the topics the document's tokens held (``sparse_layout`` and
    ``infer_documents`` of the kernel).

    Attributes
    ----------
    slot_offset, value_offset : ndarray of shape (n_documents + 1,) or (0,)
        Where each document's topics and values lie; a document without
        slots is not kept sparsely. Empty for none.
    slot_topics : ndarray of int32
        The topic of each slot, -1 in a document's slots left.
    slot_values : ndarray
        a_dwk, one row of its document's slots per word.
    smoothing_share : ndarray of shape (nnz,)
        s_dw, aligned with the documents' counts.
    doc_topic_prior : ndarray of shape (n_components,)
        alpha.
    """

    slot_offset: np.ndarray
    value_offset: np.ndarray
    slot_topics: np.ndarray
    slot_values: np.ndarray
    smoothing_share: np.ndarray
    doc_topic_prior: np.ndarray

    @classmethod
    def allocate(cls, documents, sample_below, sampled_sweeps, doc_topic_prior):
        """The outputs for the documents below ``sample_below`` tokens,
        sampled with ``sampled_sweeps`` sweeps, that the kernel keeps
        sparsely; empty when ``sample_below`` is 0."""
        dtype = doc_topic_prior.dtype
        if sample_below > 0:
            slot_offset, value_offset = _kernel.sparse_layout(
                documents.indptr,
                documents.counts,
                float(sample_below),
                sampled_sweeps,
                doc_topic_prior.size,
            )
        else:
            slot_offset = value_offset = np.zeros(0, dtype=np.intp)
        has_slots = slot_offset.size > 0
        return cls(
            slot_offset=slot_offset,
            value_offset=value_offset,
            slot_topics=np.empty(slot_offset[-1] if has_slots else 0, dtype=np.intc),
            slot_values=np.empty(value_offset[-1] if has_slots else 0, dtype=dtype),
            smoothing_share=np.empty(
                documents.counts.size if has_slots else 0, dtype=dtype
            ),
            doc_topic_prior=doc_topic_prior,
        )

    @property
    def kernel_arrays(self):
        """The layout and the outputs, in the order in which
        ``infer_documents`` and ``responsibility_statistic`` take them."""
        return (
            self.slot_offset,
            self.value_offset,
            self.slot_topics,
            self.slot_values,
            self.smoothing_share,
        )


@dataclass(frozen=True)
class _LocalFit:
    """Result of the local step for a set of documents.

    Attributes
    ----------
    documents : _CompactDocuments
        The documents.
    doc_topic : ndarray of shape (n_documents, n_components) or None
        gamma, the variational Dirichlet parameters of the proportions; for
        a document kept sparsely, alpha + the topic counts of its last
        sweep. None when the collapsed step was not asked for it.
    word_topic : ndarray of shape (n_words, n_components)
        The topics' weights of the documents' words: exp E[log beta] for
        the mean-field step, E[beta] for the collapsed one.
    exp_doc_topic : ndarray of shape (n_documents, n_components) or None
        exp E[log theta] at gamma (mean-field step).
    count_ratio : ndarray of shape (nnz,) or None
        n_dw / sum_k exp(E[log theta_dk] + E[log beta_kw]) (mean-field
        step).
    responsibility : ndarray of shape (nnz, n_components) or None
        n_dw phi_dwk (collapsed step, when the statistic needs it), on the
        rows of the documents not kept sparsely.
    sparse : _SparseResponsibility or None
        The responsibilities of the documents kept sparsely, with
        ``responsibility``.
    word_index : tuple of ndarray or None
        The documents of each word, from ``words_of_documents``; None unless
        the local step was asked for it.
    sampled_counts : ndarray of shape (n_documents, n_components) or None
        Collapsed step, when asked for: each document's topic counts with
        every token's topic drawn from its responsibilities.
    """

    documents: _CompactDocuments
    doc_topic: np.ndarray | None
    word_topic: np.ndarray
    exp_doc_topic: np.ndarray | None = None
    count_ratio: np.ndarray | None = None
    responsibility: np.ndarray | None = None
    sparse: _SparseResponsibility | None = None
    word_index: tuple | None = None
    sampled_counts: np.ndarray | None = None


@dataclass(frozen=True)
class LocalStep:
    """How documents are fitted at given topics.

    Parameters
    ----------
    doc_topic_prior : ndarray of shape (n_components,)
        alpha, in the floating point type of the topics.
    max_iter : int
        Maximum number of fixed-point iterations (or sweeps) per document.
    tol : float
        A document stops when the mean absolute change of its gamma falls
        below ``tol``.
    collapsed : bool
        The collapsed (CVB0) step instead of the mean-field one.
    doubling_length : float, default=0.0
        Collapsed step only: with a positive value L, a document of n_d
        tokens gets at most 1 + floor(log2(n_d / L)) sweeps, and never more
        than ``max_iter``.
    sample_below : float, default=0.0
        Collapsed step only: documents of fewer tokens than this get
        ``sampled_sweeps`` collapsed Gibbs sweeps instead of the CVB0 fixed
        point, their tokens' conditional distributions averaged over the
        sweeps after the first half; 0 for none, ``np.inf`` for all.
    sampled_sweeps : int, default=1
        The sweeps of a sampled document.
    """

    doc_topic_prior: np.ndarray
    max_iter: int
    tol: float
    collapsed: bool
    doubling_length: float = 0.0
    sample_below: float = 0.0
    sampled_sweeps: int = 1

    def fit(
        self,
        documents,
        store,
        topic_totals,
        start_key=None,
        index_words=False,
        sample_counts=False,
        with_doc_topic=True,
    ):
        """Fit gamma for each of the documents at the topics lambda, read
        from its ``store``.

        Both the topics' weights of the words and the documents' fixed
        points are computed in chunks on the active threads; every value is
        computed the same way whichever thread runs it. Each document starts
        from its own random gamma, drawn by the kernel from a stream numbered
        by ``start_key`` and the document's words and counts, or, with
        ``start_key=None``, from the symmetric gamma_dk = alpha + n_d / K
        (``start_spread``). Either way a document's result depends neither on
        the thread that runs it nor on the other documents.

        Parameters
        ----------
        documents : _CompactDocuments
            The documents.
        store : NaturalStore
            lambda's store (:mod:`sklearn_svi._store`), stored word by word,
            from which the rows of the documents' words are read
            (``rows_block``).
        topic_totals : ndarray of shape (n_components,)
            The sums of lambda over the words, in float64.
        start_key : int or None, default=None
            The key of the documents' random starts.
        index_words : bool, default=False
            Also list the documents of each word, and keep the collapsed
            step's responsibilities: what the statistic needs.
        sample_counts : bool, default=False
            Collapsed steps only: also draw each document's integer topic
            counts from its final responsibilities, with the random numbers
            of its start's stream (the sampled step: the counts of its last
            sweep).
        with_doc_topic : bool, default=True
            Collapsed steps only: False leaves gamma unwritten (the result's
            ``doc_topic`` is None), where only the statistic is needed; the
            mean-field step works on gamma and always returns it.

        Returns
        -------
        local : _LocalFit
        """
        collapsed = self.collapsed
        sample_below = self.sample_below if collapsed else 0.0
        prior = self.doc_topic_prior.astype(store.dtype)
        word_topic, word_index, tables = _word_topic(
            documents,
            store,
            topic_totals,
            collapsed,
            index_words,
            prior if sample_below > 0 else None,
        )
        n_topics, dtype = word_topic.shape[1], word_topic.dtype
        with_doc_topic = with_doc_topic or not collapsed
        doc_topic = np.empty(
            (documents.n_documents if with_doc_topic else 0, n_topics), dtype=dtype
        )
        start = (
            0.0 if start_key is None else start_spread(collapsed),
            0 if start_key is None else start_key,
        )
        # Each step fills its own outputs; the other's have no rows.
        none = np.empty((0, n_topics), dtype=dtype)
        responsibility = np.empty(
            (documents.counts.size if collapsed and index_words else 0, n_topics),
            dtype=dtype,
        )
        sampled_counts = np.empty(
            (documents.n_documents if collapsed and sample_counts else 0, n_topics),
            dtype=dtype,
        )
        exp_doc_topic = none if collapsed else np.empty_like(doc_topic)
        count_ratio = none.ravel() if collapsed else np.empty_like(documents.counts)
        # Only the statistic reads the documents kept sparsely.
        sparse = _SparseResponsibility.allocate(
            documents,
            sample_below if index_words else 0.0,
            self.sampled_sweeps,
            prior,
        )
        _run_documents(
            (collapsed, float(self.sample_below), self.sampled_sweeps),
            word_topic,
            documents,
            doc_topic,
            exp_doc_topic,
            count_ratio,
            responsibility,
            sampled_counts,
            tables,
            *sparse.kernel_arrays,
            prior,
            self.max_iter,
            float(self.tol),
            float(self.doubling_length),
            *start,
        )
        return _LocalFit(
            documents,
            doc_topic if with_doc_topic else None,
            word_topic,
            exp_doc_topic=None if collapsed else exp_doc_topic,
            count_ratio=None if collapsed else count_ratio,
            responsibility=responsibility if collapsed and index_words else None,
            sparse=sparse if collapsed and index_words else None,
            word_index=word_index,
            sampled_counts=sampled_counts if collapsed and sample_counts else None,
        )


def _word_topic(
    documents, store, topic_totals, collapsed, index_words, sampled_prior=None
):
    """The topics' weights of the documents' words, one row per word, from
    lambda's ``store``.

    exp E[log beta] for the mean-field step, E[beta] for the collapsed one.
    Only the documents' words are computed: the digamma over all of K x V
    costs as much as the local step on a small minibatch. E[beta] is
    lambda's rows over the topics' totals, which the store computes as it
    reads the rows. The passes over the words are shared by a team of
    threads (``team_size``); so are the sampled step's draw tables, when its
    ``sampled_prior`` alpha is given. The word index, when asked for, is
    made on the calling thread.

    Returns
    -------
    word_topic : ndarray of shape (n_words, n_components)
    word_index : tuple of ndarray or None
    tables : ndarray of shape (n_words, 2 * n_blocks) or (0, 2)
        The running sums of each word's E[beta_kw] and alpha_k E[beta_kw]
        by blocks of topics (the kernel's ``draw_tables``); no rows without
        ``sampled_prior``.
    """
    words = documents.words
    n_team = team_size(words.size, topic_totals.size)
    tables = np.empty((0, 2))
    if collapsed:
        word_topic, _ = store.rows_block(words, column_factors=1.0 / topic_totals)
        if sampled_prior is not None:
            n_blocks = -(-word_topic.shape[1] // _kernel.TOPICS_PER_DRAW_BLOCK)
            tables = np.empty((words.size, 2 * n_blocks))
            _kernel.draw_tables(word_topic, sampled_prior, tables, n_team)
    else:
        natural, natural_rows = store.rows_block(words)
        rows = words if natural_rows is None else np.searchsorted(natural_rows, words)
        word_topic = np.empty((words.size, natural.shape[1]), dtype=natural.dtype)
        _kernel.exp_dirichlet_expectation_rows(
            natural, topic_totals, rows, word_topic, n_team
        )
    word_index = (
        _kernel.words_of_documents(documents.indptr, documents.indices, words.size)
        if index_words
        else None
    )
    return word_topic, word_index, tables


def _run_documents(step, word_topic, documents, *arguments):
    """Run the kernel's local step (``infer_documents``) on every document,
    on a team of as many threads as the active pool has.

    ``step`` is the kernel's first arguments, which choose the step
    (collapsed, sample_below, sampled_sweeps); ``arguments`` are its
    arguments after the documents: its outputs and settings. The kernel
    shares the documents between the team's threads in runs of a few
    (``infer_documents``), so even a minibatch of short texts is shared.
    """
    _kernel.infer_documents(
        *step,
        word_topic,
        documents.words,
        documents.indptr,
        documents.indices,
        documents.counts,
        *arguments,
        team_threads(),
    )


@functools.lru_cache(maxsize=8)
def _unit_weights(n_documents, dtype):
    """Weights of 1 for ``n_documents`` documents (read-only), asked for by
    every update without annealing and so kept."""
    weights = np.ones(n_documents, dtype=dtype)
    weights.flags.writeable = False
    return weights


def minibatch_statistic(local, sample_weight=None, n_batch=None):
    """Minibatch mean of w_d n_dw phi_dwk on the minibatch's words (eq. 28).

    The weights w_d multiply each document's statistic (Paisley et al.,
    Alg. 1); the local step itself does not depend on them.

    Parameters
    ----------
    local : _LocalFit
        A local step run with ``index_words=True``.
    sample_weight : ndarray of shape (n_documents,) or None, default=None
        w_d; None for ones.
    n_batch : int or None, default=None
        The size of the minibatch whose mean is taken; None for the number
        of documents. A part of a minibatch divides by the whole size.

    Returns
    -------
    statistic : SparseStatistic
    """
    documents = local.documents
    statistic = np.empty_like(local.word_topic)
    dtype = statistic.dtype
    if local.responsibility is not None:
        weight = (
            _unit_weights(documents.n_documents, dtype)
            if sample_weight is None
            else sample_weight.astype(dtype)
        )
        kernel = _kernel.responsibility_statistic
        sparse = local.sparse
        terms = (
            local.responsibility,
            weight,
            documents.indptr,
            *sparse.kernel_arrays,
            local.word_topic,
            sparse.doc_topic_prior,
        )
    else:
        exp_doc_topic = local.exp_doc_topic
        if sample_weight is not None:
            exp_doc_topic = exp_doc_topic * sample_weight[:, np.newaxis].astype(dtype)
        kernel = _kernel.word_topic_statistic
        terms = (local.count_ratio, exp_doc_topic, local.word_topic)
    n_batch = documents.n_documents if n_batch is None else n_batch
    kernel(
        *local.word_index,
        *terms,
        statistic,
        1.0 / n_batch,
        team_size(*statistic.shape),
    )
    return SparseStatistic(documents.words, statistic)
