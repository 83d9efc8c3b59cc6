"""Topics over time: partial_fit per time slice against gensim's LdaSeqModel.

NewsArticles in the order of their publication dates, cut into weekly
slices (the few articles before 2017 form the first slice). The package
follows the topics by fitting each slice with ``partial_fit`` (``--passes``
times) and recording a :class:`~sklearn_svi.TopicTimeline`; gensim's dynamic
topic model (``LdaSeqModel``, Blei & Lafferty 2006) fits all slices at once,
with ``--em-iterations`` iterations of its variational EM (gensim's default
is 6 to 20) after its initial LDA. Both use K = ``--n-components`` topics
and the same counts; the table gives the CPU seconds of each fit, and the
timeline's share of the largest topic and words at the first and last
slices.

Run ``python benchmarks/bench_topics_over_time.py``.
"""

import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from threadpoolctl import threadpool_limits

from sklearn_svi import SmoothedLDA, TopicTimeline

from _common import argument_parser
from corpus import load_texts
from tables import simple_table, write_results

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "topics_over_time.rst"


def weekly_slices():
    """The articles' counts in date order, their vocabulary, and the rows of
    each weekly slice with its label."""
    texts, dates = load_texts("NewsArticles", with_column="publish_date")
    parsed = []
    for text, date in zip(texts, dates):
        # "2017/2/7", some with a time of day after the date.
        parts = date.strip().split(" ")[0].split("/")
        if len(parts) == 3:
            year, month, day = map(int, parts)
            parsed.append((np.datetime64(f"{year:04d}-{month:02d}-{day:02d}"), text))
    parsed.sort(key=lambda pair: pair[0])
    days = np.array([day for day, _ in parsed])
    vectorizer = CountVectorizer(stop_words="english", min_df=5, max_df=0.5)
    X = vectorizer.fit_transform([text for _, text in parsed]).astype(np.float64)
    start = np.datetime64("2017-01-30")
    weeks = np.maximum((days - start).astype(int) // 7, 0)
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    X, weeks = X[keep], weeks[keep]
    labels = [str(start + np.timedelta64(7 * week, "D")) for week in np.unique(weeks)]
    bounds = np.searchsorted(weeks, np.unique(weeks))
    rows = [slice(a, b) for a, b in zip(bounds, [*bounds[1:], len(weeks)])]
    return X, vectorizer.get_feature_names_out(), rows, labels


def fit_timeline(X, rows, labels, args):
    """partial_fit per slice; the CPU seconds and the timeline."""
    model = SmoothedLDA(
        n_components=args.n_components,
        batch_size=args.batch_size,
        total_samples=X.shape[0],
        random_state=0,
    )
    timeline = TopicTimeline()
    started = time.process_time()
    for part, label in zip(rows, labels):
        for _ in range(args.passes):
            model.partial_fit(X[part])
        timeline.record(model, X[part], label=label)
    return time.process_time() - started, timeline


def fit_gensim(X, rows, args):
    """LdaSeqModel on the same counts and slices; its CPU seconds."""
    from gensim.matutils import Sparse2Corpus
    from gensim.models import LdaSeqModel

    corpus = list(Sparse2Corpus(X, documents_columns=False))
    id2word = {index: str(index) for index in range(X.shape[1])}
    started = time.process_time()
    LdaSeqModel(
        corpus=corpus,
        id2word=id2word,
        time_slice=[part.stop - part.start for part in rows],
        num_topics=args.n_components,
        # gensim's loop runs while its count is at most em_max_iter (until
        # the bound converges): exactly ``em_iterations`` iterations.
        em_min_iter=args.em_iterations,
        em_max_iter=args.em_iterations - 1,
        random_state=0,
    )
    return time.process_time() - started


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--n-components", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--em-iterations", type=int, default=1)
    args = parser.parse_args()
    X, vocabulary, rows, labels = weekly_slices()
    header = (
        f"NewsArticles: {X.shape[0]:,} articles, {X.shape[1]:,} words, "
        f"{len(rows)} weekly slices of {min(p.stop - p.start for p in rows)} to "
        f"{max(p.stop - p.start for p in rows)} articles; K={args.n_components}, "
        "one thread, CPU seconds."
    )
    print(header)
    with threadpool_limits(1):
        ours, timeline = fit_timeline(X, rows, labels, args)
        print(f"partial_fit per slice: {ours:.1f} s")
        theirs = fit_gensim(X, rows, args)
        print(f"LdaSeqModel: {theirs:.1f} s")
    table = simple_table(
        ["Model", "CPU seconds", "× partial_fit per slice"],
        [
            [
                f"SmoothedLDA().partial_fit per slice ({args.passes} passes) "
                "and a TopicTimeline",
                f"{ours:.1f}",
                "1.0",
            ],
            [
                f"gensim LdaSeqModel ({args.em_iterations} EM iteration"
                f"{'s' if args.em_iterations > 1 else ''})",
                f"{theirs:.1f}",
                f"{theirs / ours:.0f}",
            ],
        ],
    )
    rising = int(np.argmax(timeline.prevalence_[-1] - timeline.prevalence_[0]))
    words = timeline.words(rising, vocabulary)
    trend = (
        f"The topic whose prevalence grew most, {rising}: a mean share of "
        f"{100 * timeline.prevalence_[0, rising]:.1f}% of the first slice's "
        f"articles, {100 * timeline.prevalence_[-1, rising]:.1f}% of the last's; "
        f"its words in the first slice ({labels[0]}): "
        f"{', '.join(words[labels[0]][:8])}; in the last ({labels[-1]}): "
        f"{', '.join(words[labels[-1]][:8])}."
    )
    print(table, trend, sep="\n")
    write_results(RESULTS_PATH, [header, table, trend])


if __name__ == "__main__":
    main()
