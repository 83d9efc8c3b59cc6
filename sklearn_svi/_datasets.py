"""Data sets: corpora drawn from the LDA generative process, topic matching,
the docstrings of the standard library, and ratings read from files and
split for evaluation."""

import ast
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils.validation import check_array, check_non_negative

from .metrics._stability import topic_alignment

# make_lda_corpus draws this many documents at a time.
_DOCUMENTS_PER_BLOCK = 256


def make_lda_corpus(
    n_documents=1000,
    n_features=500,
    n_topics=10,
    *,
    mean_document_length=100,
    doc_topic_prior=0.1,
    topic_word_prior=0.05,
    topics=None,
    random_state=None,
):
    """Draw a document-word count matrix from the LDA generative process.

    Topics beta_k ~ Dirichlet(topic_word_prior) (or given), proportions
    theta_d ~ Dirichlet(doc_topic_prior), document lengths
    n_d ~ Poisson(mean_document_length) and, marginalising the topic
    assignments, word counts x_d ~ Multinomial(n_d, theta_d^T beta).

    Parameters
    ----------
    n_documents : int, default=1000
        Number of documents.
    n_features : int, default=500
        Vocabulary size.
    n_topics : int, default=10
        Number of planted topics.
    mean_document_length : float, default=100
        Mean number of words per document.
    doc_topic_prior : float, default=0.1
        Symmetric Dirichlet parameter of the proportions.
    topic_word_prior : float, default=0.05
        Symmetric Dirichlet parameter of the topics.
    topics : array-like of shape (n_topics, n_features), default=None
        Topic-word distributions to draw the documents from instead (rows
        of non-negative values, normalised here), e.g. some of another
        corpus's planted topics, for a stream whose topics change;
        ``n_features`` and ``n_topics`` then follow its shape.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : sparse matrix of shape (n_documents, n_features)
        Word counts, CSR, int64.
    topics : ndarray of shape (n_topics, n_features)
        The planted topic-word distributions.
    doc_topic : ndarray of shape (n_documents, n_topics)
        The planted topic proportions.
    """
    rng = check_random_state(random_state)
    if topics is None:
        topics = rng.dirichlet(np.full(n_features, topic_word_prior), size=n_topics)
    else:
        topics = check_array(topics, dtype=np.float64)
        check_non_negative(topics, "make_lda_corpus (topics)")
        if not np.all(topics.sum(axis=1) > 0):
            raise ValueError("Every row of topics must have a positive sum.")
        topics = topics / topics.sum(axis=1, keepdims=True)
        n_topics, n_features = topics.shape
    doc_topic = rng.dirichlet(np.full(n_topics, doc_topic_prior), size=n_documents)
    lengths = rng.poisson(mean_document_length, size=n_documents)
    # The documents' word probabilities and counts a block of rows at a
    # time, so that no dense array of every document and word is held.
    blocks = [
        _drawn_counts(doc_topic[rows] @ topics, lengths[rows], rng)
        for rows in gen_batches(n_documents, _DOCUMENTS_PER_BLOCK)
    ]
    return sp.vstack(blocks, format="csr", dtype=np.int64), topics, doc_topic


def _drawn_counts(word_probabilities, lengths, rng):
    """Each row's word counts ~ Multinomial(length, its probabilities), as
    a CSR matrix."""
    # Guard against rounding: multinomial needs probabilities summing to <= 1.
    word_probabilities /= word_probabilities.sum(axis=1, keepdims=True)
    counts = np.vstack(
        [rng.multinomial(n, p) for n, p in zip(lengths, word_probabilities)]
    )
    return sp.csr_matrix(counts, dtype=np.int64)


def match_topics(estimated, planted):
    """Pair estimated topics with planted ones and score each pair.

    The score of a pair is the probability mass the two word distributions
    share, sum_w min(p_w, q_w): 1 for identical topics, 0 for disjoint ones.
    The pairing maximises the total score (Hungarian algorithm); it is
    :func:`sklearn_svi.metrics.topic_alignment`, whose distance is one minus
    the score.

    Parameters
    ----------
    estimated : ndarray of shape (n_estimated, n_features)
        Non-negative topic-word weights, e.g. ``components_``; rows are
        normalised.
    planted : ndarray of shape (n_planted, n_features)
        The reference topic-word weights; rows are normalised.

    Returns
    -------
    planted_index : ndarray of shape (n_pairs,)
        Index of each paired planted topic, in increasing order.
    estimated_index : ndarray of shape (n_pairs,)
        Index of the estimated topic paired with it.
    overlap : ndarray of shape (n_pairs,)
        The shared probability mass of each pair.
    """
    alignment = topic_alignment(planted, estimated)
    order = np.argsort(alignment.index_a)
    return (
        alignment.index_a[order],
        alignment.index_b[order],
        1.0 - alignment.distance[order],
    )


