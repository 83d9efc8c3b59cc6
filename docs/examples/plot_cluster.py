"""
Fitting topics on a Dask cluster
================================

The corpus is a Dask array of row blocks, held by the workers of a Dask
cluster; :class:`~sklearn_svi.SmoothedLDA` fits it where the blocks are. Each
update sends the workers the topics of their shards' words, and each worker
sends back its shard's sufficient statistic; the documents never come to
this process. The same fit on one machine, with the same seed, gives the
same topics: the figure plots one fit's topic-word weights against the
other's. ``transform`` and ``perplexity`` of a Dask array return Dask
results.

A LocalCluster of two worker processes stands in for a real cluster here;
with a cluster of many machines, only the address given to ``Client``
changes.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster
from sklearn.feature_extraction.text import CountVectorizer

from sklearn_svi import SmoothedLDA, load_python_docstrings

texts, _ = load_python_docstrings()
X = CountVectorizer(stop_words="english", min_df=3).fit_transform(texts)
X = X[np.asarray(X.sum(axis=1)).ravel() > 0].astype(np.float64)

settings = dict(n_components=10, batch_size=256, max_iter=3, random_state=0)
alone = SmoothedLDA(**settings).fit(X)

cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
client = Client(cluster)
# Four row blocks, computed and kept by the workers.
blocks = client.persist(da.from_array(X, chunks=(X.shape[0] // 4 + 1, X.shape[1])))
on_cluster = SmoothedLDA(**settings).fit(blocks)
proportions = on_cluster.transform(blocks)  # a Dask array
perplexity = on_cluster.perplexity(blocks)  # a number, computed on the cluster
print(f"topic proportions: {proportions.shape}, in {proportions.npartitions} blocks")
print(f"perplexity on the cluster: {perplexity:.1f}")
print(f"perplexity on one machine: {alone.perplexity(X):.1f}")

difference = np.max(np.abs(on_cluster.components_ - alone.components_))
print(f"largest difference of the topics: {difference:.1e}")
client.close()
cluster.close()

fig, ax = plt.subplots(figsize=(5, 5))
ax.loglog(alone.components_.ravel(), on_cluster.components_.ravel(), ".", ms=2)
ax.set_xlabel("topic-word weight, one machine")
ax.set_ylabel("topic-word weight, Dask cluster")
ax.set_title(f"largest difference {difference:.1e}", fontsize="small")
fig.tight_layout()
plt.show()
