"""The parts of the LDA estimators' docstrings that they share."""

from .._parameters import CALLBACK_PARAMETER, WARM_START_PARAMETER

_SHARED_PARAMETERS = (
    """\
    doc_topic_prior : float or "auto", default=None
        alpha, the Dirichlet prior of the topic proportions. None means
        ``1 / n_components``. ``"auto"`` starts there and learns an
        asymmetric prior, one value per topic: after every update, a step of
        Newton's method on the minibatch's proportions, as long as the
        update's own step (empirical Bayes, Hoffman, Blei & Bach 2010). With
        the collapsed steps the proportions are those of topic counts drawn
        token by token (a stochastic EM step: the last sweep's assignments of
        a sampled document, draws from the responsibilities of a CVB0 one),
        and CVB0 documents are swept to convergence in the updates. With
        the default ``local_step`` the learned alpha was level with
        alpha = 1/K on short texts; with ``local_step="cvb0"`` it lowered
        their held-out fit and never raised it, and fitting warns.
    topic_word_prior : float, "auto" or array-like of shape \
            (n_components, n_features), default=None
        eta, the Dirichlet prior of the topics. None means
        ``1 / n_components``. ``"auto"`` starts there and learns a symmetric
        prior: after every pass of ``fit`` and every ``partial_fit``, the
        value that maximises the topics' term of the ELBO at the current
        topics (once per pass because it needs the digamma of all of
        lambda). With the collapsed steps it comes out too large, and
        fitting warns. An array gives every topic and word a prior of its
        own, as gensim's ``eta`` does; the update then reads it in every
        pass over lambda (about half as long again as a scalar prior's).
    seed_topics : dict of int to list of int, default=None
        Seed words of topics: ``{k: [feature indices]}`` adds pseudo-counts
        of the seed words to topic k's prior and to its random start, so
        that topic k forms around them (guided LDA).
        :func:`~sklearn_svi.seed_word_indices` turns words into
        feature indices. Composes with every mechanism and with learned
        priors (``"auto"`` then learns the symmetric part of eta).
    seed_strength : float, default=0.01
        The pseudo-counts of a topic's seed words, as a share of the number
        of tokens of a topic, N_tokens / n_components (N_tokens estimated
        from ``batch_size`` documents spread evenly over the data the fit
        starts from), spread equally over the topic's seed words. On planted
        topics, 0.01 drew each seeded topic to 9 of its planted topic's 10
        top words with every estimator's default, and moved the held-out
        fit by -0.02 to +0.03 nats per word, within the spread over seeds;
        0.25 drew them less well and cost 0.02 to 0.04 nats per word (see
        the user guide).
    local_step : {"auto", "gibbs", "cvb0", "vb"}, default="auto"
        How each document's topic proportions are fitted. ``"vb"`` is the
        mean-field fixed point of SVI (Hoffman et al. 2013), which weighs
        topic k of word w by exp E[log theta_dk] exp E[log beta_kw].
        ``"cvb0"`` is the collapsed step of stochastic CVB0 (Foulds et al.
        2013): each word's topic responsibilities are proportional to
        E[beta_kw] times the document's expected topic counts without that
        word's token, plus alpha. ``"gibbs"`` samples instead, in the
        updates: collapsed Gibbs sweeps give each token a topic drawn with
        probability proportional to E[beta_kw] times the document's topic
        counts without the token, plus alpha (Mimno, Hoffman & Blei 2012,
        with the topics of SCVB0), and a word's responsibilities are the
        mean of its tokens' conditional distributions over the sweeps after
        burn-in; outside the updates it is ``"cvb0"``, which is
        deterministic. ``"auto"`` samples the documents below 64 tokens and
        gives longer ones the CVB0 step. Sampling predicted held-out words
        of short texts 0.07 to 0.16 nats better than CVB0 in the same CPU
        time; on long articles it cost about 1.9 times as much per pass for
        the same fit (see the user guide). The statistic and the
        update of lambda are the same for every step; ``score`` and
        ``perplexity`` evaluate the ELBO with the ``"vb"`` step for all.
    batch_size : int, default=128
        Number of documents per minibatch.
    max_iter : int, default=10
        Number of passes over the data in ``fit``.
    total_samples : float, default=1e6
        Number of documents N of the corpus, used by ``partial_fit``.
    max_doc_update_iter : int or "auto", default="auto"
        Maximum number of fixed-point iterations (sweeps, for the collapsed
        step) of each document's local step, and the number of sweeps of a
        sampled document. ``"auto"`` is 100, except in the updates: there a
        sampled document gets four sweeps, two to burn in and two averaged,
        and the CVB0 step sweeps a document once below 64 tokens and once
        more for each doubling of its length (SCVB0's few burn-in sweeps),
        which predicted held-out words better than sweeping to convergence
        on every corpus measured, at a fraction of the cost (see the user
        guide); with ``doc_topic_prior="auto"`` its documents are swept to
        convergence.
    mean_change_tol : float, default=1e-3
        The local step stops when the mean absolute change of a document's
        gamma is below this value.
    evaluate_every : int, default=-1
        Record a score in ``evaluation_history_`` every ``evaluate_every``
        updates; 0 or less records nothing.
    scoring : callable, default=None
        What ``evaluation_history_`` records. None is the per-word bound of
        the documents' terms of the ELBO. A scorer ``scoring(estimator, X)``,
        such as :func:`sklearn_svi.metrics.completion_score` (the held-out
        per-word log predictive probability of the papers), is called on
        ``X_val``, or on the minibatch just used.
    perp_tol : float, default=0.1
        ``fit`` stops after a pass when the perplexities, exp(-score), of
        the last two evaluations differ by less than ``perp_tol``.
"""
    + WARM_START_PARAMETER
    + """\
    n_jobs : int, default=None
        Number of threads of the local step and of the update; None means 1,
        -1 all cores (inside a joblib worker, such as a parallel
        GridSearchCV's, the worker's share of them). The result does not
        depend on it.
"""
    + CALLBACK_PARAMETER
    + """\
    verbose : int, default=0
        Print progress when positive.
    random_state : int, RandomState instance or None, default=None
        Seed of the initial topics and of the order of the documents in
        ``fit``.
"""
)

