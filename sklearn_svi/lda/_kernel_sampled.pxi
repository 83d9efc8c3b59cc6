# The sampled local step: collapsed Gibbs sweeps over each document's tokens
# at the current topics, the kept sweeps' conditional distributions averaged.


cdef inline Py_ssize_t _token_count(double count) noexcept nogil:
    """The tokens of a word with count n: ceil(n), the last one weighing
    n - floor(n) when n is fractional (``_token_weight``)."""
    cdef Py_ssize_t whole = <Py_ssize_t> count
    return whole + (count > whole)


cdef inline double _token_weight(double count, Py_ssize_t token) noexcept nogil:
    """The weight of token number ``token`` of a word with count n: 1, and
    n - floor(n) for the last token of a fractional count."""
    return min(count - token, 1.0)


cdef inline Py_ssize_t _most_tokens(
    const Py_ssize_t[::1] indptr, const floating[::1] counts, double below
) noexcept nogil:
    """The largest number of tokens (``_token_count`` summed over the words)
    of the documents of a CSR structure whose counts sum to less than
    ``below``."""
    cdef Py_ssize_t d, j, n_tokens, most = 0
    cdef double length
    for d in range(indptr.shape[0] - 1):
        n_tokens = 0
        length = 0.0
        for j in range(indptr[d], indptr[d + 1]):
            n_tokens += _token_count(counts[j])
            length += counts[j]
        if length < below:
            most = max(most, n_tokens)
    return most


cdef inline Py_ssize_t _draw_topic(
    const double* weights, Py_ssize_t n_topics, double total, double u
) noexcept nogil:
    """The first topic at which the running sum of ``weights`` reaches
    ``u`` times their ``total``: a draw from the weights, by inversion, for
    u uniform in (0, 1].

    The search skips whole blocks of eight weights while their sum stays
    below the target, and then walks the block that reaches it: a chain of
    about n_topics / 8 + 4 dependent additions instead of n_topics / 2.
    """
    cdef Py_ssize_t k = 0, i
    cdef double target = u * total
    cdef double running = 0.0, block
    while k + 8 < n_topics:
        block = 0.0
        for i in range(8):
            block += weights[k + i]
        if running + block >= target:
            break
        running += block
        k += 8
    running += weights[k]
    while running < target and k + 1 < n_topics:
        k += 1
        running += weights[k]
    return k


cdef inline Py_ssize_t _draw_smoothing(
    const floating* beta,
    const floating* alpha,
    Py_ssize_t n_topics,
    double target,
) noexcept nogil:
    """The first topic at which the running sum of alpha_k beta_k reaches
    ``target``: a draw from the smoothing mass, by inversion, skipping whole
    blocks of eight topics as ``_draw_topic`` does. The last topic when
    rounding leaves the sum below the target."""
    cdef Py_ssize_t k = 0, i
    cdef double running = 0.0, block
    while k + 8 < n_topics:
        block = 0.0
        for i in range(8):
            block += alpha[k + i] * beta[k + i]
        if running + block >= target:
            break
        running += block
        k += 8
    running += alpha[k] * beta[k]
    while running < target and k + 1 < n_topics:
        k += 1
        running += alpha[k] * beta[k]
    return k


cdef inline void _touch(
    Py_ssize_t k, int* touched, Py_ssize_t* n_touched, int* slot_of
) noexcept nogil:
    """List topic k among the topics that the document's tokens have held."""
    if slot_of[k] < 0:
        slot_of[k] = <int> n_touched[0]
        touched[n_touched[0]] = <int> k
        n_touched[0] += 1


cdef inline void _sample_start(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    const floating* start,
    int* topics,
    double* topic_counts,
    double* conditional,
    double* smoothing_mass,
    int* touched,
    Py_ssize_t* n_touched,
    int* slot_of,
    unsigned long long stream,
    unsigned long long* counter,
) noexcept nogil:
    """Each token's first topic drawn with probability proportional to
    E[beta_kw] g_k, g the document's start, the document's topic counts
    N_dk of those draws (each token counted with its weight) and the topics
    drawn; and each word's smoothing mass sum_k alpha_k E[beta_kw]."""
    cdef Py_ssize_t j, k, token, t = 0
    cdef double total, weight, mass
    cdef const floating* beta
    for k in range(n_topics):
        topic_counts[k] = 0.0
    for j in range(n_words):
        beta = &mean_word_topic[rows[j] * n_topics]
        mass = 0.0
        for k in range(n_topics):
            conditional[k] = beta[k] * start[k]
            mass += alpha[k] * beta[k]
        smoothing_mass[j] = mass
        total = _sum(conditional, n_topics)
        for token in range(_token_count(doc_counts[j])):
            weight = _token_weight(doc_counts[j], token)
            k = _draw_topic(
                conditional, n_topics, total, _uniform(stream, counter[0])
            )
            counter[0] += 1
            topics[t] = <int> k
            topic_counts[k] += weight
            _touch(k, touched, n_touched, slot_of)
            t += 1


