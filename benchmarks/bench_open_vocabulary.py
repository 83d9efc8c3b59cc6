"""An open vocabulary: hashed counts with WordSketch against a fixed vocabulary.

A stream of two corpora, one after the other, whose second half brings as
many new words as the first had. Three parts:

1. **Collisions.** For each number of buckets 2^b of ``--bits``, the words
   of the whole stream hashed as ``HashingVectorizer`` hashes them: the
   share of the tokens whose word is not the most frequent of its bucket
   (the tokens that a bucket's name misreports), the share of the words
   that share a bucket, how often WordSketch names a bucket by its most
   frequent word (weighted by the bucket's tokens), and the memory of
   lambda (K 2^b float64) and of the sketch.
2. **The stream.** ``SmoothedLDA()`` fitted with ``partial_fit`` on the
   hashed counts (2^``--stream-bits`` buckets, English stop words removed)
   minibatch after minibatch, the sketch updated with each; beside it, a
   ``CountVectorizer`` fitted on the first half, as a fixed vocabulary must
   be. Printed: the distinct words of each half, the share of the second
   half's tokens that the fixed vocabulary drops, the resident memory of the
   process at each quarter of the stream, and the top words of the topics
   that the held-out documents of the second half use most, named by the
   sketch.
3. **Cost.** CPU milliseconds per ``partial_fit`` at each 2^b, one thread,
   of plain SVI as it is (its update writes the rows of the minibatch's
   buckets and scales the others) and of plain SVI writing every row.

Run ``python benchmarks/bench_open_vocabulary.py healthtweets FILE --column
summary`` (the second corpus a tab-separated file) or ``python
benchmarks/bench_open_vocabulary.py healthtweets NewsArticles``.
"""

import time
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer
from threadpoolctl import threadpool_limits

from sklearn_svi import SmoothedLDA, WordSketch, top_words
from sklearn_svi._topics import read_texts

from _common import EveryRowSVI, argument_parser
from bench_soak import resident_mib
from corpus import BUILT_IN_CORPORA, corpus_name, load_texts
from tables import simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"
HELD_OUT_FRACTION = 0.05


def texts_of(corpus, column):
    """The texts of a built-in corpus or of a file."""
    return (
        load_texts(corpus) if corpus in BUILT_IN_CORPORA else read_texts(corpus, column)
    )


def hashing(bits):
    """The counting HashingVectorizer of 2**bits buckets."""
    return HashingVectorizer(
        n_features=2**bits, alternate_sign=False, norm=None, stop_words="english"
    )


def word_counts(texts):
    """Every token of ``texts`` with its count, as the vectorizers split them."""
    analyze = hashing(10).build_analyzer()
    counts = Counter()
    for text in texts:
        counts.update(analyze(text))
    return counts


def collision_row(bits, counts, sketch, n_components):
    """Part 1's measurements at 2**bits buckets."""
    words = np.array(list(counts), dtype=object)
    tokens = np.array(list(counts.values()), dtype=np.float64)
    buckets = sketch._buckets(words)
    order = np.lexsort((-tokens, buckets))
    sorted_buckets = buckets[order]
    first = np.r_[True, sorted_buckets[1:] != sorted_buckets[:-1]]
    leaders = order[first]
    shared = np.bincount(buckets, minlength=2**bits)[buckets] > 1
    names = sketch.get_feature_names_out()
    named_right = names[buckets[leaders]] == words[leaders].astype(str)
    bucket_tokens = np.bincount(buckets, weights=tokens, minlength=2**bits)
    named_right_share = bucket_tokens[buckets[leaders]][named_right].sum()
    named_right_share /= tokens.sum()
    sketch_bytes = (
        sketch.candidate_counts_.nbytes
        + sketch.bucket_counts_.nbytes
        + sketch.candidate_words_.nbytes
        + sum(len(word) + 49 for word in set(sketch.candidate_words_.ravel()))
    )
    return [
        f"2^{bits}",
        f"{100 * (1 - tokens[leaders].sum() / tokens.sum()):.2f}",
        f"{100 * shared.mean():.1f}",
        f"{100 * named_right_share:.2f}",
        f"{n_components * 2**bits * 8 / 2**20:.0f}",
        f"{sketch_bytes / 2**20:.0f}",
    ]


def minibatches(texts, batch_size):
    return [texts[i : i + batch_size] for i in range(0, len(texts), batch_size)]


