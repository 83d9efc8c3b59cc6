# The mean-field local step of SVI: the vectorised sweep of _sweep.h over a
# document's gathered block of exp E[log beta], iterated to its tolerance.


cdef extern from "_sweep.h":
    enum:
        SKLEARN_SVI_DOUBLE_LANES
        SKLEARN_SVI_FLOAT_LANES
        SKLEARN_SVI_WORDS
    void _prefetch "sklearn_svi_prefetch"(const void*, size_t) noexcept nogil
    void sklearn_svi_count_ratio_double(
        const double*, const double*, const double*, double*,
        Py_ssize_t, Py_ssize_t, double,
    ) noexcept nogil
    void sklearn_svi_count_ratio_float(
        const float*, const float*, const float*, float*,
        Py_ssize_t, Py_ssize_t, float,
    ) noexcept nogil
    void sklearn_svi_sweep_double(
        const double*, const double*, const double*, double*, double*,
        Py_ssize_t, Py_ssize_t, double,
    ) noexcept nogil
    void sklearn_svi_sweep_float(
        const float*, const float*, const float*, float*, float*,
        Py_ssize_t, Py_ssize_t, float,
    ) noexcept nogil


cdef enum:
    # Rows of a document's block requested from memory ahead of their copy.
    PREFETCH_ROWS = 8


cdef inline Py_ssize_t _round_up(Py_ssize_t n, Py_ssize_t multiple) noexcept nogil:
    return (n + multiple - 1) // multiple * multiple


cdef inline void _sweep(
    const floating* block,
    const floating* exp_theta,
    const floating* counts,
    floating* ratio,
    floating* topic_sum,
    Py_ssize_t n_rows,
    Py_ssize_t n_padded,
    floating eps,
) noexcept nogil:
    """One pass of the fixed point over the block (_sweep.h).

    ratio_w = n_dw / (sum_k exp E[log theta_k] exp E[log beta_kw] + eps) and
    topic_sum_k = sum_w ratio_w exp E[log beta_kw].
    """
    if floating is double:
        sklearn_svi_sweep_double(
            block, exp_theta, counts, ratio, topic_sum, n_rows, n_padded, eps
        )
    else:
        sklearn_svi_sweep_float(
            block, exp_theta, counts, ratio, topic_sum, n_rows, n_padded, eps
        )


cdef inline void _count_ratios(
    const floating* block,
    const floating* exp_theta,
    const floating* counts,
    floating* ratio,
    Py_ssize_t n_rows,
    Py_ssize_t n_padded,
    floating eps,
) noexcept nogil:
    """ratio_w alone, as in _sweep."""
    if floating is double:
        sklearn_svi_count_ratio_double(
            block, exp_theta, counts, ratio, n_rows, n_padded, eps
        )
    else:
        sklearn_svi_count_ratio_float(
            block, exp_theta, counts, ratio, n_rows, n_padded, eps
        )


