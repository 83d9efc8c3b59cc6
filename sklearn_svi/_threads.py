"""The threads of a fit, in one layer.

The compiled kernels release the GIL, and so do NumPy's operations on large
arrays, so a minibatch's work splits into chunks that run on a thread pool.
A public method opens the pool once, with :func:`thread_pool`, for as long as
it runs; the code below it asks for row-wise work with :func:`map_rows`,
:func:`sum_rows`, :func:`row_blocks` and :func:`run_calls`, and never handles
the pool itself. The compiled passes of the update that take a number of
threads share their work on an OpenMP team of :func:`team_size` threads
instead, as many as the pool's: a team's hand-over costs microseconds, the
pool's a wake-up of a thread and two passes of the GIL. Every value is
computed the same way whichever thread computes it, so the results do not
depend on the number of threads.
"""

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar

from joblib import effective_n_jobs

from ._transaction import interrupts_deferred

# Row blocks per thread in ``Workers.row_blocks``.
BLOCKS_PER_THREAD = 4

# The fewest entries of a block of ``Workers.row_blocks``: handing a block to
# another thread (a wake-up and two hand-overs of the GIL) cost 0.1 to 0.2 ms
# on a virtual machine of two cores. Thresholds 4 and 16 times larger changed
# a two-thread pass by -6% to +11% depending on the corpus and minibatch, none
# best everywhere.
MIN_BLOCK_ENTRIES = 1 << 16

# The fewest entries of a compiled pass that its OpenMP team shares. The
# team's threads wait for work spinning before they sleep, so a hand-over
# costs microseconds (a pass over 600 rows of 100 values took 25 to 34
# microseconds on a team of two, 29 to 69 on one thread and 79 to 177 on the
# pool, ``benchmarks/bench_threads.py``); this bound, a few microseconds of
# work, was set from that and not tuned further.
MIN_TEAM_ENTRIES = 1 << 12

# The entries of a block of ``fixed_block_rows``: blocks that an OpenMP
# team shares, a few times ``MIN_TEAM_ENTRIES``, so that the rows of one
# minibatch's words (some hundred thousand entries) make several. Blocks 16
# times larger left the second thread of a team idle on such a minibatch.
FIXED_BLOCK_ENTRIES = 1 << 14

# The fewest rows of a block of ``fixed_block_rows``: each block keeps its
# own sums, a row's worth, which are then added in order.
FIXED_BLOCK_MIN_ROWS = 64

