"""The local step on a Dask cluster: the same model as on one machine.

Every test runs on a LocalCluster of two worker processes with one thread
each, started here.
"""

import copy
import logging
import os
import signal
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from _cluster import local_client
from _interrupts import interrupted_by_a_signal
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import sklearn_svi._dask._rows
import sklearn_svi._store
import sklearn_svi._threads
from sklearn_svi import (
    AnnealedLDA,
    Checkpoint,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
)
from sklearn_svi._dask._blocks import ModelShard, RowShards
from sklearn_svi._dask._handles import HeldStatistic, HeldValue
from sklearn_svi._dask._rows import ClusterRows
from sklearn_svi._datasets import load_python_docstrings, make_lda_corpus
from sklearn_svi._mechanisms import WindowRows
from sklearn_svi._sources import InMemoryRows
from sklearn_svi._store import LocalStore

da = pytest.importorskip("dask.array")
db = pytest.importorskip("dask.bag")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")


WORKER_RESTART_SECONDS = 240
"""How long a test that killed a worker waits for its nanny to start a new
one: on a loaded machine that took over a minute."""


@pytest.fixture(scope="module")
def client():
    # Without work stealing a block stays on the worker it was sent to, so
    # that killing that worker loses it. A task that killed two workers
    # fails with KilledWorker. The cluster closes a worker's nanny when a
    # worker of its name is missing ``lost-worker-timeout`` after one was
    # lost, which a second kill at that moment would be: the tests kill
    # workers often.
    settings = {
        "distributed.scheduler.work-stealing": False,
        "distributed.scheduler.allowed-failures": 1,
        "distributed.deploy.lost-worker-timeout": "1 hour",
    }
    with dask.config.set(settings):
        with local_client(n_workers=2, threads_per_worker=1) as client:
            yield client


@pytest.fixture(scope="module")
def documents():
    return make_lda_corpus(
        n_documents=1500, n_features=400, n_topics=5, random_state=0
    )[0]


@pytest.fixture(scope="module")
def samples():
    rng = np.random.RandomState(0)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    return np.vstack([rng.randn(600, 2) + center for center in centers])


LDA_CASES = [
    (SmoothedLDA, dict(L=3, evaluate_every=4)),
    (AnnealedLDA, dict(M=16)),
    (FilteredLDA, dict(learning_rate="student-t")),
    (SmoothedLDA, dict(L=1, doc_topic_prior="auto", local_step="cvb0")),
    (FilteredLDA, dict(seed_topics={0: [3, 7, 11]})),
]


def lda(estimator, settings, **more):
    defaults = dict(n_components=5, batch_size=128, max_iter=2, random_state=0)
    return estimator(**{**defaults, **settings, **more})


def row_blocks(X, rows_per_block):
    return da.from_array(X, chunks=(rows_per_block, X.shape[1]), asarray=False)


def assert_same_fit(fitted, alone, rtol):
    """The same updates, components, step sizes and evaluation scores."""
    assert fitted.n_batch_iter_ == alone.n_batch_iter_
    assert_allclose(fitted.components_, alone.components_, rtol=rtol)
    assert_allclose(
        fitted.step_size_history_["step_size"],
        alone.step_size_history_["step_size"],
        rtol=rtol,
    )
    assert_allclose(
        fitted.evaluation_history_["score"],
        alone.evaluation_history_["score"],
        rtol=rtol,
    )


def run_python(code):
    """Run ``code`` in a new Python process, without this one's client."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )


def test_dask_is_not_imported_by_the_package():
    """The package runs on its four dependencies: Dask only when used."""
    result = run_python(
        "import sys, scipy.sparse as sp, sklearn_svi\n"
        "X = sp.random(60, 20, density=0.3, format='csr', random_state=0)\n"
        "sklearn_svi.SmoothedLDA(n_components=2, max_iter=1).fit(X)\n"
        "print(sorted({'dask', 'distributed'} & set(sys.modules)))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_dask_collection_without_a_client_is_a_clear_error():
    result = run_python(
        "import dask.array as da, numpy as np, sklearn_svi\n"
        "X = da.from_array(np.ones((40, 5)), chunks=(10, 5))\n"
        "sklearn_svi.SmoothedLDA(n_components=2).fit(X)"
    )
    assert result.returncode == 1
    assert "ValueError: A Dask collection is fitted on a Dask cluster, and there " in (
        result.stderr
    )


@pytest.mark.parametrize("estimator, settings", LDA_CASES)
def test_lda_on_a_dask_array_equals_the_fit_on_one_machine(
    client, documents, estimator, settings
):
    """The same minibatches, starts and updates: the parts' statistics
    differ from one machine's only by the grouping of their sums."""
    alone = lda(estimator, settings).fit(documents)
    on_cluster = lda(estimator, settings).fit(row_blocks(documents, 400))
    assert on_cluster.n_features_in_ == alone.n_features_in_
    assert_allclose(on_cluster.doc_topic_prior_, alone.doc_topic_prior_, rtol=1e-10)
    assert_same_fit(on_cluster, alone, rtol=1e-10)


def test_a_parts_copy_holds_eta_of_its_own_words(documents):
    model = lda(SmoothedLDA, dict(seed_topics={0: [3, 7, 11]})).fit(documents)
    rows = np.array([3, 50])
    local = model._local_copy(rows)
    assert_array_equal(local.topic_word_prior_, model.topic_word_prior_[:, rows])
    assert_array_equal(local._natural, model._natural[rows])


def test_one_part_per_minibatch_is_bit_for_bit(client, documents):
    """With the data in one block, each minibatch is one part, computed by
    the same code as on one machine: the fits are identical."""
    settings = dict(L=3)
    alone = lda(SmoothedLDA, settings).fit(documents)
    on_cluster = lda(SmoothedLDA, settings).fit(row_blocks(documents, 1500))
    assert_array_equal(on_cluster.components_, alone.components_)


