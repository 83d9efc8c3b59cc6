"""The Dask engine: the local step on a cluster, and the models' methods
on Dask collections (registered with :mod:`sklearn_svi._sources`).

The local step is the cost of an update, and it is data-parallel: a
minibatch is cut into parts by the workers that hold its samples' row
blocks, one task per worker computes its part's statistic on all the
worker's threads, at the model's present state, and a tree of tasks adds the
parts' statistics on the workers, so that the client receives one statistic
per update and runs the usual update. What travels:

- from the client, once per update: a copy of the model without the
  update's state (:meth:`~sklearn_svi._contract.OnlineModel._local_copy`),
  with lambda cut to the rows that the minibatch's local step reads (an LDA
  minibatch's words), serialised by value when its class lives in
  ``__main__``; a large copy goes to one worker and from there along a tree
  of tasks to the others;
- between workers: the parts' sparse statistics, as the tree adds them;
- back to the client: the sum, on the rows of the minibatch.

The samples stay where they are. Each part divides its sum by the size of
the whole minibatch, so the statistics add up to the minibatch mean; every
sample's part of it is computed as on one machine (the same random starts,
drawn from the minibatch number and the sample), and only the grouping of
the sum over the samples differs, by rounding.

A worker that dies costs the tasks it was running: Dask runs them again
elsewhere (recomputing lost blocks of a Dask collection from their graph),
and blocks that the client scattered itself are sent again. A task that
kills the workers that run it (Dask's ``KilledWorker``) is not sent again,
and an update that waits longer than ``"sklearn-svi.update-timeout"`` of
Dask's configuration stops with a clear error. The update changes the model
only once it has the whole statistic, so nothing is counted twice and a
failed update leaves the model as it was. Dask is imported only when a Dask
collection or joblib's Dask backend is in use.
"""

from .._sources import register_engine
from ._engine import DaskEngine

register_engine(DaskEngine())
