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
from sklearn_svi._dask._held import HeldStatistic
from sklearn_svi._mechanisms import NoisyOptimum, SmoothingWindow, SparseStatistic
from sklearn_svi._store import (
    SMALLEST_SCALE,
    LocalStore,
    NaturalStore,
    raise_to_prior,
)
from sklearn_svi._transaction import transaction

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
    """The same lambda, window and updates in a local store and in a store
    of blocks of rows."""

    def __init__(self, natural, prior, window_length, bounds):
        self.prior = prior
        self.local = LocalStore(natural.copy())
        self.window = SmoothingWindow(window_length, natural.shape, natural.dtype)
        blocks = []
        for start, stop in zip(bounds[:-1], bounds[1:]):
            shard = ModelShard(stop - start, N_COMPONENTS, natural.dtype, start)
            shard.write_columns(0, natural[start:stop])
            # A copy, as the block that a worker receives is.
            window = copy.deepcopy(self.window.rows_between(start, stop, N_COMPONENTS))
            shard.hold(np.ascontiguousarray(prior[start:stop]), window, None)
            blocks.append(InProcessBlock(shard))
        self.blocks = RowShards(blocks, np.asarray(bounds), N_COMPONENTS, natural.dtype)
        self.draw = 0
        self.local_model = types.SimpleNamespace()
        self.blocks_model = types.SimpleNamespace()

    def update(self, statistic, total_scale, change):
        """On each store, in one transaction with its window: push
        ``statistic``, then ``change(store, target)`` with lambda^ of the
        window's total; the results, local first. What one store raises,
        the other must raise too, and it is raised after both ran."""
        self.draw += 1
        held = HeldStatistic(
            self.draw, lists_every_row=self.window.length > 1, windowed=True
        )

        def on_local():
            with transaction(self.local_model, [self.window, self.local]):
                self.window.push(statistic)
                target = NoisyOptimum(self.window.sum, total_scale, self.prior)
                return change(self.local, target)

        def on_blocks():
            with transaction(self.blocks_model, [self.blocks]):
                self.blocks.receive(self.blocks.change, self.draw, 0, statistic)
                self.blocks.push(self.draw, statistic.negatively_weighted)
                return change(self.blocks, NoisyOptimum(held, total_scale, self.prior))

        results, raised = [], []
        for run in (on_local, on_blocks):
            try:
                results.append(run())
            except BaseException as error:
                raised.append(error)
        if raised:
            assert len(raised) == 2 and type(raised[0]) is type(raised[1])
            raise raised[0]
        return results

    def assert_equal(self, rtol=1e-12):
        assert_allclose(self.blocks.array(), self.local.array(), rtol=rtol)
        assert_allclose(self.blocks.totals(), self.local.totals(), rtol=rtol)
        assert self.blocks.scale == self.local.scale


def statistic(rng, rows, negative=False):
    block = rng.gamma(2.0, 1.0, size=(len(rows), N_COMPONENTS))
    if negative:
        block -= 3.0
    return SparseStatistic(np.sort(rows).astype(np.intp), block, None, negative)


def pair_of_window(length):
    rng = np.random.RandomState(0)
    natural = rng.gamma(5.0, 1.0, size=(N_ROWS, N_COMPONENTS)) + 0.1
    prior = np.broadcast_to(np.array([[0.1]]), (N_ROWS, 1))
    return Pair(natural, prior, length, [0, 13, 27, N_ROWS])


@pytest.fixture(params=[1, 3], ids=["L=1", "L=3"])
def pair(request):
    return pair_of_window(request.param)


def test_both_stores_follow_the_protocol(pair):
    assert isinstance(pair.local, NaturalStore)
    assert isinstance(pair.blocks, NaturalStore)


def scaled_step(rho, prior):
    """The update of plain SVI that writes only the statistic's rows."""
    return lambda store, target: store.step_rows(target.total, target.scale, rho, prior)


def step_of_every_row(rho):
    return lambda store, target: store.step_all(target, rho)


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

    def step_and_project(store, target):
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

    def failing(store, target):
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
