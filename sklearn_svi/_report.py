"""A topic model's topics in one HTML page that opens offline.

The page holds its script, its style and its data: each topic's most
relevant words (Sievert & Shirley 2014), a map of the topics, their
coherence, exclusivity and stability, their most representative documents,
and their prevalence over time with a filter's drift alarms.
"""

import html
import json
import re
from importlib import resources

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_array, check_is_fitted, check_non_negative

from .feature_extraction import WordSketch
from .lda import TopicTimeline
from .metrics import (
    coherence,
    drift_alarms,
    top_word_indices,
    topic_alignment,
    topic_diversity,
)
from .metrics._coherence import _final_step
from .metrics._stability import _topics

LAMBDAS = np.linspace(0.0, 1.0, 101)
"""The positions of the page's relevance control: each topic's words are
ranked exactly at every one of them."""

COHERENCE_TOP_N = 10
"""The top words of a topic whose NPMI coherence the page shows."""

DIVERSITY_TOP_N = 25
"""The top words of the topics' diversity and exclusivity (Dieng et al.)."""

SIGNIFICANT_DIGITS = 4
"""Of the probabilities the page stores."""

# The files of the page, package data, and the markers of the page's parts.
_PAGE_FILES = resources.files("sklearn_svi") / "_report_page"
_MARKERS = re.compile(r"<!-- TITLE -->|/\* (?:STYLE|SCRIPT|DATA) \*/")


