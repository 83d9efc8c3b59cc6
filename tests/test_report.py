"""The topic report: its data, its page, and the page at work in Chromium.

The browser tests need Chromium on PATH. Without it they are skipped,
unless SKLEARN_SVI_BROWSER_TESTS=1 (as in continuous integration), where
they fail.
"""

import copy
import html
import json
import os
import re

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer
from sklearn.pipeline import make_pipeline

from sklearn_svi import (
    FilteredLDA,
    SmoothedLDA,
    TopicReport,
    TopicTimeline,
    WordSketch,
    make_lda_corpus,
    top_words,
)
from sklearn_svi.__main__ import main
from sklearn_svi._report import (
    LAMBDAS,
    jensen_shannon_distances,
    principal_coordinates,
    relevant_word_indices,
)
from sklearn_svi.metrics import coherence, drift_alarms, topic_diversity

from _browser import Browser, find_chromium
from _report_page import (
    expected_documents,
    mismatches_of_a_click,
    page_ranking,
    shown_documents,
    shown_title,
    shown_words,
)

THEMES = {
    "fruit": "apple pear plum cherry peach grape lemon melon berry fig",
    "engine": "piston valve crank gear torque diesel turbo clutch axle spark",
    "river": "water bank delta flood stream bridge boat fish shore rain",
}
# Markup in a text, which the page must show as text.
MARKUP = "</script><script>window.injected = true</script> <b>bold</b>"


def theme_texts(n_texts=300, seed=0):
    """Texts each mostly of one theme's words, the themes in turn."""
    rng = np.random.default_rng(seed)
    names = list(THEMES)
    texts = []
    for index in range(n_texts):
        words = THEMES[names[index % 3]].split()
        other = THEMES[names[(index + 1) % 3]].split()
        texts.append(
            " ".join([*rng.choice(words, size=12), *rng.choice(other, size=2)])
        )
    texts[0] = f"{MARKUP} {texts[0]}"
    return texts


@pytest.fixture(scope="module")
def texts():
    return theme_texts()


@pytest.fixture(scope="module")
def pipeline(texts):
    return make_pipeline(
        CountVectorizer(), SmoothedLDA(n_components=3, random_state=0)
    ).fit(texts)


@pytest.fixture(scope="module")
def report(pipeline, texts):
    return TopicReport(pipeline, texts, n_words=8, n_documents=4, snippet_length=60)


class FixedTopics(BaseEstimator):
    """A topic model of given topics and document proportions, fitted to
    any data."""

    def __init__(self, components, doc_topic):
        self.components = components
        self.doc_topic = doc_topic

    def fit(self, X, y=None):
        self.components_ = np.asarray(self.components, dtype=np.float64)
        return self

    def transform(self, X):
        return self.doc_topic[: X.shape[0]]


def exact_relevance(model_topics, prevalence, topic, relevance_lambda):
    """The relevance of every word of the vocabulary to a topic."""
    log_topic = np.log(model_topics[topic])
    log_lift = log_topic - np.log(prevalence @ model_topics)
    return relevance_lambda * log_topic + (1 - relevance_lambda) * log_lift


def exact_ranking(model_topics, prevalence, topic, relevance_lambda, n_words):
    """A topic's n_words most relevant words over the whole vocabulary."""
    relevance = exact_relevance(model_topics, prevalence, topic, relevance_lambda)
    return np.argsort(-relevance, kind="stable")[:n_words]


def page_data(page):
    """The data of a page, as its script reads it."""
    found = re.search(
        r'<script id="report-data" type="application/json">(.*?)</script>',
        page,
        re.S,
    )
    return json.loads(found.group(1))


# -- the data ------------------------------------------------------------------


def test_relevant_words_hold_the_top_words_at_every_lambda():
    rng = np.random.default_rng(0)
    log_topic = np.log(rng.dirichlet(np.full(400, 0.1), size=5))
    log_lift = log_topic - np.log(rng.dirichlet(np.ones(400)))
    n_words = 10
    candidates = relevant_word_indices(log_topic, log_lift, n_words)
    for topic, words in enumerate(candidates):
        assert len(words) < 400
        for relevance_lambda in LAMBDAS:
            relevance = (
                relevance_lambda * log_topic[topic]
                + (1 - relevance_lambda) * log_lift[topic]
            )
            top = np.argsort(-relevance)[:n_words]
            assert set(top) <= set(words)


