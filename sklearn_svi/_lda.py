"""Latent Dirichlet allocation fitted by stochastic variational inference.

The model (Blei, Ng & Jordan 2003) with the variational family and updates of
Hoffman, Blei, Wang & Paisley (2013, Sec. 3.1 and Fig. 6): topics
beta_k ~ Dirichlet(eta), proportions theta_d ~ Dirichlet(alpha), and
q(beta_k) = Dirichlet(lambda_k), q(theta_d) = Dirichlet(gamma_d),
q(z_dn) = Categorical(phi_dn). The global parameter lambda is the
``components_`` attribute, as in scikit-learn's LatentDirichletAllocation.
"""

import importlib
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, polygamma, psi
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from . import _lda_fast
from ._mechanisms import SparseStatistic
from ._online import OnlineUpdateMixin
from ._threads import call, thread_workers


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
    def from_csr(cls, X):
        words, indices = _kernel.renumber_words(
            X.indices.astype(np.intp, copy=False), X.shape[1]
        )
        return cls(
            words=words,
            indptr=X.indptr.astype(np.intp, copy=False),
            indices=indices,
            counts=X.data,
        )

    @property
    def n_documents(self):
        return self.indptr.size - 1


@dataclass(frozen=True)
class _LocalFit:
    """Result of the local step for a set of documents.

    Attributes
    ----------
    documents : _CompactDocuments
        The documents.
    doc_topic : ndarray of shape (n_documents, n_components)
        gamma, the variational Dirichlet parameters of the proportions.
    word_topic : ndarray of shape (n_words, n_components)
        The topics' weights of the documents' words: exp E[log beta] for
        the mean-field step, E[beta] for the collapsed one.
    exp_doc_topic : ndarray of shape (n_documents, n_components) or None
        exp E[log theta] at gamma (mean-field step).
    count_ratio : ndarray of shape (nnz,) or None
        n_dw / sum_k exp(E[log theta_dk] + E[log beta_kw]) (mean-field
        step).
    responsibility : ndarray of shape (nnz, n_components) or None
        n_dw phi_dwk (collapsed step, when the statistic needs it).
    word_index : tuple of ndarray or None
        The documents of each word, from ``words_of_documents``; None unless
        the local step was asked for it.
    """

    documents: _CompactDocuments
    doc_topic: np.ndarray
    word_topic: np.ndarray
    exp_doc_topic: np.ndarray | None = None
    count_ratio: np.ndarray | None = None
    responsibility: np.ndarray | None = None
    word_index: tuple | None = None


def _dirichlet_expectation(parameters):
    """E[log x] for rows x ~ Dirichlet(parameters) (Blei et al. 2003, eq. 8)."""
    return psi(parameters) - psi(parameters.sum(axis=1))[:, np.newaxis]


def _dirichlet_term(prior, parameters):
    """The Dirichlet part of the ELBO, E[log p(x | prior)] - E[log q(x)].

    Summed over the rows of ``parameters``; ``prior`` is a scalar or a row
    (Hoffman et al. 2013, eq. 30-31).
    """
    prior = np.broadcast_to(prior, parameters.shape[1:])
    expectation = _dirichlet_expectation(parameters)
    return (
        np.sum((prior - parameters) * expectation)
        + np.sum(gammaln(parameters) - gammaln(prior))
        + np.sum(gammaln(prior.sum()) - gammaln(parameters.sum(axis=1)))
    )


def _dirichlet_newton_direction(prior, mean_log):
    """The Newton direction of a Dirichlet prior's log-likelihood.

    For rows x_d ~ Dirichlet(prior) with mean E[log x_dk] = ``mean_log``,
    the per-row log-likelihood has the gradient g_k = psi(sum_j a_j) -
    psi(a_k) + mean_log_k and the Hessian diag(q) + z 1 1^T, q_k =
    -psi'(a_k), z = psi'(sum_j a_j), whose inverse applied to g is
    (g_k - b) / q_k with b = sum_j (g_j / q_j) / (1 / z + sum_j 1 / q_j)
    (Minka 2000, "Estimating a Dirichlet distribution", eq. 18).
    """
    gradient = psi(prior.sum()) - psi(prior) + mean_log
    curvature = -polygamma(1, prior)
    shared = np.sum(gradient / curvature) / (
        1.0 / polygamma(1, prior.sum()) + np.sum(1.0 / curvature)
    )
    return (gradient - shared) / curvature


def _positive_step(value, direction, rho):
    """value - rho direction, with rho halved until every entry is positive."""
    for _ in range(60):
        updated = value - rho * direction
        if np.all(updated > 0):
            return updated
        rho /= 2.0
    return value


