"""scikit-learn conventions: checks, pipelines, search, persistence, input errors."""

import inspect
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import (
    check_param_validation,
    parametrize_with_checks,
)

from sklearn_svi import (
    AnnealedLDA,
    FilteredLDA,
    SmoothedLDA,
    SVIGaussianMixture,
    SVIMatrixFactorization,
    make_lda_corpus,
    top_words,
)
from sklearn_svi._parameters import init_source


@parametrize_with_checks(
    [
        SmoothedLDA(n_components=3, max_iter=2, batch_size=16),
        AnnealedLDA(n_components=3, max_iter=2, batch_size=16, M=8),
        FilteredLDA(n_components=3, max_iter=2, batch_size=16),
        FilteredLDA(
            n_components=3, max_iter=2, batch_size=16, learning_rate="gaussian"
        ),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator_class",
    [SmoothedLDA, AnnealedLDA, FilteredLDA, SVIGaussianMixture, SVIMatrixFactorization],
)
def test_every_parameter_is_written_in_the_estimators_own_init(estimator_class):
    """A reader finds the parameters in the class's ``__init__``, written out
    as scikit-learn writes them, and the registries stay the one source of
    their defaults: the written ``__init__`` is the one they give."""
    assert "__init__" in vars(estimator_class)
    expected = init_source(estimator_class._init_parameters)
    written = inspect.getsource(estimator_class.__init__).rstrip("\n")
    assert written == expected, (
        f"{estimator_class.__name__}.__init__ differs from its parameters' "
        f"registries; write it as:\n{expected}"
    )
    signature = inspect.signature(estimator_class)
    assert {
        name: parameter.default for name, parameter in signature.parameters.items()
    } == estimator_class._init_parameters
    assert list(signature.parameters.values())[1].kind == inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("estimator", [SmoothedLDA(), AnnealedLDA(), FilteredLDA()])
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"L": 0}, "'L' parameter of SmoothedLDA must be an int in the range"),
        ({"step_size": 1.5}, "'step_size' parameter"),
        ({"step_size": "adagrad"}, "'step_size' parameter"),
        ({"n_components": 0}, "'n_components' parameter"),
        ({"doc_topic_prior": 0.0}, "'doc_topic_prior' parameter"),
    ],
)
def test_invalid_parameters_raise(planted_corpus, params, message):
    with pytest.raises(ValueError, match=message):
        SmoothedLDA(**params).fit(planted_corpus[0])


TEXTS = [
    "the cat sat on the mat with another cat",
    "dogs and cats are pets that live in houses",
    "the stock market fell as investors sold shares",
    "shares rose after the bank reported profits",
    "the dog chased the cat around the house",
    "markets and banks respond to interest rates",
] * 10
LABELS = [0, 0, 1, 1, 0, 1] * 10


def planted_texts(n_documents, seed):
    """Texts drawn from three planted topics, labelled by their main topic."""
    X, _, doc_topic = make_lda_corpus(
        n_documents=n_documents,
        n_features=60,
        n_topics=3,
        mean_document_length=40,
        doc_topic_prior=0.1,
        topic_word_prior=0.1,
        random_state=seed,
    )
    texts = [
        " ".join(np.repeat([f"w{i:02d}" for i in row.indices], row.data)) for row in X
    ]
    return texts, doc_topic.argmax(axis=1)


def test_pipeline_with_vectorizer_and_classifier():
    texts, labels = planted_texts(600, seed=0)
    pipeline = Pipeline(
        [
            ("counts", CountVectorizer()),
            (
                "topics",
                SmoothedLDA(
                    n_components=3,
                    max_iter=10,
                    batch_size=20,
                    learning_offset=1.0,
                    learning_decay=0.5,
                    random_state=0,
                ),
            ),
            ("classifier", LogisticRegression()),
        ]
    )
    pipeline.fit(texts[:500], labels[:500])
    predictions = pipeline.predict(texts[500:])
    assert predictions.shape == (100,)
    # Three balanced classes: chance is about 1/3.
    assert np.mean(predictions == labels[500:]) > 0.85


def test_grid_search_over_window_length_uses_score(planted_corpus):
    X = planted_corpus[0]
    search = GridSearchCV(
        SmoothedLDA(n_components=4, max_iter=2, batch_size=50, random_state=0),
        {"L": [1, 5]},
        cv=2,
    )
    search.fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert search.best_params_["L"] == [1, 5][int(np.argmax(scores))]
    assert search.best_estimator_.L == search.best_params_["L"]


def test_grid_search_over_filter_and_prior_variance(planted_corpus):
    X = planted_corpus[0]
    grid = {"learning_rate": ["student-t", "gaussian"], "prior_variance": [1.0, 1e3]}
    search = GridSearchCV(
        FilteredLDA(
            n_components=4,
            max_iter=2,
            batch_size=50,
            min_step_size=None,
            random_state=0,
        ),
        grid,
        cv=2,
    )
    search.fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 4
    assert np.all(np.isfinite(scores))
    assert len(np.unique(scores)) == 4
    best = search.cv_results_["params"][int(np.argmax(scores))]
    assert search.best_params_ == best


def test_clone_pickle_and_joblib_round_trips(planted_corpus, tmp_path):
    X = planted_corpus[0]
    model = SmoothedLDA(n_components=4, L=3, max_iter=2, random_state=0).fit(X)
    assert clone(model).get_params() == model.get_params()
    assert not hasattr(clone(model), "components_")
    restored = pickle.loads(pickle.dumps(model))
    assert_array_equal(restored.transform(X), model.transform(X))
    path = tmp_path / "model.joblib"
    joblib.dump(model, path)
    assert_array_equal(joblib.load(path).components_, model.components_)


