"""The compiled local step against a slow, obviously correct reference."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.special import digamma, gammaln
from sklearn.decomposition import LatentDirichletAllocation

import sklearn_svi.lda._local_step
from sklearn_svi import SmoothedLDA, make_lda_corpus
from sklearn_svi.lda import _fast
from sklearn_svi.lda._local_step import minibatch_statistic, start_spread
from sklearn_svi.lda._model import SAMPLE_BELOW, SAMPLED_SWEEPS
from sklearn_svi.metrics import log_predictive, split_tokens


def compiled_kernels():
    """The kernel built for any processor, and the wider ones where they run."""
    kernels = [pytest.param(_fast, id="portable")]
    if _fast.cpu_has_avx2_fma():
        from sklearn_svi.lda import _fast_avx2

        kernels.append(pytest.param(_fast_avx2, id="avx2"))
    if _fast.cpu_has_avx512():
        from sklearn_svi.lda import _fast_avx512

        kernels.append(pytest.param(_fast_avx512, id="avx512"))
    return kernels


@pytest.fixture(params=compiled_kernels())
def kernel(request, monkeypatch):
    """Run the estimators with each compiled kernel this processor can run."""
    monkeypatch.setattr(sklearn_svi.lda._local_step, "_kernel", request.param)
    return request.param


def symmetric_start(words, counts, n_topics, alpha):
    """gamma_dk = alpha + n_d / K, the start of inference outside the updates."""
    return np.full(n_topics, alpha + counts.sum() / n_topics)


def reference_local_step(X, topic_word, alpha, max_iter, tol, start=symmetric_start):
    """Per-document fixed point of Hoffman et al. (2013), Fig. 6, in numpy.

    Each document starts from ``start(words, counts, n_topics, alpha)``.
    Returns gamma and the summed statistic sum_d n_dw phi_dwk (K x V).
    """
    eps = np.finfo(topic_word.dtype).eps
    n_topics = topic_word.shape[0]
    exp_beta = np.exp(digamma(topic_word) - digamma(topic_word.sum(axis=1))[:, None])
    gammas = np.empty((X.shape[0], n_topics))
    statistic = np.zeros(topic_word.shape)
    for d in range(X.shape[0]):
        words = X.indices[X.indptr[d] : X.indptr[d + 1]]
        counts = X.data[X.indptr[d] : X.indptr[d + 1]]
        beta_d = exp_beta[:, words]
        gamma = start(words, counts, n_topics, alpha)
        for _ in range(max_iter):
            theta = np.exp(digamma(gamma) - digamma(gamma.sum()))
            ratio = counts / (theta @ beta_d + eps)
            updated = alpha + theta * (beta_d @ ratio)
            change = np.mean(np.abs(updated - gamma))
            gamma = updated
            if change < tol:
                break
        theta = np.exp(digamma(gamma) - digamma(gamma.sum()))
        ratio = counts / (theta @ beta_d + eps)
        statistic[:, words] += np.outer(theta, ratio) * beta_d
        gammas[d] = gamma
    return gammas, statistic


def reference_collapsed_step(
    X, topic_word, alpha, max_iter, tol, start=symmetric_start
):
    """Per-document collapsed (CVB0) fixed point, in numpy.

    Each word's responsibilities are proportional to E[beta_kw] times the
    document's topic counts without one of its tokens, plus alpha; words
    are updated one after the other, for at most ``max_iter`` sweeps (or
    ``max_iter(n_d)`` for a document of n_d tokens, if it is callable).
    Returns gamma = alpha + N_d and the summed statistic sum_d n_dw phi_dwk
    (K x V).
    """
    n_topics = topic_word.shape[0]
    mean_beta = topic_word / topic_word.sum(axis=1, keepdims=True)
    gammas = np.empty((X.shape[0], n_topics))
    statistic = np.zeros(topic_word.shape)
    for d in range(X.shape[0]):
        words = X.indices[X.indptr[d] : X.indptr[d + 1]]
        counts = X.data[X.indptr[d] : X.indptr[d + 1]]
        beta_d = mean_beta[:, words].T
        phi = beta_d * start(words, counts, n_topics, alpha)
        phi /= phi.sum(axis=1, keepdims=True)
        topic_counts = counts @ phi
        sweeps = max_iter(counts.sum()) if callable(max_iter) else max_iter
        for _ in range(sweeps):
            previous = topic_counts.copy()
            for j, count in enumerate(counts):
                without = np.maximum(topic_counts - min(count, 1.0) * phi[j], 0.0)
                updated = beta_d[j] * (without + alpha)
                updated /= updated.sum()
                topic_counts += count * (updated - phi[j])
                phi[j] = updated
            if np.mean(np.abs(topic_counts - previous)) < tol:
                break
        statistic[:, words] += (counts[:, None] * phi).T
        gammas[d] = alpha + topic_counts
    return gammas, statistic


def update_start(model, kernel, draw=7):
    """The start of each document in the update numbered ``draw``, as a
    ``start`` of the reference local steps."""

    def start(words, counts, n_topics, alpha):
        return kernel.document_start(
            model._start_key(draw),
            words.astype(np.intp),
            counts.astype(np.float64),
            np.full(n_topics, alpha),
            start_spread(model.local_step != "vb"),
        )

    return start


def test_each_draw_of_a_fit_has_its_own_start_key():
    model = SmoothedLDA(n_components=3, random_state=0).partial_fit(np.ones((4, 5)))
    draws = range(-2000, 2001)
    keys = [model._start_key(draw) for draw in draws]
    assert len(set(keys)) == len(keys)
    assert all(0 <= key < 2**64 for key in keys)
    assert keys == [model._start_key(draw) for draw in draws]
    other = SmoothedLDA(n_components=3, random_state=1).partial_fit(np.ones((4, 5)))
    assert not set(keys) & {other._start_key(draw) for draw in draws}


def update_statistic(model, X, draw=7):
    """sum_d n_dw phi_dwk of the update numbered ``draw``, as a K x V array."""
    statistic = model._local_statistic(model._prepare_minibatch(X), draw=draw)
    dense = np.zeros_like(model.components_)
    dense[:, statistic.rows] = statistic.block.T * X.shape[0]
    return dense


def fitted_model(X, dtype=np.float64, **params):
    model = SmoothedLDA(
        n_components=4, max_iter=2, batch_size=64, random_state=0, **params
    )
    return model.fit(X.astype(dtype))


@pytest.mark.parametrize("tol, max_iter", [(1e-3, 100), (1e-10, 1000), (0.0, 3)])
def test_local_step_matches_reference(planted_corpus, kernel, tol, max_iter):
    X = planted_corpus[0].astype(np.float64)
    model = fitted_model(
        X, local_step="vb", max_doc_update_iter=max_iter, mean_change_tol=tol
    )
    alpha = model.doc_topic_prior or 1 / model.n_components
    gamma_ref = reference_local_step(X, model.components_, alpha, max_iter, tol)[0]
    local = model._infer(X)
    assert_allclose(local.doc_topic, gamma_ref, rtol=1e-8)

    # In an update each document starts from its own random gamma.
    statistic_ref = reference_local_step(
        X, model.components_, alpha, max_iter, tol, start=update_start(model, kernel)
    )[1]
    assert_allclose(update_statistic(model, X), statistic_ref, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 0.4])
@pytest.mark.parametrize("tol, max_iter", [(1e-3, 100), (0.0, 3)])
def test_collapsed_step_matches_reference(planted_corpus, kernel, tol, max_iter, scale):
    # A scale below one makes every count fractional: then less than one
    # token is left out.
    X = planted_corpus[0].astype(np.float64) * scale
    model = fitted_model(
        X, local_step="cvb0", max_doc_update_iter=max_iter, mean_change_tol=tol
    )
    alpha = 1 / model.n_components
    gamma_ref = reference_collapsed_step(X, model.components_, alpha, max_iter, tol)[0]
    assert_allclose(model._infer(X).doc_topic, gamma_ref, rtol=1e-9)
    assert_allclose(
        model.transform(X), gamma_ref / gamma_ref.sum(axis=1, keepdims=True)
    )

    statistic_ref = reference_collapsed_step(
        X, model.components_, alpha, max_iter, tol, start=update_start(model, kernel)
    )[1]
    assert_allclose(update_statistic(model, X), statistic_ref, rtol=1e-9, atol=1e-12)


def test_auto_sweeps_of_the_updates_grow_with_document_length(planted_corpus, kernel):
    # max_doc_update_iter="auto": in the updates, one sweep below 64 tokens
    # and one more per doubling; outside them, up to 100 sweeps.
    # A third of the documents, as they are and 8 and 40 times as long: the
    # reference step in Python takes as long as their tokens.
    X = planted_corpus[0][:200].astype(np.float64)
    X = sp.vstack([X, 8 * X, 40 * X]).tocsr()
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert lengths.min() < 64 and lengths.max() >= 512
    model = fitted_model(X, local_step="cvb0")
    alpha = 1 / model.n_components

    def sweep_limit(length):
        return 1 + int(np.floor(np.log2(max(length, 32.0) / 32.0)))

    statistic = update_statistic(model, X)
    start = update_start(model, kernel)
    limited = reference_collapsed_step(
        X, model.components_, alpha, sweep_limit, 1e-3, start=start
    )[1]
    assert_allclose(statistic, limited, rtol=1e-9, atol=1e-12)
    converged = reference_collapsed_step(
        X, model.components_, alpha, 100, 1e-3, start=start
    )[1]
    assert not np.allclose(statistic, converged, rtol=1e-6)

    gamma = reference_collapsed_step(X, model.components_, alpha, 100, 1e-3)[0]
    assert_allclose(model._infer(X).doc_topic, gamma, rtol=1e-9)


def test_collapsed_step_leaves_out_the_words_own_token():
    # One topic holds word 0 alone, the other spreads over words 0 and 1.
    # A document of one token of word 0: counted with its own token, the
    # first topic would take nearly all of it; left out, the document's
    # counts are zero and the word's responsibilities are those of
    # E[beta] and the symmetric prior alone.
    topic_word = np.array([[9.0, 1e-6], [5.0, 5.0]])
    model = SmoothedLDA(n_components=2, local_step="cvb0", random_state=0)
    model.fit(sp.csr_matrix(np.array([[1.0, 1.0]])))
    model._natural = np.ascontiguousarray(topic_word.T)
    model._topic_totals = topic_word.sum(axis=1)
    gamma = model._infer(sp.csr_matrix(np.array([[1.0, 0.0]]))).doc_topic[0]
    mean_beta = topic_word[:, 0] / topic_word.sum(axis=1)
    assert_allclose(gamma - 0.5, mean_beta / mean_beta.sum(), rtol=1e-12)


def exact_topic_counts(words, topic_word, alpha):
    """The posterior mean of a document's topic counts given the topics
    E[beta] of ``topic_word``, with theta integrated out, by enumerating
    every assignment of its tokens (one per entry of ``words``)."""
    n_topics = topic_word.shape[0]
    mean_beta = topic_word / topic_word.sum(axis=1, keepdims=True)
    total, weighted = 0.0, np.zeros(n_topics)
    for topics in itertools.product(range(n_topics), repeat=len(words)):
        counts = np.bincount(topics, minlength=n_topics)
        # p(z) = prod_k Gamma(alpha + N_k) / Gamma(alpha), up to a constant.
        weight = np.exp(np.sum(gammaln(alpha + counts) - gammaln(alpha)))
        weight *= np.prod(mean_beta[list(topics), words])
        total += weight
        weighted += weight * counts
    return weighted / total


def test_sampled_step_averages_to_the_posterior_topic_counts(kernel):
    # Three topics that share words, and a document of four tokens whose
    # posterior is spread over them: the mean of the kept sweeps'
    # conditional distributions estimates the posterior mean of the
    # document's topic counts, computed by enumerating all 81 assignments.
    # One update's estimate varies by about 0.04 here; the mean of 100
    # updates' by 0.004.
    topic_word = np.array(
        [[6.0, 3.0, 1.0, 0.5], [1.0, 4.0, 4.0, 1.0], [0.5, 1.0, 3.0, 6.0]]
    )
    words = np.array([0, 1, 1, 3])
    alpha = 0.3
    model = SmoothedLDA(
        n_components=3,
        doc_topic_prior=alpha,
        local_step="gibbs",
        max_doc_update_iter=2000,
        random_state=0,
    )
    model.fit(sp.csr_matrix(np.ones((1, 4))))
    model._natural = np.ascontiguousarray(topic_word.T)
    model._topic_totals = topic_word.sum(axis=1)
    document = sp.csr_matrix(np.bincount(words, minlength=4)[np.newaxis].astype(float))
    estimates = [
        update_statistic(model, document, draw=draw).sum(axis=1) for draw in range(100)
    ]
    expected = exact_topic_counts(words, topic_word, alpha)
    assert_allclose(np.mean(estimates, axis=0), expected, atol=0.015)
    # Far from the CVB0 fixed point's counts on this document.
    cvb0 = reference_collapsed_step(document, topic_word, alpha, 1000, 1e-12)[0][0]
    assert np.abs(cvb0 - alpha - expected).max() > 0.05


@pytest.mark.parametrize("scale", [1.0, 0.4, 2.7])
def test_sampled_step_keeps_every_count(planted_corpus, kernel, scale):
    # Each word's tokens (the last one weighing the fraction of a
    # fractional count) add up to its count in the statistic, and the
    # documents' topic counts to their lengths.
    X = planted_corpus[0].astype(np.float64) * scale
    model = fitted_model(X, local_step="gibbs")
    statistic = update_statistic(model, X)
    assert_allclose(statistic.sum(axis=0), np.asarray(X.sum(axis=0)).ravel())
    local = model._fit_documents(
        model._prepare_minibatch(X),
        start_key=model._start_key(3),
        index_words=True,
        sample_counts=True,
    )
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert_allclose(local.doc_topic.sum(axis=1) - 1.0, lengths)
    # The assignments of the last sweep, whole tokens for whole counts.
    assert_allclose(local.sampled_counts.sum(axis=1), lengths)
    if scale == 1.0:
        assert_array_equal(local.sampled_counts, np.round(local.sampled_counts))


@pytest.mark.parametrize("scale, dtype", [(1.0, np.float64), (0.6, np.float32)])
def test_sparse_responsibilities_give_the_dense_statistic(
    kernel, monkeypatch, scale, dtype
):
    # At 80 topics (four sweeps) the sampled documents of up to 15 tokens
    # keep their responsibilities on the topics they hold; the longer ones,
    # whose later sweeps may draw over every topic, and the CVB0 documents
    # write every topic. The same draws with every document written densely
    # give the same statistic, weighted or not.
    X, _, _ = make_lda_corpus(
        n_documents=300,
        n_features=200,
        n_topics=5,
        mean_document_length=6,
        random_state=0,
    )
    X = (X * scale).astype(dtype)
    X[:20] = X[:20] * 20
    X[20:40] = X[20:40] * 6
    model = SmoothedLDA(n_components=80, batch_size=100, max_iter=2, random_state=0)
    model.fit(X)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])

    def statistics():
        documents = model._prepare_minibatch(X)
        return [
            dense_statistic(
                model._local_statistic(documents, sample_weight=w, draw=3),
                model._natural.shape,
            )
            for w in (None, weights)
        ]

    local = model._fit_documents(
        model._prepare_minibatch(X), start_key=model._start_key(3), index_words=True
    )
    n_slots = np.diff(local.sparse.slot_offset)
    assert 0 < np.count_nonzero(n_slots) < X.shape[0]
    # Sampled documents without slots of their own among them.
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert np.any(
        (n_slots == 0) & (lengths < sklearn_svi.lda._model.SAMPLE_BELOW["auto"])
    )
    sparse = statistics()
    allocate = sklearn_svi.lda._local_step._SparseResponsibility.allocate.__func__
    monkeypatch.setattr(
        sklearn_svi.lda._local_step._SparseResponsibility,
        "allocate",
        classmethod(
            lambda cls, documents, sample_below, sweeps, prior: allocate(
                cls, documents, 0.0, sweeps, prior
            )
        ),
    )
    dense = statistics()
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for got, expected in zip(sparse, dense):
        assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())
    # Every token counted once.
    assert_allclose(
        sparse[0].sum(axis=1) * X.shape[0],
        np.asarray(X.sum(axis=0)).ravel(),
        rtol=rtol,
    )


def test_sparse_responsibilities_do_not_depend_on_n_jobs(all_work_shared):
    # At 16 topics (four sweeps) the documents of up to 3 tokens are kept
    # sparsely, in a fit on one thread and on two, which share the documents
    # of every minibatch. The 40 documents of 24 words drawn at random can
    # hold every topic, and switch to draws over all topics once they have
    # held a quarter of them.
    X, _, _ = make_lda_corpus(
        n_documents=360,
        n_features=200,
        n_topics=5,
        mean_document_length=3,
        random_state=0,
    )
    rng = np.random.default_rng(0)
    spread = np.zeros((40, X.shape[1]))
    for row in spread:
        row[rng.choice(X.shape[1], 24, replace=False)] = 1.0
    X = sp.vstack([sp.csr_matrix(spread), X.astype(np.float64)], format="csr")
    n_topics = 16
    fits = [
        SmoothedLDA(
            n_components=n_topics,
            batch_size=100,
            max_iter=2,
            random_state=0,
            n_jobs=n_jobs,
        ).fit(X)
        for n_jobs in (1, 2)
    ]
    assert_array_equal(fits[0].components_, fits[1].components_)
    local = fits[1]._fit_documents(
        fits[1]._prepare_minibatch(X),
        start_key=fits[1]._start_key(3),
        index_words=True,
        sample_counts=True,
    )
    # Both kinds of document are there: some kept sparsely, and some whose
    # last sweep alone holds more than a quarter of the topics.
    assert 0 < np.count_nonzero(np.diff(local.sparse.slot_offset)) < X.shape[0]
    n_held = np.count_nonzero(local.sampled_counts[:40], axis=1)
    assert np.any(n_held > n_topics / 4)


def test_the_documents_of_every_minibatch_go_to_a_team_of_n_jobs_threads(
    planted_corpus, monkeypatch
):
    local_step = sklearn_svi.lda._local_step
    kernel = local_step._kernel
    teams = []

    class RecordingKernel:
        def __getattr__(self, name):
            return getattr(kernel, name)

        def infer_documents(self, *arguments):
            teams.append(arguments[-1])
            return kernel.infer_documents(*arguments)

    monkeypatch.setattr(local_step, "_kernel", RecordingKernel())
    X = planted_corpus[0]
    for n_jobs in (1, 2):
        teams.clear()
        SmoothedLDA(n_components=4, batch_size=5, n_jobs=n_jobs).partial_fit(X[:20])
        assert teams == [n_jobs] * 4


def test_documents_claimed_around_the_run_length_do_not_depend_on_n_jobs():
    # The threads of a team claim documents of 32 distinct words or more one
    # at a time, longest first (ties in their own order), and the shorter
    # ones in runs of neighbours. Minibatches of 50 documents: the first has
    # no long document, the second one of 32 words, the third long ones of
    # 31, 32, 32, 33 and 40 words among short ones.
    X, _, _ = make_lda_corpus(
        n_documents=150,
        n_features=120,
        n_topics=4,
        mean_document_length=3,
        random_state=0,
    )
    X = X.astype(np.float64).tolil()
    rng = np.random.default_rng(0)
    long_rows = [(60, 32), (101, 31), (110, 32), (115, 40), (120, 32), (149, 33)]
    for row, n_words in long_rows:
        X[row] = 0.0
        X[row, rng.choice(X.shape[1], n_words, replace=False)] = rng.integers(
            1, 3, n_words
        )
    X = X.tocsr()
    lengths = np.diff(X.indptr)
    assert np.count_nonzero(lengths[:50] >= 32) == 0
    assert np.count_nonzero(lengths[50:100] >= 32) == 1
    assert sorted(lengths[100:][lengths[100:] >= 31]) == [31, 32, 32, 33, 40]
    fits = []
    for n_jobs in (1, 2, 3):
        model = SmoothedLDA(
            n_components=8, batch_size=50, random_state=0, n_jobs=n_jobs
        )
        model.partial_fit(X).partial_fit(X)
        fits.append((model.components_, model.transform(X)))
    for components, proportions in fits[1:]:
        assert_array_equal(components, fits[0][0])
        assert_array_equal(proportions, fits[0][1])


def test_sampled_step_samples_in_the_updates_only(planted_corpus):
    # transform is deterministic: the CVB0 fixed point at the same topics.
    X = planted_corpus[0].astype(np.float64)
    sampled = fitted_model(X, local_step="gibbs")
    collapsed = fitted_model(X, local_step="cvb0")
    assert not np.allclose(sampled.components_, collapsed.components_)
    collapsed._natural = sampled._natural
    collapsed._topic_totals = sampled._topic_totals
    assert_array_equal(sampled.transform(X), collapsed.transform(X))
    assert sampled.score(X) == collapsed.score(X)


def test_score_is_the_mean_field_bound_for_either_step(planted_corpus):
    X = planted_corpus[0].astype(np.float64)
    collapsed = fitted_model(X, local_step="cvb0")
    mean_field = fitted_model(X, local_step="vb")
    mean_field._natural = collapsed._natural
    mean_field._topic_totals = collapsed._topic_totals
    assert collapsed.score(X) == mean_field.score(X)
    assert collapsed.perplexity(X) == mean_field.perplexity(X)
    assert not np.allclose(collapsed.transform(X), mean_field.transform(X))


@pytest.mark.parametrize("local_step", ["vb", "cvb0"])
def test_local_step_float32_close_to_float64(planted_corpus, kernel, local_step):
    X = planted_corpus[0]
    model = fitted_model(X, mean_change_tol=1e-6, local_step=local_step)
    gamma64 = model._infer(X.astype(np.float64)).doc_topic
    model32 = fitted_model(X, mean_change_tol=1e-6, local_step=local_step)
    model32._natural = model._natural.astype(np.float32)
    local32 = model32._infer(X.astype(np.float32))
    assert local32.doc_topic.dtype == np.float32
    # A document whose fixed point converges slowly stops at a slightly
    # different iterate in float32 (a gamma_dk below one differed by up to
    # 0.021, 6%, among the fits of several orders), while the proportions
    # that transform returns agree to about 1e-4 (4e-4 on that document).
    assert_allclose(local32.doc_topic, gamma64, rtol=1e-2, atol=3e-2)
    assert_allclose(
        local32.doc_topic / local32.doc_topic.sum(axis=1, keepdims=True),
        gamma64 / gamma64.sum(axis=1, keepdims=True),
        atol=5e-4,
    )


def test_fast_exp_accuracy(kernel):
    rng = np.random.default_rng(0)
    a = np.concatenate([np.linspace(-708, 709, 20001), rng.uniform(-60, 5, 20000)])
    computed = np.array([kernel.fast_exp(value) for value in a])
    assert_allclose(computed, np.exp(a), rtol=4e-16, atol=0)
    # Arguments beyond the range are clamped to it, never inf, NaN or 0.
    assert kernel.fast_exp(-1e4) == kernel.fast_exp(-708.0) > 0
    assert kernel.fast_exp(1e4) == kernel.fast_exp(709.0) < np.inf


def test_exp_digamma_accuracy(kernel):
    x = np.logspace(-2, 6, 2000)
    computed = np.array([kernel.exp_digamma(value) for value in x])
    assert_allclose(computed, np.exp(digamma(x)), rtol=1e-11)


@pytest.mark.parametrize("local_step", ["vb", "cvb0", "gibbs"])
@pytest.mark.parametrize("all_shared", [False, True])
def test_results_do_not_depend_on_n_jobs(
    planted_corpus, kernel, local_step, all_shared, request
):
    if all_shared:
        request.getfixturevalue("all_work_shared")
    X = planted_corpus[0]
    reference = fitted_model(X, n_jobs=1, local_step=local_step)
    for n_jobs in (2, 3, -1):
        other = fitted_model(X, n_jobs=n_jobs, local_step=local_step)
        assert_array_equal(other.components_, reference.components_)
        assert_array_equal(other.transform(X), reference.transform(X))


def test_bound_matches_scikit_learn_formula(planted_corpus):
    """score is scikit-learn's approximate bound at the same gamma and lambda."""
    X = planted_corpus[0].astype(np.float64)
    model = fitted_model(X, local_step="vb")
    gamma = model._infer(X).doc_topic
    sklearn_lda = LatentDirichletAllocation(n_components=4)
    sklearn_lda.components_ = model.components_
    sklearn_lda.exp_dirichlet_component_ = model.exp_dirichlet_component_
    sklearn_lda.doc_topic_prior_ = sklearn_lda.topic_word_prior_ = 1 / 4
    expected = sklearn_lda._approx_bound(X, gamma, sub_sampling=False)
    assert_allclose(model.score(X), expected, rtol=1e-10)
    n_words = X.sum()
    assert_allclose(model.perplexity(X), np.exp(-expected / n_words), rtol=1e-10)


