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


cdef inline Py_ssize_t _document_tokens(
    const Py_ssize_t[::1] indptr,
    const floating[::1] counts,
    Py_ssize_t d,
    double* length,
) noexcept nogil:
    """The number of tokens (``_token_count`` summed over the words) of
    document d of a CSR structure; its counts' sum, in the order in which
    ``_document_length`` adds them, to ``length``."""
    cdef Py_ssize_t j, n_tokens = 0
    length[0] = 0.0
    for j in range(indptr[d], indptr[d + 1]):
        n_tokens += _token_count(counts[j])
        length[0] += counts[j]
    return n_tokens


cdef inline Py_ssize_t _most_tokens(
    const Py_ssize_t[::1] indptr, const floating[::1] counts, double below
) noexcept nogil:
    """The largest number of tokens of the documents of a CSR structure
    whose counts sum to less than ``below``."""
    cdef Py_ssize_t d, n_tokens, most = 0
    cdef double length
    for d in range(indptr.shape[0] - 1):
        n_tokens = _document_tokens(indptr, counts, d, &length)
        if length < below:
            most = max(most, n_tokens)
    return most


cdef inline Py_ssize_t _capacity(
    const Py_ssize_t[::1] indptr,
    const floating[::1] counts,
    Py_ssize_t d,
    Py_ssize_t n_sweeps,
    double* length,
) noexcept nogil:
    """The most topics that the tokens of document d can hold in a chain of
    ``n_sweeps`` sweeps: a draw for each token at the start and in each
    sweep. Sets ``length`` as ``_document_tokens`` does."""
    return _document_tokens(indptr, counts, d, length) * (n_sweeps + 1)


cdef enum:
    # The topics of a block of the draw tables (``draw_tables``).
    DRAW_BLOCK = 16


def sparse_layout(
    const Py_ssize_t[::1] indptr,
    const floating[::1] counts,
    double sample_below,
    Py_ssize_t n_sweeps,
    Py_ssize_t n_topics,
):
    """Where the sampled step keeps each document's responsibilities
    sparsely.

    A document below ``sample_below`` tokens draws a topic for each of its
    tokens at its start and in each of its ``n_sweeps`` sweeps, so its
    tokens hold at most ``capacity = n_tokens (n_sweeps + 1)`` topics
    (``_capacity``). When that is fewer than the topics, its draws stay in
    SparseLDA's split (``_sampled_chain``) and its responsibilities are kept
    over the topics it holds: ``capacity`` slots for the document (its
    topics) and as many per word (their values). Other documents get no
    slots.

    Returns
    -------
    slot_offset : ndarray of shape (n_documents + 1,)
        Document d's slots are ``slot_offset[d]`` to ``slot_offset[d + 1] - 1``.
    value_offset : ndarray of shape (n_documents + 1,)
        The values of document d's words, one row of its slots per word,
        start at ``value_offset[d]``.
    """
    cdef Py_ssize_t n_documents = indptr.shape[0] - 1
    cdef Py_ssize_t d, capacity
    cdef double length
    slot_offset_array = np.zeros(n_documents + 1, dtype=np.intp)
    value_offset_array = np.zeros(n_documents + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] slot_offset = slot_offset_array
    cdef Py_ssize_t[::1] value_offset = value_offset_array
    with nogil:
        for d in range(n_documents):
            capacity = _capacity(indptr, counts, d, n_sweeps, &length)
            if length >= sample_below or capacity >= n_topics:
                capacity = 0
            slot_offset[d + 1] = slot_offset[d] + capacity
            value_offset[d + 1] = value_offset[d] + capacity * (
                indptr[d + 1] - indptr[d]
            )
    return slot_offset_array, value_offset_array


