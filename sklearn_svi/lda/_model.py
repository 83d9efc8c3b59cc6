"""Latent Dirichlet allocation fitted by stochastic variational inference.

The model (Blei, Ng & Jordan 2003) with the variational family and updates of
Hoffman, Blei, Wang & Paisley (2013, Sec. 3.1 and Fig. 6): topics
beta_k ~ Dirichlet(eta), proportions theta_d ~ Dirichlet(alpha), and
q(beta_k) = Dirichlet(lambda_k), q(theta_d) = Dirichlet(gamma_d),
q(z_dn) = Categorical(phi_dn). The global parameter lambda is the
``components_`` attribute, as in scikit-learn's LatentDirichletAllocation.
"""

from dataclasses import replace
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_non_negative, validate_data

from .._online import OnlineUpdateMixin
from .._sources import (
    assembled_columns,
    evenly_spaced_rows,
    features_out,
    local_store,
    rowwise,
    summed_over_rows,
)
from .._store import raise_to_prior
from .._threads import thread_pool
from .._validation import listed_rows, rows_of_entries
from ._dirichlet import (
    _dirichlet_expectation,
    _dirichlet_term,
)
from ._local_step import LocalStep, _CompactDocuments, minibatch_statistic
from ._priors import LDAPriors


def _check_count_limit(X):
    """Refuse counts above 2**(mantissa bits + 1), 2**24 for float32 and
    2**53 for float64: the largest integers the type holds exactly.

    The bound's word term n log(n / ratio) is off by about n times the
    type's precision, so beyond that limit a document's score would be
    wrong by more than a nat, and could come out positive.
    """
    limit = 2 ** (np.finfo(X.dtype).nmant + 1)
    too_large = np.flatnonzero(X.data > limit)
    if len(too_large):
        rows = rows_of_entries(X, too_large)
        raise ValueError(
            f"X holds counts above {limit:.0f} (2**{np.finfo(X.dtype).nmant + 1}), "
            f"the largest integer that {X.dtype} holds exactly, in the rows "
            f"{listed_rows(rows)}. "
            "Beyond it the topic model's sums lose whole counts to rounding. "
            "Pass float64 counts (up to 2**53), or rescale the counts."
        )


AUTO_MAX_ITER = 100
"""The most iterations of a document's fixed point under
``max_doc_update_iter="auto"``, as in scikit-learn."""

SWEEP_DOUBLING_LENGTH = 32
"""Under ``max_doc_update_iter="auto"``, a document's collapsed step in the
updates gets one sweep below twice this many tokens, and one more per
doubling of its length."""

SAMPLED_SWEEPS = 4
"""Under ``max_doc_update_iter="auto"``, the sweeps of a sampled document in
the updates: two to burn in, two averaged."""

SAMPLE_BELOW = {
    "vb": 0.0,
    "cvb0": 0.0,
    "gibbs": np.inf,
    "auto": 2 * SWEEP_DOUBLING_LENGTH,
}
"""The documents that each ``local_step`` samples in the updates: those of
fewer tokens than this."""


DEFAULT_SEED_STRENGTH = 0.01
"""The share of a topic's expected number of tokens that ``seed_topics``
gives its seed words as pseudo-counts."""

# The initial topics are drawn in batches of about this many bytes, so that
# a start on a cluster whose workers hold lambda never holds all of it.
INITIAL_BATCH_BYTES = 64 * 2**20

# The step between the keys of consecutive draws (``_start_key``): the
# kernel's SKLEARN_SVI_GOLDEN, 2**64 over the golden ratio, odd.
START_KEY_STEP = 0x9E3779B97F4A7C15

# The LDA estimators' own parameters and their defaults.
LDA_PARAMETERS = dict(
    n_components=10,
    doc_topic_prior=None,
    topic_word_prior=None,
    seed_topics=None,
    seed_strength=DEFAULT_SEED_STRENGTH,
    local_step="auto",
    max_doc_update_iter="auto",
    mean_change_tol=1e-3,
    scoring=None,
    perp_tol=1e-1,
)


