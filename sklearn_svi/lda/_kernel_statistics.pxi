# The minibatch statistics of the compiled LDA kernel: exp E[log beta] on the
# minibatch's words, mean rows, and the word-topic statistic of the update.
# Each pass over the words is shared by the threads of an OpenMP team, each
# of which keeps the processor's floating point mode of its own.


def exp_dirichlet_expectation_rows(
    const floating[:, ::1] word_topic,
    const double[::1] topic_totals,
    const Py_ssize_t[::1] rows,
    floating[:, ::1] out,
    Py_ssize_t n_threads=1,
):
    """exp E[log beta_kw] for the given words w.

    Parameters
    ----------
    word_topic : ndarray of shape (n_features, n_topics)
        lambda, the Dirichlet parameters of the topics, one row per word.
    topic_totals : ndarray of shape (n_topics,)
        sum_v lambda_kv for each topic k.
    rows : ndarray of shape (n_rows,)
        The words w to evaluate.
    out : ndarray of shape (n_rows, n_topics)
        Output: exp(psi(lambda_kw)) / exp(psi(sum_v lambda_kv)).
    n_threads : int, default=1
        The threads of the OpenMP team that share the words.
    """
    cdef Py_ssize_t n_topics = word_topic.shape[1]
    cdef Py_ssize_t j, k
    cdef size_t row_bytes = n_topics * sizeof(floating)
    cdef double* values
    cdef double* topic_scale = <double*> malloc(2 * n_topics * sizeof(double))
    # Set by a thread that found no memory for its buffer.
    cdef int failed = 0
    cdef int* failures = &failed
    if topic_scale == NULL:
        raise MemoryError()
    with nogil:
        for k in range(n_topics):
            topic_scale[k] = topic_totals[k]
        _exp_digamma(topic_scale, topic_scale + n_topics, n_topics)
        for k in range(n_topics):
            topic_scale[k] = 1.0 / topic_scale[k]
        with parallel(num_threads=n_threads):
            # The thread's values of a row, and the work of _exp_digamma.
            values = <double*> malloc(2 * n_topics * sizeof(double))
            if values == NULL:
                failures[0] = 1
            for j in prange(rows.shape[0], schedule="static"):
                if values == NULL:
                    continue
                if j + PREFETCH_ROWS < rows.shape[0]:
                    _prefetch(&word_topic[rows[j + PREFETCH_ROWS], 0], row_bytes)
                for k in range(n_topics):
                    values[k] = word_topic[rows[j], k]
                _exp_digamma(values, values + n_topics, n_topics)
                for k in range(n_topics):
                    out[j, k] = <floating> (values[k] * topic_scale[k])
            free(values)
    free(topic_scale)
    if failed:
        raise MemoryError()


def word_topic_statistic(
    const Py_ssize_t[::1] word_indptr,
    const Py_ssize_t[::1] documents,
    const Py_ssize_t[::1] positions,
    const floating[::1] count_ratio,
    const floating[:, ::1] exp_doc_topic,
    const floating[:, ::1] exp_word_topic,
    floating[:, ::1] out,
    double scale,
    Py_ssize_t n_threads=1,
):
    """The minibatch statistic sum_d n_dw phi_dwk of each word.

    With phi_dwk = exp E[log theta_dk] exp E[log beta_kw] / norm_dw,

        out_wk = scale exp E[log beta_kw] sum_d (n_dw / norm_dw) exp E[log theta_dk],

    the sum over the documents containing w, in increasing order.

    Parameters
    ----------
    word_indptr, documents, positions : ndarray
        The documents of each word, from :func:`words_of_documents`.
    count_ratio : ndarray of shape (nnz,)
        n_dw / norm_dw, in the documents' (CSR) order.
    exp_doc_topic : ndarray of shape (n_documents, n_topics)
        exp E[log theta].
    exp_word_topic : ndarray of shape (n_words, n_topics)
        exp E[log beta] of the minibatch's words.
    out : ndarray of shape (n_words, n_topics)
        Output.
    scale : float
        Factor of every value (1 / n_documents for the minibatch mean).
    n_threads : int, default=1
        The threads of the OpenMP team that share the words.
    """
    cdef Py_ssize_t w
    cdef unsigned int float_mode
    with nogil, parallel(num_threads=n_threads):
        float_mode = _flush_subnormals()
        for w in prange(out.shape[0], schedule="static"):
            _word_topic_row(
                word_indptr, documents, positions, count_ratio, exp_doc_topic,
                exp_word_topic, scale, w, &out[w, 0],
            )
        _restore_float_mode(float_mode)


cdef inline void _word_topic_row(
    const Py_ssize_t[::1] word_indptr,
    const Py_ssize_t[::1] documents,
    const Py_ssize_t[::1] positions,
    const floating[::1] count_ratio,
    const floating[:, ::1] exp_doc_topic,
    const floating[:, ::1] exp_word_topic,
    double scale,
    Py_ssize_t w,
    floating* row,
) noexcept nogil:
    """Word w's row of ``word_topic_statistic``, whose arguments these are."""
    cdef Py_ssize_t n_topics = exp_doc_topic.shape[1]
    cdef Py_ssize_t j, k
    cdef floating weight
    cdef const floating* theta
    for k in range(n_topics):
        row[k] = 0
    for j in range(word_indptr[w], word_indptr[w + 1]):
        weight = count_ratio[positions[j]]
        theta = &exp_doc_topic[documents[j], 0]
        for k in range(n_topics):
            row[k] += weight * theta[k]
    for k in range(n_topics):
        row[k] *= <floating> (exp_word_topic[w, k] * scale)