class TopicReport:
    """A self-contained HTML report of a fitted topic model.

    The report is one HTML file with its script, style and data inside, no
    network needed to open it. It shows:

    - each topic's words ranked by relevance (Sievert & Shirley 2014),
      lambda log p(w|t) + (1 - lambda) log(p(w|t) / p(w)), with a control
      of lambda; with the words' weights p(w|t) and counts in ``X``;
    - a map of the topics: the principal coordinates (classical scaling) of
      the Jensen-Shannon distances between their word distributions, each
      topic a circle whose area is its prevalence; clicking a topic shows
      its words and its most representative documents;
    - each topic's NPMI coherence in ``X``
      (:func:`~sklearn_svi.metrics.coherence`), its exclusivity (the share
      of its top words among no other topic's top words; the overall
      :func:`~sklearn_svi.metrics.topic_diversity` heads the page) and,
      given other fits, its distance to its closest topic of theirs
      (:func:`~sklearn_svi.metrics.topic_alignment`), which marks it
      unstable above ``unstable_distance``;
    - given a :class:`~sklearn_svi.TopicTimeline` or a label per document,
      the topics' prevalence over the time slices, with the slices in which
      :func:`~sklearn_svi.metrics.drift_alarms` fired for a filtered fit.

    A topic's prevalence is the mean of its proportion in the documents
    (``transform``), as for :class:`~sklearn_svi.TopicTimeline`; p(w) is
    the words' probability under the model, the topics' word distributions
    weighted by their prevalence. The page stores each topic's ``n_words``
    most relevant words at every position of its control (steps of 0.01),
    ``n_documents`` documents per topic with their first ``snippet_length``
    characters, and probabilities to four significant digits, so its size
    does not grow with the corpus: 100 topics of 10^5 documents make a page
    of a few hundred kilobytes.

    Parameters
    ----------
    estimator : fitted topic model or Pipeline
        An estimator with ``components_`` of shape (n_topics, n_features)
        and ``transform``, such as the package's LDA estimators, or a
        pipeline that ends with one (its other steps turn ``X`` into
        counts). It is not changed.
    X : {array-like, sparse matrix} of shape (n_documents, n_features) or \
            sequence of str
        The documents: counts, or the input of the pipeline.
    feature_names : array-like of str of shape (n_features,), WordSketch or \
            None, default=None
        The words of the columns, or a fitted
        :class:`~sklearn_svi.WordSketch` whose bucket names (and other
        frequent words) name hashed columns. None takes them from the
        pipeline: its WordSketch, or the ``get_feature_names_out`` of its
        steps before the model.
    texts : sequence of str, default=None
        The text of each document, whose start the page shows. None takes
        ``X`` when it is a sequence of texts (the input of a pipeline);
        otherwise the page shows the documents' row numbers.
    labels : array-like of shape (n_documents,), default=None
        The time slice of each document (a date, a month, ...): the page
        shows each topic's prevalence in each slice, the slices in sorted
        order. Not with ``timeline``.
    timeline : TopicTimeline, default=None
        The prevalence of the topics after each slice of a stream, recorded
        while the model was fitted; the slices in which the model's filter
        raised a drift alarm are marked. Not with ``labels``.
    others : sequence of fitted topic models or Pipelines, default=None
        Other fits of the same features, e.g. with other seeds: each topic
        is compared with its closest topic of each.
    n_words : int, default=30
        Words shown per topic.
    n_documents : int, default=5
        Representative documents per topic: those with the largest share of
        the topic.
    snippet_length : int, default=300
        Characters of each document's text shown.
    unstable_distance : float, default=0.5
        The mean total variation distance to the closest topics of
        ``others`` beyond which a topic is unstable.
    relevance_lambda : float, default=0.6
        The initial lambda of the relevance; 0.6 is the value Sievert &
        Shirley found best for reading topics.
    title : str, default="Topic report"
        The page's title.

    Attributes
    ----------
    data : dict
        What the page shows, as it stores it (JSON types).

    References
    ----------
    .. [1] C. Sievert and K. Shirley. "LDAvis: A method for visualizing and
       interpreting topics". Workshop on Interactive Language Learning,
       Visualization, and Interfaces, 2014.

    Examples
    --------
    >>> from sklearn_svi import SmoothedLDA, TopicReport, make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_documents=300, n_topics=4, random_state=0)
    >>> lda = SmoothedLDA(n_components=4, random_state=0).fit(X)
    >>> words = [f"word{i}" for i in range(X.shape[1])]
    >>> report = TopicReport(lda, X, words, n_words=5)
    >>> len(report.data["topics"])
    4
    >>> report.save("topics.html")  # doctest: +SKIP
    """

    def __init__(
        self,
        estimator,
        X,
        feature_names=None,
        *,
        texts=None,
        labels=None,
        timeline=None,
        others=None,
        n_words=30,
        n_documents=5,
        snippet_length=300,
        unstable_distance=0.5,
        relevance_lambda=0.6,
        title="Topic report",
    ):
        _check_positive_int(
            n_words=n_words, n_documents=n_documents, snippet_length=snippet_length
        )
        if not 0 <= relevance_lambda <= 1:
            raise ValueError(
                f"relevance_lambda must be in [0, 1], got {relevance_lambda!r}."
            )
        if labels is not None and timeline is not None:
            raise ValueError("Pass labels or timeline, not both.")
        model = estimator[-1] if isinstance(estimator, Pipeline) else estimator
        check_is_fitted(model)
        if texts is None and not sp.issparse(X) and np.ndim(X) == 1:
            # A pipeline's texts.
            texts = list(X)
        _, counts = _final_step(estimator, X)
        counts = check_array(counts, accept_sparse="csr", dtype=np.float64)
        check_non_negative(counts, "TopicReport")
        topic_word = _topics(model)
        n_docs, n_features = counts.shape
        if n_features != topic_word.shape[1]:
            raise ValueError(
                f"X has {n_features} features, but the topics have "
                f"{topic_word.shape[1]}."
            )
        for name, values in (("texts", texts), ("labels", labels)):
            if values is not None and len(values) != n_docs:
                raise ValueError(
                    f"{name} has {len(values)} entries, but X has {n_docs} documents."
                )
        names, sketch = _feature_names(estimator, feature_names, n_features)

        doc_topic = np.asarray(model.transform(counts))
        prevalence = doc_topic.mean(axis=0)
        with np.errstate(divide="ignore"):
            log_topic_word = np.log(topic_word)
            log_lift = log_topic_word - np.log(prevalence @ topic_word)
        coordinates = principal_coordinates(jensen_shannon_distances(topic_word))
        topics = [
            {
                "words": words.tolist(),
                "weights": _significant(topic_word[k, words]),
                "prevalence": _significant(prevalence[k]),
                "coherence": round(float(npmi), 3),
                "exclusivity": round(float(exclusive), 3),
                "x": _significant(coordinates[k, 0]),
                "y": _significant(coordinates[k, 1]),
                "documents": documents,
            }
            for k, (words, npmi, exclusive, documents) in enumerate(
                zip(
                    relevant_word_indices(log_topic_word, log_lift, n_words),
                    coherence(model, counts, top_n=COHERENCE_TOP_N, average=False),
                    _exclusivity(model),
                    _representative_documents(doc_topic, n_documents),
                )
            )
        ]
        self.data = {
            "title": title,
            "nDocuments": n_docs,
            "nFeatures": n_features,
            "nWords": n_words,
            "lambda": relevance_lambda,
            "coherenceTopN": COHERENCE_TOP_N,
            "diversityTopN": DIVERSITY_TOP_N,
            "diversity": round(topic_diversity(model, top_n=DIVERSITY_TOP_N), 3),
            "topics": topics,
            "vocabulary": _vocabulary(topics, names, sketch, log_topic_word, counts),
            "documents": _snippets(topics, texts, snippet_length),
            "alarms": _alarms(model),
            "stability": _stability(model, others, unstable_distance, topics),
            "timeline": _timeline(doc_topic, labels, timeline, model),
        }

    def to_html(self):
        """The page, as a string.

        Returns
        -------
        page : str
            A complete HTML document.
        """
        # Inside a script element, "</" or "<!--" would change how the page
        # is read: the data has no "<" at all.
        data = json.dumps(self.data, allow_nan=False, separators=(",", ":"))
        parts = {
            "<!-- TITLE -->": html.escape(self.data["title"]),
            "/* STYLE */": (_PAGE_FILES / "report.css").read_text(encoding="utf-8"),
            "/* SCRIPT */": (_PAGE_FILES / "report.js").read_text(encoding="utf-8"),
            "/* DATA */": data.replace("<", "\\u003c"),
        }
        page = (_PAGE_FILES / "report.html").read_text(encoding="utf-8")
        # One pass, so that no inserted part is searched for markers.
        return _MARKERS.sub(lambda marker: parts[marker.group()], page)

    def save(self, path):
        """Write the page to a file.

        Parameters
        ----------
        path : str or path-like
            The HTML file to write, in UTF-8.
        """
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(self.to_html())

    def _repr_html_(self):
        """The page in a frame of its own, for notebooks."""
        return (
            f'<iframe srcdoc="{html.escape(self.to_html(), quote=True)}" '
            'style="width: 100%; height: 900px; border: none;"></iframe>'
        )


