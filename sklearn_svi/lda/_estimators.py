"""The public LDA estimators: presets of one composable estimator.

Each class takes the parameters of every mechanism, so that smoothing,
annealing and the filters combine; the three differ only in their defaults,
which turn their own mechanism on.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._mechanisms import learning_rate_constraint, renamed_constraint
from .._mechanisms._docstrings import mechanism_parameters
from .._parameters import init_parameters
from ..metrics import top_word_indices
from ._docstrings import MECHANISM_NOTES, estimator_docstring
from ._model import LDA_PARAMETERS, _OnlineLDA


class SmoothedLDA(_OnlineLDA):
    __doc__ = estimator_docstring(
        summary="""Latent Dirichlet allocation by SVI with smoothed gradients.

    Mandt & Blei (2014): the noisy coordinate optimum of each update uses the
    mean of the last ``L`` minibatch sufficient statistics instead of the
    latest one alone, which lowers the variance of the update for a small
    bias. ``L=1`` is plain stochastic variational inference (Hoffman et al.
    2013) and reproduces it exactly.

    Read more in the :ref:`User Guide <smoothed_lda>`.""",
        mechanisms=mechanism_parameters(
            learning_decay=0.6,
            notes={
                **MECHANISM_NOTES,
                "L": """\
        ``L=1``, the default, is plain SVI. The window pays with a constant
        ``learning_rate`` and small minibatches (``L`` of 10 to 30, see the
        user guide); under the Robbins-Monro schedule, whose shrinking steps
        already average the statistics, a window only delays them: in the
        same CPU time ``L=10`` trailed ``L=1`` by 0.03 to 0.09 nats per
        held-out word after 1 s and by 0.003 to 0.012 after 20 s or more on
        three corpora.""",
            },
        ),
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
        "step_size": renamed_constraint(learning_rate_constraint(filters=False)),
    }
    _renamed_learning_rate = "step_size"

    _init_parameters = init_parameters(
        LDA_PARAMETERS,
        defaults=dict(learning_decay=0.6),
        deprecated=("step_size",),
    )

    def __init__(
        self,
        n_components=10,
        *,
        doc_topic_prior=None,
        topic_word_prior=None,
        seed_topics=None,
        seed_strength=0.01,
        local_step="auto",
        max_doc_update_iter="auto",
        mean_change_tol=0.001,
        scoring=None,
        perp_tol=0.1,
        L=1,
        M=None,
        M_growth=0.0,
        learning_rate="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.6,
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size=None,
        observed_components="auto",
        batch_size=128,
        max_iter=10,
        total_samples=1000000.0,
        evaluate_every=-1,
        callback=None,
        warm_start=False,
        n_jobs=None,
        verbose=0,
        random_state=None,
        step_size="deprecated",
    ):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.seed_topics = seed_topics
        self.seed_strength = seed_strength
        self.local_step = local_step
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.scoring = scoring
        self.perp_tol = perp_tol
        self.L = L
        self.M = M
        self.M_growth = M_growth
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.observed_components = observed_components
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.evaluate_every = evaluate_every
        self.callback = callback
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.step_size = step_size


class AnnealedLDA(_OnlineLDA):
    __doc__ = estimator_docstring(
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
    ``batch_size`` at least the number of documents and ``learning_rate=1.0``,
    each update is a batch variational Bayes step with annealing noise.

    Negative weights can give a target lambda below the prior eta. After
    each update every lambda_kw below eta is raised to eta, the nearest point
    of the set {lambda >= eta} that holds every iterate of plain SVI;
    ``n_projected_`` counts the coordinates raised.

    Read more in the :ref:`User Guide <annealed_lda>`.""",
        mechanisms=mechanism_parameters(
            M="auto",
            M_growth="auto",
            learning_decay=0.6,
            notes={
                **MECHANISM_NOTES,
                "M_growth": """\
        The defaults together anneal the first three updates whatever the
        minibatch size, which was level with plain SVI or above it on three
        real corpora, where a fixed number of 64 documents annealed 15
        updates of minibatches of 1,024 and, with the CVB0 step, cost 0.02
        nats per held-out word (see the user guide). A fixed ``M`` below ``batch_size``
        (``M_growth=0``) keeps the noise of M documents to the end, which
        costs held-out fit on large corpora.""",
            },
        ),
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
        "step_size": renamed_constraint(learning_rate_constraint(filters=False)),
    }
    _renamed_learning_rate = "step_size"

    _init_parameters = init_parameters(
        LDA_PARAMETERS,
        defaults=dict(M="auto", M_growth="auto", learning_decay=0.6),
        deprecated=("step_size",),
    )

    def __init__(
        self,
        n_components=10,
        *,
        doc_topic_prior=None,
        topic_word_prior=None,
        seed_topics=None,
        seed_strength=0.01,
        local_step="auto",
        max_doc_update_iter="auto",
        mean_change_tol=0.001,
        scoring=None,
        perp_tol=0.1,
        L=1,
        M="auto",
        M_growth="auto",
        learning_rate="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.6,
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size=None,
        observed_components="auto",
        batch_size=128,
        max_iter=10,
        total_samples=1000000.0,
        evaluate_every=-1,
        callback=None,
        warm_start=False,
        n_jobs=None,
        verbose=0,
        random_state=None,
        step_size="deprecated",
    ):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.seed_topics = seed_topics
        self.seed_strength = seed_strength
        self.local_step = local_step
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.scoring = scoring
        self.perp_tol = perp_tol
        self.L = L
        self.M = M
        self.M_growth = M_growth
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.observed_components = observed_components
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.evaluate_every = evaluate_every
        self.callback = callback
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.step_size = step_size


