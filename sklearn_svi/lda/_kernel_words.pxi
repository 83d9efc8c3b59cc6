# The word index of a minibatch: its distinct words, renumbered, and for each
# word the documents that hold it.


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