def _symmetric_dirichlet_maximum(eta, n_rows, n_categories, log_sum):
    """The symmetric prior eta that maximises the topics' Dirichlet term.

    f(eta) = n_rows (log Gamma(V eta) - V log Gamma(eta)) + (eta - 1)
    ``log_sum``, with V = ``n_categories`` and ``log_sum`` the sum of
    E[log beta_kw] over the topics and words, is concave; Newton's method
    from ``eta`` (Hoffman, Blei & Bach 2010).
    """
    for _ in range(100):
        gradient = n_rows * n_categories * (psi(n_categories * eta) - psi(eta))
        gradient += log_sum
        curvature = (
            n_rows
            * n_categories
            * (n_categories * polygamma(1, n_categories * eta) - polygamma(1, eta))
        )
        updated = float(_positive_step(np.array(eta), gradient / curvature, 1.0))
        if abs(updated - eta) <= 1e-12 * eta:
            return updated
        eta = updated
    return eta


def _select_kernel():
    """The compiled local step for this processor: the widest vectors it runs."""
    builds = []
    if _lda_fast.cpu_has_avx512():
        builds.append("_lda_fast_avx512")
    if _lda_fast.cpu_has_avx2_fma():
        builds.append("_lda_fast_avx2")
    for name in builds:
        try:
            return importlib.import_module(f".{name}", __package__)
        except ImportError:  # not built on this platform
            continue
    return _lda_fast


_kernel = _select_kernel()

# In the updates, the local step starts document d from
# gamma_dk = (alpha + n_d / K) exp(START_SPREAD z_dk), z_dk ~ N(0, 1): the
# total mass of the fixed point, in a random direction. From the symmetric
# start gamma_dk = alpha + n_d / K (or scikit-learn's nearly symmetric
# Gamma(100, 1/100) draw) every short document of the first minibatches
# spreads evenly over topics that are still alike, and the topics stay
# alike; random directions break the tie, as the random first assignments
# of a Gibbs sampler do. Inference outside the updates (transform, score,
# evaluation) starts from the symmetric point: it is deterministic, and on
# short documents its spread-out proportions predict held-out words better.
# See the user guide's section on the local step for the measurements.
START_SPREAD = 1.0


def _raise_to_floor(values, floor, span):
    """Set ``values[span]`` below ``floor`` to ``floor``; return how many."""
    block = values[span]
    below = block < floor
    block[below] = floor
    return int(np.count_nonzero(below))