class FilteredLDA(_OnlineLDA):
    __doc__ = estimator_docstring(
        summary="""Latent Dirichlet allocation by SVI with variational filtering.

    Houlsby & Blei (2014) view each SVI update as a noisy observation
    lambda^_t of the batch variational Bayes optimum and track that optimum
    with a Kalman filter: the step size is the filter's gain, set by Bayes'
    rule instead of a hand-tuned schedule. The drift Q and the noise R of
    the observations are estimated online with exponentially weighted
    averages (Ranganath et al. 2013), started from a few minibatches drawn
    at the initial topics. One gain serves all of lambda (the isotropic
    filter of the paper's experiments).

    ``learning_rate="gaussian"``, the default, is the Kalman filter;
    ``learning_rate="student-t"`` is the paper's Algorithm 1: heavy-tailed
    noise, so that a minibatch far from where the filter expects it raises
    the next step instead of being averaged in as if it were typical; and
    ``learning_rate="adaptive"`` is Ranganath et al.'s adaptive learning
    rate, Q / (Q + R), the filter with no uncertainty about the optimum. By
    default the step is never below the Robbins-Monro step of plain SVI
    (``min_step_size``): the filter may raise the step, far from the optimum
    or when the stream changes, but not lower it. So bounded, with the
    default local step and the same updates as plain SVI, the Gaussian
    filter ended within 0.004 nats per held-out word of plain SVI on the
    three real corpora of the benchmarks (-0.003 to +0.002), as did the
    adaptive rate and the Student's t filter (-0.001 to +0.013). The
    filter's moments are kept for the words of each minibatch only (the
    others follow in closed form) and, with more than 32 topics, taken
    over an eighth of them (``observed_components``), so that an update
    costs 1.06 to 1.20 times plain SVI's, its start included; its first
    steps rise above the bound, so on a stationary corpus, in the
    same CPU time, it trailed plain SVI by up to 0.004 on short texts
    (see the user guide).

    Read more in the :ref:`User Guide <filtered_lda>`.""",
        mechanisms=mechanism_parameters(
            learning_rate="gaussian",
            learning_decay=0.6,
            min_step_size="robbins-monro",
            notes=MECHANISM_NOTES,
        ),
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
        renamed_parameters="""\
    filter : {"student-t", "gaussian", "adaptive"}
        Former name of ``learning_rate``.

        .. deprecated:: 0.1
           ``filter`` was renamed ``learning_rate`` in 0.1 and will be
           removed in 0.3.""",
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
        "filter": renamed_constraint(learning_rate_constraint(schedules=False)),
    }
    _renamed_learning_rate = "filter"

    _init_parameters = init_parameters(
        LDA_PARAMETERS,
        defaults=dict(
            learning_rate="gaussian",
            learning_decay=0.6,
            min_step_size="robbins-monro",
        ),
        deprecated=("filter",),
    )

    def __init__(
        self,
        n_components=10,
        *,
        doc_topic_prior=None,
        topic_word_prior=None,
        seed_topics=None,
        seed_strength=0.01,
        local_step="auto",
        max_doc_update_iter="auto",
        mean_change_tol=0.001,
        scoring=None,
        perp_tol=0.1,
        L=1,
        M=None,
        M_growth=0.0,
        learning_rate="gaussian",
        learning_offset=10.0,
        learning_decay=0.6,
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size="robbins-monro",
        observed_components="auto",
        batch_size=128,
        max_iter=10,
        total_samples=1000000.0,
        evaluate_every=-1,
        callback=None,
        warm_start=False,
        n_jobs=None,
        verbose=0,
        random_state=None,
        filter="deprecated",
    ):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.seed_topics = seed_topics
        self.seed_strength = seed_strength
        self.local_step = local_step
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.scoring = scoring
        self.perp_tol = perp_tol
        self.L = L
        self.M = M
        self.M_growth = M_growth
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.prior_variance = prior_variance
        self.prior_dof = prior_dof
        self.bias_correction = bias_correction
        self.min_step_size = min_step_size
        self.observed_components = observed_components
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.total_samples = total_samples
        self.evaluate_every = evaluate_every
        self.callback = callback
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.filter = filter

    @property
    def filter_state_(self):
        check_is_fitted(self)
        return self._update_state.step_size.state()


