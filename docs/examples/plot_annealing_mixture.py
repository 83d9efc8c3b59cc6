"""
SVI+, SVI and batch inference on a 2-D mixture
==============================================

The experiment of Paisley, Fazelnia & Barr: 5,000 points from four well
separated Gaussians, fitted with 50 components and a Dirichlet prior of
alpha / K on the weights, so that unneeded components should empty. Batch
variational Bayes (scikit-learn's BayesianGaussianMixture), plain SVI
(minibatches of 500, a decaying step) and SVI+ (the noise of an effective
minibatch of M = 50 that grows to the minibatch size) are drawn as the
ellipses (two standard deviations) of the components that are the most
responsible one for at least 1% of the points, for one seed;
``benchmarks/bench_mixture.py`` counts the clusters found over 10 seeds
(see the benchmarks).
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Ellipse
from sklearn.mixture import BayesianGaussianMixture

from sklearn_svi import SVIGaussianMixture

rng = np.random.RandomState(0)
centres = np.array([[-5.0, -5.0], [-5.0, 5.0], [5.0, -5.0], [5.0, 5.0]])
X = centres[rng.randint(4, size=5000)] + rng.normal(size=(5000, 2))

common = dict(
    n_components=50,
    weight_concentration_prior_type="dirichlet_distribution",
    weight_concentration_prior=1.0 / 50,
    init_params="random_from_data",
    random_state=0,
)
models = {
    "batch VB": BayesianGaussianMixture(max_iter=1000, **common),
    # 20 passes each (tol=0), as in the paper.
    "SVI": SVIGaussianMixture(batch_size=500, max_iter=20, tol=0.0, **common),
    "SVI+ (M = 50, growing)": SVIGaussianMixture(
        batch_size=500, max_iter=20, tol=0.0, M=50, M_growth=2.5, **common
    ),
}
fig, axes = plt.subplots(1, 3, figsize=(11, 4), sharex=True, sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    counts = np.bincount(model.fit(X).predict(X), minlength=model.n_components)
    kept = np.flatnonzero(counts >= 0.01 * len(X))
    ax.scatter(X[:, 0], X[:, 1], s=1, color="lightgrey")
    for k in kept:
        values, vectors = np.linalg.eigh(model.covariances_[k])
        angle = np.degrees(np.arctan2(vectors[1, 1], vectors[0, 1]))
        width, height = 4 * np.sqrt(values[::-1])
        ax.add_patch(
            Ellipse(model.means_[k], width, height, angle=angle, fill=False, lw=2)
        )
    ax.set_title(f"{name}: {len(kept)} components")
    ax.set_aspect("equal")
fig.tight_layout()
plt.show()