class _OnlineLDA(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, OnlineUpdateMixin, BaseEstimator
):
    """Latent Dirichlet allocation fitted by the shared online update.

    Subclasses set the mechanisms; this class is the model: its local step,
    prior, bound and transform.
    """

    _parameter_constraints: dict = {
        **OnlineUpdateMixin._online_parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "doc_topic_prior": [
            None,
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "topic_word_prior": [
            None,
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "local_step": [StrOptions({"vb", "cvb0"})],
        "max_doc_update_iter": [Interval(Integral, 1, None, closed="left")],
        "mean_change_tol": [Interval(Real, 0, None, closed="left")],
        "perp_tol": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [None, Integral],
    }

    # -- the priors --------------------------------------------------------------

    def _initial_prior(self, prior):
        """The starting value of a prior parameter: 1 / K for None or "auto"."""
        return 1.0 / self.n_components if prior in (None, "auto") else float(prior)

    def _learn_doc_topic_prior(self, rho):
        """Move alpha by a step ``rho`` of Newton's direction for the
        minibatch's E[log theta] (Hoffman, Blei & Bach 2010)."""
        direction = _dirichlet_newton_direction(
            self.doc_topic_prior_, self._minibatch_log_theta
        )
        self.doc_topic_prior_ = _positive_step(self.doc_topic_prior_, direction, rho)

    def _learn_topic_word_prior(self):
        """Set eta to the symmetric prior that maximises the topics' term of
        the ELBO at the current lambda."""
        # sum_kw E[log beta_kw] = sum_kw psi(lambda_kw) - V sum_k psi(sum_w lambda_kw)
        log_sum = float(np.sum(psi(self._natural), dtype=np.float64))
        log_sum -= len(self._natural) * float(np.sum(psi(self._natural_totals)))
        self.topic_word_prior_ = _symmetric_dirichlet_maximum(
            self.topic_word_prior_, self.n_components, len(self._natural), log_sum
        )

    def _after_update(self, rho):
        if self.doc_topic_prior == "auto":
            self._learn_doc_topic_prior(rho)

    def _after_pass(self):
        if self.topic_word_prior == "auto":
            self._learn_topic_word_prior()

    # -- input validation --------------------------------------------------------

    def _check_documents(self, X, reset):
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
        )
        check_non_negative(X, f"{type(self).__name__} (input X)")
        if not sp.issparse(X):
            X = sp.csr_matrix(X)
        return X

    def _check_training_data(self, X, reset):
        return self._check_documents(X, reset)

    def _check_fitted_documents(self, X):
        """Validate documents for a fitted model, in the dtype of lambda."""
        check_is_fitted(self)
        return self._check_documents(X, reset=False).astype(
            self._natural.dtype, copy=False
        )

    # -- the model's part of the online update ------------------------------------

    def _initial_natural(self, X, n_total, random_state):
        # Hoffman et al. (2013) and scikit-learn: lambda ~ Gamma(100, 1/100),
        # drawn topic by topic as scikit-learn does and stored word by word.
        topic_word = random_state.gamma(100.0, 0.01, (self.n_components, X.shape[1]))
        # The seed of the documents' random starts in the updates (``_start_key``).
        self._start_seed = int(random_state.randint(2**63, dtype=np.int64))
        return np.ascontiguousarray(topic_word.T, dtype=X.dtype)

    def _initialize_online(self, X, n_total, workers):
        self.doc_topic_prior_ = np.full(
            self.n_components, self._initial_prior(self.doc_topic_prior)
        )
        self.topic_word_prior_ = self._initial_prior(self.topic_word_prior)
        super()._initialize_online(X, n_total, workers)

    def _start_key(self, draw):
        """The key of the documents' starts in minibatch number ``draw``.

        A function of the fit's seed and of ``draw`` alone, so that a
        minibatch's local step does not depend on what was drawn before it.
        """
        entropy = [self._start_seed, abs(draw), int(draw < 0)]
        return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0])

    def _prior_natural(self):
        return self.topic_word_prior_

    def _prepare_minibatch(self, X_batch):
        """The minibatch's documents with their words renumbered."""
        return _CompactDocuments.from_csr(X_batch)

    def _local_statistic(self, documents, workers, sample_weight=None, draw=0):
        """Minibatch mean of w_d n_dw phi_dwk on the minibatch's words (eq. 28).

        The weights w_d multiply each document's statistic (Paisley et al.,
        Alg. 1); the local step itself does not depend on them. The
        documents' starts are those of minibatch number ``draw``.
        """
        local = self._local_step(
            documents, workers, self._start_key(draw), index_words=True
        )
        if self.doc_topic_prior == "auto":
            # E[log theta_d], averaged with the documents' weights.
            self._minibatch_log_theta = np.average(
                _dirichlet_expectation(local.doc_topic.astype(np.float64)),
                axis=0,
                weights=sample_weight,
            )
        documents = local.documents
        statistic = np.empty_like(local.word_topic)
        dtype = statistic.dtype
        if local.responsibility is not None:
            weight = (
                np.ones(documents.n_documents, dtype=dtype)
                if sample_weight is None
                else sample_weight.astype(dtype)
            )
            kernel = _kernel.responsibility_statistic
            terms = (local.responsibility, weight)
        else:
            exp_doc_topic = local.exp_doc_topic
            if sample_weight is not None:
                exp_doc_topic = exp_doc_topic * sample_weight[:, np.newaxis].astype(
                    dtype
                )
            kernel = _kernel.word_topic_statistic
            terms = (local.count_ratio, exp_doc_topic, local.word_topic)
        shared = (*local.word_index, *terms, statistic, 1.0 / documents.n_documents)
        workers.run(
            kernel,
            [
                (*shared, span.start, span.stop)
                for span in workers.row_blocks(documents.words.size)
            ],
        )
        return SparseStatistic(documents.words, statistic)

    def _project_natural(self, workers):
        """Raise every lambda_kw below the prior eta to eta.

        Without annealing lambda = eta + a non-negative statistic, so
        {lambda >= eta} holds every iterate of plain SVI; this is the nearest
        point of that set. Returns the number of coordinates raised.
        """
        return sum(
            workers.run(
                _raise_to_floor,
                [
                    (self._natural, self.topic_word_prior_, span)
                    for span in workers.row_blocks(len(self._natural))
                ],
            )
        )

    def _local_step(
        self, documents, workers, start_key=None, index_words=False, collapsed=None
    ):
        """Fit gamma for each of the documents at the current lambda.

        On ``workers``, both the topics' weights of the words and the
        documents' fixed points are computed in chunks; every value is
        computed the same way whichever thread runs it. The documents'
        starts are random under ``start_key``, or symmetric when it is None
        (``START_SPREAD``). With ``index_words``, the documents of each
        word, which the statistic needs, are listed too, and the collapsed
        step keeps its responsibilities. The step is the collapsed one if
        ``collapsed`` says so, or by default if ``local_step`` does.
        """
        if collapsed is None:
            collapsed = self.local_step == "cvb0"
        word_topic, word_index = self._word_topic(
            documents, workers, index_words, collapsed
        )
        if collapsed:
            doc_topic, responsibility = self._infer_documents_collapsed(
                documents, word_topic, workers, start_key, index_words
            )
            return _LocalFit(
                documents,
                doc_topic,
                word_topic,
                responsibility=responsibility,
                word_index=word_index,
            )
        doc_topic, exp_doc_topic, count_ratio = self._infer_documents(
            documents, word_topic, workers, start_key
        )
        return _LocalFit(
            documents,
            doc_topic,
            word_topic,
            exp_doc_topic=exp_doc_topic,
            count_ratio=count_ratio,
            word_index=word_index,
        )

    def _word_topic(self, documents, workers, index_words, collapsed):
        """The topics' weights of the documents' words, one row per word.

        exp E[log beta] for the mean-field step, E[beta] for the collapsed
        one. Only the minibatch's words are computed: the digamma over all
        of K x V costs as much as the local step on a small minibatch. The
        word index, when asked for, is one more chunk of the same work: it
        needs only the documents.

        Returns
        -------
        word_topic : ndarray of shape (n_words, n_components)
        word_index : tuple of ndarray or None
        """
        words = documents.words
        word_topic = np.empty(
            (words.size, self.n_components), dtype=self._natural.dtype
        )
        kernel = (
            _kernel.mean_rows if collapsed else _kernel.exp_dirichlet_expectation_rows
        )
        chunks = [
            (kernel, self._natural, self._natural_totals, words[span], word_topic[span])
            for span in workers.row_blocks(words.size)
        ]
        if index_words:
            chunks.insert(
                0,
                (
                    _kernel.words_of_documents,
                    documents.indptr,
                    documents.indices,
                    words.size,
                ),
            )
        results = workers.run(call, chunks)
        return word_topic, results[0] if index_words else None

    def _local_arguments(self, start_key):
        """The local step's arguments after the documents and their outputs."""
        return (
            self.doc_topic_prior_.astype(self._natural.dtype),
            self.max_doc_update_iter,
            float(self.mean_change_tol),
            0.0 if start_key is None else START_SPREAD,
            0 if start_key is None else start_key,
        )

    def _run_documents(self, kernel, documents, arguments, workers):
        """Run ``kernel`` on every document, on every thread.

        Each thread takes documents one at a time from a shared counter, the
        longest first, so that no thread is left alone with a long one at
        the end of the minibatch. This is the longest run of the update: the
        work deferred meanwhile (the next minibatch) starts alongside it.
        """
        longest_first = np.argsort(-np.diff(documents.indptr), kind="stable")
        next_document = np.zeros(1, dtype=np.intp)
        workers.run(
            kernel,
            [(*arguments, longest_first, next_document)] * workers.n_threads,
            start_deferred=True,
        )

    def _infer_documents(self, documents, exp_word_topic, workers, start_key):
        """gamma, exp E[log theta] and count ratios at the documents' fixed points.

        With a ``start_key``, each document starts from its own random gamma,
        drawn by the kernel from a stream numbered by the key and the
        document's words and counts (see ``START_SPREAD``); with None, from
        the symmetric gamma_dk = alpha + n_d / K. Either way a document's
        result depends neither on the thread that runs it nor on the other
        documents of the call.
        """
        doc_topic = np.empty(
            (documents.n_documents, self.n_components), dtype=exp_word_topic.dtype
        )
        exp_doc_topic = np.empty_like(doc_topic)
        count_ratio = np.empty_like(documents.counts)
        arguments = (
            exp_word_topic,
            documents.words,
            documents.indptr,
            documents.indices,
            documents.counts,
            doc_topic,
            exp_doc_topic,
            count_ratio,
            *self._local_arguments(start_key),
        )
        self._run_documents(_kernel.infer_documents, documents, arguments, workers)
        return doc_topic, exp_doc_topic, count_ratio

    def _infer_documents_collapsed(
        self, documents, mean_word_topic, workers, start_key, keep_responsibility
    ):
        """gamma = alpha + N_d, and n_dw phi_dwk if asked, by the collapsed step.

        Started as ``_infer_documents`` starts, with the same guarantees.
        """
        doc_topic = np.empty(
            (documents.n_documents, self.n_components), dtype=mean_word_topic.dtype
        )
        responsibility = np.empty(
            (documents.counts.size if keep_responsibility else 0, self.n_components),
            dtype=mean_word_topic.dtype,
        )
        arguments = (
            mean_word_topic,
            documents.words,
            documents.indptr,
            documents.indices,
            documents.counts,
            doc_topic,
            responsibility,
            *self._local_arguments(start_key),
        )
        self._run_documents(
            _kernel.infer_documents_collapsed, documents, arguments, workers
        )
        return doc_topic, responsibility if keep_responsibility else None

    # -- scores ----------------------------------------------------------------------

    def _document_bound(self, local):
        """The documents' terms of the ELBO (Hoffman et al. 2013, eq. 29-30)."""
        counts = local.documents.counts
        nonzero = counts > 0
        # sum_w n_dw log sum_k exp(E[log theta_dk] + E[log beta_kw])
        word_term = np.sum(
            counts[nonzero] * np.log(counts[nonzero] / local.count_ratio[nonzero])
        )
        return word_term + _dirichlet_term(self.doc_topic_prior_, local.doc_topic)

    def _topic_bound(self):
        """The topics' terms of the ELBO (Hoffman et al. 2013, eq. 31)."""
        return _dirichlet_term(self.topic_word_prior_, self.components_)

    def _infer(self, X, collapsed=None):
        """The local step on X with the estimator's own threads."""
        with thread_workers(self.n_jobs) as workers:
            return self._local_step(
                _CompactDocuments.from_csr(X), workers, collapsed=collapsed
            )

    def _bound(self, X):
        """The ELBO of the documents X and the topics, by the mean-field step."""
        local = self._infer(X, collapsed=False)
        return self._document_bound(local) + self._topic_bound()

    def _evaluation_score(self, X, workers):
        """Per-word bound of the documents' terms of the ELBO on ``X``."""
        local = self._local_step(
            _CompactDocuments.from_csr(X), workers, collapsed=False
        )
        return self._document_bound(local) / max(local.documents.counts.sum(), 1.0)

    def _fit_converged(self):
        """Whether the perplexities, exp(-per-word bound), of the last two
        evaluations differ by less than ``perp_tol``."""
        scores = self.evaluation_history_["score"]
        if len(scores) < 2:
            return False
        previous, current = scores[-2:]
        return abs(np.exp(-previous) - np.exp(-current)) < self.perp_tol

    # -- public API ------------------------------------------------------------------

    @property
    def components_(self):
        """The variational Dirichlet parameters lambda of the topics.

        An ndarray of shape (n_components, n_features): a view of lambda,
        which the model stores word by word.
        """
        return self._natural.T

    @property
    def exp_dirichlet_component_(self):
        """The exponential of E[log beta] under the fitted topics.

        An ndarray of shape (n_components, n_features).
        """
        return np.exp(_dirichlet_expectation(self.components_))

    @property
    def _n_features_out(self):
        return self.n_components

    def transform(self, X):
        """Infer the topic proportions of documents.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Document-word counts.

        Returns
        -------
        doc_topic_distr : ndarray of shape (n_samples, n_components)
            The mean of q(theta_d), gamma_d / sum_k gamma_dk. A document with
            no words gets the prior's mean, 1 / n_components.
        """
        X = self._check_fitted_documents(X)
        doc_topic = self._infer(X).doc_topic
        return doc_topic / doc_topic.sum(axis=1, keepdims=True)

    def score(self, X, y=None):
        """Approximate log-likelihood: the variational bound (ELBO) of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Document-word counts.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
            The ELBO of the documents and the topics; higher is better.
        """
        return float(self._bound(self._check_fitted_documents(X)))

    def perplexity(self, X):
        """Perplexity, exp(-ELBO / number of words), as in scikit-learn.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Document-word counts.

        Returns
        -------
        perplexity : float
            Lower is better.
        """
        X = self._check_fitted_documents(X)
        return float(np.exp(-self._bound(X) / X.sum()))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


