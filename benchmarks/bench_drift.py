"""Streams whose topics change: the fit on the current slice, and a drift signal.

Two streams, fitted minibatch after minibatch with ``partial_fit`` by plain
SVI, a constant step, each filter, and the filter with a constant floor
(a "tracking" setting):

- **planted**: documents of 20 planted topics; half-way through the stream
  10 of them are replaced by 10 new ones (``--documents`` in all, 50 tokens
  on average);
- **healthtweets** ordered by time (the tweets' ids grow with their time),
  whose subjects come and go.

Every ``--every`` updates each model is scored on the *current* slice by
document completion (held-out per-word log predictive probability): on the
planted stream, on held-out documents of the topics in use at that moment;
on the tweets, on the next 1,000 tweets of the stream, which no model has
seen yet (test, then train). The tables give the mean score over windows of
updates, each setting's difference from plain SVI, over ``--seeds`` seeds.

The drift signal is :func:`sklearn_svi.metrics.drift_alarms`: an alarm at
the update that makes ``--consecutive`` updates in a row whose filtered step
is at least ``--ratio`` times the Robbins-Monro schedule that bounds it from
below, after ``--warm-up`` updates. The tables give, per filter, the alarms
on the stationary part of the planted stream (false alarms) and the delay
from the change to the first alarm, and the alarms on the tweets.

Run ``python benchmarks/bench_drift.py``.
"""

from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from threadpoolctl import threadpool_limits

from sklearn_svi import FilteredLDA, SmoothedLDA, make_lda_corpus
from sklearn_svi.metrics import drift_alarms, log_predictive, split_tokens

from _common import argument_parser
from corpus import load_texts
from tables import mean_spread, simple_table, write_results

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "drift.rst"
N_TOPICS = 20
N_REPLACED = 10
VOCABULARY = 2000
DOC_TOPIC_PRIOR = 0.1
TOPIC_WORD_PRIOR = 0.05
MEAN_LENGTH = 50
TWEETS_SCORED = 1000


def settings(batch_size, n_total, seed):
    """The settings compared, unfitted."""
    common = dict(
        n_components=N_TOPICS,
        batch_size=batch_size,
        total_samples=n_total,
        random_state=seed,
    )
    return {
        "plain SVI": SmoothedLDA(**common),
        "constant step 0.1": SmoothedLDA(learning_rate=0.1, **common),
        "Gaussian filter (default)": FilteredLDA(**common),
        "Student's t filter": FilteredLDA(learning_rate="student-t", **common),
        "adaptive rate": FilteredLDA(learning_rate="adaptive", **common),
        "Gaussian filter, floor 0.05": FilteredLDA(min_step_size=0.05, **common),
    }