def test_empty_documents_get_prior_proportions(planted_corpus, kernel):
    X = planted_corpus[0]
    model = fitted_model(X)
    X_with_empty = sp.vstack([X[:3], sp.csr_matrix((2, X.shape[1]), dtype=X.dtype)])
    proportions = model.transform(X_with_empty)
    assert_allclose(proportions[3:], 1 / model.n_components)
    assert np.all(np.isfinite(proportions))
    assert np.isfinite(model.score(X_with_empty))
    # Empty documents in training are valid too and leave lambda finite.
    model.partial_fit(X_with_empty)
    assert np.all(np.isfinite(model.components_))


def test_the_fastest_kernel_this_processor_runs_is_used():
    from sklearn_svi.lda._local_step import _select_kernel

    if _fast.cpu_has_avx512():
        assert _select_kernel().__name__ == "sklearn_svi.lda._fast_avx512"
    elif _fast.cpu_has_avx2_fma():
        assert _select_kernel().__name__ == "sklearn_svi.lda._fast_avx2"
    else:
        assert _select_kernel() is _fast


def test_float_mode_of_the_calling_thread_is_restored(planted_corpus, kernel):
    # The kernels flush subnormal float32 products to zero while they run
    # (subnormal arithmetic is two orders of magnitude slower); the caller's
    # floating-point mode must be the same afterwards.
    smallest_normal = np.finfo(np.float32).tiny
    assert np.float32(smallest_normal) / np.float32(4) > 0
    fitted_model(planted_corpus[0], dtype=np.float32)
    assert np.float32(smallest_normal) / np.float32(4) > 0


