"""Variational filtering: the filters' closed forms and FilteredLDA."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_svi import FilteredLDA, SmoothedLDA, _update_state, make_lda_corpus
from sklearn_svi._mechanisms import (
    AdaptiveGain,
    ConstantStepSize,
    FilteredStepSize,
    GaussianFilter,
    Mechanisms,
    NoisyOptimum,
    RobbinsMonroStepSize,
    SparseStatistic,
    StepSize,
    StudentTFilter,
)
from sklearn_svi._mechanisms._step_sizes import _Schedule

PARAMS = dict(n_components=4, batch_size=50, total_samples=600, random_state=0)


def as_optimum(target):
    """The dense array ``target`` as the noisy optimum the step sizes read."""
    rows = np.arange(len(target))
    prior = np.zeros((len(target), 1), dtype=target.dtype)
    return NoisyOptimum(SparseStatistic(rows, target), 1.0, prior)


def gains(filter, drift, noise, squared_distances):
    return np.array([filter.gain(drift, noise, d2) for d2 in squared_distances])


def test_gaussian_filter_without_drift_is_robbins_monro_with_kappa_one():
    # Q = 0, R fixed: 1 / P_{t+1} = 1 / P_t + 1.
    observed = gains(GaussianFilter(1e3), 0.0, 250.0, np.zeros(50))
    assert_allclose(1 / observed[1:], 1 / observed[:-1] + 1, rtol=1e-12)
    assert observed[0] == pytest.approx(1e3 / (1e3 + 250.0))


@pytest.mark.parametrize("drift, noise", [(1.0, 1.0), (0.01, 5.0), (3.0, 0.2)])
def test_gaussian_filter_reaches_the_limit_gain(drift, noise):
    ratio = noise / drift
    root = np.sqrt(1 + 4 * ratio)
    limit = (root + 1) / (root + 1 + 2 * ratio)
    observed = gains(GaussianFilter(1e3), drift, noise, np.zeros(400))
    assert observed[0] != pytest.approx(limit)
    assert_allclose(observed[-1], limit, rtol=1e-10)


def test_student_t_filter_tends_to_the_gaussian_filter():
    rng = np.random.RandomState(0)
    n_coordinates = 100
    drifts = rng.uniform(0.0, 2.0, 30)
    noises = rng.uniform(1.0, 50.0, 30)
    distances = n_coordinates * rng.uniform(1.0, 60.0, 30)

    def run(filter):
        return np.array(
            [filter.gain(*arguments) for arguments in zip(drifts, noises, distances)]
        )

    gaussian = run(GaussianFilter(10.0))
    gaps = [
        np.max(np.abs(run(StudentTFilter(10.0, dof, n_coordinates)) - gaussian))
        for dof in (1e2, 1e4, 1e6, 1e8)
    ]
    assert gaps[0] > 1e-3
    assert np.all(np.diff(gaps) < 0)
    assert gaps[-1] < 1e-6
    assert_allclose(run(StudentTFilter(10.0, 1e300, n_coordinates)), gaussian)


def simulated_gains(
    filter,
    outlier_at=None,
    n_updates=60,
    n_coordinates=200,
    corrected=True,
    floor=None,
):
    """Step sizes of a filter tracking a fixed optimum from noisy targets."""
    rng = np.random.RandomState(0)
    optimum = np.zeros((n_coordinates, 1))
    current = rng.normal(0.0, 3.0, optimum.shape)
    step_size = FilteredStepSize(
        filter,
        optimum.shape,
        optimum.dtype,
        5,
        corrected=corrected,
        floor=floor,
    )
    step_size.start(
        [as_optimum(optimum + rng.normal(0.0, 1.0, optimum.shape)) for _ in range(5)],
        current,
    )
    observed = []
    for t in range(1, n_updates + 1):
        noise = rng.normal(0.0, 1.0, optimum.shape)
        if t == outlier_at:
            noise *= 10.0
        target = optimum + noise
        rho = step_size(t, as_optimum(target), current)
        current = (1.0 - rho) * current + rho * target
        observed.append(rho)
    return np.array(observed)


@pytest.mark.parametrize("corrected", [True, False])
def test_an_outlier_raises_the_next_gain_of_the_t_filter_only(corrected):
    n_coordinates = 200
    steady = simulated_gains(
        StudentTFilter(1e3, 3.0, n_coordinates), corrected=corrected
    )
    shaken = simulated_gains(
        StudentTFilter(1e3, 3.0, n_coordinates), outlier_at=40, corrected=corrected
    )
    assert_array_equal(steady[:39], shaken[:39])
    # Update 41 follows the outlier of update 40 (index 39).
    assert shaken[40] > 2 * steady[40]
    # The Gaussian filter takes the outlier as ordinary noise.
    steady = simulated_gains(GaussianFilter(1e3), corrected=corrected)
    shaken = simulated_gains(GaussianFilter(1e3), outlier_at=40, corrected=corrected)
    assert shaken[40] < 1.5 * steady[40]


@pytest.mark.parametrize("filter", [GaussianFilter(0.0), AdaptiveGain()])
def test_corrected_gain_keeps_falling_at_a_fixed_optimum(filter):
    # With a fixed optimum the right gain falls like 1/t.
    gains = simulated_gains(filter, n_updates=200)
    assert gains[-1] < 2 / 200


def test_floor_bounds_the_steps_from_below():
    schedule = (10.0 + np.arange(1, 201)) ** -0.7
    free = simulated_gains(AdaptiveGain(), n_updates=200)
    bounded = simulated_gains(
        AdaptiveGain(), n_updates=200, floor=RobbinsMonroStepSize(10.0, 0.7)
    )
    # At a fixed optimum the filter's own gain falls like 1/t, below the
    # schedule; the floor holds it there.
    assert np.any(free < schedule)
    assert np.all(bounded >= schedule)
    assert np.any(bounded == schedule)
    # Far from the optimum the filter steps further than the schedule.
    assert bounded[0] == free[0] > 0.8 > schedule[0]


def test_filtered_lda_steps_at_least_as_far_as_the_schedule(planted_corpus):
    X = planted_corpus[0]
    schedule = (10.0 + np.arange(1, 13)) ** -0.7
    default = FilteredLDA(**PARAMS).partial_fit(X)
    # Unbounded, the adaptive rate falls below the schedule within these
    # few updates.
    published = FilteredLDA(
        learning_rate="adaptive", min_step_size=None, **PARAMS
    ).partial_fit(X)
    constant = FilteredLDA(min_step_size=0.3, **PARAMS).partial_fit(X)
    default_steps = np.array(default.step_size_history_["step_size"])
    published_steps = np.array(published.step_size_history_["step_size"])
    assert np.all(default_steps >= schedule)
    assert np.any(published_steps < schedule)
    assert np.all(np.array(constant.step_size_history_["step_size"]) >= 0.3)


def test_published_estimates_hold_the_gaussian_filter_near_one_third():
    # The published estimates take the noise of the average g, about R s
    # with s near P/2, for drift, and the Gaussian filter's gain settles
    # where P = (P R + P R / 2) / (P R + P R / 2 + R), at P = 1/3.
    gains = simulated_gains(GaussianFilter(0.0), n_updates=200, corrected=False)
    assert np.all(gains[100:] > 0.2)


def test_corrected_estimates_of_drift_and_noise_are_unbiased():
    # Differences d_t with mean m and variance R per coordinate, averaged
    # over a window tau that moves as the filter's does.
    rng = np.random.RandomState(3)
    n_coordinates, noise, n_runs = 50, 4.0, 2000
    mean = np.full((n_coordinates, 1), 0.5)
    estimates = {True: [], False: []}
    for corrected in (True, False):
        for _ in range(n_runs):
            step_size = FilteredStepSize(
                AdaptiveGain(), mean.shape, np.float64, 3, corrected=corrected
            )
            current = np.zeros_like(mean)
            draws = mean + rng.normal(0.0, np.sqrt(noise), (6, *mean.shape))
            step_size.start(map(as_optimum, draws[:3]), current)
            for t, target in enumerate(draws[3:], start=1):
                step_size.window = 1.0 + t  # a growing window, as rho falls
                step_size._observe(as_optimum(target), current)
            estimates[corrected].append([step_size.drift, step_size.noise])
    drift, noise_estimate = np.mean(estimates[True], axis=0)
    spread = np.std(estimates[True], axis=0) / np.sqrt(n_runs)
    assert abs(drift - 0.25) < 5 * spread[0]
    assert abs(noise_estimate - noise) < 5 * spread[1]
    published_drift, published_noise = np.mean(estimates[False], axis=0)
    assert published_drift > 0.25 + 20 * spread[0]
    assert published_noise < noise - 20 * spread[1]


def test_adaptive_gain_is_the_ratio_of_the_averages():
    # Ranganath et al.: rho = ||g||^2 / h with the weighted averages written
    # out here, and tau <- (1 - rho) tau + 1 (the published estimates).
    rng = np.random.RandomState(1)
    shape = (30, 2)
    current = rng.normal(size=shape)
    starts = [current + rng.normal(1.0, 2.0, shape) for _ in range(4)]
    step_size = FilteredStepSize(AdaptiveGain(), shape, np.float64, 4, corrected=False)
    step_size.start(map(as_optimum, starts), current)
    mean = np.mean([start - current for start in starts], axis=0)
    mean_norm = np.mean([np.sum((start - current) ** 2) for start in starts])
    window = 4.0
    assert_allclose(step_size.mean_difference, mean)
    assert step_size.mean_squared_norm == pytest.approx(mean_norm)
    assert step_size.window == window
    for t in range(1, 6):
        target = rng.normal(0.5, 1.0, shape)
        difference = target - current
        mean = (1 - 1 / window) * mean + difference / window
        mean_norm = (1 - 1 / window) * mean_norm + np.sum(difference**2) / window
        rho = step_size(t, as_optimum(target), current)
        assert rho == pytest.approx(np.sum(mean**2) / mean_norm, rel=1e-12)
        assert step_size.drift == pytest.approx(np.sum(mean**2) / current.size)
        assert step_size.noise == pytest.approx(
            (mean_norm - np.sum(mean**2)) / current.size
        )
        window = (1 - rho) * window + 1
        assert step_size.window == pytest.approx(window)
        current = (1 - rho) * current + rho * target


def test_filter_changes_only_the_step_size(planted_corpus, monkeypatch):
    # Replaying the learned step sizes as a schedule reproduces the fit bit
    # for bit: the filter touches nothing but rho.
    X = planted_corpus[0]
    filtered = FilteredLDA(learning_rate="student-t", **PARAMS).partial_fit(X)
    learned = filtered.step_size_history_["step_size"]
    assert len(learned) == filtered.n_batch_iter_ == 12
    assert len(set(learned)) == len(learned)
    schedule = ReplayedSchedule(learned)
    assert isinstance(schedule, StepSize)
    monkeypatch.setattr(
        Mechanisms, "build_step_size", lambda settings, shape, dtype, **_: schedule
    )
    replay = SmoothedLDA(L=1, **PARAMS).partial_fit(X)
    assert_array_equal(replay.components_, filtered.components_)


class ReplayedSchedule(_Schedule):
    """A step size that plays back given step sizes."""

    def __init__(self, step_sizes):
        self.step_sizes = step_sizes

    def __call__(self, step, target, current, current_scale=1.0):
        return self.step_sizes[step - 1]


@pytest.mark.parametrize("filter", ["student-t", "gaussian", "adaptive"])
def test_step_size_rises_when_the_stream_changes(filter):
    shape = dict(
        n_documents=1000,
        n_features=120,
        n_topics=4,
        mean_document_length=60,
        doc_topic_prior=0.2,
        topic_word_prior=0.1,
    )
    before = make_lda_corpus(random_state=0, **shape)[0]
    after = make_lda_corpus(random_state=1, **shape)[0]  # other topics
    model = FilteredLDA(
        n_components=4,
        learning_rate=filter,
        batch_size=50,
        total_samples=1000,
        random_state=0,
    )
    # Four passes let the step settle: with one sweep per document (the
    # collapsed step's default on these 60-word documents) it still
    # wavers between 0.05 and 0.11 in the third.
    for _ in range(4):
        model.partial_fit(before)
    model.partial_fit(after)
    step_sizes = np.array(model.step_size_history_["step_size"])
    assert step_sizes.size == 100
    # Within three updates of the change the step is more than twice the
    # largest of the ten updates before it.
    assert step_sizes[83:90].min() > 2 * step_sizes[70:80].max()


@pytest.mark.parametrize("filter", ["student-t", "gaussian", "adaptive"])
def test_filtered_model_resumes_exactly_and_ignores_n_jobs(planted_corpus, filter):
    X = planted_corpus[0]
    first, second = X[:330], X[330:]
    params = dict(PARAMS, learning_rate=filter)
    uninterrupted = FilteredLDA(**params).partial_fit(first).partial_fit(second)
    interrupted = FilteredLDA(**params).partial_fit(first)
    resumed = pickle.loads(pickle.dumps(interrupted)).partial_fit(second)
    assert_array_equal(resumed.components_, uninterrupted.components_)
    assert resumed.filter_state_ == uninterrupted.filter_state_
    assert resumed.step_size_history_ == uninterrupted.step_size_history_
    threaded = FilteredLDA(**params, n_jobs=2).partial_fit(first).partial_fit(second)
    assert_array_equal(threaded.components_, uninterrupted.components_)
    assert threaded.filter_state_ == uninterrupted.filter_state_


def test_filter_state(planted_corpus):
    X = planted_corpus[0]
    states = {
        filter: FilteredLDA(learning_rate=filter, **PARAMS).partial_fit(X).filter_state_
        for filter in ("student-t", "gaussian", "adaptive")
    }
    assert set(states["adaptive"]) == {"drift", "noise", "window"}
    assert set(states["gaussian"]) == {"drift", "noise", "window", "variance"}
    assert set(states["student-t"]) == {"drift", "noise", "window", "scale", "dof"}
    n_coordinates = X.shape[1] * PARAMS["n_components"]
    assert states["student-t"]["dof"] == 3 + n_coordinates
    for state in states.values():
        # The corrected drift is clipped at zero when the spread explains
        # all of ||g||^2; the noise of a minibatch's optimum is never zero.
        assert state["drift"] >= 0 and state["noise"] > 0 and state["window"] >= 1
    assert not hasattr(FilteredLDA(), "filter_state_")


def test_step_size_record_is_thinned_to_a_bound(planted_corpus, monkeypatch):
    X = planted_corpus[0]
    complete = FilteredLDA(**dict(PARAMS, batch_size=10)).partial_fit(X)
    assert complete.step_size_history_["n_batch_iter"] == list(range(1, 61))
    monkeypatch.setattr(_update_state, "STEP_SIZE_RECORD_CAPACITY", 8)
    thinned = FilteredLDA(**dict(PARAMS, batch_size=10)).partial_fit(X)
    updates = thinned.step_size_history_["n_batch_iter"]
    # Thinned at updates 8, 16 and 32; every 8th update is kept from then on.
    assert updates == [8, 16, 24, 32, 40, 48, 56]
    full = dict(zip(*complete.step_size_history_.values()))
    assert thinned.step_size_history_["step_size"] == [full[u] for u in updates]


def dense_filter_estimates(targets, currents, step_sizes, n_start, corrected=True):
    """Q, R and tau after each update by the recursion over every row.

    ``targets`` and ``currents`` are lambda^ and lambda of each observation,
    the first ``n_start`` of them the start; ``step_sizes`` the steps taken
    after the others.
    """
    mean = np.zeros_like(currents[0])
    mean_norm = weight_square_sum = 0.0
    noise = 0.0
    window = 0.0
    estimates = []
    for t, (target, current) in enumerate(zip(targets, currents)):
        if t < n_start:
            window = float(t + 1)
        decay = 1.0 - 1.0 / window
        difference = target - current
        mean = decay * mean + difference / window
        mean_norm = decay * mean_norm + np.sum(difference**2) / window
        weight_square_sum = decay**2 * weight_square_sum + 1.0 / window**2
        spread = max(mean_norm - np.sum(mean**2), 0.0) / mean.size
        if not corrected:
            drift, noise = np.sum(mean**2) / mean.size, spread
        else:
            if weight_square_sum < 1.0:
                noise = spread / (1.0 - weight_square_sum)
            drift = max(np.sum(mean**2) / mean.size - weight_square_sum * noise, 0.0)
        if t >= n_start:
            window = (1.0 - step_sizes[t - n_start]) * window + 1.0
            estimates.append((drift, noise, window))
    return np.array(estimates)


@pytest.mark.parametrize("prior_columns", [1, 3], ids=["row-prior", "entry-prior"])
@pytest.mark.parametrize("corrected", [True, False])
def test_lazy_averages_follow_the_recursion_over_every_row(corrected, prior_columns):
    # Each target lists a fifth of the rows (lambda^ = eta elsewhere); eta
    # changes once and two updates are projected, which the closed form of
    # the rows not listed cannot follow; steps of 0.6 or more bring the
    # clock's scales to 1e-30 within the run. eta is one value per row, or
    # one per entry.
    rng = np.random.RandomState(0)
    n_rows, n_components, n_start = 200, 3, 3
    step_size = FilteredStepSize(
        GaussianFilter(0.0),
        (n_rows, n_components),
        np.float64,
        n_start,
        corrected=corrected,
        floor=ConstantStepSize(0.6),
    )
    current = rng.gamma(2.0, 1.0, (n_rows, n_components))
    prior = rng.uniform(0.05, 0.2, (n_rows, prior_columns))

    def draw(negatively_weighted=False):
        rows = np.sort(rng.choice(n_rows, n_rows // 5, replace=False))
        total = rng.gamma(1.0, 1.0, (len(rows), n_components))
        optimum = NoisyOptimum(
            SparseStatistic(rows, total),
            3.0,
            prior.copy(),
            negatively_weighted,
        )
        dense = np.repeat(prior, n_components // prior_columns, axis=1)
        dense[rows] += 3.0 * total
        return optimum, dense

    starts = [draw() for _ in range(n_start)]
    step_size.start((optimum for optimum, _ in starts), current)
    targets = [dense for _, dense in starts]
    currents = [current.copy()] * n_start
    step_sizes, estimates = [], []
    for t in range(1, 201):
        if t == 80:
            prior = prior * 1.5
        optimum, dense = draw(negatively_weighted=t in (40, 41, 120))
        targets.append(dense)
        currents.append(current.copy())
        rho = step_size(t, optimum, current)
        step_sizes.append(rho)
        estimates.append((step_size.drift, step_size.noise, step_size.window))
        current = (1.0 - rho) * current + rho * dense
        if optimum.negatively_weighted:
            current[rng.rand(n_rows) < 0.1] += 1.0  # a projection's change
    assert min(step_sizes) >= 0.6
    expected = dense_filter_estimates(targets, currents, step_sizes, n_start, corrected)
    assert_allclose(estimates, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("prior_columns", [1, 5], ids=["row-prior", "entry-prior"])
def test_a_filter_of_the_first_columns_is_the_filter_of_those_columns(prior_columns):
    # Targets that list a fifth of the rows, eta that changes once and a
    # projected update: the filter that observes 2 of 5 columns steps as
    # the filter of those 2 columns alone, to the last bit.
    rng = np.random.RandomState(1)
    n_rows, n_components, n_observed = 120, 5, 2
    current = rng.gamma(2.0, 1.0, (n_rows, n_components))
    prior = rng.uniform(0.05, 0.2, (n_rows, prior_columns))
    draws = []
    for t in range(60):
        rows = np.sort(rng.choice(n_rows, n_rows // 5, replace=False))
        total = rng.gamma(1.0, 1.0, (len(rows), n_components))
        draws.append((rows, total, prior * (1.5 if t >= 30 else 1.0), t == 20))

    def steps(columns, n_observed=None):
        width = columns.stop - columns.start
        step_size = FilteredStepSize(
            StudentTFilter(0.0, 3.0, n_rows * (n_observed or width)),
            (n_rows, width),
            np.float64,
            3,
            floor=RobbinsMonroStepSize(10.0, 0.6),
            n_observed=n_observed,
        )

        def optimum(rows, total, eta, projected):
            eta = eta if prior_columns == 1 else np.ascontiguousarray(eta[:, columns])
            return NoisyOptimum(
                SparseStatistic(rows, np.ascontiguousarray(total[:, columns])),
                3.0,
                eta,
                projected,
            )

        lam = np.ascontiguousarray(current[:, columns])
        step_size.start((optimum(*draw) for draw in draws[:3]), lam)
        observed = []
        for t, draw in enumerate(draws[3:], start=1):
            rho = step_size(t, optimum(*draw), lam)
            observed.append((rho, step_size.drift, step_size.noise))
            lam *= 1.0 - rho
            lam[draw[0]] += rho * 3.0 * draw[1][:, columns]
        return np.array(observed)

    first_columns = steps(slice(0, n_observed))
    assert_array_equal(steps(slice(0, n_components), n_observed), first_columns)
    assert not np.array_equal(steps(slice(0, n_components)), first_columns)


def test_lda_filters_observe_an_eighth_of_many_topics():
    X = make_lda_corpus(n_documents=200, n_topics=5, random_state=0)[0]
    for n_components, n_observed in [(6, 6), (32, 32), (33, 8), (100, 13)]:
        lda = FilteredLDA(
            n_components=n_components, batch_size=50, max_iter=1, random_state=0
        )
        step_size = lda.partial_fit(X)._update_state.step_size
        assert step_size.mean_difference.shape == (X.shape[1], n_observed)


def test_observed_components_chooses_the_columns_a_filter_observes():
    X = make_lda_corpus(n_documents=200, n_topics=5, random_state=0)[0]
    shapes = {}
    for observed in ["auto", None, 3, 100]:
        lda = FilteredLDA(**dict(PARAMS, n_components=40), observed_components=observed)
        step_size = lda.partial_fit(X)._update_state.step_size
        shapes[observed] = step_size.mean_difference.shape[1]
    assert shapes == {"auto": 8, None: 40, 3: 3, 100: 40}
    with pytest.raises(ValueError, match="observed_components"):
        FilteredLDA(observed_components=0).partial_fit(X)
