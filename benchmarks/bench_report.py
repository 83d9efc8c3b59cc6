"""The topic report's size and the time headless Chromium takes to draw it.

For corpora (built-in ones or text files, see ``corpus.py``) and for a
synthetic corpus of 10^5 documents drawn from 100 topics: ``SmoothedLDA``
fitted in ``--passes`` passes, a :class:`~sklearn_svi.TopicReport` of it
with the documents' texts, the seconds to build the report, the size of
its page, and the seconds from the command that opens the page in
headless Chromium to the page's ``window.reportReady`` (the median of
``--loads`` loads, each in a fresh tab of one browser), with the page's own
``performance.now()`` at that moment.

Run ``python benchmarks/bench_report.py NewsArticles FILE --column
summary`` (the column of the tab-separated files); ``--screenshot out.png``
saves the first corpus' page as Chromium draws it, with its second most
prevalent topic selected. ``--check`` then clicks every topic of every page
and fails unless the page shows the topic's words and documents of its
data; ``--no-synthetic`` leaves the synthetic corpus out.
"""

import statistics
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sklearn_svi import SmoothedLDA, TopicReport, make_lda_corpus
from sklearn_svi._topics import read_texts

from _common import argument_parser
from corpus import BUILT_IN_CORPORA, corpus_name, load_texts
from tables import simple_table, write_results

# The tests' driver of Chromium.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _browser import Browser, find_chromium  # noqa: E402
from _report_page import mismatches_of_a_click  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SYNTHETIC = dict(n_documents=100_000, n_topics=100, n_features=10_000)


def corpus_pipeline(corpus, args):
    """The texts of a corpus and a fitted CountVectorizer + SmoothedLDA."""
    texts = (
        load_texts(corpus)
        if corpus in BUILT_IN_CORPORA
        else read_texts(corpus, args.column)
    )
    pipeline = make_pipeline(
        CountVectorizer(
            stop_words="english", min_df=5, max_df=0.5, max_features=args.n_features
        ),
        SmoothedLDA(
            n_components=args.n_components, max_iter=args.passes, random_state=0
        ),
    )
    return texts, pipeline.fit(texts)


def synthetic_model(args):
    """Counts drawn from LDA, texts of their words, and SmoothedLDA fitted
    to them."""
    X, _, _ = make_lda_corpus(mean_document_length=50, random_state=0, **SYNTHETIC)
    names = np.array([f"word{column}" for column in range(X.shape[1])])
    texts = [
        " ".join(np.repeat(names[row.indices], row.data.astype(int)))
        for row in X.astype(np.float64)
    ]
    model = SmoothedLDA(
        n_components=SYNTHETIC["n_topics"], max_iter=args.passes, random_state=0
    )
    return X, names, texts, model.fit(X)


def measure(name, build, browser, path, args):
    """Build a report, save it, open it ``args.loads`` times (and with
    ``args.check`` click each of its topics): the report and a row of the
    table."""
    start = time.perf_counter()
    report = build()
    seconds_to_build = time.perf_counter() - start
    report.save(path)
    opening, drawing = [], []
    for _ in range(args.loads):
        opening.append(browser.open(path))
        drawing.append(browser.evaluate("window.reportReadyTime") / 1000)
    data = report.data
    if args.check:
        mismatches = [
            mismatch
            for topic in range(len(data["topics"]))
            for mismatch in mismatches_of_a_click(browser, data, topic)
        ]
        if mismatches:
            raise RuntimeError(f"the page of {name} differs: {mismatches}")
    if browser.errors:
        raise RuntimeError(f"the page of {name} failed: {browser.errors}")
    row = [
        name,
        f"{data['nDocuments']:,}",
        f"{data['nFeatures']:,}",
        str(len(data["topics"])),
        f"{seconds_to_build:.1f}",
        f"{path.stat().st_size / 2**20:.2f}",
        f"{statistics.median(opening):.2f}",
        f"{statistics.median(drawing):.2f}",
    ]
    print("  ".join(row), flush=True)
    return report, row


