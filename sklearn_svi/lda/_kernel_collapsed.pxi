# The collapsed (CVB0) local step: each document's responsibilities swept
# token by token, and the counts drawn from them for a learned alpha.


cdef inline bint _allocate_collapsed(
    Py_ssize_t longest,
    Py_ssize_t n_topics,
    double** phi,
    double** topic_counts,
    double** proposal,
    double** previous_counts,
    floating** start,
    floating** doc_counts,
) noexcept nogil:
    """One thread's buffers for the collapsed step, for documents of up to
    ``longest`` words.

    ``phi`` (for the longest document), N_d, a proposal of phi for one word
    and N_d before a sweep in one allocation, the start and the document's
    counts in the allocation ``start``: the compiler then knows that the
    counts are none of the values the sweep writes. Returns False, with
    nothing allocated, if the memory runs out.
    """
    phi[0] = <double*> malloc((longest + 3) * n_topics * sizeof(double))
    start[0] = <floating*> malloc((n_topics + longest + 1) * sizeof(floating))
    if phi[0] == NULL or start[0] == NULL:
        free(phi[0])
        free(start[0])
        return False
    topic_counts[0] = phi[0] + longest * n_topics
    proposal[0] = topic_counts[0] + n_topics
    previous_counts[0] = proposal[0] + n_topics
    doc_counts[0] = start[0] + n_topics
    return True


cdef inline double _sum(const double* values, Py_ssize_t n) noexcept nogil:
    """The sum of n values, as eight interleaved partial sums added in a
    fixed order.

    A single running sum is a chain of dependent additions that the
    compiler may not reorder; eight independent ones it turns into vector
    additions. The order depends on n alone, so the result does not depend
    on the thread.
    """
    cdef double part[8]
    cdef Py_ssize_t i, k = 0
    for i in range(8):
        part[i] = 0.0
    while k + 8 <= n:
        for i in range(8):
            part[i] += values[k + i]
        k += 8
    for i in range(n - k):
        part[i] += values[k + i]
    return ((part[0] + part[4]) + (part[1] + part[5])) + (
        (part[2] + part[6]) + (part[3] + part[7])
    )


cdef inline void _start_responsibilities(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* start,
    double* phi,
    double* topic_counts,
    double* proposal,
) noexcept nogil:
    """phi_dwk proportional to E[beta_kw] g_k, with g the document's start,
    and its expected topic counts N_dk = sum_w n_dw phi_dwk.

    E[beta_kw] is ``mean_word_topic[rows[j] * n_topics + k]`` for the
    document's j-th word, as in ``_collapsed_sweep``.
    """
    cdef Py_ssize_t j, k
    cdef double total
    cdef const floating* beta
    for k in range(n_topics):
        topic_counts[k] = 0.0
    for j in range(n_words):
        beta = &mean_word_topic[rows[j] * n_topics]
        for k in range(n_topics):
            proposal[k] = beta[k] * start[k]
        total = 1.0 / _sum(proposal, n_topics)
        for k in range(n_topics):
            phi[j * n_topics + k] = proposal[k] * total
            topic_counts[k] += doc_counts[j] * phi[j * n_topics + k]


cdef inline void _collapsed_sweep(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    double* phi,
    double* topic_counts,
    double* proposal,
) noexcept nogil:
    """One sweep of the zero-order collapsed update over the document's words.

    One word after the other, phi_dwk proportional to E[beta_kw]
    (N_dk - c phi_dwk + alpha_k) with c = min(n_dw, 1), and N_d updated
    with the word's new phi.

    E[beta_kw] is ``mean_word_topic[rows[j] * n_topics + k]`` for the
    document's j-th word. The rows come as pointers rather than memoryviews:
    with memoryviews, GCC 12's AVX-512 build spills a register in the loop
    over topics, and the collapsed step ran 2 to 3% slower.
    """
    cdef Py_ssize_t j, k
    cdef double own, total, updated
    cdef const floating* beta
    for j in range(n_words):
        beta = &mean_word_topic[rows[j] * n_topics]
        own = min(doc_counts[j], 1.0)
        for k in range(n_topics):
            updated = topic_counts[k] - own * phi[j * n_topics + k]
            proposal[k] = beta[k] * (max(updated, 0.0) + alpha[k])
        total = 1.0 / _sum(proposal, n_topics)
        for k in range(n_topics):
            updated = proposal[k] * total
            topic_counts[k] += doc_counts[j] * (updated - phi[j * n_topics + k])
            phi[j * n_topics + k] = updated


