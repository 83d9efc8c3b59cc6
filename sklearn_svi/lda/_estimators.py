"""The public LDA estimators: one per mechanism of the online update."""

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._mechanisms import (
    FILTER_CONSTRAINTS,
    SCHEDULE_CONSTRAINTS,
    Mechanisms,
    filter_settings,
    learning_rate_constraint,
    learning_rate_settings,
    renamed_constraint,
)
from ._docstrings import _SCHEDULE_PARAMETERS, estimator_docstring
from ._model import _OnlineLDA


class SmoothedLDA(_OnlineLDA):
    __doc__ = estimator_docstring(
        summary="""Latent Dirichlet allocation by SVI with smoothed gradients.

    Mandt & Blei (2014): the noisy coordinate optimum of each update uses the
    mean of the last ``L`` minibatch sufficient statistics instead of the
    latest one alone, which lowers the variance of the update for a small
    bias. ``L=1`` is plain stochastic variational inference (Hoffman et al.
    2013) and reproduces it exactly.

    Read more in the :ref:`User Guide <smoothed_lda>`.""",
        specific_parameters=f"""\
    L : int, default=1
        Length of the smoothing window: the number of minibatch statistics
        averaged. ``L=1``, the default, is plain SVI. The window pays with a
        constant ``learning_rate`` and small minibatches (``L`` of 10 to 30,
        see the user guide); under the Robbins-Monro schedule, whose
        shrinking steps already average the statistics, a window only delays
        them: in the same CPU time ``L=10`` trailed ``L=1`` by 0.07 to 0.12
        nats per held-out word after 1 s and by up to 0.02 after 20 s or
        more on three corpora.
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
        **SCHEDULE_CONSTRAINTS,
        "L": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": learning_rate_constraint(filters=False),
        "step_size": renamed_constraint(learning_rate_constraint(filters=False)),
    }

    def __init__(
        self,
        n_components=10,
        *,
        L=1,
        learning_rate="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.6,
        doc_topic_prior=None,
        topic_word_prior=None,
        local_step="cvb0",
        batch_size=128,
        max_iter=10,
        total_samples=1e6,
        max_doc_update_iter="auto",
        mean_change_tol=1e-3,
        evaluate_every=-1,
        scoring=None,
        perp_tol=1e-1,
        n_jobs=None,
        verbose=0,
        random_state=None,
        step_size="deprecated",
    ):
        self.n_components = n_components
        self.L = L
        self.learning_rate = learning_rate
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
        self.scoring = scoring
        self.perp_tol = perp_tol
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.step_size = step_size

    def _mechanism_settings(self):
        return Mechanisms(
            window_length=self.L, **learning_rate_settings(self, "step_size")
        )


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
        specific_parameters=f"""\
    M : int or "auto", default="auto"
        The effective minibatch size of the first update, at most
        ``batch_size``. ``"auto"`` is ``batch_size // 4``.
    M_growth : float or "auto", default="auto"
        Increase of the effective minibatch size per update: update t uses
        ``M + M_growth * (t - 1)``, and plain SVI once that reaches
        ``batch_size``. ``"auto"`` is ``M``, so that M_t = M t, the form of
        the paper's schedule (M_t = 50 t). The defaults together anneal the
        first three updates whatever the minibatch size, which was level
        with plain SVI or above it on three real corpora, where a fixed
        number of 64 documents annealed 15 updates of minibatches of 1,024
        and cost 0.02 nats per held-out word (see the user guide). A fixed
        ``M`` below ``batch_size`` (``M_growth=0``) keeps the noise of M
        documents to the end, which costs held-out fit on large corpora.
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
        **SCHEDULE_CONSTRAINTS,
        "M": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "M_growth": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": learning_rate_constraint(filters=False),
        "step_size": renamed_constraint(learning_rate_constraint(filters=False)),
    }

    def __init__(
        self,
        n_components=10,
        *,
        M="auto",
        M_growth="auto",
        learning_rate="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.6,
        doc_topic_prior=None,
        topic_word_prior=None,
        local_step="cvb0",
        batch_size=128,
        max_iter=10,
        total_samples=1e6,
        max_doc_update_iter="auto",
        mean_change_tol=1e-3,
        evaluate_every=-1,
        scoring=None,
        perp_tol=1e-1,
        n_jobs=None,
        verbose=0,
        random_state=None,
        step_size="deprecated",
    ):
        self.n_components = n_components
        self.M = M
        self.M_growth = M_growth
        self.learning_rate = learning_rate
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
        self.scoring = scoring
        self.perp_tol = perp_tol
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.step_size = step_size

    def _mechanism_settings(self):
        M = max(1, self.batch_size // 4) if self.M == "auto" else self.M
        return Mechanisms(
            effective_batch_size=M,
            effective_batch_growth=M if self.M_growth == "auto" else self.M_growth,
            **learning_rate_settings(self, "step_size"),
        )


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
    collapsed local step and the same updates as plain SVI, the Gaussian
    filter ended within 0.001 nats per held-out word of plain SVI or above
    it on all three real corpora of the benchmarks (-0.001 to +0.007), as
    did the adaptive rate and the Student's t filter within 0.004 (see the
    user guide).

    Read more in the :ref:`User Guide <filtered_lda>`.""",
        specific_parameters="""\
    learning_rate : {"gaussian", "student-t", "adaptive"}, default="gaussian"
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
    learning_decay : float, default=0.6
        kappa of the Robbins-Monro bound (scikit-learn's is 0.7; see
        ``SmoothedLDA``).""",
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
        **SCHEDULE_CONSTRAINTS,
        **FILTER_CONSTRAINTS,
        "learning_rate": learning_rate_constraint(schedules=False),
        "filter": renamed_constraint(learning_rate_constraint(schedules=False)),
    }

    def __init__(
        self,
        n_components=10,
        *,
        learning_rate="gaussian",
        prior_variance=0.0,
        prior_dof=3,
        bias_correction=True,
        min_step_size="robbins-monro",
        learning_offset=10.0,
        learning_decay=0.6,
        doc_topic_prior=None,
        topic_word_prior=None,
        local_step="cvb0",
        batch_size=128,
        max_iter=10,
        total_samples=1e6,
        max_doc_update_iter="auto",
        mean_change_tol=1e-3,
        evaluate_every=-1,
        scoring=None,
        perp_tol=1e-1,
        n_jobs=None,
        verbose=0,
        random_state=None,
        filter="deprecated",
    ):
        self.n_components = n_components
        self.learning_rate = learning_rate
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
        self.scoring = scoring
        self.perp_tol = perp_tol
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.filter = filter

    def _mechanism_settings(self):
        return Mechanisms(
            **learning_rate_settings(self, "filter"), **filter_settings(self)
        )

    @property
    def filter_state_(self):
        check_is_fitted(self)
        return self._update_state.step_size.state()