_SHARED_PARAMETERS = """\
    doc_topic_prior : float or "auto", default=None
        alpha, the Dirichlet prior of the topic proportions. None means
        ``1 / n_components``. ``"auto"`` starts there and learns an
        asymmetric prior, one value per topic: after every update, a step of
        Newton's method on the minibatch's proportions, as long as the
        update's own step (empirical Bayes, Hoffman, Blei & Bach 2010).
    topic_word_prior : float or "auto", default=None
        eta, the Dirichlet prior of the topics. None means
        ``1 / n_components``. ``"auto"`` starts there and learns a symmetric
        prior: after every pass of ``fit`` and every ``partial_fit``, the
        value that maximises the topics' term of the ELBO at the current
        topics (once per pass because it needs the digamma of all of
        lambda).
    local_step : {"vb", "cvb0"}, default="cvb0"
        How each document's topic proportions are fitted, in the updates and
        in ``transform``. ``"vb"`` is the mean-field fixed point of SVI
        (Hoffman et al. 2013), which weighs topic k of word w by
        exp E[log theta_dk] exp E[log beta_kw]. ``"cvb0"`` is the collapsed
        step of stochastic CVB0 (Foulds et al. 2013): each word's topic
        responsibilities are proportional to E[beta_kw] times the
        document's expected topic counts without that word's token, plus
        alpha. It predicts held-out words far better on short texts. The
        statistic and the update of lambda are the same for both;
        ``score`` and ``perplexity`` evaluate the ELBO with the ``"vb"``
        step for either.
    batch_size : int, default=128
        Number of documents per minibatch.
    max_iter : int, default=10
        Number of passes over the data in ``fit``.
    total_samples : float, default=1e6
        Number of documents N of the corpus, used by ``partial_fit``.
    max_doc_update_iter : int, default=100
        Maximum number of fixed-point iterations of each document's local
        step.
    mean_change_tol : float, default=1e-3
        The local step stops when the mean absolute change of a document's
        gamma is below this value.
    evaluate_every : int, default=-1
        Record a score in ``evaluation_history_`` every ``evaluate_every``
        updates; 0 or less records nothing.
    perp_tol : float, default=0.1
        ``fit`` stops after a pass when the perplexities of the last two
        evaluations differ by less than ``perp_tol``.
    n_jobs : int, default=None
        Number of threads of the local step and of the update; None means 1,
        -1 all cores. The result does not depend on it.
    verbose : int, default=0
        Print progress when positive.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial topics and of the order of the documents in
        ``fit``.
"""

