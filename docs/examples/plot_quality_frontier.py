"""
Held-out fit against CPU time: the online fits and a collapsed Gibbs sampler
============================================================================

The curves that ``benchmarks/bench_quality.py`` measured and stored in
``benchmarks/results/`` (its first seed): every model fitted on one thread
with the same priors, its topics scored at each checkpoint by the same
plug-in inference of the held-out documents' proportions (document
completion). tomotopy's collapsed Gibbs sampler is shown with its priors
fixed at ours (``optim_interval=0``) and with its default, which learns
alpha. The tables of :ref:`quality-per-second` give the mean over seeds at
each budget. This example reads the stored results; it fits nothing.
"""

import re
from pathlib import Path

import matplotlib.pyplot as plt

# The gallery runs each example from its own folder, docs/examples.
RESULTS = next(
    folder / "benchmarks" / "results"
    for folder in (Path.cwd(), *Path.cwd().parents)
    if (folder / "benchmarks" / "results").is_dir()
)
CORPORA = ("healthtweets", "NewsArticles", "npm")
SHOWN = {
    "SmoothedLDA() default, plain SVI (L=1)": "SmoothedLDA()",
    "FilteredLDA() default": "FilteredLDA()",
    'SmoothedLDA(local_step="cvb0"), every document by CVB0': (
        'SmoothedLDA(local_step="cvb0")'
    ),
    "scikit-learn online": "scikit-learn",
    "tomotopy collapsed Gibbs, fixed priors": "tomotopy, fixed priors",
    "tomotopy collapsed Gibbs, default (learned alpha)": "tomotopy, default",
}
CHECKPOINT = re.compile(r"(\d+(?:\.\d+)?)s:(-\d+\.\d+)")


def first_seed_curves(path):
    """The checkpoints of each model of ``path``'s last table: its CPU
    seconds and held-out log predictive per word."""
    last_table = path.read_text(encoding="utf-8").split("\n\n")[-1]
    curves = {}
    for line in last_table.splitlines():
        label = next((label for label in SHOWN if line.startswith(label)), None)
        if label is not None and (points := CHECKPOINT.findall(line)):
            curves[label] = [(float(s), float(score)) for s, score in points]
    return curves


corpora = [c for c in CORPORA if (RESULTS / f"quality_{c}.rst").exists()]
fig, axes = plt.subplots(
    1, len(corpora), figsize=(4.2 * len(corpora), 3.8), squeeze=False
)
axes = axes[0]
for ax, corpus in zip(axes, corpora):
    for label, points in first_seed_curves(RESULTS / f"quality_{corpus}.rst").items():
        seconds, scores = zip(*points)
        ax.plot(seconds, scores, marker=".", label=SHOWN[label])
    ax.set_xscale("log")
    ax.set_title(corpus)
    ax.set_xlabel("CPU seconds (one thread)")
    scores = [s for line in ax.get_lines() for s in line.get_ydata()]
    ax.set_ylim(sorted(scores)[len(scores) // 10] - 0.05, max(scores) + 0.03)
axes[0].set_ylabel("held-out log predictive per word")
axes[0].legend(fontsize=8)
fig.tight_layout()
plt.show()