def test_set_output_pandas_and_feature_names(planted_corpus):
    pd = pytest.importorskip("pandas")
    X = planted_corpus[0]
    model = SmoothedLDA(n_components=4, max_iter=1, random_state=0).set_output(
        transform="pandas"
    )
    frame = pd.DataFrame(X.toarray(), columns=[f"word{i}" for i in range(X.shape[1])])
    transformed = model.fit(frame).transform(frame)
    assert isinstance(transformed, pd.DataFrame)
    names = [f"smoothedlda{i}" for i in range(4)]
    assert list(transformed.columns) == names
    assert list(model.get_feature_names_out()) == names
    assert list(model.feature_names_in_) == list(frame.columns)
    assert_allclose(transformed.sum(axis=1), 1.0)


def test_transform_score_and_perplexity_keep_n_features_in(planted_corpus):
    X = planted_corpus[0]
    model = SmoothedLDA(n_components=4, max_iter=1, random_state=0).fit(X)
    for method in (model.transform, model.score, model.perplexity):
        with pytest.raises(ValueError, match="features"):
            method(X[:, :50])
        assert model.n_features_in_ == X.shape[1]


def test_top_words():
    counts = CountVectorizer()
    X = counts.fit_transform(TEXTS)
    model = SmoothedLDA(n_components=2, max_iter=10, random_state=0).fit(X)
    words = top_words(model, counts.get_feature_names_out(), n_words=3)
    assert len(words) == 2 and all(len(topic) == 3 for topic in words)
    for topic, row in zip(words, model.components_):
        best = counts.get_feature_names_out()[np.argmax(row)]
        assert topic[0] == best
    with pytest.raises(ValueError, match="feature_names"):
        top_words(model, ["too", "few"])


def bad_inputs(X):
    negative = X.toarray().astype(float)
    negative[0, 0] = -1
    with_nan = X.toarray().astype(float)
    with_nan[1, 2] = np.nan
    with_inf = X.toarray().astype(float)
    with_inf[1, 2] = np.inf
    strings = np.full((3, X.shape[1]), "word", dtype=object)
    return {
        "negative": (negative, "Negative values"),
        "nan": (with_nan, "NaN"),
        "inf": (with_inf, "infinity"),
        "wrong n_features": (X[:, :10], "features"),
        "empty": (sp.csr_matrix((0, X.shape[1])), "0 sample"),
        "strings": (strings, "could not convert|Unable to convert|dtype"),
    }


@pytest.mark.parametrize(
    "case", ["negative", "nan", "inf", "wrong n_features", "empty", "strings"]
)
@pytest.mark.parametrize(
    "model",
    [SmoothedLDA(L=3), FilteredLDA()],
    ids=lambda model: type(model).__name__,
)
def test_bad_input_raises_and_leaves_the_model_unchanged(planted_corpus, case, model):
    X = planted_corpus[0]
    model = clone(model).set_params(n_components=4, max_iter=1, random_state=0)
    model.fit(X)
    model.partial_fit(X[:100])
    before = pickle.dumps(model)
    bad, message = bad_inputs(X)[case]
    with pytest.raises(ValueError, match=message):
        model.partial_fit(bad)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match=message):
        model.partial_fit(X[:50], X_val=bad)
    assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match=message):
        model.transform(bad)
    assert pickle.dumps(model) == before


def test_bad_input_to_an_unfitted_model(planted_corpus):
    X = planted_corpus[0]
    for case, (bad, message) in bad_inputs(X).items():
        if case == "wrong n_features":
            continue
        with pytest.raises(ValueError, match=message):
            SmoothedLDA().fit(bad)


@pytest.mark.parametrize(
    "estimator, old_name, value",
    [
        (SmoothedLDA(n_components=3, batch_size=20), "step_size", 0.3),
        (AnnealedLDA(n_components=3, batch_size=20, M=10), "step_size", 0.3),
        (FilteredLDA(n_components=3, batch_size=20), "filter", "gaussian"),
        (SVIGaussianMixture(n_components=2, batch_size=20), "step_size", "adaptive"),
    ],
    ids=["smoothed", "annealed", "filtered", "mixture"],
)
def test_old_spelling_of_learning_rate_warns_and_still_works(
    planted_corpus, estimator, old_name, value
):
    X = planted_corpus[0][:60].toarray()
    renamed = clone(estimator).set_params(learning_rate=value, random_state=0)
    with pytest.warns(FutureWarning, match=f"'{old_name}' was renamed"):
        old = clone(estimator).set_params(**{old_name: value}, random_state=0).fit(X)
    new = renamed.fit(X)
    assert old.step_size_history_ == new.step_size_history_
    assert old.step_size_history_["step_size"] != []


@pytest.mark.parametrize("n_features", [1, 30])
def test_perplexity_of_documents_without_words_is_refused(n_features):
    X = np.ones((20, n_features))
    model = SmoothedLDA(n_components=2, max_iter=1, random_state=0).fit(X)
    empty = np.zeros((3, n_features))
    with pytest.raises(ValueError, match="holds no words"):
        model.perplexity(empty)
    # The bound of empty documents is the topics' term alone: finite.
    assert np.isfinite(model.score(empty))
    assert_allclose(model.transform(empty), 0.5)