def test_float32_documents_stay_float32(client, documents):
    X = documents.astype(np.float32)
    alone = lda(SmoothedLDA, {}).fit(X)
    on_cluster = lda(SmoothedLDA, {}).fit(row_blocks(X, 400))
    assert on_cluster.components_.dtype == np.float32
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-4)


def test_partial_fit_on_a_dask_bag_equals_partial_fit_in_memory(client, documents):
    bag = db.from_sequence([documents[i : i + 300] for i in range(0, 1500, 300)])
    alone = lda(SmoothedLDA, {}, total_samples=1500).partial_fit(documents)
    on_cluster = lda(SmoothedLDA, {}, total_samples=1500).partial_fit(bag)
    assert on_cluster.n_batch_iter_ == alone.n_batch_iter_ == 12
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)


def test_joblib_dask_backend_sends_the_local_steps_to_the_cluster(
    client, documents, samples
):
    """An ordinary fit inside the backend: the data is scattered and every
    update's statistic is computed on the workers."""
    alone = lda(SmoothedLDA, {}).fit(documents)
    mixture_alone = SVIGaussianMixture(n_components=3, random_state=0).fit(samples)
    with distributed.get_task_stream(client) as tasks:
        with joblib.parallel_backend("dask"):
            on_cluster = lda(SmoothedLDA, {}).fit(documents)
            mixture = SVIGaussianMixture(n_components=3, random_state=0).fit(samples)
    names = [task["key"] for task in tasks.data]
    n_statistics = sum("_part_statistic" in str(name) for name in names)
    n_updates = alone.n_batch_iter_ + mixture.n_batch_iter_
    # One task per worker and update, whatever the number of blocks (one per
    # worker thread here).
    assert n_updates <= n_statistics <= len(client.nthreads()) * n_updates
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)
    assert_allclose(mixture.means_, mixture_alone.means_, rtol=1e-10)
    assert_allclose(mixture.covariances_, mixture_alone.covariances_, rtol=1e-10)
    assert mixture.lower_bounds_ == pytest.approx(mixture_alone.lower_bounds_)


def test_matrix_factorization_inside_the_joblib_backend_equals_one_machine(client):
    rng = np.random.RandomState(0)
    users, items = rng.randn(600, 3), rng.randn(80, 3)
    observed = rng.rand(600, 80) < 0.2
    ratings = sp.csr_matrix(np.where(observed, users @ items.T + 3, 0))
    settings = dict(n_components=3, batch_size=64, max_iter=2, random_state=0)
    alone = SVIMatrixFactorization(**settings).fit(ratings)
    with joblib.parallel_backend("dask"):
        on_cluster = SVIMatrixFactorization(**settings).fit(ratings)
    assert on_cluster.n_batch_iter_ == alone.n_batch_iter_
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)


