"""Threads for the compiled kernels and the row-wise array updates.

The kernels release the GIL, and so do NumPy's operations on large arrays,
so a minibatch's work splits into chunks that run on a thread pool. Every
value is computed the same way whichever thread computes it, so the results
do not depend on the number of threads.
"""

import itertools
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager

from joblib import effective_n_jobs

# Row blocks per thread in ``Workers.row_blocks``.
BLOCKS_PER_THREAD = 4


class Workers:
    """Run chunks of work on a number of threads.

    The calling thread is one of them: it and ``n_threads - 1`` helper
    threads take the chunks one at a time, in order, until none is left, so
    a thread that runs slow (a busy core, a long chunk) takes fewer chunks.

    Parameters
    ----------
    n_threads : int
        Number of threads, the calling one included.
    executor : ThreadPoolExecutor or None
        The ``n_threads - 1`` helper threads; None runs the chunks one after
        the other on the calling thread.
    """

    def __init__(self, n_threads, executor=None):
        self.n_threads = n_threads
        self.executor = executor
        self._deferred = []

    def defer(self, function, *arguments):
        """``function(*arguments)``, to be computed alongside later work.

        With helper threads, the call starts on one of them at the beginning
        of the next ``run`` with ``start_deferred=True``, ahead of that run's
        chunks; otherwise it runs on the calling thread when its result is
        first asked for. It must only read data that nothing writes
        meanwhile.

        Parameters
        ----------
        function : callable
            The work.
        *arguments
            Its arguments.

        Returns
        -------
        deferred : Deferred
            Gives the value of the call.
        """
        deferred = Deferred(function, arguments)
        if self.executor is not None:
            # Calls computed on the calling thread meanwhile are dropped.
            self._deferred = [call for call in self._deferred if call.waiting]
            self._deferred.append(deferred)
        return deferred

    def run(self, function, argument_lists, start_deferred=False):
        """Call ``function`` on each argument list and wait for all calls.

        Parameters
        ----------
        function : callable
            The work of one chunk.
        argument_lists : iterable of tuple
            The arguments of each call.
        start_deferred : bool, default=False
            Start the calls of ``defer`` not started yet on the helper
            threads first. For a run whose chunks keep the calling thread
            busy, without the GIL, for longer than those calls take.

        Returns
        -------
        results : list
            The value of each call, in the order of ``argument_lists``.
        """
        argument_lists = list(argument_lists)
        if start_deferred:
            for deferred in self._deferred:
                deferred.start(self.executor)
            self._deferred.clear()
        if self.executor is None:
            return [function(*arguments) for arguments in argument_lists]
        results = [None] * len(argument_lists)
        # next() on a count is atomic under the GIL: each chunk is taken once.
        claims = itertools.count()

        def take_chunks():
            while (index := next(claims)) < len(argument_lists):
                results[index] = function(*argument_lists[index])

        n_helpers = min(self.n_threads, len(argument_lists)) - 1
        helpers = [self.executor.submit(take_chunks) for _ in range(n_helpers)]
        try:
            take_chunks()
        finally:
            # No helper may still write to shared arrays once run returns.
            wait(helpers)
        for helper in helpers:
            helper.result()
        return results

    def row_blocks(self, n_rows):
        """Split ``range(n_rows)`` into contiguous slices for the threads.

        With several threads there are ``BLOCKS_PER_THREAD`` slices per
        thread, so that a thread that runs slow takes fewer of them.

        Parameters
        ----------
        n_rows : int
            Number of rows.

        Returns
        -------
        blocks : list of slice
            Non-empty (unless ``n_rows`` is 0), contiguous and in order.
        """
        n_wanted = 1 if self.n_threads == 1 else BLOCKS_PER_THREAD * self.n_threads
        n_blocks = max(min(n_wanted, n_rows), 1)
        bounds = [n_rows * block // n_blocks for block in range(n_blocks + 1)]
        return [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]

    def sum_over_rows(self, function, n_rows, block_rows=4096):
        """Sum ``function(span)`` over fixed blocks of rows, on the threads.

        The blocks and the order of the sum do not depend on the number of
        threads, so neither does the result, to the last bit.

        Parameters
        ----------
        function : callable
            Maps a slice of rows to a number or an array of numbers.
        n_rows : int
            Number of rows.
        block_rows : int, default=4096
            Number of rows of each block (the last one may be shorter).

        Returns
        -------
        total : float or ndarray
            The sum of the blocks' values, added in row order.
        """
        spans = [
            slice(start, min(start + block_rows, n_rows))
            for start in range(0, n_rows, block_rows)
        ]
        return sum(self.run(function, [(span,) for span in spans]))


class Deferred:
    """A call whose value is wanted later (see :meth:`Workers.defer`).

    Parameters
    ----------
    function : callable
        The work.
    arguments : tuple
        Its arguments.
    """

    def __init__(self, function, arguments):
        self._call = (function, arguments)
        self._future = None

    @property
    def waiting(self):
        """Whether the call has neither started nor run."""
        return self._call is not None

    def start(self, executor):
        """Start the call on ``executor`` unless it already ran."""
        if self.waiting:
            function, arguments = self._call
            self._future = executor.submit(function, *arguments)
            self._call = None

    def result(self):
        """The value of the call, which runs now if it has not started."""
        if self.waiting:
            function, arguments = self._call
            self._call = None
            self._value = function(*arguments)
        elif self._future is not None:
            self._value = self._future.result()
            self._future = None
        return self._value


def call(function, *arguments):
    """``function(*arguments)``, so that one ``Workers.run`` runs different work.

    Parameters
    ----------
    function : callable
        The work of a chunk.
    *arguments
        Its arguments.

    Returns
    -------
    result
        What ``function`` returns.
    """
    return function(*arguments)


# The calling thread alone, for work done outside a fit's threads.
SERIAL = Workers(1)


@contextmanager
def thread_workers(n_jobs):
    """Workers for scikit-learn's ``n_jobs``: None means 1, -1 all cores.

    Yields
    ------
    workers : Workers
        The calling thread and ``n_threads - 1`` helpers, shut down on exit.
    """
    n_threads = effective_n_jobs(n_jobs)
    if n_threads <= 1:
        yield Workers(1)
        return
    with ThreadPoolExecutor(n_threads - 1) as executor:
        yield Workers(n_threads, executor)