def stream(args, first, second, held_out):
    """Part 2: the hashed fit of the stream, and the fixed vocabulary."""
    sketch = WordSketch(hashing(args.stream_bits))
    lda = SmoothedLDA(
        n_components=args.n_components,
        batch_size=args.batch_size,
        total_samples=len(first) + len(second),
        random_state=0,
    )
    batches = minibatches(first, args.batch_size) + minibatches(second, args.batch_size)
    quarters = {round(len(batches) * q / 4) for q in (1, 2, 3, 4)}
    memory = []
    for number, texts in enumerate(batches, start=1):
        sketch.partial_fit(texts)
        lda.partial_fit(sketch.transform(texts))
        if number in quarters:
            memory.append((number, sketch.n_documents_seen_, resident_mib()))
    fixed = CountVectorizer(stop_words="english").fit(first)
    second_tokens = word_counts(second)
    dropped = sum(
        count for word, count in second_tokens.items() if word not in fixed.vocabulary_
    ) / sum(second_tokens.values())
    first_words = set(word_counts(first))
    all_words = first_words | set(second_tokens)

    use = lda.transform(sketch.transform(held_out)).mean(axis=0)
    names = sketch.get_feature_names_out()
    share = sketch.leading_share()
    topics = top_words(lda, names, n_words=8)
    leading = np.argsort(-lda.components_, axis=1)[:, :8]
    lines = [
        f"topic {k} ({100 * use[k]:.1f}% of the held-out second corpus): "
        + ", ".join(
            word if share[column] > 0.9 else f"{word}*"
            for word, column in zip(topics[k], leading[k])
        )
        for k in np.argsort(-use)[: args.show_topics]
    ]
    summary = (
        f"Distinct words: {len(first_words):,} in the first half, "
        f"{len(all_words):,} in both ({len(all_words) / len(first_words):.2f} times). "
        f"A CountVectorizer fitted on the first half drops {100 * dropped:.1f}% "
        "of the second half's tokens; the hashed counts keep all of them."
    )
    memory_table = simple_table(
        ["Updates", "Documents", "RSS MiB"],
        [[f"{n}", f"{d:,}", f"{m:.0f}"] for n, d, m in memory],
    )
    return summary, memory_table, lines


def update_cost(args, texts):
    """Part 3: CPU ms per partial_fit at each number of buckets, of plain
    SVI as it is (writing the minibatch's rows) and writing every row."""
    rows = []
    batches = minibatches(texts, args.batch_size)[: args.cost_updates]
    for bits in args.bits:
        sketch = WordSketch(hashing(bits)).fit(texts[: args.batch_size])
        counts = [sketch.transform(batch) for batch in batches]
        row = [f"2^{bits}"]
        for model in (SmoothedLDA, EveryRowSVI):
            lda = model(
                n_components=args.n_components,
                batch_size=args.batch_size,
                total_samples=len(texts),
                random_state=0,
            )
            lda.partial_fit(counts[0])
            started = time.process_time()
            for X in counts[1:]:
                lda.partial_fit(X)
            seconds = (time.process_time() - started) / (len(counts) - 1)
            row.append(f"{1e3 * seconds:.1f}")
        rows.append(row)
    return simple_table(["Buckets", "ms per partial_fit", "writing every row"], rows)


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("first", help=f"a text file, or one of {BUILT_IN_CORPORA}")
    parser.add_argument("second", help="the corpus of the second half")
    parser.add_argument("--column", help="the column of texts of a TSV file")
    parser.add_argument("--bits", type=int, nargs="+", default=[14, 16, 18, 20])
    parser.add_argument("--stream-bits", type=int, default=18)
    parser.add_argument("--n-components", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--show-topics", type=int, default=8)
    parser.add_argument("--cost-updates", type=int, default=40)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    first = list(texts_of(args.first, args.column))
    second = list(texts_of(args.second, args.column))
    first = [first[i] for i in rng.permutation(len(first))]
    second = [second[i] for i in rng.permutation(len(second))]
    n_held_out = round(HELD_OUT_FRACTION * len(second))
    held_out, second = second[:n_held_out], second[n_held_out:]
    name = f"{corpus_name(args.first)}_then_{corpus_name(args.second)}"
    header = (
        f"{corpus_name(args.first)} ({len(first):,} texts) then "
        f"{corpus_name(args.second)} ({len(second):,} texts, {n_held_out:,} more "
        f"held out); K={args.n_components}, minibatches of {args.batch_size}, "
        "English stop words removed."
    )
    print(header)

    with threadpool_limits(1):
        counts = word_counts(first + second)
        collision_rows = [
            collision_row(
                bits,
                counts,
                WordSketch(hashing(bits)).fit(first + second),
                args.n_components,
            )
            for bits in args.bits
        ]
        collisions = simple_table(
            [
                "Buckets",
                "% tokens not the name",
                "% words sharing",
                "% tokens named right",
                "lambda MiB",
                "sketch MiB",
            ],
            collision_rows,
        )
        print(collisions)
        summary, memory_table, topic_lines = stream(args, first, second, held_out)
        print(summary, memory_table, *topic_lines, sep="\n")
        cost = update_cost(args, first + second)
        print(cost)
    write_results(
        RESULTS_DIR / f"open_vocabulary_{name}.rst",
        [
            header,
            f"{len(counts):,} distinct words in the stream. Collisions:",
            collisions,
            summary + " Resident memory along the stream:",
            memory_table,
            "The topics the held-out documents of the second corpus use most, "
            "named by the sketch (* marks a name with 90% or less of its "
            "bucket's tokens):",
            "\n".join(f"- {line}" for line in topic_lines),
            "CPU time per partial_fit, one thread:",
            cost,
        ],
    )


if __name__ == "__main__":
    main()
