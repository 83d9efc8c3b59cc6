"""
Topics over time
================

Fitting a stream slice after slice with ``partial_fit`` keeps the identity
of the topics: topic k after one slice is topic k moved by the next slice's
documents. :class:`~sklearn_svi.TopicTimeline` records each topic's
prevalence (the mean topic proportions of the slice's documents) and its
words after every slice.

The stream here is made of the standard library's docstrings
(:func:`~sklearn_svi.load_python_docstrings`, no download): eight slices of
300 docstrings, in which the share of the networking and e-mail modules
grows from a tenth to seven tenths while the rest of the library shrinks.
Top: every topic's prevalence over the slices; the topic that grew most
is drawn thick. Bottom: its words at the first, middle and last slice.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from sklearn_svi import SmoothedLDA, TopicTimeline, load_python_docstrings

texts, modules = load_python_docstrings()
networking = np.isin(modules, ["email", "http", "urllib", "smtplib", "imaplib"])
rng = np.random.default_rng(0)
vectorizer = CountVectorizer(stop_words="english", min_df=5, max_df=0.5)
X = vectorizer.fit_transform(texts)
vocabulary = vectorizer.get_feature_names_out()

n_slices, slice_size = 8, 300
shares = np.linspace(0.1, 0.7, n_slices)
model = SmoothedLDA(
    n_components=8, batch_size=50, total_samples=n_slices * slice_size, random_state=0
)
timeline = TopicTimeline(n_words=8)
for label, share in enumerate(shares):
    n_networking = round(share * slice_size)
    rows = np.concatenate(
        [
            rng.choice(np.flatnonzero(networking), n_networking, replace=False),
            rng.choice(np.flatnonzero(~networking), slice_size - n_networking),
        ]
    )
    for _ in range(3):
        model.partial_fit(X[rng.permutation(rows)])
    timeline.record(model, X[rows], label=label)

rising = int(np.argmax(timeline.prevalence_[-1] - timeline.prevalence_[0]))
fig, (top, bottom) = plt.subplots(
    2, 1, figsize=(7, 6), gridspec_kw=dict(height_ratios=[3, 2])
)
for topic in range(timeline.prevalence_.shape[1]):
    top.plot(
        timeline.labels_,
        timeline.prevalence_[:, topic],
        lw=3 if topic == rising else 1,
        label=f"topic {topic}",
    )
top.set_xlabel("slice")
top.set_ylabel("prevalence")
top.legend(fontsize="x-small", ncol=4)
words = timeline.words(rising, vocabulary)
lines = [
    f"slice {label}: {', '.join(words[label])}"
    for label in (0, n_slices // 2, n_slices - 1)
]
bottom.axis("off")
bottom.text(0, 0.9, f"Topic {rising}", fontweight="bold", va="top")
bottom.text(0, 0.7, "\n".join(lines), va="top", fontsize="small")
fig.tight_layout()
plt.show()

for line in lines:
    print(line)
