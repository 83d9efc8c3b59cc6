# The compiled LDA local step, included by _fast.pyx (built for any
# processor) and _fast_avx2.pyx (built with AVX2 and FMA instructions).

from cython cimport floating
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.math cimport cos, fabs, log, sin, sqrt
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

import numpy as np


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    /* exp(a) for a in [-708, 709] (clamped outside), relative error below
       4e-16, written so that compilers vectorise loops calling it: a = n ln2
       + r by rounding with the 1.5 * 2^52 shift (no rounding call), e^r by
       its Taylor polynomial to degree 13 (|r| <= ln2 / 2), 2^n by building
       the exponent bits. */
    static inline double sklearn_svi_exp(double a)
    {
        const double shift = 6755399441055744.0;  /* 1.5 * 2^52 */
        double shifted, n, r, p, scale;
        int64_t bits;
        a = a < -708.0 ? -708.0 : (a > 709.0 ? 709.0 : a);
        shifted = a * 1.4426950408889634 + shift;
        n = shifted - shift;
        r = (a - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
        p = 1.0 / 6227020800.0;
        p = p * r + 1.0 / 479001600.0;
        p = p * r + 1.0 / 39916800.0;
        p = p * r + 1.0 / 3628800.0;
        p = p * r + 1.0 / 362880.0;
        p = p * r + 1.0 / 40320.0;
        p = p * r + 1.0 / 5040.0;
        p = p * r + 1.0 / 720.0;
        p = p * r + 1.0 / 120.0;
        p = p * r + 1.0 / 24.0;
        p = p * r + 1.0 / 6.0;
        p = p * r + 0.5;
        p = p * r + 1.0;
        p = p * r + 1.0;
        memcpy(&bits, &shifted, sizeof bits);
        bits = (bits - INT64_C(0x4338000000000000) + 1023) << 52;
        memcpy(&scale, &bits, sizeof scale);
        return p * scale;
    }
    """
    double _exp "sklearn_svi_exp"(double a) noexcept nogil


cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    #endif

    /* Atomically add one to *counter and return its previous value. */
    static inline Py_ssize_t sklearn_svi_claim(Py_ssize_t* counter)
    {
    #if defined(_MSC_VER) && defined(_WIN64)
        return (Py_ssize_t) _InterlockedExchangeAdd64((volatile __int64*) counter, 1);
    #elif defined(_MSC_VER)
        return (Py_ssize_t) _InterlockedExchangeAdd((volatile long*) counter, 1);
    #else
        return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    #endif
    }
    """
    Py_ssize_t _claim "sklearn_svi_claim"(Py_ssize_t* counter) noexcept nogil


cdef extern from *:
    """
    #if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
    #include <xmmintrin.h>
    /* Set the SSE control register to flush subnormal results to zero and
       read subnormal inputs as zero; return its previous value. */
    static inline unsigned int sklearn_svi_flush_subnormals(void)
    {
        unsigned int previous = _mm_getcsr();
        _mm_setcsr(previous | 0x8040);
        return previous;
    }
    static inline void sklearn_svi_restore_float_mode(unsigned int previous)
    {
        _mm_setcsr(previous);
    }
    #else
    static inline unsigned int sklearn_svi_flush_subnormals(void) { return 0; }
    static inline void sklearn_svi_restore_float_mode(unsigned int previous) {}
    #endif
    """
    unsigned int _flush_subnormals "sklearn_svi_flush_subnormals"() noexcept nogil
    void _restore_float_mode "sklearn_svi_restore_float_mode"(unsigned int) noexcept nogil


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    #define SKLEARN_SVI_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

    /* The SplitMix64 output function: a bijection of 64-bit integers whose
       outputs for consecutive inputs pass as independent uniform bits. */
    static inline uint64_t sklearn_svi_mix(uint64_t z)
    {
        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
    }

    /* Fold one (word, count) pair of a document into its running hash: a
       multiply and an add per word; sklearn_svi_mix of the final hash is
       the document's stream number. */
    static inline uint64_t sklearn_svi_fold(uint64_t hash, int64_t word, double count)
    {
        uint64_t bits;
        memcpy(&bits, &count, sizeof bits);
        return (hash ^ ((uint64_t) word + 1)) * SKLEARN_SVI_GOLDEN + bits;
    }

    /* Value ``counter`` of a stream, as a uniform double in (0, 1]. */
    static inline double sklearn_svi_uniform(uint64_t stream, uint64_t counter)
    {
        uint64_t bits = sklearn_svi_mix(stream + SKLEARN_SVI_GOLDEN * (counter + 1));
        return ((double) (bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    }
    """
    unsigned long long _mix "sklearn_svi_mix"(unsigned long long z) noexcept nogil
    unsigned long long _fold "sklearn_svi_fold"(
        unsigned long long stream, long long word, double count
    ) noexcept nogil
    double _uniform "sklearn_svi_uniform"(
        unsigned long long stream, unsigned long long counter
    ) noexcept nogil


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


def exp_dirichlet_expectation_rows(
    const floating[:, ::1] word_topic,
    const double[::1] topic_totals,
    const Py_ssize_t[::1] rows,
    floating[:, ::1] out,
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
    """
    cdef Py_ssize_t n_topics = word_topic.shape[1]
    cdef Py_ssize_t j, k
    cdef size_t row_bytes = n_topics * sizeof(floating)
    cdef double* topic_scale = <double*> malloc(3 * n_topics * sizeof(double))
    cdef double* values = topic_scale + n_topics
    cdef double* work = values + n_topics
    if topic_scale == NULL:
        raise MemoryError()
    with nogil:
        for k in range(n_topics):
            topic_scale[k] = topic_totals[k]
        _exp_digamma(topic_scale, work, n_topics)
        for k in range(n_topics):
            topic_scale[k] = 1.0 / topic_scale[k]
        for j in range(rows.shape[0]):
            if j + PREFETCH_ROWS < rows.shape[0]:
                _prefetch(&word_topic[rows[j + PREFETCH_ROWS], 0], row_bytes)
            for k in range(n_topics):
                values[k] = word_topic[rows[j], k]
            _exp_digamma(values, work, n_topics)
            for k in range(n_topics):
                out[j, k] = <floating> (values[k] * topic_scale[k])
    free(topic_scale)


def mean_rows(
    const floating[:, ::1] word_topic,
    const double[::1] topic_totals,
    const Py_ssize_t[::1] rows,
    floating[:, ::1] out,
):
    """E[beta_kw] = lambda_kw / sum_v lambda_kv for the given words w.

    The arguments are those of ``exp_dirichlet_expectation_rows``.
    """
    cdef Py_ssize_t n_topics = word_topic.shape[1]
    cdef Py_ssize_t j, k
    cdef double* topic_scale = <double*> malloc(n_topics * sizeof(double))
    if topic_scale == NULL:
        raise MemoryError()
    with nogil:
        for k in range(n_topics):
            topic_scale[k] = 1.0 / topic_totals[k]
        for j in range(rows.shape[0]):
            for k in range(n_topics):
                out[j, k] = <floating> (word_topic[rows[j], k] * topic_scale[k])
    free(topic_scale)


def renumber_words(const Py_ssize_t[::1] indices, Py_ssize_t n_features):
    """The distinct words of a minibatch, and its word indices renumbered.

    Parameters
    ----------
    indices : ndarray of shape (nnz,)
        The vocabulary index of each entry of the minibatch.
    n_features : int
        Vocabulary size.

    Returns
    -------
    words : ndarray of shape (n_words,)
        The vocabulary indices present, increasing.
    renumbered : ndarray of shape (nnz,)
        The position in ``words`` of each entry's word.
    """
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t p, w, n_words = 0
    renumbered_array = np.empty(nnz, dtype=np.intp)
    words_array = np.empty(min(nnz, n_features), dtype=np.intp)
    cdef Py_ssize_t[::1] renumbered = renumbered_array
    cdef Py_ssize_t[::1] words = words_array
    cdef Py_ssize_t* position = <Py_ssize_t*> calloc(n_features, sizeof(Py_ssize_t))
    if position == NULL:
        raise MemoryError()
    with nogil:
        for p in range(nnz):
            position[indices[p]] = 1
        for w in range(n_features):
            if position[w]:
                position[w] = n_words
                words[n_words] = w
                n_words += 1
        for p in range(nnz):
            renumbered[p] = position[indices[p]]
    free(position)
    return words_array[:n_words], renumbered_array


def words_of_documents(
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] indices,
    Py_ssize_t n_words,
):
    """The documents of each word, from the words of each document (CSR to CSC).

    Parameters
    ----------
    indptr, indices : ndarray
        CSR structure of the documents; ``indices`` are words in
        ``range(n_words)``.
    n_words : int
        Number of words.

    Returns
    -------
    word_indptr : ndarray of shape (n_words + 1,)
        Word w has the entries ``word_indptr[w]`` to ``word_indptr[w + 1] - 1``.
    documents : ndarray of shape (nnz,)
        The document of each entry, increasing within each word.
    positions : ndarray of shape (nnz,)
        The position of each entry in the CSR arrays.
    """
    cdef Py_ssize_t n_documents = indptr.shape[0] - 1
    cdef Py_ssize_t d, p, w, slot
    word_indptr_array = np.zeros(n_words + 1, dtype=np.intp)
    documents_array = np.empty(indices.shape[0], dtype=np.intp)
    positions_array = np.empty(indices.shape[0], dtype=np.intp)
    cdef Py_ssize_t[::1] word_indptr = word_indptr_array
    cdef Py_ssize_t[::1] documents = documents_array
    cdef Py_ssize_t[::1] positions = positions_array
    cdef Py_ssize_t* next_slot = <Py_ssize_t*> malloc((n_words + 1) * sizeof(Py_ssize_t))
    if next_slot == NULL:
        raise MemoryError()
    with nogil:
        for p in range(indices.shape[0]):
            word_indptr[indices[p] + 1] += 1
        for w in range(n_words):
            word_indptr[w + 1] += word_indptr[w]
            next_slot[w] = word_indptr[w]
        for d in range(n_documents):
            for p in range(indptr[d], indptr[d + 1]):
                w = indices[p]
                slot = next_slot[w]
                next_slot[w] = slot + 1
                documents[slot] = d
                positions[slot] = p
    free(next_slot)
    return word_indptr_array, documents_array, positions_array


def word_topic_statistic(
    const Py_ssize_t[::1] word_indptr,
    const Py_ssize_t[::1] documents,
    const Py_ssize_t[::1] positions,
    const floating[::1] count_ratio,
    const floating[:, ::1] exp_doc_topic,
    const floating[:, ::1] exp_word_topic,
    floating[:, ::1] out,
    double scale,
    Py_ssize_t start,
    Py_ssize_t stop,
):
    """The minibatch statistic sum_d n_dw phi_dwk for words ``start`` to ``stop - 1``.

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
        Output rows ``start`` to ``stop - 1``.
    scale : float
        Factor of every value (1 / n_documents for the minibatch mean).
    start, stop : int
        The range of words.
    """
    cdef Py_ssize_t n_topics = exp_doc_topic.shape[1]
    cdef Py_ssize_t w, j, k
    cdef floating weight
    cdef floating* row
    cdef const floating* theta
    cdef unsigned int float_mode
    with nogil:
        float_mode = _flush_subnormals()
        for w in range(start, stop):
            row = &out[w, 0]
            for k in range(n_topics):
                row[k] = 0
            for j in range(word_indptr[w], word_indptr[w + 1]):
                weight = count_ratio[positions[j]]
                theta = &exp_doc_topic[documents[j], 0]
                for k in range(n_topics):
                    row[k] += weight * theta[k]
            for k in range(n_topics):
                row[k] *= <floating> (exp_word_topic[w, k] * scale)
        _restore_float_mode(float_mode)


def responsibility_statistic(
    const Py_ssize_t[::1] word_indptr,
    const Py_ssize_t[::1] documents,
    const Py_ssize_t[::1] positions,
    const floating[:, ::1] responsibility,
    const floating[::1] document_weight,
    floating[:, ::1] out,
    double scale,
    Py_ssize_t start,
    Py_ssize_t stop,
):
    """The minibatch statistic sum_d w_d n_dw phi_dwk for words ``start`` to ``stop - 1``.

    The sum over the documents containing w, in increasing order, of the
    responsibilities n_dw phi_dwk of the collapsed local step, each weighed
    by its document's weight w_d.

    Parameters
    ----------
    word_indptr, documents, positions : ndarray
        The documents of each word, from :func:`words_of_documents`.
    responsibility : ndarray of shape (nnz, n_topics)
        n_dw phi_dwk, in the documents' (CSR) order.
    document_weight : ndarray of shape (n_documents,)
        w_d.
    out : ndarray of shape (n_words, n_topics)
        Output rows ``start`` to ``stop - 1``.
    scale : float
        Factor of every value (1 / n_documents for the minibatch mean).
    start, stop : int
        The range of words.
    """
    cdef Py_ssize_t n_topics = responsibility.shape[1]
    cdef Py_ssize_t w, j, k
    cdef floating weight
    cdef floating* row
    cdef const floating* phi
    cdef unsigned int float_mode
    with nogil:
        float_mode = _flush_subnormals()
        for w in range(start, stop):
            row = &out[w, 0]
            for k in range(n_topics):
                row[k] = 0
            for j in range(word_indptr[w], word_indptr[w + 1]):
                weight = document_weight[documents[j]]
                phi = &responsibility[positions[j], 0]
                for k in range(n_topics):
                    row[k] += weight * phi[k]
            for k in range(n_topics):
                row[k] *= <floating> scale
        _restore_float_mode(float_mode)


cdef inline Py_ssize_t _longest_document(const Py_ssize_t[::1] indptr) noexcept nogil:
    """The number of words of the longest document of a CSR structure."""
    cdef Py_ssize_t d, longest = 0
    for d in range(indptr.shape[0] - 1):
        longest = max(longest, indptr[d + 1] - indptr[d])
    return longest


cdef inline bint _claim_document(
    const Py_ssize_t[::1] order,
    Py_ssize_t[::1] next_document,
    const Py_ssize_t[::1] indptr,
    Py_ssize_t* d,
    Py_ssize_t* begin,
    Py_ssize_t* n_words,
) noexcept nogil:
    """Take the next document of ``order`` that no thread has taken: set its
    index, its first entry in the CSR arrays and its number of words.
    Returns False once all are taken.

    The threads share ``next_document[0]``, which each increments atomically.
    """
    cdef Py_ssize_t position = _claim(&next_document[0])
    if position >= indptr.shape[0] - 1:
        return False
    d[0] = order[position]
    begin[0] = indptr[d[0]]
    n_words[0] = indptr[d[0] + 1] - begin[0]
    return True


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
    ``gamma`` and its stream number to ``stream``, and return its number of
    tokens n_d.

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
    _start_gamma(gamma, n_topics, alpha, length / n_topics, spread, stream[0])
    return length


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


def infer_documents(
    const floating[:, ::1] exp_word_topic,
    const Py_ssize_t[::1] words,
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] indices,
    const floating[::1] counts,
    floating[:, ::1] doc_topic,
    floating[:, ::1] exp_doc_topic,
    floating[::1] count_ratio,
    const floating[::1] doc_topic_prior,
    Py_ssize_t max_iter,
    double mean_change_tol,
    double start_spread,
    unsigned long long start_key,
    const Py_ssize_t[::1] order,
    Py_ssize_t[::1] next_document,
):
    """Run the local fixed point for documents taken one at a time.

    Every thread of a minibatch calls this function with the same arguments:
    each claims the next document of ``order`` not yet taken by atomically
    incrementing ``next_document[0]``, until all are done. A slow thread thus
    takes fewer documents, and a document's result does not depend on which
    thread computes it.

    Parameters
    ----------
    exp_word_topic : ndarray of shape (n_words, n_topics)
        exp E[log beta] for the words present in the minibatch, one row
        per word.
    words : ndarray of shape (n_words,)
        The vocabulary index of each row of ``exp_word_topic``.
    indptr, indices, counts : ndarray
        CSR representation of the minibatch; ``indices`` index the rows of
        ``exp_word_topic``.
    doc_topic : ndarray of shape (n_documents, n_topics)
        Output: gamma at each document's fixed point.
    exp_doc_topic : ndarray of shape (n_documents, n_topics)
        Output: exp E[log theta] at the final gamma.
    count_ratio : ndarray of shape (nnz,)
        Output: n_dw / norm_dw at the final gamma, aligned with ``counts``.
    doc_topic_prior : ndarray of shape (n_topics,)
        alpha.
    max_iter : int
        Maximum number of fixed-point iterations per document.
    mean_change_tol : float
        Stop when the mean absolute change of gamma is below this value.
    start_spread : float
        Document d starts from gamma_dk = (alpha_k + n_d / n_topics)
        exp(start_spread z_dk), with z_dk standard normal values from a
        stream numbered by ``start_key`` and the document's words and counts
        (``document_start``): a document's start depends on nothing else.
    start_key : int
        The key of the documents' streams, in [0, 2**64).
    order : ndarray of shape (n_documents,)
        The order in which the documents are taken.
    next_document : ndarray of shape (1,)
        The shared counter of claimed documents, 0 before the first call.

    Returns
    -------
    n_iter : int
        Total number of fixed-point iterations over the documents this call
        processed.
    """
    cdef Py_ssize_t n_topics = exp_word_topic.shape[1]
    cdef Py_ssize_t lanes = (
        SKLEARN_SVI_DOUBLE_LANES if floating is double else SKLEARN_SVI_FLOAT_LANES
    )
    cdef Py_ssize_t n_padded = _round_up(n_topics, lanes)
    cdef Py_ssize_t longest = _round_up(_longest_document(indptr), SKLEARN_SVI_WORDS)
    cdef Py_ssize_t d, begin, n_words, n_rows, n_iter = 0
    cdef floating eps = FLT_EPSILON if floating is float else DBL_EPSILON
    cdef const floating* alpha = &doc_topic_prior[0]
    cdef unsigned int float_mode
    cdef unsigned long long stream
    cdef void* memory
    cdef double* work
    cdef floating* block
    cdef floating* exp_theta
    cdef floating* topic_sum
    cdef floating* doc_counts
    cdef floating* ratio
    cdef floating* gamma

    if not _allocate_mean_field(
        longest, n_topics, n_padded, &memory, &work, &block, &exp_theta,
        &topic_sum, &doc_counts, &ratio,
    ):
        raise MemoryError()
    with nogil:
        float_mode = _flush_subnormals()
        while _claim_document(order, next_document, indptr, &d, &begin, &n_words):
            n_rows = _round_up(n_words, SKLEARN_SVI_WORDS)
            gamma = &doc_topic[d, 0]
            _gather_block(
                exp_word_topic, indices, begin, n_words, n_rows, n_padded,
                block, doc_counts,
            )
            _start_document(
                counts, words, indices, begin, n_words, alpha, n_topics,
                start_spread, start_key, doc_counts, gamma, &stream,
            )
            n_iter += _mean_field_fixed_point(
                gamma, alpha, block, doc_counts, exp_theta, topic_sum, ratio,
                work, n_topics, n_rows, n_padded, eps, max_iter, mean_change_tol,
            )
            _write_mean_field(
                d, begin, n_words, gamma, block, doc_counts, exp_theta, ratio,
                work, n_topics, n_rows, n_padded, eps, exp_doc_topic, count_ratio,
            )
        _restore_float_mode(float_mode)
    free(memory)
    free(work)
    return n_iter
