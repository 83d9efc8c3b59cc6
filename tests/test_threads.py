"""The thread pool of the update and the compiled row operations."""

import os
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from _interrupts import InjectedInterrupt, interrupted_at
from joblib import Parallel, delayed, effective_n_jobs
from numpy.testing import assert_array_equal

from sklearn_svi import SmoothedLDA
from sklearn_svi._mechanisms import SparseStatistic
from sklearn_svi._sources import InMemoryRows
from sklearn_svi._threads import (
    BLOCKS_PER_THREAD,
    FIXED_BLOCK_ENTRIES,
    FIXED_BLOCK_MIN_ROWS,
    MIN_BLOCK_ENTRIES,
    MIN_TEAM_ENTRIES,
    Workers,
    fixed_block_rows,
    map_rows,
    n_threads,
    run_calls,
    sum_rows,
    team_size,
    thread_count,
    thread_pool,
)
from sklearn_svi._update_fast import (
    add_to_rows,
    observe_difference,
    replace_rows,
    scaled_rows_of,
    step_toward_target,
)


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_every_chunk_runs_once_and_results_keep_their_order(n_jobs):
    calls = []

    def chunk(index):
        calls.append(index)
        time.sleep(0.001 * (index % 3))
        return index * index

    with thread_pool(n_jobs):
        results = run_calls(chunk, [(index,) for index in range(25)])
    assert results == [index * index for index in range(25)]
    assert sorted(calls) == list(range(25))


def test_calling_thread_takes_chunks_too():
    caller = threading.get_ident()
    with thread_pool(2):
        idents = run_calls(
            lambda: (time.sleep(0.01), threading.get_ident())[1], [()] * 8
        )
    assert caller in idents
    assert len(set(idents)) == 2


def test_a_failed_chunk_stops_the_others_and_raises_once_they_are_done():
    finished = []

    def chunk(index):
        time.sleep(0.002)
        if index == 3:
            raise KeyboardInterrupt
        finished.append(index)

    with thread_pool(2):
        with pytest.raises(KeyboardInterrupt):
            run_calls(chunk, [(index,) for index in range(200)])
        # Each thread finished at most the chunk it was running, and nothing
        # runs on after run_calls has raised.
        count = len(finished)
        time.sleep(0.05)
        assert len(finished) == count <= 5


def test_pool_is_active_inside_its_context_only():
    assert n_threads() == 1
    with thread_pool(2):
        assert n_threads() == 2
        with thread_pool(1):
            assert n_threads() == 1
        assert n_threads() == 2
    assert n_threads() == 1


# An interrupt that lands in a garbage collector's finalizer is reported as
# unraisable and dropped; that is Python's doing, not the pool's.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("outer_threads", [1, 2])
def test_an_interrupt_at_any_bytecode_of_a_pool_leaves_the_one_before_it_active(
    outer_threads, python_sigint_handler
):
    # Were the pool left active after its context had shut it down, every
    # later call that shares rows would fail.
    def enter_pool_and_share():
        with thread_pool(2):
            run_calls(abs, [(-1,), (-2,)])

    with thread_pool(outer_threads):
        with interrupted_at(float("inf")) as counter:
            enter_pool_and_share()
        n_interrupted = 0
        for moment in range(1, counter.count + 1):
            try:
                with interrupted_at(moment):
                    enter_pool_and_share()
            except InjectedInterrupt:
                n_interrupted += 1
            assert n_threads() == outer_threads
            assert run_calls(abs, [(-1,), (-2,)]) == [1, 2]
    # Python reports and drops an interrupt that lands in a finalizer run by
    # the garbage collector; the others reach the caller.
    assert n_interrupted > counter.count // 2
    assert n_threads() == 1


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_row_work_covers_the_rows_and_sums_in_a_fixed_order(n_jobs):
    values = np.random.default_rng(0).normal(size=10_001)
    with thread_pool(n_jobs):
        spans = map_rows(lambda span: span, values.size, MIN_BLOCK_ENTRIES)
        total = sum_rows(lambda span: values[span].sum(), values.size, 1000)
    assert [i for span in spans for i in range(values.size)[span]] == list(
        range(values.size)
    )
    assert total == sum(values[i : i + 1000].sum() for i in range(0, 10_001, 1000))


