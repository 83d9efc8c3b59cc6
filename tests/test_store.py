"""lambda's stores conform to one protocol: the same updates give the same
lambda in this process and on blocks of rows, and both undo them.

The blocks' store (:class:`RowShards`) runs here over blocks held in this
process, so that these tests need no Dask: each block answers a call at
once, as a Dask actor answers it later.
"""

import copy
import types

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_svi._dask._blocks import ModelShard, RowShards
from sklearn_svi._dask._handles import HeldRows, HeldStatistic
from sklearn_svi._mechanisms import (
    FilteredStepSize,
    GaussianFilter,
    NoisyOptimum,
    RowState,
    SmoothingWindow,
    SparseStatistic,
)
from sklearn_svi._store import (
    SMALLEST_SCALE,
    LocalStore,
    NaturalStore,
    compiled_prior,
    raise_to_prior,
)
from sklearn_svi._transaction import UndoLog, transaction

N_ROWS, N_COMPONENTS = 40, 3


class Answered:
    """A call's result, as a Dask actor's future gives it."""

    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value


class InProcessBlock:
    """A :class:`ModelShard` called as a Dask actor is: each call returns a
    future of its result."""

    def __init__(self, shard):
        self.shard = shard

    def __getattr__(self, name):
        method = getattr(self.shard, name)
        return lambda *arguments: Answered(method(*arguments))


class Pair:
    """The same lambda, mechanisms and updates in a local store and in a
    store of blocks of rows, whose blocks hold the mechanisms' rows too
    (each mechanism's ``rows`` a :class:`HeldRows` there)."""

    def __init__(self, natural, prior, window_length, bounds, mechanisms=()):
        self.prior = prior
        self.local = LocalStore(natural.copy())
        window = SmoothingWindow(window_length, natural.shape, natural.dtype)
        self.local_mechanisms = [window, *mechanisms]
        self.held_mechanisms = copy.deepcopy(self.local_mechanisms)
        blocks = []
        for start, stop in zip(bounds[:-1], bounds[1:]):
            shard = ModelShard(stop - start, N_COMPONENTS, natural.dtype, start)
            shard.write_columns(0, natural[start:stop])
            # Copies, as the blocks that a worker receives are.
            states = [
                copy.deepcopy(mechanism.rows.rows_between(start, stop))
                for mechanism in self.local_mechanisms
            ]
            shard.hold(np.ascontiguousarray(prior[start:stop]), states)
            blocks.append(InProcessBlock(shard))
        self.blocks = RowShards(blocks, np.asarray(bounds), N_COMPONENTS, natural.dtype)
        for slot, mechanism in enumerate(self.held_mechanisms):
            mechanism.rows = HeldRows(self.blocks, slot, type(mechanism.rows))
        self.draw = 0
        self.local_model = types.SimpleNamespace()
        self.blocks_model = types.SimpleNamespace()

    @property
    def window(self):
        return self.local_mechanisms[0]

    def update(self, statistic, total_scale, change):
        """On each store, in one transaction with its mechanisms: push
        ``statistic``, then ``change(store, target, rho)`` with lambda^ of
        the window's total and the filter's step size (None without a
        filter), or ``change(store, target, rho, mechanisms)``; the
        results, local first. What one
        store raises, the other must raise too, and it is raised after both
        ran."""
        self.draw += 1

        def run(model, mechanisms, store, pushed):
            with transaction(model, [*mechanisms, store]):
                window, *others = mechanisms
                window.push(pushed())
                target = NoisyOptimum.of_window(window, total_scale, self.prior)
                rho = None
                if others and isinstance(others[0], FilteredStepSize):
                    rho = others[0](self.draw, target, store.stored, store.scale)
                if others and not isinstance(others[0], FilteredStepSize):
                    return rho, change(store, target, rho, others)
                return rho, change(store, target, rho)

        def on_local():
            return run(
                self.local_model, self.local_mechanisms, self.local, lambda: statistic
            )

        def received():
            # The parts of the minibatch hand the blocks their pieces.
            self.blocks.receive(self.blocks.change, self.draw, 0, statistic)
            return HeldStatistic(self.draw, statistic.negatively_weighted)

        def on_blocks():
            return run(self.blocks_model, self.held_mechanisms, self.blocks, received)

        results, raised = [], []
        for call in (on_local, on_blocks):
            try:
                results.append(call())
            except BaseException as error:
                raised.append(error)
        if raised:
            assert len(raised) == 2 and type(raised[0]) is type(raised[1])
            raise raised[0]
        (local_rho, local_result), (held_rho, held_result) = results
        if local_rho is not None:
            assert_allclose(held_rho, local_rho, rtol=1e-12)
        return local_result, held_result

    def start_filter(self, statistics, total_scale):
        """The filter's start from the noisy optima of ``statistics``, on
        each side; on the blocks, statistics of negative draws."""
        local_filter, held_filter = self.local_mechanisms[1], self.held_mechanisms[1]
        with transaction(self.local_model, [local_filter, self.local]):
            local_filter.start(
                [NoisyOptimum(each, total_scale, self.prior) for each in statistics],
                self.local.stored,
            )
        with transaction(self.blocks_model, [held_filter, self.blocks]):
            targets = []
            for draw, each in enumerate(statistics, start=1):
                self.blocks.receive(self.blocks.change, -draw, 0, each)
                held = HeldStatistic(-draw)
                targets.append(NoisyOptimum(held, total_scale, self.prior))
            held_filter.start(targets, self.blocks.stored)

    def assert_equal(self, rtol=1e-12):
        assert_allclose(self.blocks.array(), self.local.array(), rtol=rtol)
        assert_allclose(self.blocks.totals(), self.local.totals(), rtol=rtol)
        assert_allclose(self.blocks.scale, self.local.scale, rtol=rtol)
        for slot, mechanism in enumerate(self.local_mechanisms):
            held = self.blocks.held_rows(slot, type(mechanism.rows))
            assert_same_state(held, mechanism.rows, rtol)