def responsibility_statistic(
    const Py_ssize_t[::1] word_indptr,
    const Py_ssize_t[::1] documents,
    const Py_ssize_t[::1] positions,
    const floating[:, ::1] responsibility,
    const floating[::1] document_weight,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] slot_offset,
    const Py_ssize_t[::1] value_offset,
    const int[::1] slot_topics,
    const floating[::1] slot_values,
    const floating[::1] smoothing_share,
    const floating[:, ::1] mean_word_topic,
    const floating[::1] doc_topic_prior,
    floating[:, ::1] out,
    double scale,
    Py_ssize_t n_threads=1,
):
    """The minibatch statistic sum_d w_d n_dw phi_dwk of each word.

    The sum over the documents containing w, in increasing order, of the
    responsibilities n_dw phi_dwk of the collapsed local step, each weighed
    by its document's weight w_d. A document kept sparsely by the sampled
    step (``sparse_layout``) adds its slots' values to their topics, and its
    smoothing share s_dw to the word's factor of alpha_k E[beta_kw], which
    starts the word's row:

        out_wk = scale (alpha_k E[beta_kw] sum_d w_d s_dw + sum_d w_d a_dwk).

    Parameters
    ----------
    word_indptr, documents, positions : ndarray
        The documents of each word, from :func:`words_of_documents`.
    responsibility : ndarray of shape (nnz, n_topics)
        n_dw phi_dwk, in the documents' (CSR) order, of the documents not
        kept sparsely.
    document_weight : ndarray of shape (n_documents,)
        w_d.
    indptr : ndarray of shape (n_documents + 1,)
        The documents' CSR row pointers.
    slot_offset, value_offset, slot_topics, slot_values, smoothing_share : ndarray
        The sparse documents' responsibilities (``infer_documents``);
        ``slot_offset`` empty for none.
    mean_word_topic : ndarray of shape (n_words, n_topics)
        E[beta] of the minibatch's words.
    doc_topic_prior : ndarray of shape (n_topics,)
        alpha.
    out : ndarray of shape (n_words, n_topics)
        Output.
    scale : float
        Factor of every value (1 / n_documents for the minibatch mean).
    n_threads : int, default=1
        The threads of the OpenMP team that share the words.
    """
    cdef Py_ssize_t w
    cdef unsigned int float_mode
    with nogil, parallel(num_threads=n_threads):
        float_mode = _flush_subnormals()
        for w in prange(out.shape[0], schedule="static"):
            _responsibility_row(
                word_indptr, documents, positions, responsibility,
                document_weight, indptr, slot_offset, value_offset, slot_topics,
                slot_values, smoothing_share, mean_word_topic, doc_topic_prior,
                scale, w, &out[w, 0],
            )
        _restore_float_mode(float_mode)


cdef inline void _responsibility_row(
    const Py_ssize_t[::1] word_indptr,
    const Py_ssize_t[::1] documents,
    const Py_ssize_t[::1] positions,
    const floating[:, ::1] responsibility,
    const floating[::1] document_weight,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] slot_offset,
    const Py_ssize_t[::1] value_offset,
    const int[::1] slot_topics,
    const floating[::1] slot_values,
    const floating[::1] smoothing_share,
    const floating[:, ::1] mean_word_topic,
    const floating[::1] doc_topic_prior,
    double scale,
    Py_ssize_t w,
    floating* row,
) noexcept nogil:
    """Word w's row of ``responsibility_statistic``, whose arguments these
    are."""
    cdef Py_ssize_t n_topics = responsibility.shape[1]
    cdef Py_ssize_t j, k, d, i, n_slots
    cdef floating weight
    cdef double smoothing = 0.0
    cdef const floating* phi
    cdef const floating* values
    cdef const int* topics
    for j in range(word_indptr[w], word_indptr[w + 1]):
        d = documents[j]
        if _n_slots(slot_offset, d) > 0:
            smoothing += document_weight[d] * smoothing_share[positions[j]]
    for k in range(n_topics):
        row[k] = <floating> (
            scale * smoothing * doc_topic_prior[k] * mean_word_topic[w, k]
        )
    for j in range(word_indptr[w], word_indptr[w + 1]):
        d = documents[j]
        weight = <floating> (scale * document_weight[d])
        n_slots = _n_slots(slot_offset, d)
        if n_slots == 0:
            phi = &responsibility[positions[j], 0]
            for k in range(n_topics):
                row[k] += weight * phi[k]
            continue
        topics = &slot_topics[slot_offset[d]]
        values = &slot_values[value_offset[d] + (positions[j] - indptr[d]) * n_slots]
        for i in range(n_slots):
            if topics[i] < 0:
                break
            row[topics[i]] += weight * values[i]