def measure_corpus(corpus, name, args, browser, screenshot):
    """The row of a corpus; a screenshot of its page with its second most
    prevalent topic selected, unless ``screenshot`` is None."""
    texts, pipeline = corpus_pipeline(corpus, args)
    report, row = measure(
        name,
        partial(TopicReport, pipeline, texts, title=f"Topics of {name}"),
        browser,
        RESULTS_DIR / "pages" / f"{name}.html",
        args,
    )
    if screenshot is not None:
        prevalence = [topic["prevalence"] for topic in report.data["topics"]]
        second = np.argsort(prevalence)[-2]
        browser.click(f'#topic-map circle[data-topic="{second}"]')
        browser.screenshot(screenshot)
    return row


def measure_synthetic(args, browser):
    """The row of the synthetic corpus."""
    X, words, texts, model = synthetic_model(args)
    _, row = measure(
        "synthetic",
        partial(TopicReport, model, X, words, texts=texts),
        browser,
        RESULTS_DIR / "pages" / "synthetic.html",
        args,
    )
    return row


def main():
    parser = argument_parser(__doc__)
    parser.add_argument(
        "corpora", nargs="+", help=f"text files, or {', '.join(BUILT_IN_CORPORA)}"
    )
    parser.add_argument("--column", help="the column of texts of TSV files")
    parser.add_argument("--n-features", type=int, default=10_000)
    parser.add_argument("--n-components", type=int, default=100)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--screenshot", help="a PNG of the corpus' page")
    parser.add_argument(
        "--check", action="store_true", help="click every topic of every page"
    )
    parser.add_argument(
        "--no-synthetic",
        dest="synthetic",
        action="store_false",
        help="leave the synthetic corpus out",
    )
    parser.add_argument(
        "--output", default=str(RESULTS_DIR / "report.rst"), help="the results file"
    )
    args = parser.parse_args()
    executable = find_chromium()
    if executable is None:
        parser.error("Chromium is not on PATH.")
    (RESULTS_DIR / "pages").mkdir(exist_ok=True)
    corpus_names = [corpus_name(corpus) for corpus in args.corpora]
    rows = []
    with Browser(executable) as browser:
        for corpus, name in zip(args.corpora, corpus_names):
            screenshot = args.screenshot if not rows else None
            rows.append(measure_corpus(corpus, name, args, browser, screenshot))
        if args.synthetic:
            rows.append(measure_synthetic(args, browser))
    settings = (
        f"SmoothedLDA(max_iter={args.passes}) of {', '.join(corpus_names)} "
        f"({args.n_components} topics, the {args.n_features:,} most frequent "
        "words of at least 5 documents and at most half of them, English stop "
        "words removed)"
        + (
            f" and of {SYNTHETIC['n_documents']:,} documents drawn from "
            f"{SYNTHETIC['n_topics']} topics over {SYNTHETIC['n_features']:,} "
            "words (50 words per document on average)"
            if args.synthetic
            else ""
        )
        + "; TopicReport's defaults (30 words "
        "and 5 documents of 300 characters per topic). Build: seconds to make "
        "the report. Open: seconds from the command that opens the page in "
        "headless Chromium to its window.reportReady; drawn: the page's "
        f"performance.now() then; medians of {args.loads} loads."
        + (
            " Every topic of every page was then clicked on the map, and the "
            "page showed the topic's words and documents of the report's data."
            if args.check
            else ""
        )
    )
    table = simple_table(
        [
            "Corpus",
            "Documents",
            "Words",
            "Topics",
            "Build s",
            "Page MiB",
            "Open s",
            "Drawn s",
        ],
        rows,
    )
    print(settings)
    print(table)
    write_results(Path(args.output), [settings, table])


if __name__ == "__main__":
    main()