def relevant_word_indices(log_topic_word, log_lift, n_words, lambdas=LAMBDAS):
    """The words that may be among a topic's most relevant at any lambda.

    Parameters
    ----------
    log_topic_word : ndarray of shape (n_topics, n_features)
        log p(w|t).
    log_lift : ndarray of shape (n_topics, n_features)
        log(p(w|t) / p(w)).
    n_words : int
        The number of most relevant words wanted.
    lambdas : ndarray of shape (n_lambdas,), default=LAMBDAS
        The values of lambda.

    Returns
    -------
    indices : list of ndarray
        For each topic, in increasing order, every word whose relevance
        lambda log p(w|t) + (1 - lambda) log(p(w|t) / p(w)) is at least the
        ``n_words``-th largest at one of ``lambdas``: the ``n_words`` most
        relevant words at each of them, and the words tied with the last.
        Words of probability 0 in the topic are left out.
    """
    n_words = min(n_words, log_topic_word.shape[1])
    weights = lambdas[:, np.newaxis]
    indices = []
    for exact, lift in zip(log_topic_word, log_lift):
        possible = exact > -np.inf
        with np.errstate(invalid="ignore"):
            relevance = np.where(
                possible, weights * exact + (1 - weights) * lift, -np.inf
            )
        cut = -np.partition(-relevance, n_words - 1, axis=1)[:, n_words - 1]
        relevant = (relevance >= cut[:, np.newaxis]).any(axis=0)
        indices.append(np.flatnonzero(relevant & possible))
    return indices


