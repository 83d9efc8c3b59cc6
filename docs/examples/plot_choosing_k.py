"""
Choosing the number of topics
=============================

``GridSearchCV`` over ``n_components`` of :class:`~sklearn_svi.SmoothedLDA`
on the docstrings of Python's standard library, judged four ways at once
(:ref:`topic-quality`): held-out document completion
(:func:`~sklearn_svi.metrics.completion_score`, how well the model predicts
the other half of a held-out document), NPMI coherence of each topic's ten
top words (:func:`~sklearn_svi.metrics.coherence_scorer`, counted in all
the docstrings), the diversity of the topics' top words
(:func:`~sklearn_svi.metrics.diversity_scorer`) and the stability of the
topics over two seeds (:func:`~sklearn_svi.metrics.stability_scorer`),
each over three folds.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV

from sklearn_svi import SmoothedLDA, load_python_docstrings, top_words
from sklearn_svi.metrics import (
    coherence_scorer,
    completion_score,
    diversity_scorer,
    stability_scorer,
)

texts, _ = load_python_docstrings()
vectorizer = CountVectorizer(stop_words="english", min_df=5, max_df=0.3)
X = vectorizer.fit_transform(texts)

criteria = {
    "completion": completion_score,
    "coherence": coherence_scorer(measure="npmi", reference=X),
    "diversity": diversity_scorer(),
    "stability": stability_scorer(seeds=(0, 1)),
}
search = GridSearchCV(
    SmoothedLDA(batch_size=64, max_iter=3, random_state=0),
    {"n_components": [5, 10, 20, 40, 80, 160]},
    scoring=criteria,
    refit="coherence",
    cv=3,
).fit(X)

n_topics = np.array(search.cv_results_["param_n_components"], dtype=int)
print("topics  " + "  ".join(f"{name:>10}" for name in criteria))
for row, k in enumerate(n_topics):
    means = [search.cv_results_[f"mean_test_{name}"][row] for name in criteria]
    print(f"{k:6d}  " + "  ".join(f"{value:10.3f}" for value in means))
print("chosen:", search.best_params_)

fig, axes = plt.subplots(1, 4, figsize=(14, 3.5))
for ax, name in zip(axes, criteria):
    ax.errorbar(
        n_topics,
        search.cv_results_[f"mean_test_{name}"],
        yerr=search.cv_results_[f"std_test_{name}"],
        marker="o",
        capsize=3,
    )
    ax.axvline(search.best_params_["n_components"], color="grey", linestyle=":")
    ax.set_xscale("log", base=2)
    ax.set_xticks(n_topics, n_topics)
    ax.set_xlabel("n_components")
    ax.set_title(name)
axes[0].set_ylabel("mean over the folds (higher is better)")
fig.tight_layout()
plt.show()

# %%
# Reading the four curves
# -----------------------
#
# Held-out completion keeps rising over the whole grid: as a predictor of
# held-out words, more topics only help here. The criteria that judge the
# topics as people read them do not follow it: coherence peaks inside the
# grid, diversity falls once the topics start sharing their top words, and
# stability falls as the number of topics grows, since with more topics the
# seed decides more of how the docstrings are divided. ``refit="coherence"``
# keeps the number of topics whose top words occur together most often (the
# dotted line); for topics used as features, ``refit="completion"`` would
# take the largest. The chosen model's first topics:

for topic, words in enumerate(
    top_words(search.best_estimator_, vectorizer.get_feature_names_out(), 8)[:5]
):
    print(topic, " ".join(words))