def load_ratings(path, member=None):
    """Ratings of a tab-separated file as a users x items sparse matrix.

    Each line holds a user id, an item id and a rating, then anything else
    (MovieLens' ``u.data`` and RecBole's ``.inter`` files, whose header line
    is skipped). The file may be a member of a zip archive, such as a wheel.

    Parameters
    ----------
    path : str or path-like
        The file, or the zip archive that holds it.
    member : str, default=None
        The file's name inside the archive at ``path``; None when ``path``
        is the file itself.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_users, n_items)
        The ratings, float64, as the stored entries. A pair rated twice
        keeps its last rating.
    user_ids, item_ids : ndarray of str
        The id of each row and of each column, sorted.
    """
    if member is None:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    else:
        with zipfile.ZipFile(path) as archive:
            lines = archive.read(member).decode("utf-8").splitlines()
    fields = [line.split("\t")[:3] for line in lines if line.strip()]
    if fields and len(fields[0]) == 3 and not _is_number(fields[0][2]):
        fields = fields[1:]
    if not fields or any(len(row) < 3 for row in fields):
        raise ValueError(
            f"{path} has no lines of a user id, an item id and a rating "
            "separated by tabs."
        )
    users, items, ratings = zip(*fields)
    user_ids, rows = np.unique(users, return_inverse=True)
    item_ids, columns = np.unique(items, return_inverse=True)
    # The last rating of a pair wins: the first one met from the end.
    pairs = rows * len(item_ids) + columns
    last = len(pairs) - 1 - np.unique(pairs[::-1], return_index=True)[1]
    X = sp.csr_matrix(
        (np.asarray(ratings, dtype=np.float64)[last], (rows[last], columns[last])),
        shape=(len(user_ids), len(item_ids)),
    )
    return X, user_ids, item_ids


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def split_ratings(X, test_size=0.2, random_state=None):
    """Split the ratings (stored entries) of X at random into two matrices.

    As ``surprise.model_selection.train_test_split`` splits ratings: a user
    can have ratings on both sides.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_users, n_items)
        The ratings.
    test_size : float, default=0.2
        The share of the ratings in the test matrix, in (0, 1).
    random_state : int, RandomState instance or None, default=None
        Seed of the split.

    Returns
    -------
    X_train, X_test : scipy.sparse.csr_matrix of shape (n_users, n_items)
        The training and the test ratings.
    """
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must lie in (0, 1), got {test_size}.")
    X = sp.coo_matrix(X)
    rng = check_random_state(random_state)
    in_test = np.zeros(X.nnz, dtype=bool)
    in_test[rng.permutation(X.nnz)[: round(test_size * X.nnz)]] = True
    return tuple(
        sp.csr_matrix((X.data[part], (X.row[part], X.col[part])), shape=X.shape)
        for part in (~in_test, in_test)
    )


# Folders of the standard library left out of its docstring corpus: tests,
# demos, vendored or generated text.
_SKIPPED_STDLIB_FOLDERS = {
    "test",
    "tests",
    "idlelib",
    "lib2to3",
    "site-packages",
    "turtledemo",
    "ensurepip",
    "pydoc_data",
}


def load_python_docstrings(min_words=20):
    """The docstrings of Python's standard library, a real corpus on any machine.

    Every module, class and function docstring of at least ``min_words``
    words in the standard library's source, read with :mod:`ast` (nothing is
    imported), in a fixed order: about 3,000 texts on Python 3.11, needing
    no network and no download. Classes and functions defined inside other
    statements (an ``if`` or a ``try``) are left out.

    Parameters
    ----------
    min_words : int, default=20
        The shortest docstring kept, in words.

    Returns
    -------
    texts : list of str
        The docstrings.
    modules : ndarray of str
        The top-level module or package of each (``"email"``,
        ``"asyncio"``, ...), a label for classification.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    texts, modules = [], []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if _SKIPPED_STDLIB_FOLDERS.intersection(parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in [tree, *_definitions(tree)]:
            text = ast.get_docstring(node)
            if text and len(text.split()) >= min_words:
                texts.append(text)
                modules.append(parts[0].removesuffix(".py"))
    return texts, np.asarray(modules)


def _definitions(node):
    """The classes and functions defined in the body of ``node``, nested
    ones included, in order."""
    for child in node.body:
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield child
            yield from _definitions(child)