_SCHEDULE_PARAMETERS = """\
    step_size : "robbins-monro" or float, default="robbins-monro"
        The step size schedule: ``"robbins-monro"`` is
        ``(learning_offset + t) ** -learning_decay`` for the t-th update; a
        float in (0, 1] is a constant step size (1 with a minibatch of the
        whole corpus is batch variational Bayes).
    learning_offset : float, default=10.0
        tau_0 of the Robbins-Monro schedule.
    learning_decay : float, default=0.7
        kappa of the Robbins-Monro schedule."""

_SHARED_ATTRIBUTES = """\
    components_ : ndarray of shape (n_components, n_features)
        lambda, the variational Dirichlet parameters of the topics;
        normalised rows are the topic-word distributions.
    exp_dirichlet_component_ : ndarray of shape (n_components, n_features)
        exp E[log beta].
    doc_topic_prior_ : ndarray of shape (n_components,)
        alpha, learned if ``doc_topic_prior="auto"``.
    topic_word_prior_ : float
        eta, learned if ``topic_word_prior="auto"``.
    n_batch_iter_ : int
        Number of minibatch updates made.
    n_iter_ : int
        Number of passes made: passes of ``fit``, plus one per call of
        ``partial_fit``.
    n_samples_seen_ : int
        Number of documents used by the updates.
    evaluation_history_ : dict of lists
        ``"n_batch_iter"``, ``"n_samples_seen"`` and ``"score"`` of each
        evaluation: the per-word bound of the documents' terms of the ELBO
        on ``X_val``, or on the minibatch just used when ``X_val`` is None.
    step_size_history_ : dict of lists
        ``"n_batch_iter"`` and ``"step_size"`` of the updates. Every update
        is recorded until there are 10,000; then every second record is
        dropped and only every second update is recorded, and so on, so the
        record spans the whole run in at most 10,000 values.
    random_state_ : RandomState instance
        The random state of the fit.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``, when they are all strings.
"""


