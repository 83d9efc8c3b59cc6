# The word index of a minibatch: its distinct words, renumbered, and for each
# word the documents that hold it.


ctypedef fused csr_index:
    int32_t
    int64_t


def compact_rows(
    const csr_index[::1] indptr,
    const csr_index[::1] indices,
    const floating[::1] data,
    const Py_ssize_t[::1] rows,
    Py_ssize_t n_features,
):
    """Rows of a CSR matrix, cut from its arrays, with their words renumbered.

    Parameters
    ----------
    indptr, indices, data : ndarray
        The CSR matrix, of ``n_features`` columns.
    rows : ndarray of shape (n_rows,)
        The rows to cut, in this order.
    n_features : int
        Vocabulary size.

    Returns
    -------
    words : ndarray of shape (n_words,)
        The vocabulary indices present in the rows, increasing.
    row_indptr : ndarray of shape (n_rows + 1,)
        The rows' CSR row pointers.
    renumbered : ndarray of shape (nnz,)
        The position in ``words`` of each entry's word, row after row.
    counts : ndarray of shape (nnz,)
        The entries' values, row after row.
    """
    cdef Py_ssize_t n_rows = rows.shape[0]
    cdef Py_ssize_t j, p, q, w, c, n_words = 0
    row_indptr_array = np.empty(n_rows + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] row_indptr = row_indptr_array
    row_indptr[0] = 0
    with nogil:
        for j in range(n_rows):
            row_indptr[j + 1] = row_indptr[j] + (
                indptr[rows[j] + 1] - indptr[rows[j]]
            )
    cdef Py_ssize_t nnz = row_indptr[n_rows]
    renumbered_array = np.empty(nnz, dtype=np.intp)
    counts_array = np.empty(nnz, dtype=np.float64 if floating is double else np.float32)
    words_array = np.empty(min(nnz, n_features), dtype=np.intp)
    cdef Py_ssize_t[::1] renumbered = renumbered_array
    cdef floating[::1] counts = counts_array
    cdef Py_ssize_t[::1] words = words_array
    # A byte per vocabulary index marks the words present, read eight at a
    # time; the position in ``words`` is written and read at those words only.
    cdef Py_ssize_t n_chunks = (n_features + 7) // 8
    cdef unsigned char* present = <unsigned char*> calloc(8 * n_chunks, 1)
    cdef Py_ssize_t* position = <Py_ssize_t*> malloc(n_features * sizeof(Py_ssize_t))
    cdef unsigned long long chunk
    if present == NULL or position == NULL:
        free(present)
        free(position)
        raise MemoryError()
    with nogil:
        # The vocabulary index of each entry, until it is renumbered.
        q = 0
        for j in range(n_rows):
            for p in range(indptr[rows[j]], indptr[rows[j] + 1]):
                renumbered[q] = indices[p]
                counts[q] = data[p]
                present[indices[p]] = 1
                q += 1
        for c in range(n_chunks):
            memcpy(&chunk, &present[8 * c], 8)
            if chunk == 0:
                continue
            for w in range(8 * c, min(8 * c + 8, n_features)):
                if present[w]:
                    position[w] = n_words
                    words[n_words] = w
                    n_words += 1
        for q in range(nnz):
            renumbered[q] = position[renumbered[q]]
    free(present)
    free(position)
    return words_array[:n_words], row_indptr_array, renumbered_array, counts_array


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