def draw_tables(
    const floating[:, ::1] mean_word_topic,
    const floating[::1] doc_topic_prior,
    double[:, ::1] out,
    Py_ssize_t n_threads=1,
):
    """The running sums by which the sampled step draws a word's topics.

    For each word, over the topics in blocks of
    DRAW_BLOCK, the sums up to the end of each block of E[beta_kw]
    (``out[w, :n_blocks]``) and of alpha_k E[beta_kw], the smoothing mass of
    SparseLDA (``out[w, n_blocks:]``): a draw from either searches the
    blocks by bisection and walks one block (``_draw_from_blocks``), which
    costs log K rather than K.

    Parameters
    ----------
    mean_word_topic : ndarray of shape (n_words, n_topics)
        E[beta] of the minibatch's words.
    doc_topic_prior : ndarray of shape (n_topics,)
        alpha.
    out : ndarray of shape (n_words, 2 * n_blocks)
        Output, n_blocks = ceil(n_topics / DRAW_BLOCK).
    n_threads : int, default=1
        The threads of the OpenMP team that share the words.
    """
    cdef Py_ssize_t n_topics = mean_word_topic.shape[1]
    cdef Py_ssize_t w, k
    cdef const floating* alpha = &doc_topic_prior[0]
    cdef bint symmetric = True
    for k in range(n_topics):
        symmetric = symmetric and alpha[k] == alpha[0]
    with nogil:
        for w in prange(out.shape[0], num_threads=n_threads, schedule="static"):
            _word_draw_table(
                &mean_word_topic[w, 0], alpha, symmetric, n_topics, out.shape[1] // 2,
                &out[w, 0],
            )


cdef inline void _word_draw_table(
    const floating* beta,
    const floating* alpha,
    bint symmetric,
    Py_ssize_t n_topics,
    Py_ssize_t n_blocks,
    double* out,
) noexcept nogil:
    """One word's row of ``draw_tables``: the running sums of E[beta_kw]
    (``beta``) to the end of each block of topics in ``out[:n_blocks]``,
    and of alpha_k E[beta_kw] in ``out[n_blocks:]``."""
    cdef Py_ssize_t b, first, n
    cdef double mass = 0.0
    cdef double smoothing = 0.0
    for b in range(n_blocks):
        first = b * DRAW_BLOCK
        n = min(DRAW_BLOCK, n_topics - first)
        mass += _block_sum(&beta[first], NULL, n)
        # A symmetric alpha's smoothing mass is alpha times E[beta]'s.
        if symmetric:
            smoothing = alpha[0] * mass
        else:
            smoothing += _block_sum(&beta[first], &alpha[first], n)
        out[b] = mass
        out[n_blocks + b] = smoothing


cdef inline double _block_sum(
    const floating* beta, const floating* alpha, Py_ssize_t n
) noexcept nogil:
    """The sum of beta_k (of alpha_k beta_k unless ``alpha`` is NULL) over
    n <= DRAW_BLOCK topics, as four interleaved partial sums: the additions
    of one chain wait for each other, those of four overlap."""
    cdef double part0 = 0.0, part1 = 0.0, part2 = 0.0, part3 = 0.0
    cdef Py_ssize_t i = 0
    if alpha == NULL:
        while i + 4 <= n:
            part0 += beta[i]
            part1 += beta[i + 1]
            part2 += beta[i + 2]
            part3 += beta[i + 3]
            i += 4
        while i < n:
            part0 += beta[i]
            i += 1
    else:
        while i + 4 <= n:
            part0 += alpha[i] * beta[i]
            part1 += alpha[i + 1] * beta[i + 1]
            part2 += alpha[i + 2] * beta[i + 2]
            part3 += alpha[i + 3] * beta[i + 3]
            i += 4
        while i < n:
            part0 += alpha[i] * beta[i]
            i += 1
    return (part0 + part2) + (part1 + part3)


cdef inline Py_ssize_t _draw_from_blocks(
    const double* running_sums,
    Py_ssize_t n_blocks,
    const floating* beta,
    const floating* alpha,
    Py_ssize_t n_topics,
    double target,
) noexcept nogil:
    """The first topic at which the running sum of beta_k (alpha_k beta_k
    unless ``alpha`` is NULL) reaches ``target``, from the sums at the ends
    of its blocks (``draw_tables``): the block by bisection, then the topic
    within it. The last topic of the block when rounding leaves the sum
    below the target."""
    cdef Py_ssize_t low = 0, high = n_blocks - 1, middle, k, end
    cdef double running
    while low < high:
        middle = (low + high) // 2
        if running_sums[middle] >= target:
            high = middle
        else:
            low = middle + 1
    running = running_sums[low - 1] if low > 0 else 0.0
    k = low * DRAW_BLOCK
    end = min(k + DRAW_BLOCK, n_topics)
    while True:
        running += beta[k] if alpha == NULL else alpha[k] * beta[k]
        if running >= target or k + 1 == end:
            return k
        k += 1


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