cdef inline bint _allocate_mean_field(
    Py_ssize_t longest,
    Py_ssize_t n_topics,
    Py_ssize_t n_padded,
    void** memory,
    double** work,
    floating** block,
    floating** exp_theta,
    floating** topic_sum,
    floating** doc_counts,
    floating** ratio,
) noexcept nogil:
    """One thread's buffers for the mean-field step, for blocks of up to
    ``longest`` rows of n_padded values.

    The block, exp E[log theta] and the topic sums with n_padded values, and
    the document's counts and ratios, in the allocation ``memory``; the
    2 (n_topics + 1) values of ``work`` of _exp_dirichlet_expectation in
    their own. Returns False, with nothing allocated, if the memory runs out.
    """
    cdef Py_ssize_t k
    memory[0] = malloc(
        ((longest + 2) * n_padded + 2 * longest) * sizeof(floating) + 64
    )
    work[0] = <double*> malloc(2 * (n_topics + 1) * sizeof(double))
    if memory[0] == NULL or work[0] == NULL:
        free(memory[0])
        free(work[0])
        return False
    # The block starts on a cache line and its rows are whole vectors,
    # so no vector load of the sweep straddles two cache lines.
    block[0] = <floating*> ((<size_t> memory[0] + 63) // 64 * 64)
    exp_theta[0] = block[0] + longest * n_padded
    topic_sum[0] = exp_theta[0] + n_padded
    doc_counts[0] = topic_sum[0] + n_padded
    ratio[0] = doc_counts[0] + longest
    # exp E[log theta] is 0 on the padding topics.
    for k in range(n_padded):
        exp_theta[0][k] = 0
    return True


cdef inline void _gather_block(
    const floating[:, ::1] exp_word_topic,
    const Py_ssize_t[::1] indices,
    Py_ssize_t begin,
    Py_ssize_t n_words,
    Py_ssize_t n_rows,
    Py_ssize_t n_padded,
    floating* block,
    floating* doc_counts,
) noexcept nogil:
    """The block: the document's rows of exp E[log beta], padded by zeros to
    n_padded topics and n_rows words, the padding words of count 0.

    The rows lie all over exp_word_topic; each is requested PREFETCH_ROWS
    rows ahead of its copy.
    """
    cdef Py_ssize_t n_topics = exp_word_topic.shape[1]
    cdef size_t row_bytes = n_topics * sizeof(floating)
    cdef Py_ssize_t j
    for j in range(min(n_words, PREFETCH_ROWS)):
        _prefetch(&exp_word_topic[indices[begin + j], 0], row_bytes)
    for j in range(n_words):
        if j + PREFETCH_ROWS < n_words:
            _prefetch(
                &exp_word_topic[indices[begin + j + PREFETCH_ROWS], 0], row_bytes
            )
        memcpy(&block[j * n_padded], &exp_word_topic[indices[begin + j], 0], row_bytes)
        memset(&block[j * n_padded + n_topics], 0,
               (n_padded - n_topics) * sizeof(floating))
    for j in range(n_words, n_rows):
        doc_counts[j] = 0
        memset(&block[j * n_padded], 0, n_padded * sizeof(floating))


cdef inline Py_ssize_t _mean_field_fixed_point(
    floating* gamma,
    const floating* alpha,
    const floating* block,
    const floating* doc_counts,
    floating* exp_theta,
    floating* topic_sum,
    floating* ratio,
    double* work,
    Py_ssize_t n_topics,
    Py_ssize_t n_rows,
    Py_ssize_t n_padded,
    floating eps,
    Py_ssize_t max_iter,
    double mean_change_tol,
) noexcept nogil:
    """Iterate gamma until its mean absolute change is below
    ``mean_change_tol``, at most ``max_iter`` times; return the number of
    iterations.

    gamma_dk = alpha + sum_w n_dw phi_dwk (Hoffman et al. 2013, Fig. 6),
    with phi_dwk = exp_theta_k exp_beta_kw ratio_w / n_dw.
    """
    cdef Py_ssize_t k, n_iter = 0
    cdef floating updated
    cdef double change
    while n_iter < max_iter:
        _exp_dirichlet_expectation(gamma, exp_theta, n_topics, work)
        _sweep(block, exp_theta, doc_counts, ratio, topic_sum, n_rows, n_padded, eps)
        change = 0.0
        for k in range(n_topics):
            updated = alpha[k] + exp_theta[k] * topic_sum[k]
            change += fabs(updated - gamma[k])
            gamma[k] = updated
        n_iter += 1
        if change / n_topics < mean_change_tol:
            break
    return n_iter


cdef inline void _write_mean_field(
    Py_ssize_t d,
    Py_ssize_t begin,
    Py_ssize_t n_words,
    const floating* gamma,
    const floating* block,
    const floating* doc_counts,
    floating* exp_theta,
    floating* ratio,
    double* work,
    Py_ssize_t n_topics,
    Py_ssize_t n_rows,
    Py_ssize_t n_padded,
    floating eps,
    floating[:, ::1] exp_doc_topic,
    floating[::1] count_ratio,
) noexcept nogil:
    """exp E[log theta] and n_dw / norm_dw at the final gamma, to row d of
    ``exp_doc_topic`` and the document's entries of ``count_ratio``."""
    cdef Py_ssize_t j, k
    _exp_dirichlet_expectation(gamma, exp_theta, n_topics, work)
    _count_ratios(block, exp_theta, doc_counts, ratio, n_rows, n_padded, eps)
    for k in range(n_topics):
        exp_doc_topic[d, k] = exp_theta[k]
    for j in range(n_words):
        count_ratio[begin + j] = ratio[j]
