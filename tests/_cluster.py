"""A LocalCluster of worker processes for the tests of Dask fits."""

import contextlib
import os


@contextlib.contextmanager
def local_client(**cluster_settings):
    """A client of a new LocalCluster of worker processes with
    ``cluster_settings``, closed on exit.

    Starting workers sets variables such as ``OMP_NUM_THREADS=1`` in this
    process's environment too; they are put back on exit.
    """
    import distributed

    environment = dict(os.environ)
    cluster = distributed.LocalCluster(
        processes=True, dashboard_address=None, **cluster_settings
    )
    try:
        with distributed.Client(cluster) as client:
            yield client
    finally:
        cluster.close()
        os.environ.clear()
        os.environ.update(environment)