cdef inline Py_ssize_t _sweep_limit(
    double length, Py_ssize_t max_iter, double doubling_length
) noexcept nogil:
    """The most sweeps a document of ``length`` tokens gets: ``max_iter``,
    or with ``doubling_length`` L > 0, one sweep below 2 L tokens and one
    more for each doubling of the length beyond, 1 + floor(log2(n_d / L)),
    at most ``max_iter``."""
    cdef Py_ssize_t limit = 1
    if doubling_length <= 0.0:
        return max_iter
    while length >= 2.0 * doubling_length and limit < max_iter:
        length *= 0.5
        limit += 1
    return limit


cdef inline Py_ssize_t _collapsed_fixed_point(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    double* phi,
    double* topic_counts,
    double* proposal,
    double* previous_counts,
    Py_ssize_t max_iter,
    double mean_change_tol,
) noexcept nogil:
    """Sweep until the mean absolute change of N_d over a sweep is below
    ``mean_change_tol``, at most ``max_iter`` times; return the number of
    sweeps."""
    cdef Py_ssize_t k, n_sweeps = 0
    cdef double change
    while n_sweeps < max_iter:
        memcpy(previous_counts, topic_counts, n_topics * sizeof(double))
        _collapsed_sweep(
            mean_word_topic, rows, n_words, n_topics, doc_counts, alpha,
            phi, topic_counts, proposal,
        )
        change = 0.0
        for k in range(n_topics):
            change += fabs(topic_counts[k] - previous_counts[k])
        n_sweeps += 1
        if change / n_topics < mean_change_tol:
            break
    return n_sweeps


cdef inline void _write_collapsed(
    Py_ssize_t d,
    Py_ssize_t begin,
    Py_ssize_t n_words,
    const floating* alpha,
    const floating* doc_counts,
    const double* phi,
    const double* topic_counts,
    Py_ssize_t n_topics,
    floating[:, ::1] doc_topic,
    floating[:, ::1] responsibility,
) noexcept nogil:
    """gamma = alpha + N_d to row d of ``doc_topic`` and, unless
    ``responsibility`` has no rows, n_dw phi_dwk to the document's rows."""
    cdef Py_ssize_t j, k
    for k in range(n_topics):
        doc_topic[d, k] = <floating> (alpha[k] + max(topic_counts[k], 0.0))
    if responsibility.shape[0] > 0:
        for j in range(n_words):
            for k in range(n_topics):
                responsibility[begin + j, k] = <floating> (
                    doc_counts[j] * phi[j * n_topics + k]
                )


cdef inline void _sample_topic_counts(
    const double* phi,
    const floating* doc_counts,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    unsigned long long stream,
    floating* topic_counts,
) noexcept nogil:
    """Integer topic counts of a document: each of its tokens' topics drawn
    from its word's responsibilities phi_dw.

    A fractional count n_dw has floor(n_dw) tokens and one more with
    probability n_dw - floor(n_dw). The draws are the values of the
    document's stream after those of its start (``_start_gamma`` reads the
    first n_topics + 1 at most), by inversion of phi_dw's distribution
    function, so they depend on the document and the key alone.
    """
    cdef Py_ssize_t j, k, token, n_tokens
    cdef unsigned long long counter = n_topics + 1
    cdef double fraction, u, cumulative
    cdef const double* row
    for k in range(n_topics):
        topic_counts[k] = 0
    for j in range(n_words):
        row = &phi[j * n_topics]
        n_tokens = <Py_ssize_t> doc_counts[j]
        fraction = doc_counts[j] - n_tokens
        if fraction > 0.0:
            if _uniform(stream, counter) <= fraction:
                n_tokens += 1
            counter += 1
        for token in range(n_tokens):
            u = _uniform(stream, counter)
            counter += 1
            k = 0
            cumulative = row[0]
            while cumulative < u and k + 1 < n_topics:
                k += 1
                cumulative += row[k]
            topic_counts[k] += 1