cdef inline void _touch(
    Py_ssize_t k, int* touched, Py_ssize_t* n_touched, int* slot_of
) noexcept nogil:
    """List topic k among the topics that the document's tokens have held:
    its slot is its place in the list."""
    if slot_of[k] < 0:
        slot_of[k] = <int> n_touched[0]
        touched[n_touched[0]] = <int> k
        n_touched[0] += 1


cdef inline void _touch_every_topic(
    double* kept,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    int* touched,
    Py_ssize_t* n_touched,
    int* slot_of,
    double* scratch,
) noexcept nogil:
    """Give every topic its own number as its slot, before the document's
    draws run over all the topics (``_draw_over_all_topics``): the kept
    rows of ``n_topics`` slots are moved from the order in which their
    topics were first held to the topics' order; NULL while they hold
    nothing."""
    cdef Py_ssize_t i, j, k
    cdef double* row
    for j in range(n_words if kept != NULL else 0):
        row = &kept[j * n_topics]
        memcpy(scratch, row, n_touched[0] * sizeof(double))
        memset(row, 0, n_topics * sizeof(double))
        for i in range(n_touched[0]):
            row[touched[i]] = scratch[i]
    for k in range(n_topics):
        touched[k] = <int> k
        slot_of[k] = <int> k
    n_touched[0] = n_topics


cdef inline void _sample_start(
    const floating* mean_word_topic,
    const double* tables,
    Py_ssize_t n_blocks,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    double share,
    int* topics,
    double* topic_counts,
    int* touched,
    Py_ssize_t* n_touched,
    int* slot_of,
    unsigned long long stream,
    unsigned long long* counter,
) noexcept nogil:
    """Each token's first topic drawn with probability proportional to
    E[beta_kw] (alpha_k + s), s = ``share`` = n_d / K: the symmetric start
    of the collapsed step. The draw falls in the smoothing mass
    sum_k alpha_k E[beta_kw] or in s sum_k E[beta_kw], and then in its
    blocks (``draw_tables``). Counts those draws in the document's topic
    counts N_dk, which are zero on entry (each token counted with its
    weight), and sets the topics drawn."""
    cdef Py_ssize_t j, k, token, t = 0
    cdef double smoothing, total, target, weight
    cdef const double* table
    cdef const floating* beta
    for j in range(n_words):
        beta = &mean_word_topic[rows[j] * n_topics]
        table = &tables[rows[j] * 2 * n_blocks]
        smoothing = table[2 * n_blocks - 1]
        total = smoothing + share * table[n_blocks - 1]
        for token in range(_token_count(doc_counts[j])):
            weight = _token_weight(doc_counts[j], token)
            target = _uniform(stream, counter[0]) * total
            counter[0] += 1
            if target <= smoothing:
                k = _draw_from_blocks(
                    table + n_blocks, n_blocks, beta, alpha, n_topics, target
                )
            else:
                k = _draw_from_blocks(
                    table, n_blocks, beta, NULL, n_topics,
                    (target - smoothing) / share,
                )
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
    ``weight`` added to it, whose slots are then the topics
    (``_touch_every_topic``)."""
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
    const double* table,
    Py_ssize_t n_blocks,
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
    topics, from the word's ``table`` (``draw_tables``). Unless
    ``kept_row`` is NULL, its conditional distribution times ``weight`` is
    added: the document's part to ``kept_row``, slot by slot, the smoothing
    part as its factor, to ``kept_smoothing``."""
    cdef Py_ssize_t i = 0
    cdef double smoothing_mass = table[2 * n_blocks - 1]
    cdef double document_mass = 0.0, running = 0.0, total, target, scale
    for i in range(n_touched):
        conditional[i] = beta[touched[i]] * max(topic_counts[touched[i]], 0.0)
        document_mass += conditional[i]
    total = document_mass + smoothing_mass
    if kept_row != NULL:
        scale = weight / total
        kept_smoothing[0] += scale
        for i in range(n_touched):
            kept_row[i] += scale * conditional[i]
    target = u * total
    if target > document_mass:
        return _draw_from_blocks(
            table + n_blocks, n_blocks, beta, alpha, n_topics,
            target - document_mass,
        )
    i = 0
    while i + 1 < n_touched:
        running += conditional[i]
        if running >= target:
            break
        i += 1
    return touched[i]