def _estimator_docstring(
    summary, specific_parameters, specific_attributes, see_also, references, example
):
    """Assemble an LDA estimator's docstring from its own parts and the shared ones."""
    return f"""{summary}

    Parameters
    ----------
    n_components : int, default=10
        Number of topics K.
{specific_parameters}
{_SHARED_PARAMETERS}
    Attributes
    ----------
{_SHARED_ATTRIBUTES}{specific_attributes}
    See Also
    --------
    sklearn.decomposition.LatentDirichletAllocation : Online and batch LDA.
{see_also}

    References
    ----------
{references}

    Examples
    --------
{example}
    """


class SmoothedLDA(_OnlineLDA):
    __doc__ = _estimator_docstring(
        summary="""Latent Dirichlet allocation by SVI with smoothed gradients.

    Mandt & Blei (2014): the noisy coordinate optimum of each update uses the
    mean of the last ``L`` minibatch sufficient statistics instead of the
    latest one alone, which lowers the variance of the update for a small
    bias. ``L=1`` is plain stochastic variational inference (Hoffman et al.
    2013) and reproduces it exactly.

    Read more in the :ref:`User Guide <smoothed_lda>`.""",
        specific_parameters=f"""\
    L : int, default=10
        Length of the smoothing window: the number of minibatch statistics
        averaged. ``L=1`` is plain SVI.
{_SCHEDULE_PARAMETERS}""",
        specific_attributes="",
        see_also="""\
    AnnealedLDA : LDA by SVI with tuneable stochastic annealing.
    FilteredLDA : LDA by SVI with step sizes from a variational filter.""",
        references="""\
    .. [1] S. Mandt and D. Blei. "Smoothed Gradients for Stochastic
       Variational Inference". NIPS 2014.
    .. [2] M. Hoffman, D. Blei, C. Wang and J. Paisley. "Stochastic
       Variational Inference". JMLR 14, 2013.""",
        example="""\
    >>> from sklearn_svi import SmoothedLDA, make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_documents=200, random_state=0)
    >>> lda = SmoothedLDA(n_components=5, L=10, random_state=0).fit(X)
    >>> lda.transform(X[:2]).shape
    (2, 5)""",
    )

    _parameter_constraints: dict = {
        **_OnlineLDA._parameter_constraints,
        **OnlineUpdateMixin._schedule_parameter_constraints,
        "L": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        n_components=10,
        *,
        L=10,
        step_size="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.7,
        doc_topic_prior=None,
        topic_word_prior=None,
        local_step="cvb0",
        batch_size=128,
        max_iter=10,
        total_samples=1e6,
        max_doc_update_iter=100,
        mean_change_tol=1e-3,
        evaluate_every=-1,
        perp_tol=1e-1,
        n_jobs=None,
        verbose=0,
        random_state=None,
    ):
        self.n_components = n_components
        self.L = L
        self.step_size = step_size
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.local_step = local_step
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.evaluate_every = evaluate_every
        self.perp_tol = perp_tol
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state