def test_matrix_factorization_on_a_dask_array_and_its_methods(client):
    """The factorization fits on a Dask array as on one machine, and its
    methods take Dask collections like those of the other models."""
    rng = np.random.RandomState(1)
    users, items = rng.randn(600, 3), rng.randn(80, 3)
    observed = rng.rand(600, 80) < 0.2
    ratings = sp.csr_matrix(np.where(observed, users @ items.T + 3, 0))
    blocks = row_blocks(ratings, 250)
    # A fit on a Dask collection starts from a sample of its rows; a fixed
    # offset and noise variance make the start the same as from all of them
    # (the prior precisions are still learned).
    settings = dict(
        n_components=3,
        batch_size=64,
        max_iter=2,
        random_state=0,
        rating_offset=3.0,
        noise_variance=1.0,
    )
    alone = SVIMatrixFactorization(**settings).fit(ratings)
    on_cluster = SVIMatrixFactorization(**settings).fit(blocks)
    assert on_cluster.n_batch_iter_ == alone.n_batch_iter_
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)

    factors = alone.transform(blocks)
    assert isinstance(factors, da.Array)
    assert_allclose(factors.compute(), alone.transform(ratings))
    assert_allclose(
        alone.predict_ratings(blocks).compute(), alone.predict_ratings(ratings)
    )
    assert_allclose(alone.lower_bound(blocks), alone.lower_bound(ratings), rtol=1e-12)
    users, items = rng.randint(600, size=50), rng.randint(80, size=50)
    pairs = alone.predict_pairs(blocks, users, items)
    assert isinstance(pairs, da.Array)
    assert_allclose(pairs.compute(), alone.predict_pairs(ratings, users, items))
    bag = db.from_sequence([ratings[:300], ratings[300:]], npartitions=2)
    with pytest.raises(TypeError, match="pass a Dask array"):
        alone.predict_pairs(bag, users, items)
    # Each block's ratings are split where it is: the score is the RMSE
    # over the blocks' held-out ratings together.
    bounds = [(0, 250), (250, 500), (500, 600)]
    held_out = [
        np.sum(np.diff(ratings[start:stop].indptr) // 2) for start, stop in bounds
    ]
    squared = [
        alone.score(ratings[start:stop]) ** 2 * n
        for (start, stop), n in zip(bounds, held_out)
    ]
    expected = -np.sqrt(np.sum(squared) / np.sum(held_out))
    assert_allclose(alone.score(blocks), expected, rtol=1e-12)


def test_mixture_continues_on_a_dask_array_as_on_one_machine(client, samples):
    started = SVIGaussianMixture(
        n_components=3, batch_size=100, random_state=0, total_samples=1800
    ).partial_fit(samples[::6])
    alone = copy.deepcopy(started).partial_fit(samples)
    on_cluster = copy.deepcopy(started).partial_fit(
        da.from_array(samples, chunks=(500, 2))
    )
    assert on_cluster.n_batch_iter_ == alone.n_batch_iter_
    assert_allclose(on_cluster.means_, alone.means_, rtol=1e-10)
    assert_allclose(on_cluster.precisions_cholesky_, alone.precisions_cholesky_)


def test_mixture_fit_on_a_sorted_dask_array_finds_the_clusters(client, samples):
    """The start is drawn from rows spread over all blocks, so a collection
    sorted by cluster still starts from every cluster."""
    model = SVIGaussianMixture(n_components=3, random_state=0, max_iter=20)
    model.fit(da.from_array(samples, chunks=(600, 2)))
    found = np.sort(np.round(model.means_).astype(int), axis=0)
    assert_array_equal(found, [[0, 0], [0, 0], [6, 6]])
    assert model.score(samples) > -4.5


def test_methods_on_dask_collections_give_dask_results_and_scores(
    client, documents, samples
):
    model = lda(SmoothedLDA, {}).fit(documents)
    blocks = row_blocks(documents, 400)
    proportions = model.transform(blocks)
    assert isinstance(proportions, da.Array)
    assert_allclose(proportions.compute(), model.transform(documents))
    # Scores are numbers, as scikit-learn's model selection needs.
    assert isinstance(model.score(blocks), float)
    assert_allclose(model.score(blocks), model.score(documents), rtol=1e-12)
    assert_allclose(model.perplexity(blocks), model.perplexity(documents), rtol=1e-12)
    mixture = SVIGaussianMixture(n_components=3, random_state=0).fit(samples)
    sample_blocks = da.from_array(samples, chunks=(700, 2))
    assert_allclose(mixture.score(sample_blocks), mixture.score(samples))
    assert_array_equal(
        mixture.predict(sample_blocks).compute(), mixture.predict(samples)
    )
    assert_allclose(
        mixture.transform(sample_blocks).compute(), mixture.transform(samples)
    )


def test_bad_rows_in_a_block_are_refused_and_the_model_is_unchanged(client, documents):
    model = lda(SmoothedLDA, {}).fit(documents)
    before = model.components_.copy()
    bad = documents.tolil()
    bad[1000, 3] = -1
    bad = bad.tocsr()
    with pytest.raises(ValueError, match="row block 2 of X.*Negative"):
        model.partial_fit(row_blocks(bad, 400))
    assert_array_equal(model.components_, before)


class WorkerKillingLDA(SmoothedLDA):
    """SmoothedLDA whose local step kills its worker process once, in the
    update ``kill_at``, when the file ``marker`` does not exist yet."""

    def __init__(
        self, marker="", kill_at=0, n_components=5, batch_size=128, random_state=0
    ):
        super().__init__(
            n_components=n_components,
            batch_size=batch_size,
            max_iter=2,
            random_state=random_state,
            L=3,
        )
        self.marker = marker
        self.kill_at = kill_at

    def _local_statistic(self, documents, sample_weight=None, draw=0, n_batch=None):
        if draw == self.kill_at and _first_to_mark(self.marker):
            self._kill()
        return super()._local_statistic(documents, sample_weight, draw, n_batch)

    def _kill(self):
        os.kill(os.getpid(), signal.SIGKILL)


def _first_to_mark(marker):
    """Whether this call created the file ``marker``: true once, whichever
    of the workers that run at the same time asks first."""
    if not marker:
        return False
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def test_a_killed_worker_costs_a_retry_of_its_part_and_nothing_is_counted_twice(
    client, documents, tmp_path
):
    blocks = row_blocks(documents, 400)
    reference = WorkerKillingLDA().fit(blocks)
    marker = tmp_path / "killed"
    survived = WorkerKillingLDA(marker=str(marker), kill_at=5).fit(blocks)
    assert marker.exists()
    assert survived.n_batch_iter_ == reference.n_batch_iter_
    assert survived.n_samples_seen_ == reference.n_samples_seen_
    assert_array_equal(survived.components_, reference.components_)
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


class ClusterKillingLDA(WorkerKillingLDA):
    """WorkerKillingLDA that kills the processes ``pids`` (every worker's)
    at once, its own last."""

    def __init__(self, marker="", kill_at=0, pids=()):
        super().__init__(marker=marker, kill_at=kill_at)
        self.pids = pids

    def _kill(self):
        for pid in sorted(self.pids, key=lambda pid: pid == os.getpid()):
            os.kill(pid, signal.SIGKILL)


def test_every_worker_lost_at_once_costs_a_retry_of_the_update(
    client, documents, tmp_path
):
    """Dask leaves tasks placed on lost workers waiting when no worker
    survives; the update sends its parts again to the new workers instead
    of waiting for its timeout."""
    blocks = row_blocks(documents, 400)
    reference = WorkerKillingLDA().fit(blocks)
    pids = tuple(client.run(os.getpid).values())
    marker = tmp_path / "killed"
    with dask.config.set({"sklearn-svi.update-timeout": "60 s"}):
        survived = ClusterKillingLDA(marker=str(marker), kill_at=5, pids=pids)
        survived.fit(blocks)
    assert marker.exists()
    assert survived.n_batch_iter_ == reference.n_batch_iter_
    assert survived.n_samples_seen_ == reference.n_samples_seen_
    assert_allclose(survived.components_, reference.components_, rtol=1e-10)
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


class PoisonousLDA(WorkerKillingLDA):
    """WorkerKillingLDA that kills every worker that runs update
    ``kill_at``, and writes a line to ``marker`` each time."""

    def _local_statistic(self, documents, sample_weight=None, draw=0, n_batch=None):
        if draw == self.kill_at:
            with open(self.marker, "a") as marker:
                marker.write("killed\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return SmoothedLDA._local_statistic(
            self, documents, sample_weight, draw, n_batch
        )


def test_a_task_that_kills_its_workers_is_not_sent_again(client, documents, tmp_path):
    """Dask gives it ``allowed-failures`` more workers (1 here), then the fit
    stops with KilledWorker and the model keeps its last update."""
    blocks = row_blocks(documents, 400)
    marker = tmp_path / "killed"
    reference = WorkerKillingLDA().partial_fit(blocks[:128])
    # The minibatch of update 2 lies in the first block: one task.
    model = PoisonousLDA(marker=str(marker), kill_at=2)
    with pytest.raises(distributed.KilledWorker):
        model.partial_fit(blocks)
    assert marker.read_text().count("killed") == 2
    assert model.n_batch_iter_ == 1
    assert_allclose(model.components_, reference.components_, rtol=1e-12)
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


def test_the_data_stays_on_the_workers(client):
    """Blocks made on the workers are fitted without coming to the client:
    the client's memory never holds half a block's worth of data, although
    it runs the scheduler of the LocalCluster too."""
    n_blocks, rows, words, density = 4, 2000, 30000, 0.1

    def block(seed):
        rng = np.random.RandomState(seed)
        X = sp.random(rows, words, density=density, format="csr", random_state=rng)
        X.data = np.ceil(X.data * 5)
        return X

    blocks = da.concatenate(
        [
            da.from_delayed(
                dask.delayed(block)(seed),
                shape=(rows, words),
                dtype=np.float64,
                meta=sp.csr_matrix((0, words)),
            )
            for seed in range(n_blocks)
        ]
    )
    # Values and column indices of the stored entries.
    block_bytes = rows * words * density * (8 + 4)
    model = SmoothedLDA(
        n_components=2, batch_size=2000, max_doc_update_iter=3, total_samples=8000
    )
    updates = []
    handler = logging.Handler()
    handler.emit = lambda record: updates.append(record.args)
    logger = logging.getLogger("sklearn_svi.cluster")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    tracemalloc.start()
    try:
        model.partial_fit(blocks)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert model.n_batch_iter_ == len(updates) == 4
    assert peak < block_bytes / 2, (peak, block_bytes)
    received = sum(arguments[3] for arguments in updates)
    assert received < n_blocks * block_bytes / 10


def test_grid_search_with_the_dask_backend_runs_its_candidates_there(client, documents):
    search = GridSearchCV(
        SmoothedLDA(n_components=5, max_iter=1, random_state=0),
        {"L": [1, 3]},
        cv=2,
        error_score="raise",
    )
    alone = copy.deepcopy(search).fit(documents)
    with distributed.get_task_stream(client) as tasks:
        with joblib.parallel_backend("dask"):
            search.fit(documents)
    candidate_tasks = [task for task in tasks.data if "batch" in str(task["key"])]
    assert len(candidate_tasks) >= 1
    assert_allclose(
        search.cv_results_["mean_test_score"],
        alone.cv_results_["mean_test_score"],
        rtol=1e-10,
    )


def kill_this_process():
    os.kill(os.getpid(), signal.SIGKILL)


def test_blocks_scattered_by_the_client_are_sent_again_when_lost(
    client, documents, caplog
):
    """Inside the joblib backend the client scatters the blocks, which die
    with their worker: the update sends them again and gets the statistic
    it would have got."""
    model = lda(SmoothedLDA, {})
    with joblib.parallel_backend("dask"):
        data = ClusterRows.from_data(model, documents, reset=True, dtype=None)
    model._initialize_online(
        data.initial_rows(), documents.shape[0], model._checked_mechanisms()
    )
    expected = InMemoryRows(model, data.X)
    rows = np.arange(0, 1500, 10)
    wanted = expected.statistic(expected.minibatch(rows).result(), draw=1)
    minibatch = data.minibatch(rows).result()
    holder = list(client.who_has(data.blocks[0])[data.blocks[0].key])
    client.run(kill_this_process, workers=holder, on_error="ignore")
    with caplog.at_level(logging.WARNING, logger="sklearn_svi.cluster"):
        statistic = data.statistic(minibatch, draw=1)
    assert "update 1: a worker was lost; sending its parts again" in caplog.text
    assert_array_equal(statistic.rows, wanted.rows)
    assert_allclose(statistic.block, wanted.block, rtol=1e-12)
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


def hashed_counts(lines):
    """The word counts of lines of text, hashed into 2**12 columns."""
    from sklearn.feature_extraction.text import HashingVectorizer

    hasher = HashingVectorizer(n_features=2**12, alternate_sign=False, norm=None)
    return hasher.transform(list(lines))


def test_texts_read_and_counted_by_the_workers_are_fitted_there(client, tmp_path):
    """Files of texts, read by the workers and hashed into counts there, are
    fitted as the same counts in memory would be."""
    texts, _ = load_python_docstrings()
    texts = [" ".join(text.split()) for text in texts[:2000] if text.strip()]
    for part in range(4):
        (tmp_path / f"part{part}.txt").write_text("\n".join(texts[part::4]) + "\n")
    bag = db.read_text(str(tmp_path / "part*.txt")).map_partitions(
        lambda lines: [hashed_counts(lines)]
    )
    in_order = [text for part in range(4) for text in texts[part::4]]
    settings = dict(n_components=5, batch_size=200, max_iter=2, random_state=0)
    alone = SmoothedLDA(**settings).fit(hashed_counts(in_order))
    on_cluster = SmoothedLDA(**settings).fit(bag)
    assert on_cluster.n_features_in_ == 2**12
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)


