"""
The topics of the standard library's docstrings
===============================================

:class:`~sklearn_svi.SmoothedLDA` with 12 topics, five passes over the
docstrings of Python's standard library, and each topic drawn as a bar chart
of its eight most probable words (:func:`~sklearn_svi.top_words` gives the
words; the bars are the topic's word probabilities), then the same topics in
pyLDAvis.
"""

import matplotlib.pyplot as plt
import numpy as np
import pyLDAvis
from sklearn.feature_extraction.text import CountVectorizer

from sklearn_svi import SmoothedLDA, load_python_docstrings, top_words

texts, _ = load_python_docstrings()
vectorizer = CountVectorizer(stop_words="english", min_df=5, max_df=0.3)
X = vectorizer.fit_transform(texts)
lda = SmoothedLDA(n_components=12, batch_size=64, max_iter=5, random_state=0).fit(X)

vocabulary = vectorizer.get_feature_names_out()
words = top_words(lda, vocabulary, n_words=8)
probabilities = lda.topic_word_distribution_
index = {word: column for column, word in enumerate(vocabulary)}
fig, axes = plt.subplots(3, 4, figsize=(12, 8))
for topic, ax in enumerate(axes.ravel()):
    values = [probabilities[topic, index[word]] for word in words[topic]]
    ax.barh(np.arange(8)[::-1], values)
    ax.set_yticks(np.arange(8)[::-1], words[topic])
    ax.set_title(f"topic {topic}", fontsize="small")
    ax.tick_params(axis="x", labelsize="x-small")
fig.tight_layout()
plt.show()

# %%
# The same topics in pyLDAvis
# ---------------------------
#
# `pyLDAvis <https://github.com/bmabey/pyLDAvis>`_ draws the topics as
# circles whose distances reflect how different their words are, and lists
# each topic's most relevant words. It takes the topics' word probabilities,
# the documents' topic proportions, the documents' lengths, the vocabulary
# and the words' frequencies, and writes a page that a browser opens (it
# loads D3 and pyLDAvis' script from their sites). The page of this example
# is `here <../pyldavis_topics.html>`_.

view = pyLDAvis.prepare(
    topic_term_dists=probabilities,
    doc_topic_dists=lda.transform(X),
    doc_lengths=np.asarray(X.sum(axis=1)).ravel(),
    vocab=vocabulary,
    term_frequency=np.asarray(X.sum(axis=0)).ravel(),
    sort_topics=False,
)
pyLDAvis.save_html(view, "_pages/pyldavis_topics.html")