def assert_same_state(held, local, rtol):
    """The same values in each array of two row states, as saved."""
    held_state, local_state = held.__getstate__(), local.__getstate__()
    for name, value in local_state.items():
        if isinstance(value, np.ndarray):
            assert_allclose(held_state[name], value, rtol=rtol, err_msg=name)
        elif isinstance(value, SparseStatistic):
            assert_array_equal(held_state[name].rows, value.rows)
            assert_allclose(held_state[name].block, value.block, rtol=rtol)


def statistic(rng, rows, negative=False):
    block = rng.gamma(2.0, 1.0, size=(len(rows), N_COMPONENTS))
    if negative:
        block -= 3.0
    return SparseStatistic(np.sort(rows).astype(np.intp), block, None, negative)


def pair_of_window(length, mechanisms=()):
    rng = np.random.RandomState(0)
    natural = rng.gamma(5.0, 1.0, size=(N_ROWS, N_COMPONENTS)) + 0.1
    prior = np.broadcast_to(np.array([[0.1]]), (N_ROWS, 1))
    return Pair(natural, prior, length, [0, 13, 27, N_ROWS], mechanisms)


@pytest.fixture(params=[1, 3], ids=["L=1", "L=3"])
def pair(request):
    return pair_of_window(request.param)


def test_a_scalar_prior_is_read_as_a_read_only_column_of_its_value():
    for prior, shape, dtype in [(0.01, (7, 3), np.float64), (0.5, (4, 2), np.float32)]:
        compiled = compiled_prior(prior, shape, dtype)
        assert compiled.shape == (shape[0], 1) and compiled.dtype == dtype
        assert_array_equal(compiled, np.full((shape[0], 1), prior, dtype=dtype))
        assert not compiled.flags.writeable
        assert compiled_prior(np.asarray(prior), shape, dtype).shape == (shape[0], 1)
    # The same shape and type with another value.
    assert_array_equal(compiled_prior(0.02, (7, 3), np.float64), 0.02)


def test_both_stores_follow_the_protocol(pair):
    assert isinstance(pair.local, NaturalStore)
    assert isinstance(pair.blocks, NaturalStore)


def scaled_step(rho, prior):
    """The update of plain SVI that writes only the statistic's rows."""
    return lambda store, target, _: store.step_rows(
        target.total, target.scale, rho, prior
    )


def step_of_every_row(rho):
    return lambda store, target, _: store.step_all(target, rho)


def test_the_same_updates_give_the_same_lambda(pair):
    rng = np.random.RandomState(1)
    for step in range(12):
        rho = 0.3 / (step + 1)
        scaled = pair.window.length == 1 and step % 4 != 3
        change = scaled_step(rho, pair.prior) if scaled else step_of_every_row(rho)
        sampled = statistic(rng, rng.choice(N_ROWS, 9, replace=False))
        totals = pair.update(sampled, 50.0, change)
        # Plain SVI writes only the statistic's rows and shrinks c.
        assert (pair.local.scale < 1.0) == scaled
        assert_allclose(totals[1], totals[0], rtol=1e-12)
        assert_allclose(totals[0], pair.local.array().sum(axis=0), rtol=1e-12)
        pair.assert_equal()
    rows = np.array([2, 13, 30])
    block, block_rows = pair.blocks.rows_block(rows)
    assert_array_equal(block_rows, rows)
    assert_allclose(block, pair.local.array()[rows], rtol=1e-12)