def test_words_of_documents_is_the_transpose(kernel):
    rng = np.random.default_rng(0)
    X = sp.random(30, 12, density=0.3, format="csr", random_state=rng)
    X.data[:] = np.arange(1, X.nnz + 1)
    indptr = X.indptr.astype(np.intp)
    indices = X.indices.astype(np.intp)
    word_indptr, documents, positions = kernel.words_of_documents(indptr, indices, 12)
    by_word = X.tocsc()
    by_word.sort_indices()
    assert_array_equal(word_indptr, by_word.indptr)
    assert_array_equal(documents, by_word.indices)
    assert_array_equal(X.data[positions], by_word.data)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compact_rows_cuts_the_rows_and_renumbers_their_words(
    kernel, index_dtype, dtype
):
    X = sp.random(30, 20, density=0.15, format="csr", random_state=0, dtype=dtype)
    X.indptr = X.indptr.astype(index_dtype)
    X.indices = X.indices.astype(index_dtype)
    rows = np.array([7, 2, 29, 2, 11, 0], dtype=np.intp)
    words, indptr, renumbered, counts = kernel.compact_rows(
        X.indptr, X.indices, X.data, rows, 20
    )
    expected = X[rows]
    expected_words, expected_renumbered = np.unique(
        expected.indices, return_inverse=True
    )
    assert_array_equal(words, expected_words)
    assert_array_equal(indptr, expected.indptr)
    assert_array_equal(renumbered, expected_renumbered)
    assert counts.dtype == dtype
    assert_array_equal(counts, expected.data)
    empty = kernel.compact_rows(
        X.indptr, X.indices, X.data, np.empty(0, dtype=np.intp), 20
    )
    assert [part.size for part in empty] == [0, 1, 0, 0]


