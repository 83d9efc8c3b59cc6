# The parts of the compiled local step that both of its fixed points use: the
# documents' random starts, exp E[log theta], how the threads of a minibatch
# claim its documents, and which documents the sampled step keeps sparsely.


cdef inline void _start_gamma(
    floating* gamma,
    Py_ssize_t n_topics,
    const floating* prior,
    double share,
    double spread,
    unsigned long long stream,
) noexcept nogil:
    """gamma_k = (alpha_k + share) exp(spread z_k), z_k ~ N(0, 1) the values
    of ``stream``.

    The normal values come in pairs from pairs of uniforms (Box-Muller);
    with ``spread`` 0 the start is gamma_k = alpha_k + share.
    """
    cdef Py_ssize_t k
    cdef double radius, angle
    if spread == 0.0:
        for k in range(n_topics):
            gamma[k] = <floating> (prior[k] + share)
        return
    for k in range(0, n_topics, 2):
        radius = spread * sqrt(-2.0 * log(_uniform(stream, k)))
        angle = 6.283185307179586 * _uniform(stream, k + 1)
        gamma[k] = <floating> ((prior[k] + share) * _exp(radius * cos(angle)))
        if k + 1 < n_topics:
            gamma[k + 1] = <floating> (
                (prior[k + 1] + share) * _exp(radius * sin(angle))
            )


cdef inline unsigned long long _document_stream(
    unsigned long long key,
    const Py_ssize_t[::1] words,
    const Py_ssize_t[::1] indices,
    const floating* counts,
    Py_ssize_t begin,
    Py_ssize_t n_words,
) noexcept nogil:
    """The number of a document's stream: its words and counts folded into ``key``.

    The document's vocabulary indices are ``words[indices[begin + j]]`` and
    its counts ``counts[j]``, for j < ``n_words``.
    """
    cdef unsigned long long stream = _mix(key)
    cdef Py_ssize_t j
    for j in range(n_words):
        stream = _fold(stream, words[indices[begin + j]], counts[j])
    return _mix(stream)


def document_start(
    unsigned long long key,
    const Py_ssize_t[::1] words,
    const double[::1] counts,
    const double[::1] doc_topic_prior,
    double spread,
):
    """The initial gamma that ``infer_documents`` gives a document.

    Parameters
    ----------
    key : int
        The key of the streams, in [0, 2**64).
    words : ndarray of shape (n_words,)
        The document's vocabulary indices, in the order of its CSR row.
    counts : ndarray of shape (n_words,)
        The document's word counts.
    doc_topic_prior : ndarray of shape (n_topics,)
        alpha.
    spread : float
        Standard deviation of log gamma_k.

    Returns
    -------
    gamma : ndarray of shape (n_topics,)
    """
    cdef Py_ssize_t n_words = words.shape[0]
    cdef Py_ssize_t[::1] positions = np.arange(n_words, dtype=np.intp)
    # One spare value, so that an empty document's counts have an address.
    cdef double[::1] document_counts = np.append(np.asarray(counts), 0.0)
    cdef Py_ssize_t n_topics = doc_topic_prior.shape[0]
    cdef double length = np.sum(counts)
    gamma = np.empty(n_topics, dtype=np.float64)
    cdef double[::1] view = gamma
    _start_gamma(
        &view[0],
        n_topics,
        &doc_topic_prior[0],
        length / n_topics,
        spread,
        _document_stream(key, words, positions, &document_counts[0], 0, n_words),
    )
    return gamma


def fast_exp(double a):
    """The kernel's exponential (exposed for testing)."""
    return _exp(a)