def test_a_scale_near_underflow_is_written_out_on_both(monkeypatch):
    # A window of one statistic: plain SVI, which keeps lambda scaled.
    pair = pair_of_window(1)
    monkeypatch.setattr("sklearn_svi._store.SMALLEST_SCALE", 0.2)
    rng = np.random.RandomState(2)
    scales = []
    for _ in range(6):
        sampled = statistic(rng, rng.choice(N_ROWS, 5, replace=False))
        pair.update(sampled, 10.0, scaled_step(0.5, pair.prior))
        scales.append(pair.local.scale)
        pair.assert_equal()
    assert min(scales) >= 0.2 > SMALLEST_SCALE
    assert scales.count(0.5) > 1  # written out and started again


def test_the_projection_runs_where_the_rows_are(pair):
    rng = np.random.RandomState(3)

    def step_and_project(store, target, _):
        store.step_all(target, 0.9)
        below = (store.array() < 0.1).any()
        return below, store.project(raise_to_prior, pair.prior)

    sampled = statistic(rng, np.arange(0, N_ROWS, 2), negative=True)
    (below, projected), (_, held_projected) = pair.update(
        sampled, 40.0, step_and_project
    )
    assert below
    assert projected == held_projected > 0
    assert (pair.local.array() >= 0.1).all()
    pair.assert_equal()


@pytest.mark.parametrize(
    "update, window_length",
    [
        # A window of several statistics moves every row: no scaled step.
        ("step_rows", 1),
        *(
            (update, length)
            for update in ("step_all", "project", "settle")
            for length in (1, 3)
        ),
    ],
)
def test_an_update_that_fails_is_undone_on_both(update, window_length):
    pair = pair_of_window(window_length)
    rng = np.random.RandomState(4)
    first = pair.window.length == 1
    # c < 1 first, where it can be, so that settling writes lambda out.
    change = scaled_step(0.2, pair.prior) if first else step_of_every_row(0.2)
    pair.update(statistic(rng, rng.choice(N_ROWS, 9, replace=False)), 30.0, change)
    before = pair.local.array().copy(), pair.local.scale

    def failing(store, target, _):
        if update == "step_rows":
            store.step_rows(target.total, target.scale, 0.4, pair.prior)
        elif update == "step_all":
            store.step_all(target, 0.4)
        elif update == "project":
            store.step_all(target, 0.9)
            store.project(raise_to_prior, pair.prior)
        else:
            store.settle()
        raise KeyboardInterrupt

    sampled = statistic(rng, rng.choice(N_ROWS, 9, replace=False), negative=True)
    with pytest.raises(KeyboardInterrupt):
        pair.update(sampled, 30.0, failing)
    assert_array_equal(pair.local.array(), before[0])
    assert pair.local.scale == before[1]
    pair.assert_equal()
    # Both go on as if nothing had happened.
    change = scaled_step(0.3, pair.prior) if first else step_of_every_row(0.3)
    pair.update(statistic(rng, rng.choice(N_ROWS, 9, replace=False)), 30.0, change)
    pair.assert_equal()


def test_an_update_beyond_the_type_is_refused_and_undone_on_both(pair):
    rng = np.random.RandomState(5)
    pair.update(
        statistic(rng, rng.choice(N_ROWS, 9, replace=False)),
        20.0,
        step_of_every_row(0.5),
    )
    before = pair.local.array().copy()
    with pytest.raises(FloatingPointError, match="non-finite in float64"):
        pair.update(
            statistic(rng, rng.choice(N_ROWS, 9, replace=False)),
            1e308,
            step_of_every_row(0.5),
        )
    assert_array_equal(pair.local.array(), before)
    pair.assert_equal()


def test_a_saved_store_is_the_local_store_of_the_same_values(pair):
    rng = np.random.RandomState(6)
    pair.update(
        statistic(rng, rng.choice(N_ROWS, 9, replace=False)),
        20.0,
        step_of_every_row(0.5),
    )
    gathered = pair.blocks.gathered()
    assert isinstance(gathered, LocalStore)
    assert_allclose(gathered.array(), pair.local.array(), rtol=1e-12)
    assert gathered.scale == pair.local.scale
    with pytest.raises(ValueError, match="read-only"):
        pair.local.array()[0, 0] = 1.0