cdef inline Py_ssize_t _draw_over_all_topics(
    const floating* beta,
    const floating* alpha,
    const double* topic_counts,
    Py_ssize_t n_topics,
    double* conditional,
    double u,
    double weight,
    double* kept_row,
) noexcept nogil:
    """A token's topic drawn from E[beta_kw] (N_dk + alpha_k) over all the
    topics; unless ``kept_row`` is NULL, its conditional distribution times
    ``weight`` added to it."""
    cdef Py_ssize_t k
    cdef double total, scale
    for k in range(n_topics):
        conditional[k] = beta[k] * (max(topic_counts[k], 0.0) + alpha[k])
    total = _sum(conditional, n_topics)
    if kept_row != NULL:
        scale = weight / total
        for k in range(n_topics):
            kept_row[k] += scale * conditional[k]
    return _draw_topic(conditional, n_topics, total, u)


cdef inline Py_ssize_t _draw_over_touched(
    const floating* beta,
    const floating* alpha,
    double smoothing_mass,
    const double* topic_counts,
    const int* touched,
    Py_ssize_t n_touched,
    Py_ssize_t n_topics,
    double* conditional,
    double u,
    double weight,
    double* kept_row,
    double* kept_smoothing,
) noexcept nogil:
    """A token's topic drawn from E[beta_kw] (N_dk + alpha_k) in SparseLDA's
    split: the document's mass N_dk E[beta_kw] over the ``touched`` topics,
    then, when the draw falls beyond it, the smoothing mass over all
    topics. Unless ``kept_row`` is NULL, its conditional distribution times
    ``weight`` is added: the document's part to ``kept_row``, the smoothing
    part as its factor, to ``kept_smoothing``."""
    cdef Py_ssize_t i = 0
    cdef double document_mass = 0.0, running = 0.0, total, target, scale
    for i in range(n_touched):
        conditional[i] = beta[touched[i]] * max(topic_counts[touched[i]], 0.0)
        document_mass += conditional[i]
    total = document_mass + smoothing_mass
    if kept_row != NULL:
        scale = weight / total
        kept_smoothing[0] += scale
        for i in range(n_touched):
            kept_row[touched[i]] += scale * conditional[i]
    target = u * total
    if target > document_mass:
        return _draw_smoothing(beta, alpha, n_topics, target - document_mass)
    i = 0
    while i + 1 < n_touched:
        running += conditional[i]
        if running >= target:
            break
        i += 1
    return touched[i]