def top_words(estimator, feature_names, n_words=10):
    """The most probable words of each topic.

    The words are ranked by the topic's word distribution
    (``topic_word_distribution_``, each row of ``components_`` normalised),
    as :func:`sklearn_svi.metrics.top_word_indices` ranks them.

    Parameters
    ----------
    estimator : fitted LDA estimator
        An estimator with ``components_`` of shape (n_topics, n_features),
        the package's or scikit-learn's.
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
    n_features = np.shape(estimator.components_)[1]
    if feature_names.shape != (n_features,):
        raise ValueError(
            f"feature_names has shape {feature_names.shape}, expected "
            f"({n_features},) to match the estimator's features."
        )
    return [feature_names[row] for row in top_word_indices(estimator, n_words)]


def seed_word_indices(seed_words, feature_names):
    """The feature indices of seed words, for ``seed_topics``.

    Parameters
    ----------
    seed_words : dict of int to sequence of str
        For each seeded topic, its seed words.
    feature_names : array-like of str of shape (n_features,)
        The vocabulary, e.g. ``vectorizer.get_feature_names_out()``.

    Returns
    -------
    seed_topics : dict of int to list of int
        For each seeded topic, the indices of its seed words among
        ``feature_names``.

    Raises
    ------
    ValueError
        If a seed word is not in the vocabulary.

    Examples
    --------
    >>> from sklearn_svi import seed_word_indices
    >>> seed_word_indices({0: ["fever", "flu"]}, ["cough", "fever", "flu"])
    {0: [1, 2]}
    """
    index_of = {str(word): index for index, word in enumerate(feature_names)}
    seed_topics = {}
    for topic, words in seed_words.items():
        missing = [word for word in words if word not in index_of]
        if missing:
            raise ValueError(
                f"The seed words {missing} of topic {topic} are not in the "
                "vocabulary: a word the vectorizer dropped (a stop word, or "
                "one outside min_df and max_df) cannot seed a topic."
            )
        seed_topics[topic] = [index_of[word] for word in words]
    return seed_topics