class _OnlineLDA(
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    LDAPriors,
    OnlineUpdateMixin,
    BaseEstimator,
):
    """Latent Dirichlet allocation fitted by the shared online update.

    One composable estimator: it takes the parameters of every mechanism
    and its own (``LDA_PARAMETERS``), and the public classes are presets
    that differ only in their defaults.
    This class is the model: its local step, prior, bound and transform.
    """

    # A minibatch holds few of the words: plain SVI's update writes its
    # words' rows and scales the others.
    _scales_rows = True
    # The topics are exchangeable: a filter observes some of them.
    _exchangeable_columns = True

    @property
    def _initial_sample_batches(self):
        # lambda starts from draws that read only the number of words; the
        # seeds' pseudo-counts scale with the number of tokens of a sample.
        return 1 if self.seed_topics else 0

    _parameter_constraints: dict = {
        **OnlineUpdateMixin._shared_parameter_constraints,
        "doc_topic_prior": [
            None,
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "topic_word_prior": [
            None,
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
            "array-like",
        ],
        "seed_topics": [None, dict],
        "seed_strength": [Interval(Real, 0, None, closed="neither")],
        "local_step": [StrOptions({"vb", "cvb0", "gibbs", "auto"})],
        "max_doc_update_iter": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "mean_change_tol": [Interval(Real, 0, None, closed="left")],
        "scoring": [None, callable],
        "perp_tol": [Interval(Real, 0, None, closed="left")],
    }

    def _after_update(self, rho, statistic):
        if self.doc_topic_prior == "auto":
            self._learn_doc_topic_prior(rho, statistic.sample_mean)

    def _after_pass(self):
        if self._learns_topic_word_prior():
            self._learn_topic_word_prior()

    # -- input validation --------------------------------------------------------

    def _check_documents(self, X, reset, dtype=None):
        """Counts as a CSR matrix of type ``dtype`` (None: float32 stays
        float32, anything else becomes float64)."""
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
        )
        check_non_negative(X, f"{type(self).__name__} (input X)")
        X = sp.csr_matrix(X, dtype=dtype)
        _check_count_limit(X)
        return X

    def _check_training_data(self, X, reset, dtype=None):
        return self._check_documents(X, reset, dtype)

    def _least_likely_samples(self, X_batch):
        """The documents with the most words first: in a refused update
        they are the likeliest cause (counts too large for the model)."""
        return np.argsort(-np.asarray(X_batch.sum(axis=1)).ravel(), kind="stable")

    # -- the model's part of the online update ------------------------------------

    def _initial_natural(self, X, n_total, random_state):
        return assembled_columns(*self._initial_columns(X, n_total, random_state))

    def _initial_columns(self, X, n_total, random_state):
        n_features = X.shape[1]
        topics_per_batch = max(1, INITIAL_BATCH_BYTES // (8 * n_features))
        seeds = self._seed_pseudo_counts(n_features)

        def batches():
            # Hoffman et al. (2013) and scikit-learn: lambda ~ Gamma(100,
            # 1/100), drawn topic by topic as scikit-learn does (a batch of
            # topics after the other draws the same numbers) and stored word
            # by word; the seeds' pseudo-counts are added, so that the first
            # local step already finds the seed words in their topics.
            for first in range(0, self.n_components, topics_per_batch):
                n_topics = min(topics_per_batch, self.n_components - first)
                topic_word = random_state.gamma(100.0, 0.01, (n_topics, n_features))
                if seeds is not None:
                    topic_word += seeds[first : first + n_topics]
                yield first, topic_word.T
            # The seed of the documents' random starts in the updates
            # (``_start_key``).
            self._start_seed = int(random_state.randint(2**63, dtype=np.int64))

        return (n_features, self.n_components), X.dtype, batches()

    def _initialize_online(self, X, n_total, mechanisms, store=local_store):
        if self.local_step != "vb":
            self._warn_learned_priors_of_collapsed_step()
        self.doc_topic_prior_ = np.full(
            self.n_components, self._initial_prior(self.doc_topic_prior)
        )
        # The corpus's expected number of tokens per topic, the scale of the
        # seeds' pseudo-counts, from a minibatch's worth of documents spread
        # over the data: the rows a cluster's sample holds too.
        if self.seed_topics:
            sample = X[evenly_spaced_rows(X.shape[0], self.batch_size)]
            self._tokens_per_topic = (
                float(sample.sum()) * n_total / sample.shape[0] / self.n_components
            )
        self.topic_word_prior_ = self._initial_topic_word_prior(X.shape[1], X.dtype)
        super()._initialize_online(X, n_total, mechanisms, store)
        self._topic_totals = self._natural_store.totals()

    def _start_key(self, draw):
        """The key of the documents' starts in minibatch number ``draw``.

        A function of the fit's seed and of ``draw`` alone, so that a
        minibatch's local step does not depend on what was drawn before it:
        a step of SplitMix64's sequence (Steele, Lea & Flood 2014) from the
        seed, the draw's number of steps away (negative draws numbered
        apart). The step is odd, so distinct draws get distinct keys, and
        the kernel mixes each key before it reads a document's stream from
        it. NumPy's ``SeedSequence`` did the same at about 6% of the cost of
        a pass over short texts.
        """
        number = 2 * abs(draw) + (draw < 0)
        return (self._start_seed + START_KEY_STEP * (number + 1)) % 2**64

    def _local_copy(self, rows=None):
        # The local step does not read eta; an array of it is cut as lambda.
        local = super()._local_copy(rows)
        if rows is not None and np.ndim(self.topic_word_prior_) == 2:
            local.topic_word_prior_ = self.topic_word_prior_[:, rows]
        return local

    def _prepare_minibatch(self, X_batch):
        """The minibatch's documents with their words renumbered."""
        return _CompactDocuments.from_csr(X_batch)

    def _prepare_rows(self, X, rows):
        """The documents of the rows ``rows`` of ``X``, cut from its arrays,
        with their words renumbered."""
        return _CompactDocuments.from_csr(X, rows)

    def _rows_read(self, documents):
        """The local step reads the rows of lambda of the documents' words."""
        return documents.words

    def _local_statistic(self, documents, sample_weight=None, draw=0, n_batch=None):
        """Minibatch mean of w_d n_dw phi_dwk on the minibatch's words (eq. 28).

        The documents' starts are those of minibatch number ``draw``. With a
        learned alpha, the statistic also carries the documents' mean
        w_d E[log theta_d] that alpha's Newton step needs: at the mean-field
        gamma_d, or, for the collapsed step, at alpha + the document's topic
        counts with each token's topic drawn from its responsibilities (a
        stochastic EM step). The collapsed step's expected counts look evenly
        mixed on short documents, and alpha + N_d would bias alpha upwards.
        """
        learn_alpha = self.doc_topic_prior == "auto"
        local = self._fit_documents(
            documents,
            start_key=self._start_key(draw),
            index_words=True,
            sample_counts=learn_alpha,
            with_doc_topic=False,
        )
        n_batch = documents.n_documents if n_batch is None else n_batch
        statistic = minibatch_statistic(local, sample_weight, n_batch)
        if not learn_alpha:
            return statistic
        doc_topic = (
            local.doc_topic
            if local.sampled_counts is None
            else self.doc_topic_prior_ + local.sampled_counts
        )
        log_theta = _dirichlet_expectation(doc_topic.astype(np.float64))
        if sample_weight is not None:
            log_theta *= sample_weight[:, np.newaxis]
        return replace(statistic, sample_mean=log_theta.sum(axis=0) / n_batch)

    def _natural_updated(self, row_sums):
        # The topics' totals, which E[log beta] and E[beta] need.
        self._topic_totals = row_sums

    def _projection(self):
        """Raise every lambda_kw below the prior eta_kw to eta_kw.

        Without annealing lambda = eta + a non-negative statistic, so
        {lambda >= eta} holds every iterate of plain SVI; this is the nearest
        point of that set, and it is found row by row.
        """
        return raise_to_prior

    def _document_iterations(self, collapsed, in_update):
        """The most iterations of a document's fixed point, the length of
        the collapsed step's limit by the document's length (0 for none),
        and the sweeps of a sampled document.

        ``max_doc_update_iter="auto"`` gives the collapsed step in the updates
        one sweep for a document below ``2 * SWEEP_DOUBLING_LENGTH`` tokens
        and one more per doubling of its length: SCVB0's few burn-in sweeps
        (Foulds et al. 2013), which predicted held-out words better than
        sweeping to convergence, at a fraction of the cost. Everywhere else
        "auto" is ``AUTO_MAX_ITER``, and so it is when alpha is learned: its
        step needs the responsibilities at the document's fixed point (a
        few sweeps from the random start leave them spread over the topics,
        and alpha comes out about twice too large). A sampled document's
        "auto" is ``SAMPLED_SWEEPS``.
        """
        if self.max_doc_update_iter != "auto":
            return self.max_doc_update_iter, 0.0, self.max_doc_update_iter
        if collapsed and in_update and self.doc_topic_prior != "auto":
            return AUTO_MAX_ITER, SWEEP_DOUBLING_LENGTH, SAMPLED_SWEEPS
        return AUTO_MAX_ITER, 0.0, SAMPLED_SWEEPS

    def _fit_documents(
        self,
        documents,
        start_key=None,
        index_words=False,
        collapsed=None,
        sample_counts=False,
        with_doc_topic=True,
    ):
        """The local step at the current topics (:meth:`LocalStep.fit`).

        The step is the collapsed one if ``collapsed`` says so, or by default
        if ``local_step`` does; ``sample_counts`` and ``with_doc_topic=False``
        apply to the collapsed step only. Documents are sampled
        (``SAMPLE_BELOW``) in the updates (with a ``start_key``) only:
        elsewhere, where the result must be deterministic, every collapsed
        step is the CVB0 fixed point.
        """
        if collapsed is None:
            collapsed = self.local_step != "vb"
        in_update = start_key is not None
        max_iter, doubling_length, sampled_sweeps = self._document_iterations(
            collapsed, in_update
        )
        step = LocalStep(
            self.doc_topic_prior_,
            max_iter,
            self.mean_change_tol,
            collapsed,
            doubling_length,
            SAMPLE_BELOW[self.local_step] if collapsed and in_update else 0.0,
            sampled_sweeps,
        )
        return step.fit(
            documents,
            self._natural_store,
            self._topic_totals,
            start_key,
            index_words,
            sample_counts=sample_counts and collapsed,
            with_doc_topic=with_doc_topic,
        )

    # -- scores ----------------------------------------------------------------------

    def _document_bound(self, local):
        """The documents' terms of the ELBO (Hoffman et al. 2013, eq. 29-30)."""
        # In float64 whatever the model's type: the terms are large and of
        # both signs, and their sum is far smaller than each of them.
        counts = local.documents.counts.astype(np.float64)
        nonzero = counts > 0
        # sum_w n_dw log sum_k exp(E[log theta_dk] + E[log beta_kw])
        word_term = np.sum(
            counts[nonzero]
            * np.log(counts[nonzero] / local.count_ratio[nonzero].astype(np.float64))
        )
        return word_term + _dirichlet_term(
            self.doc_topic_prior_, local.doc_topic.astype(np.float64)
        )

    def _topic_bound(self):
        """The topics' terms of the ELBO (Hoffman et al. 2013, eq. 31), in
        float64."""
        return _dirichlet_term(
            np.asarray(self.topic_word_prior_, dtype=np.float64),
            self.components_.astype(np.float64),
        )

    def _infer(self, X, collapsed=None):
        """The local step on X with the estimator's own threads."""
        with thread_pool(self.n_jobs):
            return self._fit_documents(
                _CompactDocuments.from_csr(X), collapsed=collapsed
            )

    def _documents_bound(self, X):
        """The documents' terms of the ELBO of X, by the mean-field step."""
        return self._document_bound(self._infer(X, collapsed=False))

    def _documents_totals(self, X):
        """The documents' terms of the ELBO of X validated, and its number
        of words: what rows add to ``score`` and ``perplexity``."""
        X = self._check_fitted_data(X)
        return np.array([self._documents_bound(X), X.sum()], dtype=np.float64)

    def _score_of_totals(self, totals):
        return float(totals[0] + self._topic_bound())

    def _perplexity_of_totals(self, totals):
        return _perplexity(self._score_of_totals(totals), totals[1])

    def _evaluation_score(self, X):
        """``scoring(self, X)``, or the per-word bound of the documents'
        terms of the ELBO on ``X``."""
        if self.scoring is not None:
            return self.scoring(self, X)
        local = self._fit_documents(_CompactDocuments.from_csr(X), collapsed=False)
        return self._document_bound(local) / max(local.documents.counts.sum(), 1.0)

    def _fit_converged(self):
        """Whether the perplexities, exp(-score), of the last two
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
    def topic_word_distribution_(self):
        """Each topic's word distribution, E[beta_k] = lambda_k / sum_w
        lambda_kw: rows that sum to one.

        An ndarray of shape (n_components, n_features).
        """
        components = self.components_
        return components / components.sum(axis=1, keepdims=True)

    @property
    def exp_dirichlet_component_(self):
        """The exponential of E[log beta] under the fitted topics.

        An ndarray of shape (n_components, n_features).
        """
        return np.exp(_dirichlet_expectation(self.components_))

    @property
    def _n_features_out(self):
        return self.n_components

    @rowwise(n_columns=features_out)
    def transform(self, X):
        """Infer the topic proportions of documents.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Document-word counts. The row blocks of a Dask collection are
            processed where they are (see :ref:`cluster`).

        Returns
        -------
        doc_topic_distr : ndarray of shape (n_samples, n_components)
            The mean of q(theta_d), gamma_d / sum_k gamma_dk. A document with
            no words gets the prior's mean, 1 / n_components. A Dask array
            for a Dask array, and a bag of each partition's rows for a bag.
        """
        X = self._check_fitted_data(X)
        doc_topic = self._infer(X).doc_topic
        return doc_topic / doc_topic.sum(axis=1, keepdims=True)

    def score(self, X, y=None):
        """Approximate log-likelihood: the variational bound (ELBO) of X.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Document-word counts. The row blocks of a Dask collection are
            processed where they are (see :ref:`cluster`).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
            The ELBO of the documents and the topics; higher is better. For
            a Dask collection, computed where its blocks are.
        """
        return summed_over_rows(
            self, X, type(self)._documents_totals, type(self)._score_of_totals
        )

    def perplexity(self, X):
        """Perplexity, exp(-ELBO / number of words), as in scikit-learn.

        Parameters
        ----------
        X : {array-like, sparse matrix, Dask array or bag} of shape \
                (n_samples, n_features)
            Document-word counts. The row blocks of a Dask collection are
            processed where they are (see :ref:`cluster`).

        Returns
        -------
        perplexity : float
            Lower is better. For a Dask collection, computed where its
            blocks are.

        Raises
        ------
        ValueError
            If X holds no words, where the perplexity is undefined.
        """
        return summed_over_rows(
            self, X, type(self)._documents_totals, type(self)._perplexity_of_totals
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _perplexity(bound, n_words):
    """exp(-bound / n_words), for documents that hold words."""
    if n_words <= 0:
        raise ValueError(
            "The perplexity is a mean over words, and X holds no words: "
            "every document is empty."
        )
    return float(np.exp(-bound / n_words))
