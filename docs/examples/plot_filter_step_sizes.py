"""
Learned step sizes on a stream whose topics change
==================================================

:class:`~sklearn_svi.FilteredLDA` takes its step size from a filter that
tracks the batch optimum (Houlsby & Blei 2014), instead of a schedule fixed
in advance. On a stream of documents whose planted topics are replaced
half-way, the filters raise the step when the documents stop agreeing with
the model, and the schedule cannot. Top: the step sizes of the Student's t
and Gaussian filters, the adaptive rate and the Robbins–Monro schedule, with
the alarms of :func:`~sklearn_svi.metrics.drift_alarms` (crosses: a step at
least four times the schedule, the dashed line, three updates in a row);
bottom: the perplexity of 500 held-out documents of the current half's
topics (lower is better).
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_svi import FilteredLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi.metrics import drift_alarms

# Each half: 3,000 documents to train on and 500 more from the same topics,
# held out.
corpora = [
    make_lda_corpus(n_documents=3500, n_features=300, n_topics=5, random_state=seed)[0]
    for seed in (0, 1)
]
halves = [(X[:3000], X[3000:]) for X in corpora]
settings = dict(n_components=5, batch_size=32, total_samples=6000, random_state=0)
models = {
    "Student's t filter": FilteredLDA(learning_rate="student-t", **settings),
    "Gaussian filter": FilteredLDA(learning_rate="gaussian", **settings),
    "adaptive rate": FilteredLDA(learning_rate="adaptive", **settings),
    "Robbins-Monro": SmoothedLDA(L=1, **settings),
}
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
for name, model in models.items():
    scores, updates = [], []
    for half, held_out in halves:
        for start in range(0, half.shape[0], 320):
            model.partial_fit(half[start : start + 320])
            updates.append(model.n_batch_iter_)
            scores.append(model.perplexity(held_out))
    history = model.step_size_history_
    (line,) = top.plot(history["n_batch_iter"], history["step_size"], label=name)
    alarms = drift_alarms(model)
    steps = np.asarray(history["step_size"])[alarms - 1]
    top.plot(alarms, steps, "x", color=line.get_color(), markersize=9)
    print(f"{name}: drift alarms at updates {alarms.tolist()}")
    bottom.plot(updates, scores, marker=".", label=name)
schedule = models["Robbins-Monro"]
update_numbers = np.asarray(schedule.step_size_history_["n_batch_iter"])
top.plot(
    update_numbers,
    4 * (schedule.learning_offset + update_numbers) ** -schedule.learning_decay,
    "k--",
    lw=0.8,
    label="4 x Robbins-Monro",
)
for axis in (top, bottom):
    axis.axvline(models["Robbins-Monro"].n_batch_iter_ / 2, color="grey", ls=":")
top.set_yscale("log")
top.set_ylabel("step size")
top.legend(fontsize="small")
bottom.set_ylabel("perplexity")
bottom.set_xlabel("update")
fig.suptitle("The topics change half-way (dotted line)")
fig.tight_layout()
plt.show()
