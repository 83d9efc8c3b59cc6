# The one driver of the local step: the threads of an OpenMP team claim
# documents one at a time, and each document is fitted by the mean-field or
# the collapsed fixed point, or by collapsed Gibbs sweeps.


def infer_documents(
    bint collapsed,
    double sample_below,
    Py_ssize_t sampled_sweeps,
    const floating[:, ::1] word_topic,
    const Py_ssize_t[::1] words,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] indices,
    const floating[::1] counts,
    floating[:, ::1] doc_topic,
    floating[:, ::1] exp_doc_topic,
    floating[::1] count_ratio,
    floating[:, ::1] responsibility,
    floating[:, ::1] sampled_counts,
    const double[:, ::1] draw_tables,
    const Py_ssize_t[::1] slot_offset,
    const Py_ssize_t[::1] value_offset,
    int[::1] slot_topics,
    floating[::1] slot_values,
    floating[::1] smoothing_share,
    const floating[::1] doc_topic_prior,
    Py_ssize_t max_iter,
    double mean_change_tol,
    double doubling_length,
    double start_spread,
    unsigned long long start_key,
    Py_ssize_t n_threads,
):
    """Run the local step on the documents that the threads of a team claim.

    The ``n_threads`` threads of an OpenMP team, the calling one among them,
    each claim the next run of documents not yet taken by atomically
    incrementing a shared counter, until all are done (``_infer_claimed``):
    the long documents one by one, the longest first, so that no thread is
    left alone with a long one at the end, and then the short ones in runs
    of neighbours, whose outputs are neighbours too (``_claim_order``). A
    slow thread thus takes fewer documents, and a document's result does
    not depend on which thread computes it. A team's threads wait for work
    spinning for a while before they sleep, so that handing documents to
    them costs microseconds, where a Python thread pool's hand-over costs a
    wake-up and two passes of the GIL.

    The mean-field step iterates gamma_d to its fixed point (Hoffman et al.
    2013, Fig. 6). The collapsed (CVB0) step gives each word w of document d
    topic responsibilities phi_dwk; with the document's expected topic
    counts N_dk = sum_w n_dw phi_dwk, a sweep over the words sets, one word
    after the other,

        phi_dwk  proportional to  E[beta_kw] (N_dk - c phi_dwk + alpha_k),

    where c = min(n_dw, 1): the counts of the document without one token of
    w, as in the zero-order collapsed variational update (Asuncion et al.
    2009; Foulds et al. 2013, with the topics' expected counts given by
    lambda). Sweeps stop when the mean absolute change of N_d over a sweep,
    which is that of gamma = alpha + N_d, is below ``mean_change_tol``; the
    document starts from phi_dwk proportional to E[beta_kw] g_k, with g the
    start of the mean-field step.

    The sampled step, which the collapsed step takes for documents below
    ``sample_below`` tokens, runs ``sampled_sweeps`` collapsed Gibbs sweeps
    over the document's tokens from assignments drawn with probability
    proportional to E[beta_kw] g_k, with the same weights E[beta_kw] as the
    CVB0 step; phi_dw is the mean of the conditional distributions of w's
    tokens over the sweeps after the first half, which burn in
    (``_sampled_chain``). A sampled document with slots in ``slot_offset``
    keeps its responsibilities sparsely there (``_write_sparse``), and its
    gamma is alpha plus the topic counts of its last sweep; the others
    write them to ``responsibility``.

    Parameters
    ----------
    collapsed : bool
        The collapsed step, or the mean-field one.
    sample_below : float
        With ``collapsed``, documents of fewer tokens than this get the
        sampled step instead of the CVB0 fixed point: 0 for none, infinity
        for all.
    sampled_sweeps : int
        The sweeps of the sampled step, at least one.
    word_topic : ndarray of shape (n_words, n_topics)
        For the words present in the minibatch, one row per word: exp
        E[log beta] for the mean-field step, E[beta] for the collapsed one.
    words : ndarray of shape (n_words,)
        The vocabulary index of each row of ``word_topic``.
    indptr, indices, counts : ndarray
        CSR representation of the minibatch; ``indices`` index the rows of
        ``word_topic``.
    doc_topic : ndarray of shape (n_documents, n_topics) or (0, n_topics)
        Output: gamma at each document's fixed point (alpha + N_d for the
        collapsed step, which may be given no rows to leave it unwritten).
    exp_doc_topic : ndarray of shape (n_documents, n_topics)
        Output of the mean-field step: exp E[log theta] at the final gamma.
        No rows for the collapsed step.
    count_ratio : ndarray of shape (nnz,)
        Output of the mean-field step: n_dw / norm_dw at the final gamma,
        aligned with ``counts``. Empty for the collapsed step.
    responsibility : ndarray of shape (nnz, n_topics) or (0, n_topics)
        Output of the collapsed step, unless it has no rows: n_dw phi_dwk,
        aligned with ``counts``.
    sampled_counts : ndarray of shape (n_documents, n_topics) or (0, n_topics)
        Output of the collapsed step, unless it has no rows: each document's
        topic counts with every token's topic drawn from its final
        responsibilities (``_sample_topic_counts``); for the sampled step,
        the counts of its last sweep.
    draw_tables : ndarray of shape (n_words, 2 * n_blocks)
        For the sampled step, each word's running sums of E[beta_kw] and
        alpha_k E[beta_kw] by blocks of topics (``draw_tables``); no rows
        without it.
    slot_offset, value_offset : ndarray of shape (n_documents + 1,) or (0,)
        Where each document keeps its responsibilities sparsely
        (``sparse_layout``); empty for none.
    slot_topics : ndarray of shape (slot_offset[-1],)
        Output: each sparse document's topics, slot by slot, -1 in the
        slots left.
    slot_values : ndarray of shape (value_offset[-1],)
        Output: the n_dw phi_dwk of each sparse document's words on its
        slots, without their smoothing part.
    smoothing_share : ndarray of shape (nnz,)
        Output: the factor of alpha_k E[beta_kw] in n_dw phi_dwk of each
        word of a sparse document, aligned with ``counts``.
    doc_topic_prior : ndarray of shape (n_topics,)
        alpha.
    max_iter : int
        Maximum number of fixed-point iterations (sweeps) per document.
    mean_change_tol : float
        Stop when the mean absolute change of gamma is below this value.
    doubling_length : float
        For the collapsed step: with a positive value L, a document of n_d
        tokens gets at most 1 + floor(log2(n_d / L)) sweeps (one below 2 L
        tokens), and never more than ``max_iter``; 0 for ``max_iter`` sweeps
        for every document. Unused by the mean-field and sampled steps.
    start_spread : float
        A document that is not sampled starts from gamma_dk = (alpha_k + n_d / n_topics)
        exp(start_spread z_dk), with z_dk standard normal values from a
        stream numbered by ``start_key`` and the document's words and counts
        (``document_start``): a document's start depends on nothing else.
    start_key : int
        The key of the documents' streams, in [0, 2**64).
    n_threads : int
        The threads of the team; 1 runs every document on the calling
        thread.

    Returns
    -------
    n_iter : int
        Total number of fixed-point iterations (sweeps) over the documents.
    """
    cdef Py_ssize_t member, n_runs, n_iter = 0
    cdef Py_ssize_t next_run = 0
    cdef const Py_ssize_t[::1] order = _claim_order(indptr, n_threads)
    run_starts_array = np.empty(order.shape[0] + 1, dtype=np.intp)
    iterations_array = np.zeros(max(n_threads, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] run_starts = run_starts_array
    cdef Py_ssize_t[::1] iterations = iterations_array
    if sample_below > 0.0 and draw_tables.shape[0] != word_topic.shape[0]:
        raise ValueError("The sampled step needs the draw tables of every word.")
    with nogil:
        n_runs = _claim_runs(order, indptr, run_starts)
        for member in prange(
            iterations.shape[0], num_threads=iterations.shape[0], schedule="static"
        ):
            iterations[member] = _infer_claimed(
                collapsed,
                sample_below,
                sampled_sweeps,
                word_topic,
                words,
                indptr,
                indices,
                counts,
                doc_topic,
                exp_doc_topic,
                count_ratio,
                responsibility,
                sampled_counts,
                draw_tables,
                slot_offset,
                value_offset,
                slot_topics,
                slot_values,
                smoothing_share,
                doc_topic_prior,
                max_iter,
                mean_change_tol,
                doubling_length,
                start_spread,
                start_key,
                order,
                run_starts,
                n_runs,
                &next_run,
            )
    for member in range(iterations.shape[0]):
        if iterations[member] < 0:
            raise MemoryError()
        n_iter += iterations[member]
    return n_iter


cdef Py_ssize_t _infer_claimed(
    bint collapsed,
    double sample_below,
    Py_ssize_t sampled_sweeps,
    const floating[:, ::1] word_topic,
    const Py_ssize_t[::1] words,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] indices,
    const floating[::1] counts,
    floating[:, ::1] doc_topic,
    floating[:, ::1] exp_doc_topic,
    floating[::1] count_ratio,
    floating[:, ::1] responsibility,
    floating[:, ::1] sampled_counts,
    const double[:, ::1] draw_tables,
    const Py_ssize_t[::1] slot_offset,
    const Py_ssize_t[::1] value_offset,
    int[::1] slot_topics,
    floating[::1] slot_values,
    floating[::1] smoothing_share,
    const floating[::1] doc_topic_prior,
    Py_ssize_t max_iter,
    double mean_change_tol,
    double doubling_length,
    double start_spread,
    unsigned long long start_key,
    const Py_ssize_t[::1] order,
    const Py_ssize_t[::1] run_starts,
    Py_ssize_t n_runs,
    Py_ssize_t* next_run,
) noexcept nogil:
    """The local step of the documents that one thread claims, run by run
    of ``order`` (``_claim_runs``), from ``next_run``, the counter the team
    shares (``infer_documents``, whose other arguments these are).

    Returns
    -------
    n_iter : int
        The fixed-point iterations (sweeps) over the documents it claimed,
        or -1 if its buffers could not be allocated.
    """
    cdef Py_ssize_t n_topics = word_topic.shape[1]
    cdef Py_ssize_t lanes = (
        SKLEARN_SVI_DOUBLE_LANES if floating is double else SKLEARN_SVI_FLOAT_LANES
    )
    cdef Py_ssize_t n_padded = _round_up(n_topics, lanes)
    cdef Py_ssize_t longest = _longest_document(indptr)
    cdef Py_ssize_t d, k, begin, n_words, n_rows, most_tokens, n_iter = 0
    cdef Py_ssize_t position = 0, run_stop = 0
    cdef Py_ssize_t n_blocks = draw_tables.shape[1] // 2
    cdef Py_ssize_t n_slots, n_touched, i
    cdef double length, tokens_length
    cdef floating eps = FLT_EPSILON if floating is float else DBL_EPSILON
    cdef const floating* alpha = &doc_topic_prior[0]
    cdef unsigned int float_mode
    cdef unsigned long long stream
    cdef bint allocated, sampled, in_topic_order
    # The mean-field step's buffers.
    cdef void* memory = NULL
    cdef double* work = NULL
    cdef floating* block
    cdef floating* exp_theta
    cdef floating* topic_sum
    cdef floating* ratio
    # The collapsed step's.
    cdef double* phi = NULL
    cdef double* topic_counts
    cdef double* proposal
    cdef double* previous_counts
    cdef floating* start = NULL
    # The sampled step's topic of each token, the topics that a document's
    # tokens have held and the slot of each topic among them (-1 for
    # none), and one value per word.
    cdef int* topics = NULL
    cdef int* touched = NULL
    cdef int* slot_of = NULL
    cdef double* word_buffers = NULL
    # Every step's.
    cdef floating* doc_counts

    if collapsed:
        allocated = _allocate_collapsed(
            longest, n_topics, &phi, &topic_counts, &proposal, &previous_counts,
            &start, &doc_counts,
        )
    else:
        allocated = _allocate_mean_field(
            _round_up(longest, SKLEARN_SVI_WORDS), n_topics, n_padded, &memory,
            &work, &block, &exp_theta, &topic_sum, &doc_counts, &ratio,
        )
    if not allocated:
        return -1
    if sample_below > 0.0:
        most_tokens = max(_most_tokens(indptr, counts, sample_below), 1)
        topics = <int*> malloc((most_tokens + 2 * n_topics) * sizeof(int))
        word_buffers = <double*> malloc(max(longest, 1) * sizeof(double))
        if topics == NULL or word_buffers == NULL:
            free(phi)
            free(start)
            free(topics)
            free(word_buffers)
            return -1
        touched = topics + most_tokens
        slot_of = touched + n_topics
        for k in range(n_topics):
            slot_of[k] = -1
    float_mode = _flush_subnormals()
    while _claim_document(
        order, run_starts, n_runs, next_run, indptr, &position, &run_stop, &d,
        &begin, &n_words,
    ):
        if collapsed:
            # A sampled document's first draws start from the symmetric
            # point, alpha + n_d / K, and break the tie themselves: it has
            # no start gamma.
            sampled = _document_length(counts, begin, n_words) < sample_below
            n_slots = _n_slots(slot_offset, d) if sampled else 0
            length = _start_document(
                counts, words, indices, begin, n_words, alpha, n_topics,
                start_spread, start_key, doc_counts,
                NULL if sampled else start, &stream,
            )
            if sampled:
                n_touched = _sampled_chain(
                    &word_topic[0, 0], &draw_tables[0, 0], n_blocks,
                    &indices[begin], n_words, n_topics, doc_counts, alpha,
                    length / n_topics, sampled_sweeps,
                    n_slots if n_slots > 0 else n_topics,
                    _capacity(indptr, counts, d, sampled_sweeps, &tokens_length)
                    >= n_topics,
                    topics, phi,
                    word_buffers, topic_counts, proposal, touched, slot_of,
                    stream, &in_topic_order,
                )
                # The counts of the last sweep, before _expand_kept
                # replaces them by the expected counts.
                if sampled_counts.shape[0] > 0:
                    for k in range(n_topics):
                        sampled_counts[d, k] = <floating> topic_counts[k]
                for i in range(n_touched):
                    slot_of[touched[i]] = -1
                n_iter += sampled_sweeps
                if n_slots > 0:
                    _write_sparse(
                        begin, n_words, n_slots,
                        sampled_sweeps - sampled_sweeps // 2, touched,
                        n_touched, phi, word_buffers,
                        &slot_topics[slot_offset[d]],
                        &slot_values[value_offset[d]], &smoothing_share[0],
                    )
                else:
                    _expand_kept(
                        &word_topic[0, 0], &indices[begin], n_words,
                        n_topics, doc_counts, alpha,
                        sampled_sweeps - sampled_sweeps // 2, touched,
                        n_touched, in_topic_order, word_buffers, phi,
                        topic_counts, proposal,
                    )
            else:
                _start_responsibilities(
                    &word_topic[0, 0], &indices[begin], n_words, n_topics,
                    doc_counts, start, phi, topic_counts, proposal,
                )
                n_iter += _collapsed_fixed_point(
                    &word_topic[0, 0], &indices[begin], n_words, n_topics,
                    doc_counts, alpha, phi, topic_counts, proposal,
                    previous_counts,
                    _sweep_limit(length, max_iter, doubling_length),
                    mean_change_tol,
                )
            _write_collapsed(
                d, begin, n_words, alpha, doc_counts, phi, topic_counts,
                n_topics, doc_topic, responsibility, n_slots == 0,
            )
            if sampled_counts.shape[0] > 0 and not sampled:
                _sample_topic_counts(
                    phi, doc_counts, n_words, n_topics, stream,
                    &sampled_counts[d, 0],
                )
            # N_d back to zero for the next document: a document kept
            # sparsely changed only the topics that its tokens held.
            if n_slots > 0:
                for i in range(n_touched):
                    topic_counts[touched[i]] = 0.0
            else:
                memset(topic_counts, 0, n_topics * sizeof(double))
        else:
            n_rows = _round_up(n_words, SKLEARN_SVI_WORDS)
            _gather_block(
                word_topic, indices, begin, n_words, n_rows, n_padded,
                block, doc_counts,
            )
            _start_document(
                counts, words, indices, begin, n_words, alpha, n_topics,
                start_spread, start_key, doc_counts, &doc_topic[d, 0],
                &stream,
            )
            n_iter += _mean_field_fixed_point(
                &doc_topic[d, 0], alpha, block, doc_counts, exp_theta,
                topic_sum, ratio, work, n_topics, n_rows, n_padded, eps,
                max_iter, mean_change_tol,
            )
            _write_mean_field(
                d, begin, n_words, &doc_topic[d, 0], block, doc_counts,
                exp_theta, ratio, work, n_topics, n_rows, n_padded, eps,
                exp_doc_topic, count_ratio,
            )
    _restore_float_mode(float_mode)
    free(memory)
    free(work)
    free(phi)
    free(start)
    free(topics)
    free(word_buffers)
    return n_iter