def test_a_minibatch_in_memory_is_prepared_by_the_caller_when_asked():
    """The helpers are left to the local step: a minibatch is sliced and
    prepared on the calling thread, when the update asks for it."""
    X = sp.random(50, 20, density=0.3, format="csr", random_state=0)
    model = SmoothedLDA(n_components=2)
    threads = []

    def prepared(X, rows):
        threads.append(threading.get_ident())
        return rows

    model._prepare_rows = prepared
    with thread_pool(2):
        pending = InMemoryRows(model, X).minibatch(np.arange(10, 20))
        time.sleep(0.01)
        assert threads == []
        minibatch = pending.result()
    assert threads == [threading.get_ident()]
    assert_array_equal(minibatch.prepared, np.arange(10, 20))
    assert_array_equal(minibatch.X_batch.toarray(), X[10:20].toarray())


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("n_rows", [0, 1, 5, 1000])
@pytest.mark.parametrize("row_size", [1, 100, MIN_BLOCK_ENTRIES])
def test_row_blocks_cover_the_rows_in_order(n_threads, n_rows, row_size):
    blocks = Workers(n_threads).row_blocks(n_rows, row_size)
    covered = [row for block in blocks for row in range(n_rows)[block]]
    assert covered == list(range(n_rows))
    assert all(block.stop > block.start for block in blocks) or n_rows == 0