def test_an_empty_partition_of_a_bag_is_a_clear_error(client, documents):
    bag = db.from_sequence([documents[:400], documents[400:]], npartitions=2)
    empty = bag.filter(lambda block: block.shape[0] > 400)
    with pytest.raises(ValueError, match="partition of the Dask bag holds no matrix"):
        lda(SmoothedLDA, {}).fit(empty)


@pytest.fixture
def separate_cluster(tmp_path):
    """A scheduler and two one-thread workers started as their own
    processes, as on a real cluster; the path of the scheduler's file."""
    scheduler_file = tmp_path / "scheduler.json"
    dask_command = [sys.executable, "-m", "dask"]
    processes = [
        subprocess.Popen(
            [*dask_command, "scheduler", "--scheduler-file", str(scheduler_file)]
            + ["--port", "0", "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        processes.append(
            subprocess.Popen(
                [*dask_command, "worker", "--scheduler-file", str(scheduler_file)]
                + ["--nworkers", "2", "--nthreads", "1", "--no-dashboard"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        yield scheduler_file
    finally:
        for process in processes[::-1]:
            process.terminate()
            process.wait(timeout=60)


def test_a_subclass_defined_in_a_script_fits_on_separate_workers(separate_cluster):
    """The workers cannot import a class defined in ``__main__``: the model
    travels by value, and its own local step runs there."""
    result = run_python(
        "import numpy as np\n"
        "from distributed import Client\n"
        "from sklearn_svi import SmoothedLDA, make_lda_corpus\n"
        "class CountingLDA(SmoothedLDA):\n"
        "    def _local_statistic(self, documents, *args, **kwargs):\n"
        "        import distributed, os\n"
        "        distributed.get_worker()\n"
        "        return super()._local_statistic(documents, *args, **kwargs)\n"
        f"client = Client(scheduler_file={str(separate_cluster)!r}, timeout=120)\n"
        "client.wait_for_workers(2, timeout=120)\n"
        "X = make_lda_corpus(n_documents=400, n_features=100, random_state=0)[0]\n"
        "model = CountingLDA(n_components=3, batch_size=100, max_iter=1,\n"
        "                    random_state=0, n_jobs=1)\n"
        "import joblib\n"
        "with joblib.parallel_backend('dask'):\n"
        "    model.fit(X)\n"
        "alone = SmoothedLDA(n_components=3, batch_size=100, max_iter=1,\n"
        "                    random_state=0).fit(X)\n"
        "print(model.n_batch_iter_,\n"
        "      np.allclose(model.components_, alone.components_, rtol=1e-10))\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["4", "True"]


class HangingLDA(SmoothedLDA):
    """SmoothedLDA whose local step in update ``hang_at`` sleeps for
    ``seconds`` on its worker."""

    def __init__(self, hang_at=0, seconds=0.0, n_components=5, batch_size=100):
        super().__init__(
            n_components=n_components,
            batch_size=batch_size,
            random_state=0,
            total_samples=1500,
        )
        self.hang_at = hang_at
        self.seconds = seconds

    def _local_statistic(self, documents, sample_weight=None, draw=0, n_batch=None):
        if draw == self.hang_at:
            import time

            time.sleep(self.seconds)
        return super()._local_statistic(documents, sample_weight, draw, n_batch)


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_hung_worker_stops_the_update_with_a_clear_error(
    client, documents, partitioned
):
    """Also with lambda on the workers: the blocks undo the update, and the
    model gets its lambda back."""
    blocks = row_blocks(documents, 500)
    reference = HangingLDA().partial_fit(blocks[:400])
    model = HangingLDA(hang_at=5, seconds=8.0)
    settings = {
        "sklearn-svi.update-timeout": "1s",
        "sklearn-svi.partition-model": partitioned,
    }
    with dask.config.set(settings):
        with pytest.raises(TimeoutError, match="Update 5 waited 1 s for the workers"):
            model.partial_fit(blocks)
    # The four updates before it stand, and nothing of the fifth.
    assert model.n_batch_iter_ == 4
    assert_allclose(model.components_, reference.components_, rtol=1e-12)
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


def test_grid_search_over_a_dask_array_scores_with_numbers(client, documents):
    search = GridSearchCV(
        SmoothedLDA(n_components=5, batch_size=128, max_iter=1, random_state=0),
        {"L": [1, 3]},
        cv=2,
        error_score="raise",
    )
    alone = copy.deepcopy(search).fit(documents)
    search.fit(row_blocks(documents, 500))
    assert_allclose(
        search.cv_results_["mean_test_score"],
        alone.cv_results_["mean_test_score"],
        rtol=1e-10,
    )


def test_a_fit_on_a_dask_array_continues_from_its_checkpoint(
    client, documents, tmp_path
):
    from test_contract import Stop, StopAfter

    # Blocks kept on the same workers for all three fits: the parts, and so
    # the grouping of the sums, are the same.
    blocks = client.persist(row_blocks(documents, 500))
    uninterrupted = lda(FilteredLDA, {}).fit(blocks)
    path = tmp_path / "model.joblib"
    stopping = StopAfter(17, Checkpoint(path, every=5))
    with pytest.raises(Stop):
        lda(FilteredLDA, {}, callback=stopping).fit(blocks)
    resumed = joblib.load(path)
    assert resumed.n_batch_iter_ == 15
    resumed.set_params(warm_start=True).fit(blocks)
    assert resumed.n_batch_iter_ == uninterrupted.n_batch_iter_
    assert_array_equal(resumed.components_, uninterrupted.components_)


def test_a_lost_block_that_the_user_scattered_is_a_clear_error(client, documents):
    """Dask cannot compute again a block that exists only as scattered data:
    the update stops with an error that says so."""
    model = lda(SmoothedLDA, {})
    parts = [documents[start : start + 500] for start in range(0, 1500, 500)]
    futures = client.scatter(parts, hash=False)
    blocks = da.concatenate(
        [
            da.from_delayed(
                future, shape=part.shape, dtype=part.dtype, meta=sp.csr_matrix((0, 0))
            )
            for future, part in zip(futures, parts)
        ]
    )
    data = ClusterRows.from_data(model, blocks, reset=True, dtype=None)
    model._initialize_online(
        data.initial_rows(), documents.shape[0], model._checked_mechanisms()
    )
    minibatch = data.minibatch(np.arange(0, 1500, 10)).result()
    holder = list(client.who_has(futures[0])[futures[0].key])
    client.run(kill_this_process, workers=holder, on_error="ignore")
    with pytest.raises(RuntimeError, match="Row block 0 of X was lost with its worker"):
        data.statistic(minibatch, draw=1)
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


def test_a_large_payload_leaves_the_client_once_and_is_copied_by_the_workers(
    client, documents, monkeypatch
):
    """Every payload counts as large here: it is scattered to one worker and
    the other part's copy is made by a task, with the same fit."""
    monkeypatch.setattr(sklearn_svi._dask._rows, "DIRECT_PAYLOAD_BYTES", 0)
    blocks = row_blocks(documents, 400)
    alone = lda(SmoothedLDA, dict(L=3)).fit(documents)
    with distributed.get_task_stream(client) as tasks:
        on_cluster = lda(SmoothedLDA, dict(L=3)).fit(blocks)
    names = [str(task["key"]) for task in tasks.data]
    n_two_part_updates = sum("_sum_of" in name for name in names)
    assert n_two_part_updates > 0
    assert sum("_same" in name for name in names) == n_two_part_updates
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)


@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("estimator", [SmoothedLDA, AnnealedLDA])
def test_the_workers_find_their_samples_of_each_minibatch(
    client, documents, monkeypatch, estimator, partitioned
):
    """A pass's minibatches are found by the workers from the positions of
    their own rows: the client computes no row of them (its order would
    raise), the fit is that of one machine, and a worker whose blocks hold
    none of a minibatch's samples has an empty part."""
    from sklearn_svi._permutation import KeyedPermutation

    X = documents[:120]
    alone = estimator(n_components=5, batch_size=4, max_iter=2, random_state=0)
    on_cluster = clone(alone)
    alone.fit(X)

    def refused(self, positions):
        raise AssertionError("the client computed a minibatch's rows")

    monkeypatch.setattr(KeyedPermutation, "__getitem__", refused)
    with dask.config.set({"sklearn-svi.partition-model": partitioned}):
        on_cluster.fit(row_blocks(X, 10))
    assert on_cluster.n_batch_iter_ == alone.n_batch_iter_ == 60
    assert_allclose(on_cluster.components_, alone.components_, rtol=1e-10)


# -- lambda held by the workers in blocks of rows ----------------------------------

PARTITIONED = {"sklearn-svi.partition-model": True}

HELD_CASES = [
    (SmoothedLDA, {}),
    (SmoothedLDA, dict(learning_rate=0.3)),
    (SmoothedLDA, dict(learning_rate=1.0)),
    (SmoothedLDA, dict(local_step="vb")),
    (SmoothedLDA, dict(seed_topics={0: [3, 7, 11]})),
    (SmoothedLDA, dict(topic_word_prior=0.05, learning_offset=1.0)),
    (SmoothedLDA, dict(L=3, evaluate_every=4)),
    (AnnealedLDA, dict(M=16)),
    (AnnealedLDA, dict(M=16, L=4)),
    (FilteredLDA, {}),
    (FilteredLDA, dict(learning_rate="student-t", min_step_size=None)),
    (FilteredLDA, dict(learning_rate="adaptive", L=3)),
    (FilteredLDA, dict(observed_components=3, M=16)),
]


@pytest.mark.parametrize("estimator, settings", HELD_CASES)
def test_lambda_held_by_the_workers_gives_the_fit_of_one_machine(
    client, documents, estimator, settings
):
    """The same updates: each block of rows adds the parts' pieces of the
    statistic, keeps its rows of the window and of the filter's state and
    moves by the same compiled passes as lambda in memory, projection
    included; only the grouping of sums differs, in the last digits."""
    alone = lda(estimator, settings).fit(documents)
    with dask.config.set(PARTITIONED):
        held = lda(estimator, settings).fit(row_blocks(documents, 400))
    assert isinstance(held._natural_store, LocalStore)
    assert_same_fit(held, alone, rtol=1e-10)
    # The blocks wrote lambda out at the end: the client holds lambda itself.
    assert held._natural_store.scale == 1.0
    assert_allclose(held._natural_store.stored, alone._natural, rtol=1e-10)
    assert_allclose(held._topic_totals, alone._topic_totals, rtol=1e-10)
    if estimator is AnnealedLDA:
        # Negative weights: the blocks projected as many entries as one machine.
        assert alone.n_projected_ > 0
        assert held.n_projected_ == alone.n_projected_
    window, held_window = alone._update_state.window, held._update_state.window
    assert type(held_window) is type(window)
    assert type(held_window.rows) is type(window.rows)
    assert held_window.negative_weights == window.negative_weights
    assert len(held_window.rows.queue) == len(window.rows.queue)
    for statistic, held_statistic in zip(window.rows.queue, held_window.rows.queue):
        assert_array_equal(held_statistic.rows, statistic.rows)
        assert_allclose(held_statistic.block, statistic.block, rtol=1e-10)


@pytest.fixture
def row_jobs_in_blocks(client, monkeypatch):
    """Every job over lambda's rows, on the workers and here, shared in
    blocks of a few entries, as a large model's are."""

    def set_threshold(entries):
        sklearn_svi._threads.MIN_BLOCK_ENTRIES = entries

    default = sklearn_svi._threads.MIN_BLOCK_ENTRIES
    monkeypatch.setattr(sklearn_svi._threads, "MIN_BLOCK_ENTRIES", 1)
    client.run(set_threshold, 1)
    yield
    client.run(set_threshold, default)


@pytest.mark.parametrize("estimator", [SmoothedLDA, AnnealedLDA, FilteredLDA])
def test_every_default_writing_lambda_in_many_blocks_on_the_workers_is_one_machine(
    client, documents, row_jobs_in_blocks, estimator
):
    thresholds = client.run(lambda: sklearn_svi._threads.MIN_BLOCK_ENTRIES)
    assert set(thresholds.values()) == {1}
    alone = estimator(n_components=5, max_iter=2, random_state=0).fit(documents)
    with dask.config.set(PARTITIONED):
        held = estimator(n_components=5, max_iter=2, random_state=0).fit(
            row_blocks(documents, 400)
        )
    assert_same_fit(held, alone, rtol=1e-10)


@pytest.mark.parametrize("estimator", [SmoothedLDA, AnnealedLDA, FilteredLDA])
@pytest.mark.parametrize(
    "document_length, settings",
    # At 80 topics most three-token documents keep their responsibilities
    # on the topics they hold (the sparse layout).
    [(10, {}), (3, {"n_components": 80})],
)
def test_sampled_documents_on_the_workers_give_the_fit_of_one_machine(
    client, estimator, document_length, settings
):
    """Short documents, which the default local step samples: the same fit
    with lambda held by the workers as on one machine."""
    X = make_lda_corpus(
        n_documents=1500,
        n_features=400,
        n_topics=5,
        mean_document_length=document_length,
        random_state=0,
    )[0]
    alone = lda(estimator, {}, **settings).fit(X)
    with dask.config.set(PARTITIONED):
        held = lda(estimator, {}, **settings).fit(row_blocks(X, 400))
    assert_same_fit(held, alone, rtol=1e-10)


def test_a_fit_on_the_workers_starts_lambda_there_a_batch_of_topics_at_a_time(
    client, documents, monkeypatch
):
    """The client draws the initial topics two at a time and hands each
    block its rows of them: it never assembles lambda, and the start, the
    seeds' pseudo-counts included, is that of one machine."""
    from sklearn_svi.lda import _model

    monkeypatch.setattr(_model, "INITIAL_BATCH_BYTES", 2 * 8 * documents.shape[1])
    batches = []
    started = RowShards.started.__func__

    def recorded(cls, client, shape, dtype, columns, *arguments):
        def watched():
            for first, block in columns:
                batches.append((first, block.shape))
                yield first, block

        return started(cls, client, shape, dtype, watched(), *arguments)

    def assembled(*arguments):
        raise AssertionError("The client assembled lambda.")

    monkeypatch.setattr(RowShards, "started", classmethod(recorded))
    monkeypatch.setattr(sklearn_svi._dask._rows, "local_store", assembled)
    settings = dict(seed_topics={0: [3, 7, 11]})
    alone = lda(SmoothedLDA, settings).fit(documents)
    with dask.config.set(PARTITIONED):
        held = lda(SmoothedLDA, settings).fit(row_blocks(documents, 400))
    assert batches == [(0, (400, 2)), (2, (400, 2)), (4, (400, 1))]
    assert_same_fit(held, alone, rtol=1e-10)


def test_blocks_write_lambda_out_as_one_machine_does(client, documents, monkeypatch):
    """With a scale that falls below the threshold every few updates, the
    blocks write lambda out (settle) where one machine does."""
    monkeypatch.setattr(sklearn_svi._store, "SMALLEST_SCALE", 0.2)
    alone = lda(SmoothedLDA, {}).fit(documents)
    with dask.config.set(PARTITIONED):
        held = lda(SmoothedLDA, {}).fit(row_blocks(documents, 400))
    assert_allclose(held.components_, alone.components_, rtol=1e-10)


def test_partial_fit_with_held_lambda_continues_as_in_memory(client, documents):
    alone = lda(SmoothedLDA, {}, total_samples=1500)
    held = lda(SmoothedLDA, {}, total_samples=1500)
    for start in (0, 700):
        alone.partial_fit(documents[start : start + 700])
        with dask.config.set(PARTITIONED):
            held.partial_fit(row_blocks(documents[start : start + 700], 300))
        assert_allclose(held.components_, alone.components_, rtol=1e-10)


def test_float32_lambda_stays_float32_on_the_workers(client, documents):
    X = documents.astype(np.float32)
    alone = lda(SmoothedLDA, {}).fit(X)
    with dask.config.set(PARTITIONED):
        held = lda(SmoothedLDA, {}).fit(row_blocks(X, 400))
    assert held.components_.dtype == np.float32
    assert_allclose(held.components_, alone.components_, rtol=2e-5)


@pytest.mark.parametrize(
    "estimator, settings, named",
    [
        (SmoothedLDA, dict(doc_topic_prior="auto"), "learned priors"),
        (SmoothedLDA, dict(topic_word_prior="auto"), "learned priors"),
    ],
)
def test_an_update_that_needs_all_of_lambda_is_refused_before_it_starts(
    client, documents, estimator, settings, named
):
    model = lda(estimator, settings).fit(documents[:600])
    before = model.components_.copy()
    with dask.config.set(PARTITIONED), pytest.raises(ValueError, match=named):
        model.partial_fit(row_blocks(documents, 400))
    assert_array_equal(model.components_, before)
    assert model.n_batch_iter_ == 10


def test_a_non_finite_update_is_undone_on_every_block(client, documents):
    """A corpus size beyond float32's range overflows the blocks' rows: the
    update is refused, and every block puts its rows back."""
    X = documents.astype(np.float32)
    with dask.config.set(PARTITIONED):
        model = lda(SmoothedLDA, {}, total_samples=1500).partial_fit(
            row_blocks(X[:600], 300)
        )
        before = model.components_.copy()
        scale = model._natural_store.scale
        model.set_params(total_samples=10**40)
        with pytest.raises(ValueError, match="non-finite in float32"):
            model.partial_fit(row_blocks(X[600:728], 64))
    assert_array_equal(model.components_, before)
    assert model._natural_store.scale == scale
    assert model.n_batch_iter_ == 5


def test_a_real_ctrl_c_leaves_the_blocks_as_after_the_last_update(
    client, documents, python_sigint_handler
):
    """SIGINT at random moments of a fit whose workers hold lambda: the model
    is the one after its last whole update, its blocks undone on every
    worker, and it continues to the uninterrupted fit (to rounding: the rest
    of the stream is cut into other row blocks)."""
    batch = 128
    X = row_blocks(documents, 500)
    with dask.config.set(PARTITIONED):
        start = lda(SmoothedLDA, {}).partial_fit(X[:batch])
        rest = X[batch:]
        after_updates = [start.components_.copy()]
        uninterrupted = copy.deepcopy(start).set_params(
            callback=lambda model, progress: after_updates.append(
                model.components_.copy()
            )
        )
        began = time.perf_counter()
        uninterrupted.partial_fit(rest)
        duration = time.perf_counter() - began
        rng = np.random.RandomState(0)
        n_resumed = 0
        for delay in rng.uniform(0.05, 0.95, size=40) * duration:
            if n_resumed == 5:
                break
            model = copy.deepcopy(start)
            interrupted_by_a_signal(delay, model.partial_fit, rest)
            completed = model.n_batch_iter_ - start.n_batch_iter_
            if completed * batch >= rest.shape[0]:
                continue
            assert isinstance(model._natural_store, LocalStore)
            assert_array_equal(model.components_, after_updates[completed])
            model.partial_fit(rest[completed * batch :])
            assert_allclose(
                model.components_, uninterrupted.components_, rtol=1e-9, atol=0
            )
            n_resumed += 1
    assert n_resumed == 5


@pytest.mark.parametrize(
    "estimator, settings", [(SmoothedLDA, {}), (FilteredLDA, dict(L=2))]
)
def test_a_held_fit_continues_from_its_checkpoint(
    client, documents, tmp_path, estimator, settings
):
    """A checkpoint writes the blocks' lambda, window and filter's state
    into the saved model; the continued fit equals the uninterrupted one."""
    from test_contract import Stop, StopAfter

    # Blocks kept on the same workers for all three fits: the parts, and so
    # the grouping of the sums, are the same.
    blocks = client.persist(row_blocks(documents, 500))
    path = tmp_path / "model.joblib"
    with dask.config.set(PARTITIONED):
        uninterrupted = lda(estimator, settings).fit(blocks)
        stopping = StopAfter(17, Checkpoint(path, every=5))
        with pytest.raises(Stop):
            lda(estimator, settings, callback=stopping).fit(blocks)
        resumed = joblib.load(path)
        assert isinstance(resumed._natural_store, LocalStore)
        state = resumed._update_state
        assert [type(keeper.rows) for keeper in state.row_keepers()] == [
            type(keeper.rows) for keeper in uninterrupted._update_state.row_keepers()
        ]
        assert resumed.n_batch_iter_ == 15
        resumed.set_params(warm_start=True).fit(blocks)
    assert resumed.n_batch_iter_ == uninterrupted.n_batch_iter_
    assert_array_equal(resumed.components_, uninterrupted.components_)
    assert_array_equal(
        resumed.step_size_history_["step_size"],
        uninterrupted.step_size_history_["step_size"],
    )


def test_a_shard_adds_its_pieces_in_the_order_of_the_parts():
    stored = np.arange(12.0).reshape(6, 2)
    window = WindowRows(1, stored.shape, stored.dtype)
    shard = ModelShard(6, 2, stored.dtype, 10)
    shard.write_columns(1, stored[:, 1:])
    shard.write_columns(0, stored[:, :1])
    shard.hold(np.full((6, 1), 0.5), [window])
    total = HeldValue(0, WindowRows.total)
    shard.receive(1, 7, 1, np.array([11, 14]), np.array([[1.0, 1.0], [2.0, 2.0]]))
    shard.receive(1, 7, 0, np.array([14]), np.array([[4.0, 8.0]]))
    shard.call(1, 0, WindowRows.push, (HeldStatistic(7),))
    assert_array_equal(window.total().rows, [1, 4])
    added, finite = shard.add(1, total, 0.5)
    assert finite
    expected = stored.copy()
    expected[1] += 0.5
    expected[4] += [3.0, 5.0]
    assert_array_equal(shard.stored(), expected)
    assert_array_equal(added, [3.5, 5.5])
    # Row 14 is now [11, 14]: eta + c (stored - eta) at c = 0.5, eta = 0.5.
    assert_array_equal(shard.rows_of(np.array([14]), 0.5), [[5.75, 7.25]])
    # Change 1 is undone, the window's push with it; a later change keeps
    # what change 1 did.
    shard.undo(1)
    assert_array_equal(shard.stored(), stored)
    assert len(window.queue) == 0
    shard.receive(2, 8, 0, np.array([11]), np.array([[2.0, 2.0]]))
    shard.call(2, 0, WindowRows.push, (HeldStatistic(8),))
    shard.add(2, total, 1.0)
    shard.undo(1)
    assert_array_equal(shard.stored()[1], stored[1] + 2.0)
    # Kept, change 2 can no longer be undone, and the window of one
    # statistic has let it go.
    assert len(window.queue) == 1
    shard.keep(3)
    assert len(window.queue) == 0
    shard.undo(2)
    assert_array_equal(shard.stored()[1], stored[1] + 2.0)


class ShardKillingLDA(SmoothedLDA):
    """SmoothedLDA whose local step kills its worker in update ``kill_at``."""

    def __init__(self, kill_at=0, n_components=5, batch_size=128, random_state=0):
        super().__init__(
            n_components=n_components,
            batch_size=batch_size,
            max_iter=2,
            random_state=random_state,
        )
        self.kill_at = kill_at

    def _local_statistic(self, documents, sample_weight=None, draw=0, n_batch=None):
        if draw == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._local_statistic(documents, sample_weight, draw, n_batch)


def test_a_worker_lost_with_a_block_of_lambda_ends_the_fit_clearly(client, documents):
    with dask.config.set(PARTITIONED):
        model = ShardKillingLDA(kill_at=4)
        with pytest.raises(RuntimeError, match="no longer fitted.*Checkpoint"):
            model.fit(row_blocks(documents, 400))
    assert not hasattr(model, "_natural_store")
    client.wait_for_workers(2, timeout=WORKER_RESTART_SECONDS)


def test_the_handle_sent_to_a_worker_leaves_the_actors_futures_behind():
    handle = RowShards([], np.array([0, 4]), 2, np.float64, futures=["future"])
    assert handle.__getstate__()["futures"] == []
    assert handle.shape == (4, 2)