@pytest.mark.parametrize("collapsed", [False, True])
def test_document_start_is_log_normal_around_the_fixed_points_mass(kernel, collapsed):
    # log(gamma_dk / (alpha + n_d / K)) / spread must be standard
    # normal values, independent across topics, documents and keys.
    spread = start_spread(collapsed)
    rng = np.random.default_rng(0)
    n_topics, alpha = 50, 0.02
    draws = []
    for key in (0, 1, 2**63 + 5):
        for _ in range(400):
            words = np.sort(rng.choice(1000, size=rng.integers(1, 20), replace=False))
            counts = rng.integers(1, 4, size=words.size).astype(np.float64)
            gamma = kernel.document_start(
                key, words, counts, np.full(n_topics, alpha), spread
            )
            mass = alpha + counts.sum() / n_topics
            draws.append(np.log(gamma / mass) / spread)
    z = np.array(draws)
    assert abs(z.mean()) < 5 / np.sqrt(z.size)
    assert abs(z.std() - 1) < 0.02
    assert stats.kstest(z.ravel(), "norm").pvalue > 1e-3
    # Neighbouring topics (Box-Muller pairs and across pairs) and
    # consecutive documents are uncorrelated.
    for first, second in [(z[:, 0::2], z[:, 1::2]), (z[:, 1:-1:2], z[:, 2::2])]:
        assert abs(np.corrcoef(first.ravel(), second.ravel())[0, 1]) < 0.03
    assert abs(np.corrcoef(z[:-1].ravel(), z[1:].ravel())[0, 1]) < 0.03