cdef inline void _exp_digamma(double* x, double* work, Py_ssize_t n) noexcept nogil:
    """x_i <- exp(psi(x_i)) for n values x_i > 0, relative error below 1e-12.

    Every x is shifted to y = x + 6 with psi(x) = psi(y) - sum_{i<6} 1/(x + i),
    the sum formed as P'(x) / P(x) for P(x) = prod_{i<6} (x + i) so that it
    costs one division, and the asymptotic series with Bernoulli numbers up
    to B_12 gives

        psi(y) = log y - 1/(2y) - sum_j B_2j / (2j y^2j),

    so exp(psi(x)) = y exp(-1/(2y) - sum_j B_2j / (2j y^2j) - P'/P) needs one
    exponential and no logarithm. Neither loop branches or calls a library
    function, so the compiler vectorises both; ``work`` (n values) holds the
    exponents.
    """
    cdef Py_ssize_t i, step
    cdef double y, product, derivative, inv, inv2
    for i in range(n):
        y = x[i]
        product = 1.0
        derivative = 0.0
        for step in range(6):
            derivative = derivative * y + product
            product *= y
            y += 1.0
        inv = 1.0 / y
        inv2 = inv * inv
        work[i] = (
            -0.5 * inv - derivative / product
            - inv2 * (1.0 / 12.0
            - inv2 * (1.0 / 120.0
            - inv2 * (1.0 / 252.0
            - inv2 * (1.0 / 240.0
            - inv2 * (1.0 / 132.0
            - inv2 * (691.0 / 32760.0))))))
        )
        x[i] = y
    for i in range(n):
        x[i] *= _exp(work[i])


def exp_digamma(double x):
    """exp(psi(x)) as computed by the kernel (exposed for testing)."""
    cdef double work
    _exp_digamma(&x, &work, 1)
    return x


cdef inline void _exp_dirichlet_expectation(
    const floating* gamma, floating* out, Py_ssize_t n_topics, double* work
) noexcept nogil:
    """out_k = exp(E[log theta_k]) = exp(psi(gamma_k)) / exp(psi(sum_j gamma_j)).

    ``work`` holds 2 (n_topics + 1) values.
    """
    cdef Py_ssize_t k
    cdef double total = 0.0
    for k in range(n_topics):
        work[k] = gamma[k]
        total += gamma[k]
    work[n_topics] = total
    _exp_digamma(work, work + n_topics + 1, n_topics + 1)
    total = 1.0 / work[n_topics]
    for k in range(n_topics):
        out[k] = <floating> (work[k] * total)


cdef inline Py_ssize_t _longest_document(const Py_ssize_t[::1] indptr) noexcept nogil:
    """The number of words of the longest document of a CSR structure."""
    cdef Py_ssize_t d, longest = 0
    for d in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[d + 1] - indptr[d])
    return longest


# The fewest words of a run of documents that a thread of the team claims
# at once (``_claim_document``). Each claim is an atomic increment of a
# counter the threads share, whose cache line then moves between their
# cores, and documents' outputs lie side by side, so that two threads that
# write neighbouring documents contend for the same cache lines. A run of
# 32 words is some microseconds of work, and the last one leaves a thread
# alone for no longer.
DEF CLAIM_WORDS = 32


cdef _claim_order(const Py_ssize_t[::1] indptr, Py_ssize_t n_threads):
    """The order in which the threads of a team claim the documents of a
    CSR structure: those of ``CLAIM_WORDS`` words or more by decreasing
    length, then the others in their own order; any order for one thread.

    Loops, where NumPy's calls on the lengths took about 4% of a pass over
    short texts on one thread."""
    cdef Py_ssize_t n_documents = indptr.shape[0] - 1
    cdef Py_ssize_t d, n_long = 0, position
    order = np.empty(n_documents, dtype=np.intp)
    cdef Py_ssize_t[::1] view = order
    if n_threads >= 2:
        for d in range(n_documents):
            if indptr[d + 1] - indptr[d] >= CLAIM_WORDS:
                view[n_long] = d
                n_long += 1
        if n_long > 1:
            long_documents = order[:n_long].copy()
            starts = np.asarray(indptr)
            lengths = starts[long_documents + 1] - starts[long_documents]
            order[:n_long] = long_documents[np.argsort(-lengths, kind="stable")]
    position = n_long
    for d in range(n_documents):
        if n_long == 0 or indptr[d + 1] - indptr[d] < CLAIM_WORDS:
            view[position] = d
            position += 1
    return order