@pytest.mark.parametrize("n_threads", [2, 3])
def test_row_blocks_share_only_work_worth_a_hand_over(n_threads):
    """Blocks of at least MIN_BLOCK_ENTRIES entries, as many as allowed."""
    workers = Workers(n_threads)
    # 1,000 rows of 100 entries: one block, which the calling thread runs.
    assert workers.row_blocks(1000, 100) == [slice(0, 1000)]
    # Three times the fewest entries, and a few more.
    blocks = workers.row_blocks(1000, 3 * MIN_BLOCK_ENTRIES // 1000 + 1)
    assert [block.stop - block.start for block in blocks] == [333, 333, 334]
    many = workers.row_blocks(1000, MIN_BLOCK_ENTRIES)
    assert len(many) == BLOCKS_PER_THREAD * n_threads


@pytest.mark.parametrize("row_size", [1, 7, 100, MIN_BLOCK_ENTRIES, 10**6])
def test_fixed_blocks_are_the_fewest_rows_of_enough_entries_and_rows(row_size):
    block_rows = fixed_block_rows(row_size)
    entries = FIXED_BLOCK_ENTRIES
    assert block_rows * row_size >= entries
    assert block_rows >= FIXED_BLOCK_MIN_ROWS
    assert block_rows == FIXED_BLOCK_MIN_ROWS or (block_rows - 1) * row_size < entries


def test_a_team_has_the_pools_threads_for_enough_entries_only():
    for n_jobs, expected in ((1, 1), (2, 2), (3, 3)):
        with thread_pool(n_jobs):
            assert team_size(MIN_TEAM_ENTRIES, 1) == expected
            assert team_size(1, MIN_TEAM_ENTRIES) == expected
            assert team_size(MIN_TEAM_ENTRIES - 1, 1) == 1
            assert team_size(0, 10) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_rows", [1, 3, 50])
def test_adding_to_rows_does_not_depend_on_the_team(dtype, block_rows):
    """stored[rows] += factor block on any team: the same rows, old rows
    and sums, to the last bit, as NumPy's rows and as one thread's sums."""
    rng = np.random.default_rng(0)
    initial = rng.random((60, 9)).astype(dtype)
    rows = np.sort(rng.choice(60, size=23, replace=False)).astype(np.intp)
    block = rng.random((23, 9)).astype(dtype)
    results = []
    for n_threads_of_team in (1, 2, 3):
        stored = initial.copy()
        saved = np.empty_like(block)
        done = np.zeros(1, dtype=np.intp)
        added, finite = add_to_rows(
            stored, rows, block, 0.5, saved, done, block_rows, n_threads_of_team
        )
        assert done[0] == 1 and finite
        assert_array_equal(saved, initial[rows])
        expected = initial.copy()
        expected[rows] += dtype(0.5) * block
        assert_array_equal(stored, expected)
        results.append(added)
    for added in results[1:]:
        assert_array_equal(added, results[0])
    np.testing.assert_allclose(results[0], 0.5 * block.sum(axis=0), rtol=1e-5)


def test_adding_a_non_finite_value_is_reported_from_any_block():
    stored = np.ones((10, 3))
    block = np.ones((4, 3))
    block[3, 1] = np.inf
    rows = np.array([1, 4, 6, 9], dtype=np.intp)
    for n_threads_of_team in (1, 2):
        _, finite = add_to_rows(
            stored.copy(),
            rows,
            block,
            1.0,
            np.empty_like(block),
            np.zeros(1, dtype=np.intp),
            1,
            n_threads_of_team,
        )
        assert not finite


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reading_scaled_rows_does_not_depend_on_the_team(dtype):
    rng = np.random.default_rng(1)
    stored = rng.random((50, 7)).astype(dtype)
    prior = np.full((50, 1), 0.1, dtype=dtype)
    rows = rng.permutation(50)[:31].astype(np.intp)
    factors = rng.random(7)
    outputs = []
    for n_threads_of_team in (1, 2, 3):
        out = np.empty((31, 7), dtype=dtype)
        scaled_rows_of(stored, rows, prior, 0.7, out, factors, n_threads_of_team)
        outputs.append(out)
    expected = ((0.1 + dtype(0.7) * (stored[rows] - dtype(0.1))) * factors).astype(
        dtype
    )
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-6)
    for out in outputs[1:]:
        assert_array_equal(out, outputs[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_rows, n_team", [(40, 1), (3, 1), (3, 2), (7, 3)])
def test_replace_rows_matches_two_passes_of_numpy(dtype, block_rows, n_team):
    rng = np.random.default_rng(0)
    total = rng.random((40, 6)).astype(dtype)
    # Overlapping lists: rows only in the old one, only in the new one, both.
    old_rows = np.sort(rng.choice(40, size=15, replace=False)).astype(np.intp)
    new_rows = np.sort(rng.choice(40, size=12, replace=False)).astype(np.intp)
    assert 0 < np.intersect1d(old_rows, new_rows).size < 12
    old_block = rng.random((15, 6)).astype(dtype)
    new_block = rng.random((12, 6)).astype(dtype)

    expected = total.copy()
    expected[old_rows] -= old_block
    expected[new_rows] += new_block
    replaced = total.copy()
    replace_rows(replaced, old_rows, old_block, new_rows, new_block, block_rows, n_team)
    np.testing.assert_array_equal(replaced, expected)

    nothing = np.empty(0, dtype=np.intp)
    replace_rows(
        replaced, nothing, old_block[:0], new_rows, new_block, block_rows, n_team
    )
    expected[new_rows] += new_block
    np.testing.assert_array_equal(replaced, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("prior_kind", ["scalar", "row", "entry"])
@pytest.mark.parametrize("all_rows", [False, True], ids=["some-rows", "all-rows"])
@pytest.mark.parametrize("n_observed", [4, 3], ids=["all-columns", "first-columns"])
def test_moments_and_step_match_numpy_on_their_rows(
    dtype, prior_kind, all_rows, n_observed
):
    rng = np.random.default_rng(1)
    natural = rng.random((30, 4)).astype(dtype)
    total = rng.random((30, 4)).astype(dtype)
    if all_rows:
        rows = np.arange(30)
    else:
        rows = np.sort(rng.choice(30, size=12, replace=False))
        unlisted = np.setdiff1d(np.arange(30), rows)
        total[unlisted] = 0.0
    window_sum = SparseStatistic(rows, np.ascontiguousarray(total[rows]))
    scale, rho = 7.5, 0.3
    # Blocks of 7 of the 30 rows, on one thread and on a team of two.
    # The forms the passes read: a broadcast column, a column, a full array.
    prior = {
        "scalar": np.broadcast_to(np.asarray([[0.01]], dtype=dtype), (30, 1)),
        "row": rng.random((30, 1)).astype(dtype),
        "entry": rng.random((30, 4)).astype(dtype),
    }[prior_kind]
    expected_target = prior + scale * total
    tolerance = np.finfo(dtype).eps * 4

    # The filter's moments, on the first n_observed columns: each row's g
    # is first brought up to date from its stored value, carried g -
    # pulled (lambda - stored eta) with carried = D_t / D_r and pulled =
    # D_t (F_t - F_r) / C_t, then d = lambda^ - lambda is folded in.
    observed = slice(0, n_observed)
    mean = rng.random((30, n_observed)).astype(dtype)
    stored_prior = (prior + rng.random(prior.shape)).astype(dtype)
    row_decay, row_offset = rng.uniform(0.5, 1.0, 30), rng.random(30)
    clock = (0.4, 1.5, 0.8)
    carried = clock[0] / row_decay
    pulled = clock[0] * (clock[1] - row_offset) / clock[2]
    decay, window = 0.75, 4.0
    excess = (natural - prior).astype(np.float64)[:, observed]
    listed_target = (expected_target - prior).astype(np.float64)[:, observed]
    up_to_date = (
        carried[:, np.newaxis] * mean
        - pulled[:, np.newaxis] * (natural - stored_prior)[:, observed]
    )
    expected_mean = decay * up_to_date + (listed_target - excess) / window
    # lambda as it is, and kept as eta + c (A - eta) with c = 0.25.
    scaled = (prior + (natural - prior) / 0.25).astype(dtype)
    cases = [
        (every_row, visited, current, current_scale, n_team)
        for every_row, visited in [(True, np.arange(30)), (False, rows)]
        for current, current_scale in [(natural, 1.0), (scaled, 0.25)]
        for n_team in (1, 2)
    ]
    sums_of_teams = {}
    for every_row, visited, current, current_scale, n_team in cases:
        updated_mean = mean.copy()
        sums = observe_difference(
            window_sum.rows,
            window_sum.block,
            scale,
            prior,
            current,
            current_scale,
            mean,
            stored_prior,
            updated_mean,
            row_decay,
            row_offset,
            *clock,
            decay,
            window,
            every_row,
            7,
            n_team,
        )
        sums_of_teams.setdefault((every_row, current_scale), []).append(sums)
        # g' is a difference of terms as large as the largest g'.
        np.testing.assert_allclose(
            updated_mean[visited],
            expected_mean[visited],
            rtol=tolerance * 16,
            atol=tolerance * 16 * np.abs(expected_mean).max(),
        )
        unvisited = np.setdiff1d(np.arange(30), visited)
        np.testing.assert_array_equal(updated_mean[unvisited], mean[unvisited])
        g, e, t = (
            array[visited].astype(np.float64)
            for array in (up_to_date, excess, listed_target)
        )
        pairs = [(e, e), (g, e), (g, g), (g, t), (e, t), (t, t)]
        np.testing.assert_allclose(
            sums, [np.sum(a * b) for a, b in pairs], rtol=tolerance * 64
        )
    for one_thread, two_threads in sums_of_teams.values():
        assert_array_equal(two_threads, one_thread)

    before = natural.copy()
    expected = (1.0 - rho) * natural + rho * expected_target
    results = []
    for n_team in (1, 2):
        updated = np.zeros_like(natural)
        column_sums = step_toward_target(
            natural,
            updated,
            window_sum.rows,
            window_sum.block,
            scale,
            prior,
            rho,
            7,
            n_team,
        )
        np.testing.assert_allclose(updated, expected, rtol=tolerance)
        np.testing.assert_allclose(
            column_sums, expected.sum(axis=0), rtol=tolerance * 16
        )
        results.append((updated, column_sums))
    assert_array_equal(results[1][0], results[0][0])
    assert_array_equal(results[1][1], results[0][1])
    # The update is written to its own array: lambda is only read.
    np.testing.assert_array_equal(natural, before)


def probe_thread_count(n_jobs):
    """The threads of ``n_jobs`` and joblib's thread budget, in a worker."""
    return thread_count(n_jobs), os.environ.get("OMP_NUM_THREADS")


def test_all_cores_in_a_joblib_worker_is_the_workers_share():
    for count, budget in Parallel(n_jobs=2)(
        delayed(probe_thread_count)(-1) for _ in range(2)
    ):
        assert count == int(budget)
    assert thread_count(-1) == effective_n_jobs(-1)
    assert thread_count(None) == 1 and thread_count(3) == 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the platform cannot fork")
def test_a_process_forked_after_a_team_fits_on_its_calling_thread(planted_corpus):
    """GNU's OpenMP runtime hangs in a child forked after its parent ran a
    team; the child runs the compiled passes alone, with the same result."""
    X = planted_corpus[0]

    def fitted_topics():
        model = SmoothedLDA(n_components=4, batch_size=50, n_jobs=2, random_state=0)
        return model.fit(X).components_

    expected = fitted_topics()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(write_end, fitted_topics().tobytes())
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + 120
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked process hung")
        time.sleep(0.05)
    with os.fdopen(read_end, "rb") as pipe:
        received = np.frombuffer(pipe.read(), dtype=expected.dtype)
    assert_array_equal(received.reshape(expected.shape), expected)