def jensen_shannon_distances(topic_word):
    """The Jensen-Shannon distance between every two topics.

    Parameters
    ----------
    topic_word : ndarray of shape (n_topics, n_features)
        The topics' word distributions, rows summing to 1.

    Returns
    -------
    distances : ndarray of shape (n_topics, n_topics)
        The square root of the Jensen-Shannon divergence in bits, in
        [0, 1]: 0 for identical topics, 1 for topics without a common word.
    """
    if len(topic_word) < 2:
        return np.zeros((len(topic_word), len(topic_word)))
    # SciPy's distance is in nats: 1 is sqrt(log 2) there.
    return squareform(pdist(topic_word, "jensenshannon")) / np.sqrt(np.log(2))


def principal_coordinates(distances):
    """Two-dimensional classical scaling (principal coordinates) of
    distances.

    Parameters
    ----------
    distances : ndarray of shape (n_points, n_points)
        Symmetric distances, zero on the diagonal.

    Returns
    -------
    coordinates : ndarray of shape (n_points, 2)
        Centred points whose distances approach ``distances`` best in two
        dimensions; the second column is zero when one suffices. Each
        column's largest entry in absolute value is positive.
    """
    n_points = len(distances)
    centring = np.eye(n_points) - 1.0 / n_points
    inner = -0.5 * centring @ (distances**2) @ centring
    values, vectors = np.linalg.eigh(inner)
    largest = np.argsort(values)[::-1][:2]
    coordinates = np.zeros((n_points, 2))
    coordinates[:, : len(largest)] = vectors[:, largest] * np.sqrt(
        np.clip(values[largest], 0, None)
    )
    signs = np.sign(coordinates[np.abs(coordinates).argmax(axis=0), [0, 1]])
    return coordinates * np.where(signs == 0, 1, signs)


def _check_positive_int(**values):
    for name, value in values.items():
        if not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def _feature_names(estimator, feature_names, n_features):
    """The name of each column, and the WordSketch that named them, if any."""
    if feature_names is None:
        if not isinstance(estimator, Pipeline) or len(estimator) < 2:
            raise ValueError(
                "feature_names is needed unless the estimator is a pipeline "
                "whose steps name the features."
            )
        last_step = estimator[-2]
        feature_names = last_step if isinstance(last_step, WordSketch) else None
        if feature_names is None:
            try:
                feature_names = estimator[:-1].get_feature_names_out()
            except AttributeError as error:
                raise ValueError(
                    "The pipeline's steps do not name the features (a "
                    "HashingVectorizer cannot): pass feature_names, or "
                    "count with a WordSketch."
                ) from error
    sketch = feature_names if isinstance(feature_names, WordSketch) else None
    names = np.asarray(
        feature_names if sketch is None else sketch.get_feature_names_out(),
        dtype=str,
    )
    if names.shape != (n_features,):
        raise ValueError(
            f"feature_names has shape {names.shape}, expected ({n_features},) "
            "to match the estimator's features."
        )
    return names, sketch


def _significant(values):
    """Floats rounded to SIGNIFICANT_DIGITS significant digits, as JSON."""
    rounded = [float(f"{value:.{SIGNIFICANT_DIGITS}g}") for value in np.ravel(values)]
    return rounded if np.ndim(values) else rounded[0]


def _exclusivity(model):
    """The share of each topic's DIVERSITY_TOP_N top words that are among no
    other topic's."""
    top = top_word_indices(model, DIVERSITY_TOP_N)
    _, position, holders = np.unique(top, return_inverse=True, return_counts=True)
    return np.mean(holders[position.reshape(top.shape)] == 1, axis=1)


