"""Document completion: the held-out measure of the papers, and its scorer."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline

from sklearn_svi import FilteredLDA, SmoothedLDA
from sklearn_svi.metrics import completion_score, log_predictive, split_tokens


@pytest.fixture(scope="module")
def fitted(planted_corpus):
    X = planted_corpus[0]
    model = SmoothedLDA(n_components=4, max_iter=3, random_state=0).fit(X[:500])
    return model, X[500:]


def reference_log_predictive(model, X_observed, X_predicted):
    """Token by token: infer theta from the observed half of each document,
    then average log sum_k theta_dk beta_kw over the predicted tokens."""
    beta = model.components_ / model.components_.sum(axis=1, keepdims=True)
    X_observed, X_predicted = X_observed.toarray(), X_predicted.toarray()
    total, n_tokens = 0.0, 0
    for d in range(X_observed.shape[0]):
        theta = model.transform(X_observed[d : d + 1])[0]
        for w in range(X_predicted.shape[1]):
            for _ in range(int(X_predicted[d, w])):
                total += np.log(sum(theta[k] * beta[k, w] for k in range(len(theta))))
                n_tokens += 1
    return total / n_tokens


def test_split_keeps_every_token_once_and_halves_each_document(planted_corpus):
    X = planted_corpus[0][:50]
    observed, predicted = split_tokens(X, random_state=0)
    assert (observed + predicted != X).nnz == 0
    lengths = np.asarray(X.sum(axis=1)).ravel()
    observed_lengths = np.asarray(observed.sum(axis=1)).ravel()
    assert np.array_equal(observed_lengths, lengths // 2)
    again = split_tokens(X, random_state=0)[0]
    other = split_tokens(X, random_state=1)[0]
    assert (again != observed).nnz == 0 and (other != observed).nnz > 0


def test_documents_too_short_to_split_are_left_out():
    X = sp.csr_matrix(np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 0.0]]))
    observed, predicted = split_tokens(X, random_state=0)
    assert observed.shape == predicted.shape == (1, 3)
    assert observed.sum() == 1 and predicted.sum() == 2


def test_fractional_counts_are_refused():
    with pytest.raises(ValueError, match="whole-number"):
        split_tokens(np.array([[0.5, 2.0]]))


def test_log_predictive_matches_a_token_by_token_reference(fitted):
    model, X_held_out = fitted
    observed, predicted = split_tokens(X_held_out[:20], random_state=0)
    assert log_predictive(model, observed, predicted) == pytest.approx(
        reference_log_predictive(model, observed, predicted), rel=1e-10
    )


def test_completion_score_is_a_scorer_with_a_fixed_split(fitted):
    model, X_held_out = fitted
    score = completion_score(model, X_held_out)
    assert score == completion_score(model, X_held_out)
    assert score == log_predictive(model, *split_tokens(X_held_out, random_state=0))
    # Per-word log probabilities of a vocabulary of 120 words: above the
    # uniform model's log(1/120) for topics that were learned.
    assert np.log(1 / 120) < score < 0


def test_halves_of_different_documents_are_refused(fitted):
    model, X_held_out = fitted
    observed, predicted = split_tokens(X_held_out, random_state=0)
    with pytest.raises(ValueError, match="same documents"):
        log_predictive(model, observed[:5], predicted)


@pytest.mark.parametrize("estimator", [SmoothedLDA, FilteredLDA])
def test_grid_search_selects_by_completion(planted_corpus, estimator):
    X = planted_corpus[0]
    search = GridSearchCV(
        estimator(n_components=4, max_iter=2, random_state=0),
        {"n_components": [2, 4]},
        scoring=completion_score,
        cv=2,
    ).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    # Four topics were planted: two predict held-out words worse.
    assert search.best_params_ == {"n_components": 4}


def test_evaluation_history_can_record_the_completion_score(planted_corpus):
    X = planted_corpus[0]
    model = SmoothedLDA(
        n_components=4,
        batch_size=50,
        evaluate_every=5,
        scoring=completion_score,
        random_state=0,
    ).partial_fit(X[:500], X_val=X[500:])
    history = model.evaluation_history_
    assert history["n_batch_iter"] == [5, 10]
    # The last record is the score of the model as it ended.
    assert history["score"][-1] == completion_score(model, X[500:])
    assert history["score"][-1] > history["score"][0]


def test_completion_score_of_a_pipeline_scores_its_counts():
    texts = [
        "apples and pears and plums",
        "pears plums apples fruit",
        "engines wheels and brakes",
        "brakes engines gears wheels",
    ] * 30
    pipeline = make_pipeline(
        CountVectorizer(), SmoothedLDA(n_components=2, max_iter=5, random_state=0)
    ).fit(texts)
    counts = pipeline[0].transform(texts)
    assert completion_score(pipeline, texts) == completion_score(pipeline[-1], counts)
    search = GridSearchCV(
        pipeline, {"smoothedlda__L": [1, 3]}, scoring=completion_score, cv=2
    ).fit(texts)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_completion_score_of_a_one_step_pipeline(fitted):
    model, X_held_out = fitted
    pipeline = Pipeline([("lda", model)])
    assert completion_score(pipeline, X_held_out) == completion_score(model, X_held_out)
