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
    counts are none of the values the sweep writes. N_d starts at zero, as
    the sampled step expects it (``_sample_start``). Returns False, with
    nothing allocated, if the memory runs out.
    """
    phi[0] = <double*> malloc((longest + 3) * n_topics * sizeof(double))
    start[0] = <floating*> malloc((n_topics + longest + 1) * sizeof(floating))
    if phi[0] == NULL or start[0] == NULL:
        free(phi[0])
        free(start[0])
        return False
    topic_counts[0] = phi[0] + longest * n_topics
    memset(topic_counts[0], 0, n_topics * sizeof(double))
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
    bint with_rows,
) noexcept nogil:
    """gamma = alpha + N_d to row d of ``doc_topic``, unless it has no rows,
    and, if ``with_rows`` and ``responsibility`` has rows, n_dw phi_dwk to
    the document's rows."""
    cdef Py_ssize_t j, k
    if doc_topic.shape[0] > 0:
        for k in range(n_topics):
            doc_topic[d, k] = <floating> (alpha[k] + max(topic_counts[k], 0.0))
    if with_rows and responsibility.shape[0] > 0:
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