cdef inline void _sampled_sweep(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    const double* smoothing_mass,
    int* topics,
    double* topic_counts,
    int* touched,
    Py_ssize_t* n_touched,
    int* slot_of,
    double* conditional,
    double* kept,
    double* kept_smoothing,
    unsigned long long stream,
    unsigned long long* counter,
) noexcept nogil:
    """One collapsed Gibbs sweep over the document's tokens.

    One token after the other, its topic is drawn from its conditional
    distribution, proportional to E[beta_kw] (N_dk without the token +
    alpha_k), and N_d updated with the draw (Griffiths & Steyvers 2004,
    with the topics' expected counts given by lambda as in Mimno et al.
    2012). While the topics that the document's tokens have held
    (``touched``) are at most a quarter of all topics, the conditional is
    split as in SparseLDA (Yao, Mimno & McCallum 2009) into the smoothing mass
    alpha_k E[beta_kw], whose sum over the topics is the word's
    ``smoothing_mass``, and the document's mass N_dk E[beta_kw], which only
    the touched topics carry (``_draw_over_touched``): a token then costs
    the topics of its document, not all topics. Beyond that, one pass over
    all the topics costs less (``_draw_over_all_topics``).

    Unless ``kept`` is NULL, the token's conditional distribution times its
    weight is added to its word's row: the Rao-Blackwellised estimate of
    the token's assignment, which has the draw's expectation and a smaller
    variance; a split draw adds its smoothing part to the word's
    ``kept_smoothing`` as one factor of alpha_k E[beta_kw].
    """
    cdef Py_ssize_t j, k, token, t = 0
    cdef double weight, u
    cdef const floating* beta
    cdef double* kept_row = NULL
    for j in range(n_words):
        beta = &mean_word_topic[rows[j] * n_topics]
        if kept != NULL:
            kept_row = &kept[j * n_topics]
        for token in range(_token_count(doc_counts[j])):
            weight = _token_weight(doc_counts[j], token)
            topic_counts[topics[t]] -= weight
            u = _uniform(stream, counter[0])
            counter[0] += 1
            if 4 * n_touched[0] > n_topics:
                k = _draw_over_all_topics(
                    beta, alpha, topic_counts, n_topics, conditional, u, weight,
                    kept_row,
                )
            else:
                k = _draw_over_touched(
                    beta, alpha, smoothing_mass[j], topic_counts, touched,
                    n_touched[0], n_topics, conditional, u, weight, kept_row,
                    &kept_smoothing[j],
                )
            topics[t] = <int> k
            topic_counts[k] += weight
            _touch(k, touched, n_touched, slot_of)
            t += 1


cdef inline void _sampled_chain(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    const floating* start,
    Py_ssize_t n_sweeps,
    int* topics,
    double* phi,
    double* topic_counts,
    double* conditional,
    double* last_counts,
    double* word_buffers,
    int* touched,
    int* slot_of,
    unsigned long long stream,
) noexcept nogil:
    """A document's chain: a start drawn from ``start``, then ``n_sweeps``
    sweeps of which the first half (rounded down) burn in.

    On return, phi_dw is the mean of the conditional distributions of word
    w's tokens over the kept sweeps, N_d = sum_w n_dw phi_dw, and
    ``last_counts`` the topic counts of the last sweep: a draw of the
    document's assignments. The draws are the values of the document's
    stream after those of its start (``_start_gamma`` reads the first
    n_topics + 1 at most), so they depend on the document and the key
    alone. ``word_buffers`` holds two values per word, ``touched`` and
    ``slot_of`` one per topic, ``slot_of`` -1 everywhere, as it is left.
    """
    cdef Py_ssize_t i, j, k, sweep, n_touched = 0
    cdef Py_ssize_t n_burn = n_sweeps // 2
    cdef unsigned long long counter = n_topics + 1
    cdef double scale, smoothing
    cdef double* smoothing_mass = word_buffers
    cdef double* kept_smoothing = word_buffers + n_words
    cdef const floating* beta
    memset(phi, 0, n_words * n_topics * sizeof(double))
    memset(kept_smoothing, 0, n_words * sizeof(double))
    _sample_start(
        mean_word_topic, rows, n_words, n_topics, doc_counts, alpha, start,
        topics, topic_counts, conditional, smoothing_mass, touched, &n_touched,
        slot_of, stream, &counter,
    )
    for sweep in range(n_sweeps):
        _sampled_sweep(
            mean_word_topic, rows, n_words, n_topics, doc_counts, alpha,
            smoothing_mass, topics, topic_counts, touched, &n_touched, slot_of,
            conditional, phi if sweep >= n_burn else NULL, kept_smoothing,
            stream, &counter,
        )
    memcpy(last_counts, topic_counts, n_topics * sizeof(double))
    for i in range(n_touched):
        slot_of[touched[i]] = -1
    for k in range(n_topics):
        topic_counts[k] = 0.0
    for j in range(n_words):
        if doc_counts[j] <= 0.0:
            continue
        beta = &mean_word_topic[rows[j] * n_topics]
        scale = 1.0 / ((n_sweeps - n_burn) * doc_counts[j])
        smoothing = kept_smoothing[j]
        for k in range(n_topics):
            phi[j * n_topics + k] = (
                phi[j * n_topics + k] + smoothing * alpha[k] * beta[k]
            ) * scale
            topic_counts[k] += doc_counts[j] * phi[j * n_topics + k]