class AnnealedLDA(_OnlineLDA):
    __doc__ = _estimator_docstring(
        summary="""Latent Dirichlet allocation by SVI with stochastic annealing (SVI+).

    SVI+ (Paisley, Fazelnia & Barr): each update uses a minibatch of
    ``batch_size`` documents but the noise of a minibatch of ``M``: document
    d's statistic is multiplied by w_d = 1 + eps_d - mean(eps) with
    eps_d ~ N(0, batch_size / M - 1), which keeps the minibatch statistic
    unbiased and gives it about the variance of M documents. The larger noise
    early in the run anneals the fit out of poor local optima. ``M`` grows by
    ``M_growth`` per update, so the run can end as plain SVI; a minibatch of
    at most M documents (a final short one, for instance) gets no noise.
    ``M=batch_size`` is plain SVI and reproduces it exactly. With
    ``batch_size`` at least the number of documents and ``step_size=1.0``,
    each update is a batch variational Bayes step with annealing noise.

    Negative weights can give a target lambda below the prior eta. After
    each update every lambda_kw below eta is raised to eta, the nearest point
    of the set {lambda >= eta} that holds every iterate of plain SVI;
    ``n_projected_`` counts the coordinates raised.

    Read more in the :ref:`User Guide <annealed_lda>`.""",
        specific_parameters=f"""\
    M : int, default=64
        The effective minibatch size of the first update, at most
        ``batch_size``.
    M_growth : float, default=64.0
        Increase of the effective minibatch size per update: update t uses
        ``M + M_growth * (t - 1)``, and plain SVI once that reaches
        ``batch_size``. The defaults, M_t = 64 t, anneal the first update
        of minibatches of 128 and the first three of minibatches of 256: on
        three real corpora no annealing beat plain SVI by more than the
        spread over seeds, and the paper's schedule, M_t = 50 t (``M=50,
        M_growth=50``), cost up to 0.013 nats per held-out word. A fixed
        ``M`` below ``batch_size`` (``M_growth=0``) keeps the noise of M
        documents to the end, which costs held-out fit on large corpora (see
        the user guide).
{_SCHEDULE_PARAMETERS}""",
        specific_attributes="""\
    n_projected_ : int
        Number of coordinates of lambda raised to eta by the projection,
        summed over the updates.
""",
        see_also="""\
    SmoothedLDA : LDA by SVI with smoothed gradients.
    FilteredLDA : LDA by SVI with step sizes from a variational filter.""",
        references="""\
    .. [1] J. Paisley, G. Fazelnia and B. Barr. "Stochastic Variational
       Inference with Tuneable Stochastic Annealing".
    .. [2] M. Hoffman, D. Blei, C. Wang and J. Paisley. "Stochastic
       Variational Inference". JMLR 14, 2013.""",
        example="""\
    >>> from sklearn_svi import AnnealedLDA, make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_documents=200, random_state=0)
    >>> lda = AnnealedLDA(n_components=5, batch_size=100, M=20,
    ...                   random_state=0).fit(X)
    >>> lda.transform(X[:2]).shape
    (2, 5)""",
    )

    _parameter_constraints: dict = {
        **_OnlineLDA._parameter_constraints,
        **OnlineUpdateMixin._schedule_parameter_constraints,
        "M": [Interval(Integral, 1, None, closed="left")],
        "M_growth": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        n_components=10,
        *,
        M=64,
        M_growth=64.0,
        step_size="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.7,
        doc_topic_prior=None,
        topic_word_prior=None,
        local_step="cvb0",
        batch_size=128,
        max_iter=10,
        total_samples=1e6,
        max_doc_update_iter=100,
        mean_change_tol=1e-3,
        evaluate_every=-1,
        perp_tol=1e-1,
        n_jobs=None,
        verbose=0,
        random_state=None,
    ):
        self.n_components = n_components
        self.M = M
        self.M_growth = M_growth
        self.step_size = step_size
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.local_step = local_step
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.evaluate_every = evaluate_every
        self.perp_tol = perp_tol
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state