def test_document_start_depends_on_key_and_document_only(kernel):
    words = np.array([3, 17, 40])
    counts = np.array([1.0, 2.0, 1.0])

    def start(key, words=words, counts=counts):
        return kernel.document_start(
            key, words, counts, np.full(8, 0.1), start_spread(collapsed=True)
        )

    assert_array_equal(start(5), start(5))
    assert not np.allclose(start(5), start(6))
    assert not np.allclose(start(5), start(5, words=np.array([3, 17, 41])))
    assert not np.allclose(start(5), start(5, counts=np.array([1.0, 1.0, 2.0])))


@pytest.mark.parametrize("local_step", ["cvb0", "gibbs"])
def test_update_statistic_of_a_document_does_not_depend_on_its_minibatch(
    planted_corpus, kernel, local_step
):
    # The start, and the sampled step's draws, come from the document's own
    # stream, so a document's share of the statistic is the same alone and
    # among others.
    X = planted_corpus[0][:50].astype(np.float64)
    assert_statistic_sums_each_documents(fitted_model(X, local_step=local_step), X)


def mixed_length_documents():
    """60 documents of every kind at 40 topics, in turn: up to 7 tokens, kept
    sparsely; longer sampled ones, written densely; and those of 64 tokens
    or more, which take the CVB0 fixed point."""
    X, _, _ = make_lda_corpus(
        n_documents=60,
        n_features=200,
        n_topics=5,
        mean_document_length=4,
        random_state=0,
    )
    X = X.astype(np.float64)
    X[1::3] = X[1::3] * 6
    X[2::6] = X[2::6] * 20
    lengths = np.asarray(X.sum(axis=1)).ravel()
    capacity = lengths * (SAMPLED_SWEEPS + 1)
    assert np.any(capacity < 40)
    assert np.any((capacity >= 40) & (lengths < SAMPLE_BELOW["auto"]))
    assert np.any(lengths >= SAMPLE_BELOW["auto"])
    model = SmoothedLDA(n_components=40, batch_size=20, max_iter=1, random_state=0)
    return model.fit(X), X