def _representative_documents(doc_topic, n_documents):
    """For each topic, its ``n_documents`` documents of largest share, as
    [row, share] pairs, the largest first."""
    n_documents = min(n_documents, len(doc_topic))
    best = np.argpartition(-doc_topic, n_documents - 1, axis=0)[:n_documents]
    for topic, rows in enumerate(best.T):
        rows = rows[np.argsort(-doc_topic[rows, topic], kind="stable")]
        yield [[int(row), round(float(doc_topic[row, topic]), 3)] for row in rows]


def _vocabulary(topics, names, sketch, log_topic_word, counts):
    """The words that the topics show, which each topic's ``words`` then
    index: their names, probability p(w), counts in X and, for a sketch,
    the bucket's other frequent words."""
    used = np.unique(np.concatenate([topic["words"] for topic in topics]))
    prevalence = np.array([topic["prevalence"] for topic in topics])
    position = np.searchsorted(used, np.arange(len(names)))
    for topic in topics:
        topic["words"] = position[topic["words"]].tolist()
    vocabulary = {
        "names": names[used].tolist(),
        "probability": _significant(prevalence @ np.exp(log_topic_word[:, used])),
        "count": np.asarray(counts[:, used].sum(axis=0)).ravel().round().tolist(),
    }
    if sketch is not None:
        vocabulary["others"] = [
            " ".join(word for word in row[1:] if word)
            for row in sketch.candidate_words_[used]
        ]
        vocabulary["share"] = np.round(sketch.leading_share()[used], 3).tolist()
    return vocabulary


def _snippets(topics, texts, snippet_length):
    """The start of the text of every representative document, by row."""
    if texts is None:
        return None
    rows = {row for topic in topics for row, _ in topic["documents"]}
    snippets = {}
    for row in sorted(rows):
        text = " ".join(str(texts[row]).split())
        if len(text) > snippet_length:
            text = text[:snippet_length].rstrip() + "…"
        snippets[str(row)] = text
    return snippets


def _alarms(model):
    """The updates at which a filtered fit's drift alarms fired."""
    if not hasattr(model, "step_size_history_"):
        return []
    return drift_alarms(model).tolist()


def _stability(model, others, unstable_distance, topics):
    """Each topic's mean distance to its closest topic of the other fits."""
    if not others:
        return None
    distances = np.ones((len(others), len(topics)))
    for fit, other in enumerate(others):
        alignment = topic_alignment(model, other)
        distances[fit, alignment.index_a] = alignment.distance
    mean = distances.mean(axis=0)
    for topic, distance in zip(topics, mean):
        topic["distance"] = round(float(distance), 3)
        topic["unstable"] = bool(distance > unstable_distance)
    return {"nOthers": len(others), "threshold": unstable_distance}


def _timeline(doc_topic, labels, timeline, model):
    """The topics' prevalence per time slice, and the slices with an alarm."""
    if labels is not None:
        slices, slice_of = np.unique(np.asarray(labels), return_inverse=True)
        prevalence = np.array(
            [doc_topic[slice_of == index].mean(axis=0) for index in range(len(slices))]
        )
        return {
            "labels": [str(label) for label in slices],
            "prevalence": [_significant(row) for row in prevalence],
            "alarms": [],
        }
    if timeline is None:
        return None
    if not isinstance(timeline, TopicTimeline) or not timeline.labels_:
        raise ValueError("timeline must be a TopicTimeline with recorded slices.")
    if timeline.prevalence_.shape[1] != doc_topic.shape[1]:
        raise ValueError(
            f"The timeline follows {timeline.prevalence_.shape[1]} topics, the "
            f"estimator has {doc_topic.shape[1]}."
        )
    # An update belongs to the first slice that ends at or after it.
    slice_of_alarm = np.searchsorted(timeline.n_batch_iter_, _alarms(model))
    return {
        "labels": [str(label) for label in timeline.labels_],
        "prevalence": [_significant(row) for row in timeline.prevalence_],
        "alarms": sorted(
            set(slice_of_alarm[slice_of_alarm < len(timeline.labels_)].tolist())
        ),
    }
