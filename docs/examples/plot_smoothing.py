"""
Smoothed gradients: held-out fit as the documents stream in
===========================================================

:class:`~sklearn_svi.SmoothedLDA` replaces each minibatch's statistic by the
mean of the last ``L`` statistics (Mandt & Blei 2014): less variance for a
little bias. Here ``L = 1`` (plain SVI), 10 and 100 fit 20 topics to the
docstrings of Python's standard library in minibatches of 32 documents, four
passes, and the held-out per-word log predictive probability (document
completion) is measured every 10 updates. On this small corpus of short
texts the window does not pay: plain SVI climbs fastest, and a long window
follows a smoother but slower path (the statistics it averages were computed
at older topics). The benchmarks measure the window on larger corpora.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import train_test_split

from sklearn_svi import SmoothedLDA, load_python_docstrings
from sklearn_svi.metrics import log_predictive, split_tokens

texts, _ = load_python_docstrings()
X = CountVectorizer(stop_words="english", min_df=5, max_df=0.5).fit_transform(texts)
X_train, X_test = train_test_split(X, test_size=0.1, random_state=0)
observed, predicted = split_tokens(X_test, random_state=0)

fig, ax = plt.subplots(figsize=(7, 4))
for L in (1, 10, 100):
    lda = SmoothedLDA(
        n_components=20,
        L=L,
        batch_size=32,
        total_samples=X_train.shape[0],
        random_state=0,
    )
    seen, scores = [], []
    rng = np.random.RandomState(0)
    for _ in range(4):
        order = rng.permutation(X_train.shape[0])
        for start in range(0, len(order), 320):
            lda.partial_fit(X_train[order[start : start + 320]])
            seen.append(lda.n_samples_seen_)
            scores.append(log_predictive(lda, observed, predicted))
    ax.plot(seen, scores, label=f"L = {L}")
ax.set_xlabel("documents seen")
ax.set_ylabel("held-out log predictive per word")
ax.set_title("SmoothedLDA on the standard library's docstrings")
ax.legend()
fig.tight_layout()
plt.show()