def test_relevant_words_of_a_small_vocabulary_are_all_its_words():
    log_topic = np.log(np.full((2, 3), 1 / 3))
    for words in relevant_word_indices(log_topic, log_topic, n_words=10):
        np.testing.assert_array_equal(words, [0, 1, 2])


def test_the_page_ranks_a_topics_words_as_the_whole_vocabulary_does(report, pipeline):
    # The page's probabilities have four significant digits, so two words
    # whose relevances differ by less than their rounding (at most 5e-4 in
    # the log of each of the two probabilities a relevance reads) may come
    # in either order; beyond that the page's order is the exact one.
    tolerance = 1e-3
    model = pipeline[-1]
    topics = model.components_ / model.components_.sum(axis=1, keepdims=True)
    prevalence = np.array([topic["prevalence"] for topic in report.data["topics"]])
    names = list(pipeline[0].get_feature_names_out())
    for topic in range(3):
        for relevance_lambda in (0.0, 0.3, 0.6, 1.0):
            relevance = exact_relevance(topics, prevalence, topic, relevance_lambda)
            shown = [
                names.index(name)
                for name in page_ranking(report.data, topic, relevance_lambda)
            ]
            assert len(shown) == 8
            assert np.all(np.diff(relevance[shown]) <= tolerance)
            hidden = np.setdiff1d(np.arange(len(names)), shown)
            assert relevance[hidden].max() <= relevance[shown].min() + tolerance
            expected = exact_ranking(topics, prevalence, topic, relevance_lambda, 8)
            assert np.abs(relevance[shown] - relevance[expected]).max() <= tolerance
    # At lambda 1, the most probable words.
    for topic, words in enumerate(top_words(model, names, 8)):
        assert page_ranking(report.data, topic, 1.0) == list(words)