@pytest.mark.parametrize("length", [1, 3])
def test_a_filter_gives_the_same_steps_with_its_rows_on_the_blocks(length):
    """The filter's averages and clocks of each row on the blocks: the same
    step sizes, visits of the listed rows alone (L = 1, lambda scaled) and
    of every row, and the same state of the rows, also after an update
    that fails."""
    filtered = FilteredStepSize(
        GaussianFilter(1e-3), (N_ROWS, N_COMPONENTS), np.float64, 0
    )
    pair = pair_of_window(length, [filtered])
    rng = np.random.RandomState(7)

    def filtered_step(store, target, rho):
        if length == 1 and rho < 1.0:
            return store.step_rows(target.total, target.scale, rho, pair.prior)
        return store.step_all(target, rho)

    def failing(store, target, rho):
        filtered_step(store, target, rho)
        raise KeyboardInterrupt

    pair.start_filter(
        [statistic(rng, rng.choice(N_ROWS, 7, replace=False)) for _ in range(3)], 30.0
    )
    pair.assert_equal()
    for step in range(10):
        sampled = statistic(rng, rng.choice(N_ROWS, 7, replace=False))
        if step == 6:
            with pytest.raises(KeyboardInterrupt):
                pair.update(sampled, 30.0, failing)
        else:
            pair.update(sampled, 30.0, filtered_step)
        pair.assert_equal()
    filter_rows = pair.local_mechanisms[1].rows
    # With L = 1 the later updates visit the listed rows alone, whose clocks
    # then differ from the others'.
    assert (len(np.unique(filter_rows.row_decay)) > 1) == (length == 1)


class VisitCounts:
    """A row state that no module of the package knows: how often each row
    was listed by a window's total. It declares its calls and its cuts, and
    nothing else, to have its rows held by blocks."""

    def __init__(self, n_rows):
        self.counts = np.zeros(n_rows)
        self._undo = UndoLog()

    def visit(self, total):
        """Count the rows of ``total``; the number of rows counted."""
        self._undo.record_rows(self.counts, total.rows)
        self.counts[total.rows] += 1.0
        return (float(len(total.rows)),)

    row_calls = (visit,)
    row_values = ()

    def rows_between(self, start, stop):
        part = VisitCounts(0)
        part.counts = self.counts[start:stop].copy()
        return part

    @classmethod
    def stacked(cls, parts, starts):
        whole = cls(0)
        whole.counts = np.concatenate([part.counts for part in parts])
        return whole

    def begin(self):
        self._undo.begin()

    def commit(self):
        self._undo.commit()

    def rollback(self):
        self._undo.rollback()

    def __getstate__(self):
        return {"counts": self.counts}

    def __setstate__(self, state):
        self.counts = state["counts"]
        self._undo = UndoLog()


class Visits:
    """A mechanism whose state of each row is :class:`VisitCounts`."""

    def __init__(self, n_rows):
        self.rows = VisitCounts(n_rows)

    def begin(self):
        self.rows.begin()

    def commit(self):
        self.rows.commit()

    def rollback(self):
        self.rows.rollback()


def test_a_new_row_state_runs_on_the_blocks_by_its_declaration():
    """A mechanism of a test's own, with a row state, runs where lambda's
    rows are with no change of the blocks: the same sums and the same
    counts, undone with a failed update on both."""
    assert isinstance(VisitCounts(1), RowState)
    pair = pair_of_window(1, [Visits(N_ROWS)])
    rng = np.random.RandomState(8)

    def step_and_count(store, target, rho, mechanisms):
        return mechanisms[0].rows.visit(target.total), store.step_all(target, 0.5)

    def failing(store, target, rho, mechanisms):
        step_and_count(store, target, rho, mechanisms)
        raise KeyboardInterrupt

    for step in range(5):
        sampled = statistic(rng, rng.choice(N_ROWS, 9, replace=False))
        if step == 3:
            with pytest.raises(KeyboardInterrupt):
                pair.update(sampled, 20.0, failing)
            continue
        (local_sums, _), (held_sums, _) = pair.update(sampled, 20.0, step_and_count)
        assert local_sums == (9.0,)
        assert_array_equal(held_sums, local_sums)
        pair.assert_equal()
    assert pair.local_mechanisms[1].rows.counts.sum() == 4 * 9
