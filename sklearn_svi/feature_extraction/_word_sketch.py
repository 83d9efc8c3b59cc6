"""Readable names for hashed word counts: the frequent words of each bucket."""

from collections import Counter
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

DEFAULT_N_FEATURES = 2**18
"""The buckets of the default vectorizer."""


class WordSketch(TransformerMixin, BaseEstimator):
    """Hashed word counts of an open vocabulary, with a name for every column.

    A scikit-learn ``HashingVectorizer`` counts the words of any text, new
    words included, in a fixed number of columns (buckets), and needs no
    vocabulary; but the topics of a model fitted on its counts are columns
    without words. This transformer counts with such a vectorizer and keeps,
    for every bucket, a summary of the words that fell into it: the
    ``n_candidates`` most frequent of them, with their counts, by the
    Misra-Gries algorithm (Misra & Gries 1982), whose summaries of two
    streams merge into the summary of both (Agarwal et al. 2012). A bucket's
    name is its most frequent word.

    Its memory is fixed by the number of buckets, however many words the
    stream brings: ``n_candidates`` words and counts per bucket, plus each
    bucket's total count.

    Parameters
    ----------
    vectorizer : HashingVectorizer, default=None
        The vectorizer that tokenizes and hashes the texts; it must count
        (``alternate_sign=False``, ``norm=None``), as a topic model needs.
        None means ``HashingVectorizer(n_features=2**18,
        alternate_sign=False, norm=None)``.
    n_candidates : int, default=3
        Number of words kept per bucket. A word with more than a share
        1 / (n_candidates + 1) of its bucket's tokens is always kept, and
        a kept word's count is short by at most that share of the
        bucket's tokens.

    Attributes
    ----------
    vectorizer_ : HashingVectorizer
        The vectorizer in use.
    candidate_words_ : ndarray of object of shape (n_features, n_candidates)
        The words kept for each bucket, most frequent first; ``""`` where
        a bucket holds fewer.
    candidate_counts_ : ndarray of shape (n_features, n_candidates)
        Their counts, each at most the word's true count and short of it
        by at most (bucket count - sum of the bucket's kept counts) /
        (n_candidates + 1).
    bucket_counts_ : ndarray of shape (n_features,)
        The number of tokens of each bucket.
    n_documents_seen_ : int
        The number of texts sketched.

    See Also
    --------
    sklearn_svi.top_words : The most probable words of each topic.

    References
    ----------
    .. [1] J. Misra and D. Gries. "Finding repeated elements". Science of
       Computer Programming 2(2), 1982.
    .. [2] P. Agarwal, G. Cormode, Z. Huang, J. Phillips, Z. Wei and K. Yi.
       "Mergeable summaries". PODS 2012.

    Examples
    --------
    >>> from sklearn.feature_extraction.text import HashingVectorizer
    >>> from sklearn_svi import WordSketch
    >>> vectorizer = HashingVectorizer(
    ...     n_features=2**10, alternate_sign=False, norm=None
    ... )
    >>> sketch = WordSketch(vectorizer).fit(["a cat", "the cat sat"])
    >>> X = sketch.transform(["the cat"])
    >>> sorted(sketch.get_feature_names_out()[X.indices])
    ['cat', 'the']
    """

    _parameter_constraints: dict = {
        "vectorizer": [None, HasMethods(["transform", "build_analyzer"])],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, vectorizer=None, n_candidates=3):
        self.vectorizer = vectorizer
        self.n_candidates = n_candidates

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, raw_documents, y=None):
        """Sketch the words of ``raw_documents``, forgetting earlier ones.

        Parameters
        ----------
        raw_documents : iterable of str
            The texts.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The fitted sketch.
        """
        self._reset()
        return self._add_texts(raw_documents)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, raw_documents, y=None):
        """Add the words of ``raw_documents`` to the sketch.

        Parameters
        ----------
        raw_documents : iterable of str
            The texts.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The updated sketch.
        """
        if not hasattr(self, "vectorizer_"):
            self._reset()
        return self._add_texts(raw_documents)

    def transform(self, raw_documents):
        """Count the words of ``raw_documents`` in the buckets.

        Parameters
        ----------
        raw_documents : iterable of str
            The texts.

        Returns
        -------
        X : sparse matrix of shape (n_samples, n_features)
            The hashed word counts, float64.
        """
        check_is_fitted(self)
        return self.vectorizer_.transform(_texts(raw_documents))

    def merge(self, other):
        """The sketch of the texts of this sketch and of ``other``.

        Parameters
        ----------
        other : WordSketch
            A fitted sketch with the same vectorizer settings and
            ``n_candidates``, e.g. of another part of the stream.

        Returns
        -------
        merged : WordSketch
            A new sketch; neither operand changes.
        """
        check_is_fitted(self)
        check_is_fitted(other)
        if (
            self.n_candidates != other.n_candidates
            or self.vectorizer_.get_params() != other.vectorizer_.get_params()
        ):
            raise ValueError(
                "Only sketches made with the same vectorizer settings and "
                "n_candidates merge: their buckets must hold the same words."
            )
        merged = clone(self)
        merged._reset()
        merged.n_documents_seen_ = self.n_documents_seen_ + other.n_documents_seen_
        merged.bucket_counts_ = self.bucket_counts_ + other.bucket_counts_
        kept = other.candidate_counts_ > 0
        merged.candidate_words_ = self.candidate_words_.copy()
        merged.candidate_counts_ = self.candidate_counts_.copy()
        # A kept word's bucket is its row.
        merged._add_words(
            other.candidate_words_[kept],
            other.candidate_counts_[kept],
            np.nonzero(kept)[0],
        )
        return merged

    def get_feature_names_out(self, input_features=None):
        """The name of each bucket: its most frequent word.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str of shape (n_features,)
            The leading word of each bucket, ``"bucket<i>"`` for a bucket
            that no sketched word fell into.
        """
        check_is_fitted(self)
        names = self.candidate_words_[:, 0].copy()
        empty = self.candidate_counts_[:, 0] == 0
        names[empty] = [f"bucket{index}" for index in np.flatnonzero(empty)]
        return names.astype(str)

    def leading_share(self):
        """The share of each bucket's tokens that its name holds, at least.

        Returns
        -------
        share : ndarray of shape (n_features,)
            The leading word's count (a lower bound of its true count)
            over the bucket's tokens; 1 for an empty bucket. Below 1, other
            words of the bucket add to a topic's weight of its name.
        """
        check_is_fitted(self)
        share = np.ones(len(self.bucket_counts_))
        seen = self.bucket_counts_ > 0
        share[seen] = self.candidate_counts_[seen, 0] / self.bucket_counts_[seen]
        return share

    # -- the summaries -------------------------------------------------------------

    def _reset(self):
        """An empty sketch for the vectorizer's buckets."""
        vectorizer = self.vectorizer
        if vectorizer is None:
            vectorizer = HashingVectorizer(
                n_features=DEFAULT_N_FEATURES, alternate_sign=False, norm=None
            )
        if vectorizer.alternate_sign or vectorizer.norm is not None:
            raise ValueError(
                "The vectorizer must count words: pass a HashingVectorizer "
                "with alternate_sign=False and norm=None (it has "
                f"alternate_sign={vectorizer.alternate_sign!r}, "
                f"norm={vectorizer.norm!r})."
            )
        self.vectorizer_ = clone(vectorizer)
        n_features = self.vectorizer_.n_features
        self.candidate_words_ = np.full((n_features, self.n_candidates), "", object)
        self.candidate_counts_ = np.zeros((n_features, self.n_candidates))
        self.bucket_counts_ = np.zeros(n_features)
        self.n_documents_seen_ = 0

    def _add_texts(self, raw_documents):
        """Count the tokens of the texts and add them to the summaries."""
        texts = _texts(raw_documents)
        analyze = self.vectorizer_.build_analyzer()
        tokens = Counter()
        for text in texts:
            tokens.update(analyze(text))
        words = np.array(list(tokens), dtype=object)
        counts = np.fromiter(tokens.values(), dtype=np.float64, count=len(tokens))
        buckets = self._buckets(words)
        np.add.at(self.bucket_counts_, buckets, counts)
        self._add_words(words, counts, buckets)
        self.n_documents_seen_ += len(texts)
        return self

    def _buckets(self, words):
        """The bucket of each word, as the vectorizer hashes it."""
        if len(words) == 0:
            return np.empty(0, dtype=np.intp)
        hasher = FeatureHasher(
            n_features=self.vectorizer_.n_features,
            input_type="string",
            alternate_sign=False,
        )
        return hasher.transform([[word] for word in words]).indices

    def _add_words(self, words, counts, buckets):
        """Merge distinct words with their counts and buckets into the
        summaries.

        Each touched bucket's kept words and the new ones are added up word
        by word; the bucket keeps its ``n_candidates`` largest, each less
        the next largest count (the merge of Misra-Gries summaries,
        Agarwal et al. 2012, Sec. 2).
        """
        touched = np.unique(buckets)
        kept_rows, kept_columns = np.nonzero(self.candidate_counts_[touched] > 0)
        kept_words = self.candidate_words_[touched[kept_rows], kept_columns]
        kept_counts = self.candidate_counts_[touched[kept_rows], kept_columns]
        # A kept word among the new ones adds its count to theirs; the others
        # are carried over as they are.
        position = {word: index for index, word in enumerate(words)}
        found = np.array([position.get(word, -1) for word in kept_words], np.intp)
        counts = counts.copy()
        counts[found[found >= 0]] += kept_counts[found >= 0]
        carried = found < 0
        all_buckets = np.concatenate([buckets, touched[kept_rows[carried]]])
        all_words = np.concatenate([words, kept_words[carried]])
        all_counts = np.concatenate([counts, kept_counts[carried]])

        order = np.lexsort((-all_counts, all_buckets))
        all_buckets, all_words, all_counts = (
            all_buckets[order],
            all_words[order],
            all_counts[order],
        )
        group_start = np.flatnonzero(np.r_[True, all_buckets[1:] != all_buckets[:-1]])
        group_sizes = np.diff(np.r_[group_start, len(all_buckets)])
        rank = np.arange(len(all_buckets)) - np.repeat(group_start, group_sizes)
        k = self.n_candidates
        # The (k + 1)-th largest count of each bucket, 0 when it has fewer.
        next_count = np.zeros(len(group_start))
        beyond = group_sizes > k
        next_count[beyond] = all_counts[group_start[beyond] + k]
        all_counts -= np.repeat(next_count, group_sizes)
        kept = (rank < k) & (all_counts > 0)

        self.candidate_words_[touched] = ""
        self.candidate_counts_[touched] = 0.0
        self.candidate_words_[all_buckets[kept], rank[kept]] = all_words[kept]
        self.candidate_counts_[all_buckets[kept], rank[kept]] = all_counts[kept]


def _texts(raw_documents):
    """The texts as a list, refusing a single string (a common slip)."""
    if isinstance(raw_documents, str):
        raise ValueError(
            "Iterable over raw text documents expected, string object received."
        )
    return list(raw_documents)
