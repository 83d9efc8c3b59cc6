"""``DaskEngine``: the models' methods on Dask collections of row blocks,
where the blocks are."""

import numpy as np

from ._client import active_client, is_dask_collection, row_block_tasks
from ._rows import ClusterRows
from ._tasks import _block_call, _ordered_sum, _partition_call


class DaskEngine:
    """Dask collections of row blocks, for every model (an ``Engine``)."""

    def holds(self, X):
        return is_dask_collection(X)

    def fits(self, X):
        return is_dask_collection(X) or active_client() is not None

    def row_source(self, model, X, reset, dtype):
        return ClusterRows.from_data(model, X, reset, dtype)

    def map_row_blocks(self, method, model, X, n_columns, dtype):
        """``method(model, block)`` on each row block of ``X``.

        For a Dask array, a Dask array of the blocks' results, one row per
        sample, with ``n_columns`` columns (None for a vector); for a bag, a
        bag of each partition's result.
        """
        import dask
        import dask.array as da

        shared = dask.delayed(model)
        if not isinstance(X, da.Array):
            row_block_tasks(X)  # the type check
            return X.map_partitions(_partition_call, method, shared)
        X = X.rechunk({1: -1})
        if n_columns is None:
            shape = dict(drop_axis=1, meta=np.empty((0,), dtype=dtype))
        else:
            shape = dict(
                chunks=(X.chunks[0], (n_columns,)), meta=np.empty((0, 0), dtype=dtype)
            )
        return X.map_blocks(_block_call, method, shared, dtype=dtype, **shape)

    def sum_row_blocks(self, part, model, X):
        """The sum of ``part(model, block)`` over the row blocks of ``X``,
        added in the blocks' order on the cluster, computed."""
        import dask

        shared = dask.delayed(model)
        parts = [dask.delayed(part)(shared, block) for block in row_block_tasks(X)]
        return dask.delayed(_ordered_sum)(parts).compute()
