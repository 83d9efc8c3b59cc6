"""
Tuning the window length in a classification pipeline
=====================================================

Topic proportions as features: ``CountVectorizer`` → :class:`~sklearn_svi.SmoothedLDA`
→ ``LogisticRegression`` predicts which of four standard-library packages a
docstring comes from (``email``, ``asyncio``, ``logging``, ``xml``).
``GridSearchCV`` tunes the window length ``L`` and the number of topics by
3-fold cross-validated accuracy; the figure shows the grid's scores.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_svi import SmoothedLDA, load_python_docstrings

texts, modules = load_python_docstrings()
chosen = np.isin(modules, ["email", "asyncio", "logging", "xml"])
texts = [text for text, keep in zip(texts, chosen) if keep]
labels = modules[chosen]

pipeline = Pipeline(
    [
        ("counts", CountVectorizer(stop_words="english", min_df=2)),
        ("topics", SmoothedLDA(batch_size=32, max_iter=5, random_state=0)),
        ("classifier", LogisticRegression(max_iter=1000)),
    ]
)
grid = {"topics__L": [1, 5, 20], "topics__n_components": [5, 10, 20]}
search = GridSearchCV(pipeline, grid, cv=3).fit(texts, labels)

scores = search.cv_results_["mean_test_score"].reshape(3, 3)
fig, ax = plt.subplots(figsize=(6, 4))
for row, L in enumerate(grid["topics__L"]):
    ax.plot(grid["topics__n_components"], scores[row], marker="o", label=f"L = {L}")
ax.set_xlabel("number of topics")
ax.set_ylabel("cross-validated accuracy")
ax.set_title(f"best: {search.best_params_}", fontsize="small")
ax.legend()
fig.tight_layout()
plt.show()