def test_statistic_of_a_document_does_not_depend_on_its_neighbours():
    # Each kind of document follows the others on the same thread, which
    # must leave it nothing of its own.
    assert_statistic_sums_each_documents(*mixed_length_documents())


def test_collapsed_step_may_leave_gamma_unwritten():
    model, X = mixed_length_documents()
    fits = [
        model._fit_documents(
            model._prepare_minibatch(X),
            start_key=model._start_key(3),
            index_words=True,
            with_doc_topic=with_doc_topic,
        )
        for with_doc_topic in (True, False)
    ]
    assert fits[0].doc_topic.shape == (X.shape[0], 40)
    assert fits[1].doc_topic is None
    statistics = [minibatch_statistic(local).block for local in fits]
    assert_array_equal(statistics[0], statistics[1])
    # The mean-field step works on gamma and keeps it.
    mean_field = model._fit_documents(
        model._prepare_minibatch(X), collapsed=False, with_doc_topic=False
    )
    assert mean_field.doc_topic.shape == (X.shape[0], 40)


def assert_statistic_sums_each_documents(model, X):
    """The update statistic of the documents X together is the mean of each
    one's alone."""
    together = model._local_statistic(model._prepare_minibatch(X), draw=3)
    alone = sum(
        dense_statistic(
            model._local_statistic(model._prepare_minibatch(X[[d]]), draw=3),
            model._natural.shape,
        )
        for d in range(X.shape[0])
    )
    assert_allclose(
        dense_statistic(together, model._natural.shape) * X.shape[0],
        alone,
        rtol=1e-10,
        atol=1e-14,
    )