cdef inline void _sampled_sweep(
    const floating* mean_word_topic,
    const double* tables,
    Py_ssize_t n_blocks,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    int* topics,
    double* topic_counts,
    int* touched,
    Py_ssize_t* n_touched,
    int* slot_of,
    double* conditional,
    bint over_all_topics,
    double* kept,
    Py_ssize_t n_slots,
    double* kept_smoothing,
    unsigned long long stream,
    unsigned long long* counter,
) noexcept nogil:
    """One collapsed Gibbs sweep over the document's tokens.

    One token after the other, its topic is drawn from its conditional
    distribution, proportional to E[beta_kw] (N_dk without the token +
    alpha_k), and N_d updated with the draw (Griffiths & Steyvers 2004,
    with the topics' expected counts given by lambda as in Mimno et al.
    2012). Unless ``over_all_topics``, the conditional is split as in
    SparseLDA (Yao, Mimno & McCallum 2009) into the smoothing mass
    alpha_k E[beta_kw] and the document's mass N_dk E[beta_kw], which only
    the topics that the document's tokens have held (``touched``) carry
    (``_draw_over_touched``): a token then costs the topics of its document
    and log K, not K. With ``over_all_topics``, for a document whose tokens
    hold many topics, one pass over all the topics costs less
    (``_draw_over_all_topics``), and the slots are the topics.

    Unless ``kept`` is NULL, the token's conditional distribution times its
    weight is added to its word's row of ``n_slots`` slots: the
    Rao-Blackwellised estimate of the token's assignment, which has the
    draw's expectation and a smaller variance; a split draw adds its
    smoothing part to the word's ``kept_smoothing`` as one factor of
    alpha_k E[beta_kw].
    """
    cdef Py_ssize_t j, k, token, t = 0
    cdef double weight, u
    cdef const floating* beta
    cdef double* kept_row = NULL
    for j in range(n_words):
        beta = &mean_word_topic[rows[j] * n_topics]
        if kept != NULL:
            kept_row = &kept[j * n_slots]
        for token in range(_token_count(doc_counts[j])):
            weight = _token_weight(doc_counts[j], token)
            topic_counts[topics[t]] -= weight
            u = _uniform(stream, counter[0])
            counter[0] += 1
            if over_all_topics:
                k = _draw_over_all_topics(
                    beta, alpha, topic_counts, n_topics, conditional, u, weight,
                    kept_row,
                )
            else:
                k = _draw_over_touched(
                    beta, alpha, &tables[rows[j] * 2 * n_blocks], n_blocks,
                    topic_counts, touched, n_touched[0], n_topics, conditional,
                    u, weight, kept_row, &kept_smoothing[j],
                )
            topics[t] = <int> k
            topic_counts[k] += weight
            _touch(k, touched, n_touched, slot_of)
            t += 1


cdef inline Py_ssize_t _sampled_chain(
    const floating* mean_word_topic,
    const double* tables,
    Py_ssize_t n_blocks,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    double share,
    Py_ssize_t n_sweeps,
    Py_ssize_t n_slots,
    bint may_hold_every_topic,
    int* topics,
    double* kept,
    double* kept_smoothing,
    double* topic_counts,
    double* conditional,
    int* touched,
    int* slot_of,
    unsigned long long stream,
    bint* in_topic_order,
) noexcept nogil:
    """A document's chain: a start drawn as ``_sample_start`` draws it,
    then ``n_sweeps`` sweeps of which the first half (rounded down) burn
    in. Returns the number of topics its tokens have held, and sets
    ``in_topic_order`` when every topic's slot is the topic itself.

    The draws are split as in SparseLDA (``_sampled_sweep``) unless the
    document ``may_hold_every_topic`` (its ``_capacity`` is at least the
    number of topics) and its tokens have held more than a quarter of them:
    its later sweeps then draw over all the topics. The draws thus depend on
    the document alone, not on whether its responsibilities are kept
    sparsely.

    On return, ``kept`` holds for each word a row of ``n_slots`` slots (all
    the topics, or at least as many as its tokens can hold): the sums over
    the kept sweeps of its tokens' conditional distributions over the
    topics of ``touched``, slot by slot, and ``kept_smoothing`` the sums of
    their factors of alpha_k E[beta_kw] (``_sampled_sweep``); N_d is the
    topic counts of the last sweep, a draw of the document's assignments.
    ``slot_of`` gives each touched topic's slot; the caller resets it to
    -1. The draws are the values of the document's stream after those of
    its start (``_start_gamma`` reads the first n_topics + 1 at most), so
    they depend on the document and the key alone.
    """
    cdef Py_ssize_t sweep, n_touched = 0
    cdef Py_ssize_t n_burn = n_sweeps // 2
    cdef bint over_all_topics = False
    cdef unsigned long long counter = n_topics + 1
    memset(kept, 0, n_words * n_slots * sizeof(double))
    memset(kept_smoothing, 0, n_words * sizeof(double))
    _sample_start(
        mean_word_topic, tables, n_blocks, rows, n_words, n_topics, doc_counts,
        alpha, share, topics, topic_counts, touched, &n_touched, slot_of,
        stream, &counter,
    )
    for sweep in range(n_sweeps):
        if may_hold_every_topic and not over_all_topics and 4 * n_touched > n_topics:
            # A document without slots of its own (``sparse_layout``): its
            # kept rows have a slot for every topic.
            _touch_every_topic(
                kept if sweep > n_burn else NULL, n_words, n_topics, touched,
                &n_touched, slot_of, conditional,
            )
            over_all_topics = True
        _sampled_sweep(
            mean_word_topic, tables, n_blocks, rows, n_words, n_topics,
            doc_counts, alpha, topics, topic_counts, touched, &n_touched,
            slot_of, conditional, over_all_topics,
            kept if sweep >= n_burn else NULL, n_slots, kept_smoothing, stream,
            &counter,
        )
    in_topic_order[0] = over_all_topics
    return n_touched