cdef Py_ssize_t _claim_runs(
    const Py_ssize_t[::1] order,
    const Py_ssize_t[::1] indptr,
    Py_ssize_t[::1] run_starts,
) noexcept nogil:
    """Cut ``order`` into runs of consecutive documents that hold at least
    ``CLAIM_WORDS`` words each (the last one may hold fewer): write the
    position in ``order`` where each run starts, and after the last the
    number of documents, to ``run_starts``. Returns the number of runs."""
    cdef Py_ssize_t position, d, n_runs = 0, words_in_run = 0
    for position in range(order.shape[0]):
        if words_in_run == 0:
            run_starts[n_runs] = position
            n_runs += 1
        d = order[position]
        words_in_run += indptr[d + 1] - indptr[d]
        if words_in_run >= CLAIM_WORDS:
            words_in_run = 0
    run_starts[n_runs] = order.shape[0]
    return n_runs


cdef inline bint _claim_document(
    const Py_ssize_t[::1] order,
    const Py_ssize_t[::1] run_starts,
    Py_ssize_t n_runs,
    Py_ssize_t* next_run,
    const Py_ssize_t[::1] indptr,
    Py_ssize_t* position,
    Py_ssize_t* run_stop,
    Py_ssize_t* d,
    Py_ssize_t* begin,
    Py_ssize_t* n_words,
) noexcept nogil:
    """Take the next document of the run of ``order`` that the calling
    thread holds, from ``position`` to ``run_stop``, or, when none is left
    there, the next run that no thread has taken (``_claim_runs``): set the
    document's index, its first entry in the CSR arrays and its number of
    words. Returns False once all are taken.

    The threads share ``next_run[0]``, which each increments atomically.
    """
    cdef Py_ssize_t run
    if position[0] == run_stop[0]:
        run = _claim(next_run)
        if run >= n_runs:
            return False
        position[0] = run_starts[run]
        run_stop[0] = run_starts[run + 1]
    d[0] = order[position[0]]
    position[0] += 1
    begin[0] = indptr[d[0]]
    n_words[0] = indptr[d[0] + 1] - begin[0]
    return True


cdef inline double _document_length(
    const floating[::1] counts, Py_ssize_t begin, Py_ssize_t n_words
) noexcept nogil:
    """A document's number of tokens n_d: the sum of its counts, in the
    order in which ``_start_document`` adds them."""
    cdef Py_ssize_t j
    cdef double length = 0.0
    for j in range(n_words):
        length += counts[begin + j]
    return length


cdef inline double _start_document(
    const floating[::1] counts,
    const Py_ssize_t[::1] words,
    const Py_ssize_t[::1] indices,
    Py_ssize_t begin,
    Py_ssize_t n_words,
    const floating* alpha,
    Py_ssize_t n_topics,
    double spread,
    unsigned long long key,
    floating* doc_counts,
    floating* gamma,
    unsigned long long* stream,
) noexcept nogil:
    """Copy a document's counts to ``doc_counts``, write its start to
    ``gamma`` (unless it is NULL: a sampled document, whose draws start
    from alpha and n_d alone) and its stream number to ``stream``, and
    return its number of tokens n_d.

    The document has the entries ``begin`` to ``begin + n_words - 1`` of the
    CSR arrays. Its start is gamma_k = (alpha_k + n_d / n_topics)
    exp(spread z_k), with z_k the normal values of the stream numbered by
    ``key`` and the document's words and counts, as in ``document_start``.
    """
    cdef Py_ssize_t j
    cdef double length = 0.0
    for j in range(n_words):
        doc_counts[j] = counts[begin + j]
        length += doc_counts[j]
    stream[0] = _document_stream(key, words, indices, doc_counts, begin, n_words)
    if gamma != NULL:
        _start_gamma(gamma, n_topics, alpha, length / n_topics, spread, stream[0])
    return length


cdef inline Py_ssize_t _n_slots(
    const Py_ssize_t[::1] slot_offset, Py_ssize_t d
) noexcept nogil:
    """The slots of document d (``sparse_layout``): 0 when it is not kept
    sparsely, or when ``slot_offset`` is empty."""
    if slot_offset.shape[0] == 0:
        return 0
    return slot_offset[d + 1] - slot_offset[d]
