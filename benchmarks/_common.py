"""What several benchmarks share.

The held-out documents and their document completion, the shuffled epochs
every model of a comparison sees in the same order, the command-line parser
of a script, gensim's online ``LdaModel`` behind the estimators'
interface, and plain SVI writing every row of lambda.
"""

import argparse
import itertools

import numpy as np

from sklearn_svi import SmoothedLDA
from sklearn_svi.metrics import split_tokens

from corpus import BUILT_IN_CORPORA, load_counts

HELD_OUT_FRACTION = 0.1
"""Share of NewsArticles held out by :func:`held_out_split`."""

CORPUS_HELD_OUT_FRACTION = 0.05
"""Share of a corpus held out by ``bench_scale.py`` and ``bench_quality.py``."""


class EveryRowSVI(SmoothedLDA):
    """Plain SVI whose update writes every row of lambda, as it did before
    the rows a minibatch does not hold were kept scaled."""

    _scales_rows = False


def argument_parser(doc):
    """A parser for a script, described by the first line of its docstring."""
    return argparse.ArgumentParser(description=doc.splitlines()[0])


def corpus_parser(doc, several_vocabularies=False):
    """:func:`argument_parser` with the arguments that choose a corpus:
    ``corpus``, ``--column``, ``--n-features`` (a list of vocabulary sizes
    with ``several_vocabularies``) and ``--n-components``."""
    parser = argument_parser(doc)
    parser.add_argument(
        "corpus", help=f"a text file, or one of {', '.join(BUILT_IN_CORPORA)}"
    )
    parser.add_argument("--column", help="the column of texts of a TSV file")
    if several_vocabularies:
        parser.add_argument("--n-features", type=int, nargs="+", default=[10_000])
    else:
        parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument("--n-components", type=int, default=100)
    return parser


def split_documents(X, fraction, rng):
    """Split the rows of ``X`` at random into training and held-out rows.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_features)
        Document-word counts.
    fraction : float
        Fraction of the documents held out.
    rng : numpy.random.Generator
        Source of the random split.

    Returns
    -------
    X_train, X_held_out : scipy.sparse.csr_matrix
        The training and held-out documents.
    """
    order = rng.permutation(X.shape[0])
    n_held_out = round(fraction * X.shape[0])
    return X[np.sort(order[n_held_out:])], X[np.sort(order[:n_held_out])]


def completion_split(X, fraction, rng):
    """Training documents, and the held-out ones split for document completion.

    ``X`` and ``fraction`` are as for :func:`split_documents`; ``rng`` draws
    the split of the documents, then the split of the held-out documents'
    tokens into an observed and a predicted half.

    Returns
    -------
    X_train : scipy.sparse.csr_matrix
        The training documents.
    completion : TokenSplit
        The observed and predicted halves of the held-out documents.
    """
    X_train, X_held_out = split_documents(X, fraction, rng)
    return X_train, split_tokens(X_held_out, random_state=rng)


def held_out_split(rng):
    """NewsArticles in float64, split once for every benchmark.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the split of the documents and of their tokens.

    Returns
    -------
    X : scipy.sparse.csr_matrix
        All the documents.
    vocabulary : ndarray of str
        The words of the columns.
    X_train : scipy.sparse.csr_matrix
        The training documents.
    completion : TokenSplit
        The held-out documents, split for document completion.
    """
    X, vocabulary = load_counts()
    X = X.astype(np.float64)
    X_train, completion = completion_split(X, HELD_OUT_FRACTION, rng)
    return X, vocabulary, X_train, completion


def reshuffled(X, seed):
    """Endless epochs of the rows of ``X``, each in a new random order.

    The orders are drawn from ``seed`` alone, so every model given the same
    seed sees the same documents in the same order.
    """
    rng = np.random.default_rng(seed)
    while True:
        yield X[rng.permutation(X.shape[0])]


def shuffled_epochs(X, n_epochs, seed):
    """``n_epochs`` copies of the rows of ``X``, each in a new random order."""
    return list(itertools.islice(reshuffled(X, seed), n_epochs))


class GensimOnlineLDA:
    """gensim's online LdaModel behind the interface the benchmarks use.

    The settings are the closest gensim has to the others': minibatches
    (``chunksize``) of ``batch_size``, an update after each (``update_every=1``),
    step sizes ``(offset + t) ** -decay``, the same priors, iteration limit and
    tolerance of the local step, no perplexity evaluation during training.
    gensim scales the minibatch statistics to the number of documents seen so
    far rather than to a fixed corpus size. gensim is imported only when the
    model is made, so the benchmarks that do not use it do not need it.

    Parameters
    ----------
    n_components, batch_size, learning_offset, learning_decay, \
    max_doc_update_iter, mean_change_tol : as for the other models
    n_features : int
        Vocabulary size.
    random_state : int
        Seed of the initial topics.
    learned_priors : bool, default=False
        Learn alpha and eta online from 1/K (gensim's ``"auto"``).
    """

    def __init__(
        self,
        n_components,
        batch_size,
        learning_offset,
        learning_decay,
        max_doc_update_iter,
        mean_change_tol,
        n_features,
        random_state,
        learned_priors=False,
    ):
        from gensim.models import LdaModel

        self.batch_size = batch_size
        self.model = LdaModel(
            num_topics=n_components,
            id2word={word: str(word) for word in range(n_features)},
            chunksize=batch_size,
            passes=1,
            update_every=1,
            alpha="auto" if learned_priors else "symmetric",
            eta="auto" if learned_priors else 1.0 / n_components,
            decay=learning_decay,
            offset=learning_offset,
            iterations=max_doc_update_iter,
            gamma_threshold=mean_change_tol,
            eval_every=None,
            random_state=random_state,
            dtype=np.float64,
        )

    @staticmethod
    def prepare(X):
        """The documents as gensim's bag-of-words lists (built before timing)."""
        from gensim.matutils import Sparse2Corpus

        return list(Sparse2Corpus(X, documents_columns=False))

    def partial_fit(self, corpus):
        """One online pass over the prepared documents."""
        self.model.update(corpus)
        return self

    def transform(self, X):
        """Normalised topic proportions of the documents of ``X``."""
        gamma, _ = self.model.inference(self.prepare(X))
        return gamma / gamma.sum(axis=1, keepdims=True)

    @property
    def components_(self):
        """The variational Dirichlet parameters of the topics."""
        return self.model.state.get_lambda()