class FilteredLDA(_OnlineLDA):
    __doc__ = _estimator_docstring(
        summary="""Latent Dirichlet allocation by SVI with variational filtering.

    Houlsby & Blei (2014) view each SVI update as a noisy observation
    lambda^_t of the batch variational Bayes optimum and track that optimum
    with a Kalman filter: the step size is the filter's gain, set by Bayes'
    rule instead of a hand-tuned schedule. The drift Q and the noise R of
    the observations are estimated online with exponentially weighted
    averages (Ranganath et al. 2013), started from a few minibatches drawn
    at the initial topics. One gain serves all of lambda (the isotropic
    filter of the paper's experiments).

    ``filter="student-t"`` is the paper's Algorithm 1: heavy-tailed noise,
    so that a minibatch far from where the filter expects it raises the next
    step instead of being averaged in as if it were typical.
    ``filter="gaussian"`` is the Kalman filter, and ``filter="adaptive"``,
    the default, is Ranganath et al.'s adaptive learning rate, Q / (Q + R),
    the filter with no uncertainty about the optimum. The default departs
    from the paper, whose best method is the Student's t filter, and by
    default the step is never below the Robbins-Monro step of plain SVI
    (``min_step_size``): the filter may raise the step, far from the optimum
    or when the stream changes, but not lower it. So bounded, all three
    filters ended level with or above plain SVI on three real corpora (see
    the user guide).

    Read more in the :ref:`User Guide <filtered_lda>`.""",
        specific_parameters="""\
    filter : {"student-t", "gaussian", "adaptive"}, default="adaptive"
        The filter that sets the step size.
    prior_variance : float, default=0.0
        Sigma_0, the prior variance (the scale for the Student's t filter)
        of each coordinate of the optimum, beyond the drift Q that the
        minibatches of the start measure. Unused by ``"adaptive"``. The
        paper's value is ``1e3``; at the scale of lambda on large corpora it
        makes the first step nearly one (see the user guide).
    prior_dof : float, default=3
        Degrees of freedom, above 2, of the Student's t prior of the optimum
        and of its drift and noise; the filter tends to the Gaussian one as
        they grow. Used by ``"student-t"`` only.
    bias_correction : bool, default=True
        Correct the moving averages' estimates of the drift Q and the noise
        R for the noise of the averages themselves, which uncorrected is
        taken for drift (the package's variant). False gives Ranganath et
        al.'s estimates, as the papers use them.
    min_step_size : "robbins-monro", float or None, default="robbins-monro"
        A lower bound of the step size (the package's variant): the filter
        may raise the step above it, when the minibatches disagree with the
        topics more than their noise explains, but not lower it.
        ``"robbins-monro"`` is the schedule ``(learning_offset + t) **
        -learning_decay`` of plain SVI, a float in (0, 1] a constant bound,
        None no bound (the published filters).
    learning_offset : float, default=10.0
        tau_0 of the Robbins-Monro bound.
    learning_decay : float, default=0.7
        kappa of the Robbins-Monro bound.""",
        specific_attributes="""\
    filter_state_ : dict
        The state after the last update: ``"drift"`` Q and ``"noise"`` R
        (per coordinate) and ``"window"`` tau of the averages, and the
        filter's ``"variance"`` Sigma (Gaussian) or ``"scale"`` Sigma and
        ``"dof"`` eta (Student's t).
""",
        see_also="""\
    SmoothedLDA : LDA by SVI with smoothed gradients.
    AnnealedLDA : LDA by SVI with tuneable stochastic annealing.""",
        references="""\
    .. [1] N. Houlsby and D. Blei. "A Filtering Approach to Stochastic
       Variational Inference". NIPS 2014.
    .. [2] R. Ranganath, C. Wang, D. Blei and E. Xing. "An Adaptive
       Learning Rate for Stochastic Variational Inference". ICML 2013.""",
        example="""\
    >>> from sklearn_svi import FilteredLDA, make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_documents=200, random_state=0)
    >>> lda = FilteredLDA(n_components=5, batch_size=50, random_state=0).fit(X)
    >>> lda.transform(X[:2]).shape
    (2, 5)""",
    )

    _parameter_constraints: dict = {
        **_OnlineLDA._parameter_constraints,
        **OnlineUpdateMixin._filter_parameter_constraints,
        "filter": [StrOptions({"student-t", "gaussian", "adaptive"})],
        "learning_offset": OnlineUpdateMixin._schedule_parameter_constraints[
            "learning_offset"
        ],
        "learning_decay": OnlineUpdateMixin._schedule_parameter_constraints[
            "learning_decay"
        ],
    }

    def __init__(
        self,
        n_components=10,
        *,
        filter="adaptive",
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.7,
        doc_topic_prior=None,
        topic_word_prior=None,
        local_step="cvb0",
        batch_size=128,
        max_iter=10,
        total_samples=1e6,
        max_doc_update_iter=100,
        mean_change_tol=1e-3,
        evaluate_every=-1,
        perp_tol=1e-1,
        n_jobs=None,
        verbose=0,
        random_state=None,
    ):
        self.n_components = n_components
        self.filter = filter
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.local_step = local_step
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.evaluate_every = evaluate_every
        self.perp_tol = perp_tol
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state

    def _make_step_size(self):
        return self._filtered_step_size(self.filter)

    @property
    def filter_state_(self):
        check_is_fitted(self)
        return self._step_size.state()


def top_words(estimator, feature_names, n_words=10):
    """The most probable words of each topic.

    Parameters
    ----------
    estimator : fitted LDA estimator
        An estimator with ``components_`` of shape (n_topics, n_features).
    feature_names : array-like of str of shape (n_features,)
        The vocabulary, e.g. ``vectorizer.get_feature_names_out()``.
    n_words : int, default=10
        Number of words per topic.

    Returns
    -------
    words : list of ndarray
        For each topic, its ``n_words`` most probable words, most probable
        first.
    """
    check_is_fitted(estimator)
    feature_names = np.asarray(feature_names)
    components = estimator.components_
    if feature_names.shape != (components.shape[1],):
        raise ValueError(
            f"feature_names has shape {feature_names.shape}, expected "
            f"({components.shape[1]},) to match the estimator's features."
        )
    n_words = min(n_words, components.shape[1])
    order = np.argsort(-components, axis=1, kind="stable")[:, :n_words]
    return [feature_names[row] for row in order]