def dense_statistic(statistic, shape):
    values = np.zeros(shape)
    values[statistic.rows] = statistic.block
    return values


def short_documents():
    """12,000 six-word documents of 20 topics: 10,800 to train on and the
    completion of the rest."""
    X, _, _ = make_lda_corpus(
        n_documents=12000,
        n_features=1000,
        n_topics=20,
        mean_document_length=6,
        doc_topic_prior=0.05,
        topic_word_prior=0.02,
        random_state=0,
    )
    completion = split_tokens(X[10800:], random_state=np.random.default_rng(0))
    return X[:10800], completion


def test_random_starts_let_short_documents_form_topics():
    # From the symmetric start, the short documents of the first minibatches
    # spread evenly over topics that are still alike, and the topics stay
    # alike: one pass over 6-word documents predicted held-out words at
    # -6.11 to -6.25 nats per word (3 seeds), against -5.91 to -6.00 with
    # random starts, with scikit-learn's schedule (kappa = 0.7; the default
    # 0.6 gave -6.03 to -6.13 here).
    X_train, completion = short_documents()
    for seed in range(3):
        model = SmoothedLDA(
            n_components=20,
            L=1,
            local_step="vb",
            batch_size=128,
            max_iter=1,
            learning_decay=0.7,
            random_state=seed,
        ).fit(X_train)
        assert log_predictive(model, *completion) > -6.05


def test_collapsed_step_predicts_short_documents_better():
    # Six-word documents: with the mean-field step one pass of plain SVI
    # predicted held-out words at -6.03 to -6.13 nats per word (3 seeds),
    # with the collapsed step at -5.41 to -5.44: its single sweep from a
    # start spread by exp(2 z) costs these documents drawn from LDA itself
    # about 0.2 in the first pass (-5.19 to -5.27 swept to convergence),
    # where on real short texts it gained (see the user guide).
    X_train, completion = short_documents()
    for seed in range(3):
        scores = {
            local_step: log_predictive(
                SmoothedLDA(
                    n_components=20,
                    L=1,
                    local_step=local_step,
                    batch_size=128,
                    max_iter=1,
                    random_state=seed,
                ).fit(X_train),
                *completion,
            )
            for local_step in ("vb", "cvb0")
        }
        assert scores["cvb0"] > scores["vb"] + 0.3