cdef inline void _expand_kept(
    const floating* mean_word_topic,
    const Py_ssize_t* rows,
    Py_ssize_t n_words,
    Py_ssize_t n_topics,
    const floating* doc_counts,
    const floating* alpha,
    Py_ssize_t n_kept,
    const int* touched,
    Py_ssize_t n_touched,
    bint in_topic_order,
    const double* kept_smoothing,
    double* phi,
    double* topic_counts,
    double* scratch,
) noexcept nogil:
    """phi_dw from a chain's kept sums, in place: each word's row of
    ``n_topics`` slots moved to the topics' order (unless it is
    ``in_topic_order``), its smoothing factor
    times alpha_k E[beta_kw] added, and the sum divided by the kept sweeps
    times n_dw, the mean over its tokens' kept conditionals; and the
    expected topic counts N_d = sum_w n_dw phi_dw."""
    cdef Py_ssize_t i, j, k
    cdef double scale, smoothing
    cdef const floating* beta
    cdef double* row
    for k in range(n_topics):
        topic_counts[k] = 0.0
    for j in range(n_words):
        row = &phi[j * n_topics]
        if doc_counts[j] <= 0.0:
            memset(row, 0, n_topics * sizeof(double))
            continue
        if not in_topic_order:
            memcpy(scratch, row, n_touched * sizeof(double))
            memset(row, 0, n_topics * sizeof(double))
            for i in range(n_touched):
                row[touched[i]] = scratch[i]
        beta = &mean_word_topic[rows[j] * n_topics]
        scale = 1.0 / (n_kept * doc_counts[j])
        smoothing = kept_smoothing[j]
        for k in range(n_topics):
            row[k] = (row[k] + smoothing * alpha[k] * beta[k]) * scale
            topic_counts[k] += doc_counts[j] * row[k]


cdef inline void _write_sparse(
    Py_ssize_t begin,
    Py_ssize_t n_words,
    Py_ssize_t n_slots,
    Py_ssize_t n_kept,
    const int* touched,
    Py_ssize_t n_touched,
    const double* kept,
    const double* kept_smoothing,
    int* slot_topics,
    floating* slot_values,
    floating* smoothing_share,
) noexcept nogil:
    """A sampled document's responsibilities n_dw phi_dwk kept sparsely:
    its touched topics in its slots (-1 in those left), and for each word
    the mean over the kept sweeps of its slots' sums and of its smoothing
    factor; n_dw phi_dwk is the slot's value, plus the factor times
    alpha_k E[beta_kw] (``responsibility_statistic``)."""
    cdef Py_ssize_t i, j
    cdef double scale = 1.0 / n_kept
    for i in range(n_slots):
        slot_topics[i] = touched[i] if i < n_touched else -1
    for j in range(n_words):
        smoothing_share[begin + j] = <floating> (kept_smoothing[j] * scale)
        for i in range(n_slots):
            slot_values[j * n_slots + i] = <floating> (kept[j * n_slots + i] * scale)


TOPICS_PER_DRAW_BLOCK = DRAW_BLOCK
