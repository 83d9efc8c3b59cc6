"""
A topic report of an open-vocabulary stream
===========================================

A stream whose vocabulary is not known in advance is counted by a
``HashingVectorizer``, which needs no vocabulary, and named by a
:class:`~sklearn_svi.WordSketch`, which keeps the frequent words of each
hashed column. Here the stream is the standard library's docstrings
(:func:`~sklearn_svi.load_python_docstrings`, no download) in the order of
their modules, so the subjects change as it goes: a
:class:`~sklearn_svi.FilteredLDA` is fitted with ``partial_fit`` minibatch
by minibatch, the sketch updated with each minibatch, and a
:class:`~sklearn_svi.TopicTimeline` records the topics after each tenth of
the stream.

:class:`~sklearn_svi.TopicReport` then writes the topics to one HTML page
that opens without a network: the words of each topic named by the sketch,
a map of the topics, their coherence and the documents that hold most of
them, and their prevalence over the stream, where it would mark the
slices in which the filter's drift alarm fired (this stream changes
gradually, and raises none).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer

from sklearn_svi import (
    FilteredLDA,
    TopicReport,
    TopicTimeline,
    WordSketch,
    load_python_docstrings,
)

texts, _ = load_python_docstrings()
sketch = WordSketch(
    HashingVectorizer(
        n_features=2**13, stop_words="english", alternate_sign=False, norm=None
    )
)
model = FilteredLDA(n_components=12, batch_size=50, random_state=0)
timeline = TopicTimeline(n_words=5)
for part, rows in enumerate(np.array_split(np.arange(len(texts)), 10)):
    for start in range(rows[0], rows[-1] + 1, 50):
        batch = texts[start : min(start + 50, rows[-1] + 1)]
        sketch.partial_fit(batch)
        model.partial_fit(sketch.transform(batch))
    timeline.record(model, sketch.transform(texts[rows[0] : rows[-1] + 1]), part)

X = sketch.transform(texts)
report = TopicReport(
    model,
    X,
    sketch,
    texts=texts,
    timeline=timeline,
    title="Topics of the standard library's docstrings",
)
report.save("_pages/open_vocabulary_report.html")

# %%
# The map of the topics
# ---------------------
#
# The page's map, drawn here with Matplotlib from the report's data: each
# topic at the principal coordinates of the Jensen-Shannon distances between
# the topics' word distributions, its area its prevalence, labelled with
# its three most probable words.

topics = report.data["topics"]
names = report.data["vocabulary"]["names"]
fig, ax = plt.subplots(figsize=(7, 6))
x = [topic["x"] for topic in topics]
y = [topic["y"] for topic in topics]
ax.scatter(x, y, s=[2e4 * topic["prevalence"] for topic in topics], alpha=0.4)
for index, topic in enumerate(topics):
    by_weight = np.argsort(topic["weights"])[::-1][:3]
    words = " ".join(names[topic["words"][position]] for position in by_weight)
    ax.annotate(f"{index}: {words}", (topic["x"], topic["y"]), fontsize="x-small")
ax.set_xlabel("first principal coordinate")
ax.set_ylabel("second principal coordinate")
ax.set_title("Topics of the docstrings, by their Jensen-Shannon distances")
fig.tight_layout()
plt.show()

print(f"Drift alarms at updates {report.data['alarms']}")
print(f"Slices with an alarm: {report.data['timeline']['alarms']}")

# %%
# The page
# --------
#
# The report of this example is `here <../open_vocabulary_report.html>`_.
# Clicking a topic on the map shows its words and its documents; the
# control of lambda ranks the words by their probability in the topic
# (lambda = 1) or by how much more probable the topic makes them (lambda =
# 0). A word of a hashed column is its column's most frequent word; the
# others are shown when the pointer rests on it. Below, the page of the
# benchmark's report of the NewsArticles corpus (100 topics) as headless
# Chromium draws it:
#
# .. image:: /images/topic_report.png
#    :alt: The topic report of NewsArticles in Chromium