def test_jensen_shannon_distances_are_a_symmetric_metric():
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(50, 0.3), size=6)
    topics[1] = topics[0]
    distances = jensen_shannon_distances(topics)
    np.testing.assert_allclose(distances, distances.T)
    np.testing.assert_allclose(np.diag(distances), 0, atol=1e-7)
    assert distances[0, 1] == pytest.approx(0, abs=1e-7)
    assert np.all((distances >= 0) & (distances <= 1 + 1e-12))
    for i, j, k in np.ndindex(6, 6, 6):
        assert distances[i, k] <= distances[i, j] + distances[j, k] + 1e-12
    disjoint = np.array([[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    assert jensen_shannon_distances(disjoint)[0, 1] == pytest.approx(1)


def test_words_of_probability_zero_are_never_shown():
    with np.errstate(divide="ignore"):
        log_topic = np.log([[0.5, 0.5, 0.0, 0.0], [0.0, 0.2, 0.3, 0.5]])
    log_lift = log_topic - np.log([0.25, 0.35, 0.15, 0.25])
    candidates = relevant_word_indices(log_topic, log_lift, n_words=3)
    np.testing.assert_array_equal(candidates[0], [0, 1])
    np.testing.assert_array_equal(candidates[1], [1, 2, 3])


def test_principal_coordinates_keep_the_distances_of_points_in_a_plane():
    points = np.random.default_rng(0).normal(size=(7, 2))
    distances = np.linalg.norm(points[:, None] - points[None], axis=2)
    coordinates = principal_coordinates(distances)
    mapped = np.linalg.norm(coordinates[:, None] - coordinates[None], axis=2)
    np.testing.assert_allclose(mapped, distances, atol=1e-9)
    np.testing.assert_allclose(coordinates.mean(axis=0), 0, atol=1e-12)
    assert principal_coordinates(np.zeros((1, 1))).shape == (1, 2)


def test_the_data_of_a_pipeline(report, pipeline, texts):
    data = report.data
    model = pipeline[-1]
    X = pipeline[0].transform(texts)
    assert data["nDocuments"] == len(texts)
    assert data["nFeatures"] == X.shape[1]
    assert len(data["topics"]) == 3
    doc_topic = model.transform(X)
    np.testing.assert_allclose(
        [topic["prevalence"] for topic in data["topics"]],
        doc_topic.mean(axis=0),
        rtol=1e-3,
    )
    np.testing.assert_allclose(
        [topic["coherence"] for topic in data["topics"]],
        coherence(model, X, average=False),
        atol=1e-3,
    )
    assert data["diversity"] == pytest.approx(topic_diversity(model), abs=1e-3)
    for topic, entry in enumerate(data["topics"]):
        assert 0 <= entry["exclusivity"] <= 1
        rows = [row for row, _ in entry["documents"]]
        assert len(rows) == 4
        # The documents with the largest share of the topic, largest first.
        np.testing.assert_array_equal(
            sorted(doc_topic[:, topic])[::-1][:4], doc_topic[rows, topic]
        )
    # The texts are the pipeline's input; their snippets are cut.
    for row, snippet in data["documents"].items():
        assert len(snippet) <= 61
        assert " ".join(texts[int(row)].split()).startswith(snippet.rstrip("…"))
    # The three themes are three distinct points of the map.
    coordinates = np.array([[topic["x"], topic["y"]] for topic in data["topics"]])
    assert len(np.unique(coordinates.round(3), axis=0)) == 3


def test_counts_and_names_without_texts_show_row_numbers():
    X, _, _ = make_lda_corpus(n_documents=200, n_topics=3, random_state=0)
    model = SmoothedLDA(n_components=3, random_state=0).fit(X)
    names = [f"word{i}" for i in range(X.shape[1])]
    data = TopicReport(model, X, names, n_words=5).data
    assert data["documents"] is None
    assert set(data["vocabulary"]["names"]) <= set(names)
    counts = np.asarray(X.sum(axis=0)).ravel()
    for name, count in zip(data["vocabulary"]["names"], data["vocabulary"]["count"]):
        assert count == counts[names.index(name)]


def test_the_report_leaves_the_estimator_as_it_was(pipeline, texts):
    before = joblib.hash(pipeline)
    TopicReport(pipeline, texts, others=[pipeline], labels=np.arange(len(texts)) % 2)
    assert joblib.hash(pipeline) == before


def test_hashed_words_are_named_by_the_sketch(texts):
    sketch = WordSketch(
        HashingVectorizer(n_features=64, alternate_sign=False, norm=None)
    )
    pipeline = make_pipeline(sketch, SmoothedLDA(n_components=3, random_state=0))
    pipeline.fit(texts)
    data = TopicReport(pipeline, texts, n_words=5).data
    vocabulary = data["vocabulary"]
    names = sketch.get_feature_names_out()
    assert set(vocabulary["names"]) <= set(names)
    # 64 buckets for 30 words: some bucket holds more than one word.
    assert any(vocabulary["others"])
    for name, others, share in zip(
        vocabulary["names"], vocabulary["others"], vocabulary["share"]
    ):
        bucket = list(names).index(name)
        assert others.split() == [w for w in sketch.candidate_words_[bucket, 1:] if w]
        assert share == pytest.approx(sketch.leading_share()[bucket], abs=1e-3)


def test_prevalence_per_label(pipeline, texts):
    labels = np.array(["b", "a"])[np.arange(len(texts)) % 2]
    data = TopicReport(pipeline, texts, labels=labels).data
    doc_topic = pipeline.transform(texts)
    assert data["timeline"]["labels"] == ["a", "b"]
    np.testing.assert_allclose(
        data["timeline"]["prevalence"],
        [doc_topic[labels == "a"].mean(axis=0), doc_topic[labels == "b"].mean(axis=0)],
        rtol=1e-3,
    )
    assert data["timeline"]["alarms"] == []


@pytest.fixture(scope="module")
def changing_stream():
    """A filtered fit of a stream whose topics change after update 100, and
    its timeline of eight slices of 25 updates."""
    X = sp.vstack(
        [
            make_lda_corpus(
                n_documents=3200, n_features=300, n_topics=8, random_state=seed
            )[0]
            for seed in (0, 1)
        ]
    ).tocsr()
    model = FilteredLDA(n_components=8, random_state=0)
    timeline = TopicTimeline()
    for start in range(0, X.shape[0], 800):
        for batch in range(start, start + 800, 32):
            model.partial_fit(X[batch : batch + 32])
        timeline.record(model, X[start : start + 800], label=f"month {start // 800}")
    return model, X, timeline


def test_the_timeline_marks_the_slices_of_the_drift_alarms(changing_stream):
    model, X, timeline = changing_stream
    names = [f"word{i}" for i in range(X.shape[1])]
    data = TopicReport(model, X, names, timeline=timeline).data
    alarms = drift_alarms(model)
    assert len(alarms) > 0
    assert data["alarms"] == alarms.tolist()
    np.testing.assert_array_equal(timeline.n_batch_iter_, 25 * np.arange(1, 9))
    # Slice i holds updates 25 i + 1 to 25 (i + 1).
    assert data["timeline"]["alarms"] == sorted(set(((alarms - 1) // 25).tolist()))
    assert min(data["timeline"]["alarms"]) >= 4
    assert data["timeline"]["labels"] == [f"month {i}" for i in range(8)]


def test_unstable_topics_are_those_far_from_every_other_fit():
    rng = np.random.default_rng(0)
    components = rng.dirichlet(np.full(40, 0.1), size=4)
    doc_topic = rng.dirichlet(np.ones(4), size=30)
    X = sp.csr_matrix(rng.poisson(1.0, size=(30, 40)).astype(float) + 1)
    model = FixedTopics(components, doc_topic).fit(X)
    moved = components[::-1].copy()
    moved[0] = rng.dirichlet(np.full(40, 0.1))  # topic 3 of the model
    names = [str(i) for i in range(40)]
    data = TopicReport(model, X, names, others=[components[[1, 0, 3, 2]], moved]).data
    assert data["stability"] == {"nOthers": 2, "threshold": 0.5}
    distances = [topic["distance"] for topic in data["topics"]]
    assert distances[:3] == [0.0, 0.0, 0.0]
    assert distances[3] > 0.3
    unstable = [topic["unstable"] for topic in data["topics"]]
    assert unstable == [False, False, False, distances[3] > 0.5]
    data = TopicReport(model, X, names, others=[moved], unstable_distance=0.01).data
    assert [topic["unstable"] for topic in data["topics"]] == [
        False,
        False,
        False,
        True,
    ]


def test_the_page_holds_its_script_style_and_data(report):
    page = report.to_html()
    assert page_data(page) == json.loads(json.dumps(report.data))
    assert "<script src" not in page and "<link" not in page
    assert "@import" not in page and "url(" not in page
    # The SVG namespace is the only address in the page.
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {
        "http://www.w3.org/2000/svg"
    }
    # A document's markup cannot end the data's script element.
    assert "</script><script>window.injected" not in page


def test_the_pages_markers_in_a_text_are_kept_as_text(pipeline, texts):
    marked = [f"<!-- TITLE --> /* SCRIPT */ {text}" for text in texts]
    page = TopicReport(pipeline, marked, title="Marked").to_html()
    snippets = page_data(page)["documents"].values()
    assert all(
        snippet.startswith("<!-- TITLE --> /* SCRIPT */") for snippet in snippets
    )
    assert page.count("<title>Marked</title>") == 1


def test_a_page_stays_small_however_many_documents():
    rng = np.random.default_rng(0)
    n_topics, n_features = 100, 3000
    components = rng.dirichlet(np.full(n_features, 0.05), size=n_topics)
    sizes = []
    for n_documents in (1000, 10000):
        doc_topic = rng.dirichlet(np.full(n_topics, 0.1), size=n_documents)
        X = sp.random(
            n_documents, n_features, density=0.01, format="csr", random_state=0
        )
        X.data = np.ceil(10 * X.data)
        texts = ["word " * 500] * n_documents
        report = TopicReport(
            FixedTopics(components, doc_topic).fit(X),
            X,
            [f"w{i}" for i in range(n_features)],
            texts=texts,
            labels=np.arange(n_documents) % 12,
        )
        sizes.append(len(report.to_html().encode()))
    assert sizes[1] < 5 * 2**20
    assert sizes[1] < 1.2 * sizes[0]


def test_repr_html_frames_the_page(report):
    frame = report._repr_html_()
    found = re.fullmatch(r'<iframe srcdoc="([^"]*)" style="[^"]*"></iframe>', frame)
    assert found
    assert html.unescape(found.group(1)) == report.to_html()


def test_save_writes_the_page(report, tmp_path):
    path = tmp_path / "report.html"
    report.save(path)
    assert path.read_text(encoding="utf-8") == report.to_html()


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(texts=["one text"]), "texts has 1 entries, but X has 300"),
        (dict(labels=[0, 1]), "labels has 2 entries"),
        (dict(feature_names=["a", "b"]), r"feature_names has shape \(2,\)"),
        (dict(n_words=0), "n_words must be a positive integer"),
        (dict(n_documents=2.5), "n_documents must be a positive integer"),
        (dict(relevance_lambda=1.5), r"relevance_lambda must be in \[0, 1\]"),
        (dict(labels=[0] * 300, timeline=TopicTimeline()), "labels or timeline"),
        (dict(timeline=TopicTimeline()), "recorded slices"),
        (dict(others=[np.ones((3, 5))]), "they must share their features"),
    ],
)
def test_bad_input_is_refused(pipeline, texts, change, message):
    arguments = dict(estimator=pipeline, X=texts, **change)
    with pytest.raises(ValueError, match=message):
        TopicReport(**arguments)


def test_counts_of_other_features_are_refused(pipeline):
    with pytest.raises(ValueError, match="X has 5 features, but the topics have"):
        TopicReport(pipeline[-1], np.ones((4, 5)), [str(i) for i in range(5)])


def test_negative_counts_are_refused(pipeline):
    n_features = pipeline[-1].components_.shape[1]
    with pytest.raises(ValueError, match="Negative values"):
        TopicReport(pipeline[-1], -np.ones((4, n_features)), ["w"] * n_features)


def test_an_unfitted_estimator_is_refused(texts):
    with pytest.raises(NotFittedError):
        TopicReport(make_pipeline(CountVectorizer(), SmoothedLDA()), texts)


def test_a_timeline_of_another_model_is_refused(pipeline, texts):
    other = SmoothedLDA(n_components=2, random_state=0).fit(
        pipeline[0].transform(texts)
    )
    timeline = TopicTimeline().record(other, pipeline[0].transform(texts))
    with pytest.raises(ValueError, match="timeline follows 2 topics"):
        TopicReport(pipeline, texts, timeline=timeline)


def test_hashed_counts_without_names_are_refused(texts):
    pipeline = make_pipeline(
        HashingVectorizer(n_features=64, alternate_sign=False, norm=None),
        SmoothedLDA(n_components=3, random_state=0),
    ).fit(texts)
    with pytest.raises(ValueError, match="count with a WordSketch"):
        TopicReport(pipeline, texts)
    with pytest.raises(ValueError, match="feature_names is needed"):
        TopicReport(pipeline[-1], pipeline[0].transform(texts))


def test_the_command_line_writes_a_report(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(theme_texts(n_texts=240)) + "\n", encoding="utf-8")
    page = tmp_path / "report.html"
    main(
        [
            "topics",
            str(corpus),
            "--n-components",
            "3",
            "--passes",
            "2",
            "--batch-size",
            "40",
            "--min-df",
            "2",
            "--report",
            str(page),
        ]
    )
    assert f"Wrote the topic report to {page}." in capsys.readouterr().out
    data = page_data(page.read_text(encoding="utf-8"))
    assert len(data["topics"]) == 3
    assert data["nDocuments"] == 240
    assert any(snippet.startswith("apple") for snippet in data["documents"].values())


# -- the page in Chromium ------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None:
        if os.environ.get("SKLEARN_SVI_BROWSER_TESTS") == "1":
            pytest.fail(
                "Chromium is not on PATH, and SKLEARN_SVI_BROWSER_TESTS=1 "
                "requires the browser tests: install it (apt-get install "
                "chromium)."
            )
        pytest.skip(
            "Chromium is not on PATH (set SKLEARN_SVI_BROWSER_TESTS=1 to make "
            "this an error)"
        )
    with Browser(executable) as running:
        yield running


@pytest.fixture
def opened(browser, report, tmp_path):
    """The report, opened in the browser; no page error may follow."""
    path = tmp_path / "report.html"
    report.save(path)
    browser.errors.clear()
    browser.open(path)
    yield browser
    assert browser.errors == []


def test_the_browser_reports_the_errors_of_a_page(browser, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text(
        "<script>console.error('shown'); window.reportReady = true;</script>"
        "<script>undefinedFunction();</script>",
        encoding="utf-8",
    )
    browser.errors.clear()
    browser.open(page)
    browser.wait_for("true")
    assert any("shown" in error for error in browser.errors)
    assert any("undefinedFunction" in error for error in browser.errors)
    browser.errors.clear()


def test_clicking_a_topic_shows_its_words_and_documents(opened, report):
    data = report.data
    first = int(shown_title(opened)[6:])
    prevalence = [topic["prevalence"] for topic in data["topics"]]
    assert first == int(np.argmax(prevalence))
    topic = (first + 1) % 3
    opened.click(f'#topic-map circle[data-topic="{topic}"]')
    assert shown_title(opened) == f"Topic {topic}"
    assert shown_words(opened) == page_ranking(data, topic, data["lambda"])
    assert shown_documents(opened) == expected_documents(data, topic)
    selected = opened.evaluate(
        "[...document.querySelectorAll('.selected')].map(node => node.dataset.topic)"
    )
    assert selected == [str(topic), str(topic)]
    # A row of the table selects its topic too.
    opened.click(f'#topics tbody tr[data-topic="{first}"]')
    assert shown_words(opened) == page_ranking(data, first, data["lambda"])


def test_every_topic_can_be_clicked(opened, report):
    for topic in range(len(report.data["topics"])):
        assert mismatches_of_a_click(opened, report.data, topic) == []
    # The check sees a page that shows what its data does not hold.
    altered = copy.deepcopy(report.data)
    altered["topics"][1]["documents"].reverse()
    altered["topics"][1]["words"].reverse()
    assert mismatches_of_a_click(opened, altered, 0) == []
    assert mismatches_of_a_click(opened, altered, 1) == [
        "topic 1: other words are shown",
        "topic 1: other documents are shown",
    ]


def test_every_topic_of_a_crowded_map_can_be_clicked(browser, tmp_path):
    # 100 topics, many circles over other circles' centres (no two centres
    # closer than 4 of the map's 600 units: a mouse tells them apart).
    rng = np.random.default_rng(2)
    n_topics, n_features, n_documents = 100, 300, 500
    components = rng.dirichlet(np.full(n_features, 0.1), size=n_topics)
    doc_topic = rng.dirichlet(np.full(n_topics, 0.5), size=n_documents)
    X = sp.random(n_documents, n_features, density=0.05, format="csr", random_state=1)
    X.data = np.ceil(10 * X.data)
    report = TopicReport(
        FixedTopics(components, doc_topic).fit(X),
        X,
        [f"w{i}" for i in range(n_features)],
        texts=[f"document {row}" for row in range(n_documents)],
    )
    path = tmp_path / "crowded.html"
    report.save(path)
    browser.errors.clear()
    browser.open(path)
    covered = browser.evaluate(
        "[...document.querySelectorAll('#topic-map circle')].filter(circle => {"
        " const box = circle.getBoundingClientRect();"
        " return document.elementFromPoint(box.x + box.width / 2,"
        " box.y + box.height / 2) !== circle; }).length"
    )
    assert covered > 10
    for topic in range(n_topics):
        assert mismatches_of_a_click(browser, report.data, topic) == []
    assert browser.errors == []


def test_the_lambda_control_ranks_the_words_again(opened, report):
    data = report.data
    topic = int(shown_title(opened)[6:])
    opened.click("#lambda")
    for key, relevance_lambda in (("End", 1.0), ("Home", 0.0)):
        for kind in ("keyDown", "keyUp"):
            opened.send("Input.dispatchKeyEvent", type=kind, key=key, code=key)
        opened.wait_for(
            f"document.getElementById('lambda-value').textContent === "
            f"'{relevance_lambda:.2f}'"
        )
        assert shown_words(opened) == page_ranking(data, topic, relevance_lambda)
    assert page_ranking(data, topic, 1.0) != page_ranking(data, topic, 0.0)


def test_a_documents_markup_is_shown_as_text(browser, pipeline, texts, tmp_path):
    # Every document listed under every topic: the one with markup is shown
    # whatever the fit.
    report = TopicReport(
        pipeline, texts, n_words=8, n_documents=len(texts), snippet_length=60
    )
    path = tmp_path / "report.html"
    report.save(path)
    browser.errors.clear()
    browser.open(path)
    topic = next(
        index
        for index, entry in enumerate(report.data["topics"])
        if 0 in [row for row, _ in entry["documents"]]
    )
    browser.click(f'#topics tbody tr[data-topic="{topic}"]')
    text = browser.evaluate(
        "document.querySelector('#documents li[data-document=\"0\"]').textContent"
    )
    assert "<script>window.injected = true</script>" in text
    assert browser.evaluate("window.injected === undefined")
    assert browser.errors == []


def test_the_timeline_draws_every_topic_and_the_alarms(
    browser, changing_stream, tmp_path
):
    model, X, timeline = changing_stream
    report = TopicReport(
        model, X, [f"word{i}" for i in range(X.shape[1])], timeline=timeline
    )
    path = tmp_path / "timeline.html"
    report.save(path)
    browser.errors.clear()
    browser.open(path)
    assert browser.evaluate("document.getElementById('timeline').hidden") is False
    assert (
        browser.evaluate("document.querySelectorAll('#timeline-chart polyline').length")
        == 8
    )
    assert browser.evaluate(
        "document.querySelectorAll('#timeline-chart line.alarm').length"
    ) == len(report.data["timeline"]["alarms"])
    browser.click('#topic-map circle[data-topic="5"]')
    assert (
        browser.evaluate(
            "document.querySelector('#timeline-chart polyline.selected').dataset.topic"
        )
        == "5"
    )
    assert browser.errors == []