# What the LDA estimators add to the description of the mechanisms'
# parameters.
MECHANISM_NOTES = {
    "learning_decay": """\
        scikit-learn's 0.7 gave a lower held-out fit at every CPU budget
        from 1 to 300 s on the three corpora of the benchmarks (the step
        falls too fast over many epochs); see the user guide. The
        mean-field step (``local_step="vb"``) may prefer 0.7: one pass over
        short documents drawn from LDA predicted held-out words 0.05 to 0.16
        nats better with it.""",
    "prior_variance": """\
        The paper's value is ``1e3``; at the scale of lambda on large
        corpora it makes the first step nearly one (see the user guide).""",
}

_RENAMED_STEP_SIZE = """\
    step_size : "robbins-monro" or float
        Former name of ``learning_rate``.

        .. deprecated:: 0.1
           ``step_size`` was renamed ``learning_rate`` in 0.1 and will be
           removed in 0.3."""

_SHARED_ATTRIBUTES = """\
    components_ : ndarray of shape (n_components, n_features)
        lambda, the variational Dirichlet parameters of the topics;
        normalised rows are the topic-word distributions.
    topic_word_distribution_ : ndarray of shape (n_components, n_features)
        Each topic's word distribution, E[beta_k]: ``components_`` with
        rows normalised to sum to one.
    exp_dirichlet_component_ : ndarray of shape (n_components, n_features)
        exp E[log beta].
    doc_topic_prior_ : ndarray of shape (n_components,)
        alpha, learned if ``doc_topic_prior="auto"``.
    topic_word_prior_ : float or ndarray of shape (n_components, n_features)
        eta, learned if ``topic_word_prior="auto"``: an array when
        ``topic_word_prior`` is one or ``seed_topics`` is given.
    n_batch_iter_ : int
        Number of minibatch updates made.
    n_iter_ : int
        Number of passes made: passes of ``fit``, plus one per call of
        ``partial_fit``.
    n_samples_seen_ : int
        Number of documents used by the updates.
    evaluation_history_ : dict of lists
        ``"n_batch_iter"``, ``"n_samples_seen"`` and ``"score"`` of each
        evaluation: ``scoring`` (by default the per-word bound of the
        documents' terms of the ELBO) on ``X_val``, or on the minibatch just
        used when ``X_val`` is None.
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


def estimator_docstring(
    summary,
    mechanisms,
    specific_attributes,
    see_also,
    references,
    example,
    renamed_parameters=_RENAMED_STEP_SIZE,
):
    """Assemble an LDA estimator's docstring from its own parts and the
    shared ones; ``mechanisms`` describes the mechanisms' parameters with
    the preset's defaults (``mechanism_parameters``)."""
    return f"""{summary}

    Parameters
    ----------
    n_components : int, default=10
        Number of topics K.
{mechanisms}
{_SHARED_PARAMETERS}{renamed_parameters}

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