# Rows of each block of ``sum_rows``.
SUM_BLOCK_ROWS = 4096


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

    def run(self, function, argument_lists):
        """Call ``function`` on each argument list and wait for all calls.

        A single call runs on the calling thread, without a hand-over.

        Parameters
        ----------
        function : callable
            The work of one chunk.
        argument_lists : iterable of tuple
            The arguments of each call.

        Returns
        -------
        results : list
            The value of each call, in the order of ``argument_lists``.
        """
        argument_lists = list(argument_lists)
        if self.executor is None or len(argument_lists) < 2:
            return [function(*arguments) for arguments in argument_lists]
        results = [None] * len(argument_lists)
        # next() on a count is atomic under the GIL: each chunk is taken once.
        claims = itertools.count()
        # Set when a thread fails: the others take no new chunk.
        failed = threading.Event()

        def take_chunks():
            try:
                while not failed.is_set() and (index := next(claims)) < len(
                    argument_lists
                ):
                    results[index] = function(*argument_lists[index])
            except BaseException:
                failed.set()
                raise

        n_helpers = min(self.n_threads, len(argument_lists)) - 1
        helpers = [self.executor.submit(take_chunks) for _ in range(n_helpers)]
        try:
            take_chunks()
        finally:
            # No helper may still write to shared arrays once run returns,
            # even when it returns by an exception: a second Ctrl-C waits too.
            with interrupts_deferred():
                wait(helpers)
        for helper in helpers:
            helper.result()
        return results

    def row_blocks(self, n_rows, row_size):
        """Split ``range(n_rows)`` into contiguous slices for the threads.

        With several threads there are up to ``BLOCKS_PER_THREAD`` slices per
        thread, so that a thread that runs slow takes fewer of them, but no
        slice of fewer than ``MIN_BLOCK_ENTRIES`` entries: less work is
        done sooner by the calling thread alone.

        Parameters
        ----------
        n_rows : int
            Number of rows.
        row_size : int
            Number of entries of a row.

        Returns
        -------
        blocks : list of slice
            Non-empty (unless ``n_rows`` is 0), contiguous and in order.
        """
        n_wanted = 1 if self.n_threads == 1 else BLOCKS_PER_THREAD * self.n_threads
        n_worth = n_rows * row_size // MIN_BLOCK_ENTRIES
        n_blocks = max(min(n_wanted, n_worth, n_rows), 1)
        bounds = [n_rows * block // n_blocks for block in range(n_blocks + 1)]
        return [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]


# The calling thread alone: the pool outside any ``thread_pool``.
SERIAL = Workers(1)

_active_workers = ContextVar("sklearn_svi_workers", default=SERIAL)


def thread_count(n_jobs):
    """Number of threads for scikit-learn's ``n_jobs``.

    None means 1 and a positive value itself. A negative value counts from
    the threads the process may use, -1 meaning all of them: the number
    ``OMP_NUM_THREADS`` allows when it is set, as for scikit-learn's OpenMP
    code, and all cores otherwise. joblib sets it in its workers to their
    share of the cores, so that a parallel GridSearchCV over estimators with
    ``n_jobs=-1`` does not run more threads than cores.

    Parameters
    ----------
    n_jobs : int or None
        The estimator's ``n_jobs``.

    Returns
    -------
    n_threads : int
    """
    if n_jobs is None or n_jobs > 0:
        return effective_n_jobs(n_jobs)
    budget = os.environ.get("OMP_NUM_THREADS")
    available = int(budget) if budget else effective_n_jobs(-1)
    return max(1, available + 1 + n_jobs)


@contextmanager
def thread_pool(n_jobs):
    """Run the row-wise work of this context on scikit-learn's ``n_jobs``.

    None means 1, -1 all cores. The pool is shut down, and the one active
    before restored, on exit.

    Parameters
    ----------
    n_jobs : int or None
        Number of threads, the calling one included.
    """
    with threads(thread_count(n_jobs)):
        yield


@contextmanager
def threads(n_threads):
    """Run the row-wise work of this context on ``n_threads`` threads, the
    calling one included, as many as asked.

    A Dask worker's task asks for the worker's own threads: joblib, which
    :func:`thread_pool` consults, allows a single one to a thread that is
    not the main one.

    Parameters
    ----------
    n_threads : int
        Number of threads.
    """
    if n_threads <= 1:
        with _active(SERIAL):
            yield
        return
    with ThreadPoolExecutor(n_threads - 1) as executor:
        with _active(Workers(n_threads, executor)):
            yield


@contextmanager
def _active(workers):
    """Make ``workers`` the active pool for the body, and the one active
    before it again afterwards.

    A Ctrl-C is raised between two bytecodes, so it may land in a
    ``finally`` before the pool is set back; the outer ``finally`` then sets
    it back once the interrupt is on its way. Otherwise a pool that its
    ``thread_pool`` has shut down would stay active for every later call.
    """
    previous = _active_workers.get()
    try:
        try:
            _active_workers.set(workers)
            yield
        finally:
            _active_workers.set(previous)
    finally:
        _active_workers.set(previous)


def n_threads():
    """Number of threads of the active pool."""
    return _active_workers.get().n_threads


def row_blocks(n_rows, row_size):
    """The active pool's slices of ``range(n_rows)`` (`Workers.row_blocks`)."""
    return _active_workers.get().row_blocks(n_rows, row_size)


def run_calls(function, argument_lists):
    """``function`` on each argument list, on the active pool (`Workers.run`)."""
    return _active_workers.get().run(function, argument_lists)


def map_rows(function, n_rows, row_size):
    """``function(span)`` for contiguous slices ``span`` of ``range(n_rows)``.

    The slices (`Workers.row_blocks`) run on the active pool.

    Parameters
    ----------
    function : callable
        Maps a slice of rows to a value.
    n_rows : int
        Number of rows.
    row_size : int
        Number of entries of a row: slices of little work are not shared.

    Returns
    -------
    results : list
        The value of each slice, in row order.
    """
    return run_calls(function, [(span,) for span in row_blocks(n_rows, row_size)])


def sum_rows(function, n_rows, block_rows=SUM_BLOCK_ROWS):
    """Sum ``function(span)`` over fixed blocks of rows, on the active pool.

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
    spans = _consecutive_slices(n_rows, block_rows)
    return sum(run_calls(function, [(span,) for span in spans]))


def fixed_block_rows(row_size):
    """The rows of the blocks of row work whose result must not depend on
    the number of threads: the fewest that hold ``FIXED_BLOCK_ENTRIES``
    entries, and at least ``FIXED_BLOCK_MIN_ROWS``, the same whatever the
    number of threads.

    Parameters
    ----------
    row_size : int
        Number of entries of a row.

    Returns
    -------
    block_rows : int
    """
    return max(-(-FIXED_BLOCK_ENTRIES // row_size), FIXED_BLOCK_MIN_ROWS)


def team_threads():
    """The threads of the OpenMP team of a compiled pass: the active pool's
    number of threads, or 1 in a process forked from one that had run a
    team.

    GNU's OpenMP runtime hangs when a process forked after its parent ran a
    team of several threads starts one itself; the child's compiled passes
    therefore run on its calling thread, with the same results.

    Returns
    -------
    n_threads : int
    """
    global _team_started
    if _team_forbidden:
        return 1
    n_team = n_threads()
    _team_started = _team_started or n_team > 1
    return n_team


def team_size(n_rows, row_size):
    """The threads of the OpenMP team of a compiled pass over ``n_rows``
    rows of ``row_size`` entries: :func:`team_threads`, or 1 for a pass of
    fewer than ``MIN_TEAM_ENTRIES`` entries.

    Parameters
    ----------
    n_rows : int
        Number of rows.
    row_size : int
        Number of entries of a row.

    Returns
    -------
    n_threads : int
    """
    return team_threads() if n_rows * row_size >= MIN_TEAM_ENTRIES else 1


# Whether this process has run a team of several threads, and whether it was
# forked from a process that had (``team_threads``).
_team_started = False
_team_forbidden = False


def _forbid_teams_if_started():
    """In a forked child: no team if the parent had run one."""
    global _team_forbidden
    _team_forbidden = _team_forbidden or _team_started


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forbid_teams_if_started)


def _consecutive_slices(n_rows, block_rows):
    """``range(n_rows)`` in slices of ``block_rows`` rows, the last one
    shorter if need be."""
    return [
        slice(start, min(start + block_rows, n_rows))
        for start in range(0, n_rows, block_rows)
    ]
