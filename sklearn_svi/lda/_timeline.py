"""Topics over time: snapshots of a model fitted slice after slice."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..metrics import top_word_indices


class TopicTimeline:
    """Each topic's words and prevalence after each time slice of a stream.

    Fitting a stream slice after slice with ``partial_fit`` keeps the
    identity of the topics: topic k after one slice is topic k moved by the
    next slice's updates. A timeline records, after each slice, every
    topic's most probable words and its prevalence in the slice, the mean of
    the slice's topic proportions (``transform``).

    Parameters
    ----------
    n_words : int, default=10
        Number of words recorded per topic and slice.

    Attributes
    ----------
    labels_ : list
        The label of each recorded slice, in order.
    prevalence_ : ndarray of shape (n_slices, n_components)
        The mean topic proportions of each slice's documents.
    top_word_indices_ : ndarray of shape (n_slices, n_components, n_words)
        Each topic's most probable words after each slice, as columns of
        the document-word matrix, most probable first.
    n_batch_iter_ : ndarray of shape (n_slices,)
        The estimator's ``n_batch_iter_`` after each slice: the updates of
        slice i are those after ``n_batch_iter_[i - 1]`` up to
        ``n_batch_iter_[i]``, which places the updates that
        :func:`~sklearn_svi.metrics.drift_alarms` returns among the slices.

    Examples
    --------
    >>> from sklearn_svi import SmoothedLDA, make_lda_corpus
    >>> from sklearn_svi.lda import TopicTimeline
    >>> X, _, _ = make_lda_corpus(n_documents=600, random_state=0)
    >>> model = SmoothedLDA(n_components=5, total_samples=600, random_state=0)
    >>> timeline = TopicTimeline(n_words=3)
    >>> for month, rows in enumerate([slice(0, 300), slice(300, 600)]):
    ...     model.partial_fit(X[rows])
    ...     timeline.record(model, X[rows], label=month)
    >>> timeline.prevalence_.shape
    (2, 5)
    """

    def __init__(self, n_words=10):
        self.n_words = n_words
        self.labels_ = []
        self.prevalence_ = np.empty((0, 0))
        self.top_word_indices_ = np.empty((0, 0, n_words), dtype=np.intp)
        self.n_batch_iter_ = np.empty(0, dtype=np.int64)

    def record(self, estimator, X, label=None):
        """Take a snapshot of ``estimator`` after it was fitted to a slice.

        Parameters
        ----------
        estimator : fitted LDA estimator
            The model, with ``transform`` and ``components_``.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The slice's documents, whose topic proportions give the topics'
            prevalence.
        label : object, default=None
            The slice's name, e.g. its date; None numbers the slices from 0.

        Returns
        -------
        self : TopicTimeline
            The timeline, one slice longer.
        """
        check_is_fitted(estimator)
        prevalence = np.asarray(estimator.transform(X)).mean(axis=0)
        words = top_word_indices(estimator, self.n_words)
        if len(self.labels_) and prevalence.shape[0] != self.prevalence_.shape[1]:
            raise ValueError(
                f"The estimator has {prevalence.shape[0]} topics and the "
                f"timeline's earlier slices {self.prevalence_.shape[1]}: a "
                "timeline follows one model."
            )
        self.labels_ = [*self.labels_, len(self.labels_) if label is None else label]
        self.prevalence_ = (
            prevalence[np.newaxis]
            if len(self.labels_) == 1
            else np.vstack([self.prevalence_, prevalence])
        )
        self.top_word_indices_ = (
            words[np.newaxis]
            if len(self.labels_) == 1
            else np.concatenate([self.top_word_indices_, words[np.newaxis]])
        )
        self.n_batch_iter_ = np.append(self.n_batch_iter_, estimator.n_batch_iter_)
        return self

    def words(self, topic, feature_names):
        """The most probable words of one topic after each slice.

        Parameters
        ----------
        topic : int
            The topic.
        feature_names : array-like of str of shape (n_features,)
            The vocabulary, e.g. ``vectorizer.get_feature_names_out()``.

        Returns
        -------
        words : dict
            For each slice's label, the topic's words, most probable first.
        """
        feature_names = np.asarray(feature_names)
        return {
            label: feature_names[indices].tolist()
            for label, indices in zip(self.labels_, self.top_word_indices_[:, topic])
        }