def infer_documents_collapsed(
    const floating[:, ::1] mean_word_topic,
    const Py_ssize_t[::1] words,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] indices,
    const floating[::1] counts,
    floating[:, ::1] doc_topic,
    floating[:, ::1] responsibility,
    floating[:, ::1] sampled_counts,
    const floating[::1] doc_topic_prior,
    Py_ssize_t max_iter,
    double mean_change_tol,
    double doubling_length,
    double start_spread,
    unsigned long long start_key,
    const Py_ssize_t[::1] order,
    Py_ssize_t[::1] next_document,
):
    """The collapsed (CVB0) local step for documents taken one at a time.

    Each word w of document d has its topic responsibilities phi_dwk; with
    the document's expected topic counts N_dk = sum_w n_dw phi_dwk, a sweep
    over the words sets, one word after the other,

        phi_dwk  proportional to  E[beta_kw] (N_dk - c phi_dwk + alpha_k),

    where c = min(n_dw, 1): the counts of the document without one token of
    w, as in the zero-order collapsed variational update (Asuncion et al.
    2009; Foulds et al. 2013, with the topics' expected counts
    given by lambda). Sweeps stop when the mean absolute change of N_d over
    a sweep, which is that of gamma = alpha + N_d, is below
    ``mean_change_tol``. The document starts from phi_dwk
    proportional to E[beta_kw] g_k, with g the random or symmetric start of
    ``infer_documents``.

    The threads share the work as in ``infer_documents``, with which this
    function shares its arguments except for these.

    Parameters
    ----------
    mean_word_topic : ndarray of shape (n_words, n_topics)
        E[beta] for the words present in the minibatch, one row per word.
    doc_topic : ndarray of shape (n_documents, n_topics)
        Output: alpha + N_d at each document's fixed point.
    responsibility : ndarray of shape (nnz, n_topics) or (0, n_topics)
        Output, unless it has no rows: n_dw phi_dwk, aligned with ``counts``.
    sampled_counts : ndarray of shape (n_documents, n_topics) or (0, n_topics)
        Output, unless it has no rows: each document's topic counts with
        every token's topic drawn from its final responsibilities
        (``_sample_topic_counts``).
    doubling_length : float
        With a positive value L, a document of n_d tokens gets at most
        1 + floor(log2(n_d / L)) sweeps (one below 2 L tokens), and never
        more than ``max_iter``; 0 for ``max_iter`` sweeps for every document.

    Returns
    -------
    n_iter : int
        Total number of sweeps over the documents this call processed.
    """
    cdef Py_ssize_t n_topics = mean_word_topic.shape[1]
    cdef Py_ssize_t longest = _longest_document(indptr)
    cdef Py_ssize_t d, begin, n_words, n_iter = 0
    cdef double length
    cdef unsigned long long stream
    cdef const floating* alpha = &doc_topic_prior[0]
    cdef unsigned int float_mode
    cdef double* phi
    cdef double* topic_counts
    cdef double* proposal
    cdef double* previous_counts
    cdef floating* start
    cdef floating* doc_counts

    if not _allocate_collapsed(
        longest, n_topics, &phi, &topic_counts, &proposal, &previous_counts,
        &start, &doc_counts,
    ):
        raise MemoryError()
    with nogil:
        float_mode = _flush_subnormals()
        while _claim_document(order, next_document, indptr, &d, &begin, &n_words):
            length = _start_document(
                counts, words, indices, begin, n_words, alpha, n_topics,
                start_spread, start_key, doc_counts, start, &stream,
            )
            _start_responsibilities(
                &mean_word_topic[0, 0], &indices[begin], n_words, n_topics,
                doc_counts, start, phi, topic_counts, proposal,
            )
            n_iter += _collapsed_fixed_point(
                &mean_word_topic[0, 0], &indices[begin], n_words, n_topics,
                doc_counts, alpha, phi, topic_counts, proposal, previous_counts,
                _sweep_limit(length, max_iter, doubling_length), mean_change_tol,
            )
            _write_collapsed(
                d, begin, n_words, alpha, doc_counts, phi, topic_counts, n_topics,
                doc_topic, responsibility,
            )
            if sampled_counts.shape[0] > 0:
                _sample_topic_counts(
                    phi, doc_counts, n_words, n_topics, stream, &sampled_counts[d, 0]
                )
        _restore_float_mode(float_mode)
    free(phi)
    free(start)
    return n_iter