def planted_stream(args, seed):
    """The planted stream, the update of its change, and a held-out scorer."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(VOCABULARY, TOPIC_WORD_PRIOR), N_TOPICS + N_REPLACED)
    before = topics[:N_TOPICS]
    after = np.vstack([topics[: N_TOPICS - N_REPLACED], topics[N_TOPICS:]])
    half = args.documents // 2

    def documents(phase, n_documents, part):
        return make_lda_corpus(
            n_documents,
            mean_document_length=MEAN_LENGTH,
            doc_topic_prior=DOC_TOPIC_PRIOR,
            topics=phase,
            random_state=1000 * seed + part,
        )[0].astype(np.float64)

    X = sp.vstack([documents(before, half, 0), documents(after, half, 1)]).tocsr()
    held_out = [
        split_tokens(documents(phase, 500, 2 + part), random_state=seed)
        for part, phase in enumerate((before, after))
    ]
    change = half // args.batch_size

    def score(model, n_updates):
        return log_predictive(model, *held_out[int(n_updates >= change)])

    return X, change, score


def tweet_stream(args):
    """healthtweets in the order of their ids, and a scorer of the next
    ``TWEETS_SCORED`` tweets, split for document completion."""
    texts, sources = load_texts("healthtweets", with_column="source_id")
    order = np.argsort([int(source.rsplit("-", 1)[1]) for source in sources])
    vectorizer = CountVectorizer(stop_words="english", min_df=5, max_df=0.5)
    X = vectorizer.fit_transform([texts[i] for i in order]).astype(np.float64)
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
    n_updates = (X.shape[0] - TWEETS_SCORED) // args.batch_size
    X = X[: n_updates * args.batch_size + TWEETS_SCORED]
    splits = {}

    def score(model, n_updates):
        if n_updates not in splits:
            start = n_updates * args.batch_size
            splits[n_updates] = split_tokens(
                X[start : start + TWEETS_SCORED], random_state=0
            )
        return log_predictive(model, *splits[n_updates])

    return X[: n_updates * args.batch_size], score


def run(X, score, batch_size, args, seed, n_total):
    """Each setting streamed over X; its scores every ``args.every`` updates,
    and the updates at which the drift signal fired."""
    curves, alarms = {}, {}
    for name, model in settings(batch_size, n_total, seed).items():
        points = []
        for number, start in enumerate(range(0, X.shape[0], batch_size), start=1):
            model.partial_fit(X[start : start + batch_size])
            if number % args.every == 0:
                points.append((number, score(model, number)))
        curves[name] = points
        alarms[name] = drift_alarms(
            model,
            ratio=args.ratio,
            consecutive=args.consecutive,
            warm_up=args.warm_up,
        )
        print(f"seed {seed} {name}: last score {points[-1][1]:.4f}", flush=True)
    return curves, alarms


def window_table(runs, windows):
    """Mean score over each window of updates, and its difference from plain
    SVI, mean ± standard deviation over seeds."""
    header = ["Setting", *[f"updates {a}-{b}" for a, b in windows]]
    rows = []
    for name in runs[0][0]:
        cells = [name]
        for first, last in windows:
            values = []
            for curves, _ in runs:
                mean = np.mean([s for n, s in curves[name] if first <= n <= last])
                plain = np.mean(
                    [s for n, s in curves["plain SVI"] if first <= n <= last]
                )
                values.append((mean, mean - plain))
            means, differences = map(np.array, zip(*values))
            cells.append(
                mean_spread(means, 3)
                if name == "plain SVI"
                else mean_spread(differences, 3, "+")
            )
        rows.append(cells)
    return simple_table(header, rows)


def alarm_table(runs, change):
    """Per filter: false alarms before the change, and the delay to the first
    alarm after it, for each seed."""
    rows = []
    for name in runs[0][1]:
        if "filter" not in name and "adaptive" not in name:
            continue
        false, delays = [], []
        for _, alarms in runs:
            fired = alarms[name]
            false.append(int(np.sum(fired < change)))
            after = fired[fired >= change]
            delays.append(str(after[0] - change) if len(after) else "none")
        rows.append([name, ", ".join(map(str, false)), ", ".join(delays)])
    return simple_table(
        ["Filter", "false alarms (per seed)", "updates to the first alarm"], rows
    )


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--documents", type=int, default=120_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--ratio", type=float, default=4.0)
    parser.add_argument("--consecutive", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=50)
    parser.add_argument("--streams", nargs="+", default=["planted", "tweets"])
    args = parser.parse_args()

    sections = []
    with threadpool_limits(1):
        if "planted" in args.streams:
            runs = []
            for seed in range(args.seeds):
                X, change, score = planted_stream(args, seed)
                runs.append(run(X, score, args.batch_size, args, seed, X.shape[0]))
            end = X.shape[0] // args.batch_size
            windows = [
                (change - 50, change - 1),
                (change, change + 24),
                (change + 25, change + 99),
                (change + 100, end),
            ]
            sections += [
                f"Planted stream: {args.documents:,} documents of {N_TOPICS} "
                f"topics, {N_REPLACED} replaced after update {change}; "
                f"minibatches of {args.batch_size}, K={N_TOPICS}, {args.seeds} "
                "seeds. Held-out log predictive per word on documents of the "
                "current topics: plain SVI's mean over each window of updates, "
                "and each setting's difference from it:",
                window_table(runs, windows),
                f"The drift signal (step >= {args.ratio:g} x the Robbins-Monro "
                f"schedule for {args.consecutive} updates in a row, after "
                f"update {args.warm_up}):",
                alarm_table(runs, change),
            ]
        if "tweets" in args.streams:
            X, score = tweet_stream(args)
            runs = [
                run(X, score, args.batch_size, args, seed, X.shape[0])
                for seed in range(args.seeds)
            ]
            end = X.shape[0] // args.batch_size
            thirds = [(1 + end * i // 3, end * (i + 1) // 3) for i in range(3)]
            sections += [
                f"healthtweets in the order of their ids: {X.shape[0]:,} tweets "
                f"in minibatches of {args.batch_size}, K={N_TOPICS}, "
                f"{args.seeds} seeds. Held-out log predictive per word on the "
                f"next {TWEETS_SCORED:,} tweets of the stream, before any model "
                "has seen them: plain SVI's mean over each third of the stream, "
                "and each setting's difference from it:",
                window_table(runs, thirds),
                "Drift alarms (update numbers, first seed):",
                simple_table(
                    ["Filter", "alarms"],
                    [
                        [name, ", ".join(map(str, alarms)) or "none"]
                        for name, alarms in runs[0][1].items()
                        if "filter" in name or "adaptive" in name
                    ],
                ),
            ]
    write_results(RESULTS_PATH, sections)
    print(*sections, sep="\n\n")


if __name__ == "__main__":
    main()
