"""Coherence against gensim's CoherenceModel: the same values, and the time each takes.

Fits ``SmoothedLDA()`` on a corpus, then scores its topics' top words with
:func:`sklearn_svi.metrics.coherence` and with gensim's ``CoherenceModel``
on the same training documents: ``"umass"`` against gensim's ``"u_mass"``
(the documents as a bag-of-words corpus), ``"uci"`` and ``"npmi"`` against
``"c_uci"`` and ``"c_npmi"`` with the documents as texts and a window at
least as long as the longest document (so that each document is one
window). Prints the largest difference over the topics and the CPU time of
each, on one thread.

Run ``python benchmarks/bench_coherence.py CORPUS [--column summary]`` (a
TSV file of texts, or NewsArticles / healthtweets). Needs gensim.
"""

import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_svi import SmoothedLDA
from sklearn_svi.metrics import coherence, top_word_indices

from _common import corpus_parser
from corpus import corpus_name, load_corpus
from tables import simple_table, write_results

RESULTS_DIR = Path(__file__).resolve().parent / "results"

GENSIM_MEASURES = {"umass": "u_mass", "uci": "c_uci", "npmi": "c_npmi"}


def token_lists(X):
    """Each document as a list of its tokens, the column index as the token."""
    X = X.tocsr()
    return [
        [
            str(word)
            for word, count in zip(X.indices[begin:end], X.data[begin:end])
            for _ in range(int(count))
        ]
        for begin, end in zip(X.indptr[:-1], X.indptr[1:])
    ]


def gensim_coherence(topics, texts, measure):
    """gensim's coherence of each topic (lists of tokens) on ``texts``."""
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    dictionary = Dictionary(texts)
    arguments = dict(topics=topics, dictionary=dictionary, topn=len(topics[0]))
    if measure == "umass":
        arguments["corpus"] = [dictionary.doc2bow(text) for text in texts]
    else:
        arguments["texts"] = texts
        arguments["window_size"] = max(len(text) for text in texts) + 1
    model = CoherenceModel(coherence=GENSIM_MEASURES[measure], processes=1, **arguments)
    return np.array(model.get_coherence_per_topic())


def main(argv=None):
    parser = corpus_parser(__doc__)
    parser.add_argument("--top-n", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=1024)
    args = parser.parse_args(argv)

    X = load_corpus(args.corpus, args.column, args.n_features)
    texts = token_lists(X)
    rows = []
    with threadpool_limits(limits=1):
        model = SmoothedLDA(
            n_components=args.n_components,
            batch_size=args.batch_size,
            max_iter=1,
            random_state=0,
        ).fit(X)
        top = top_word_indices(model, args.top_n)
        topics = [[str(word) for word in words] for words in top]
        for measure in GENSIM_MEASURES:
            started = time.process_time()
            ours = coherence(model, X, measure=measure, top_n=args.top_n, average=False)
            our_time = time.process_time() - started
            started = time.process_time()
            theirs = gensim_coherence(topics, texts, measure)
            their_time = time.process_time() - started
            rows.append(
                [
                    f"{measure} / gensim {GENSIM_MEASURES[measure]}",
                    f"{ours.mean():.6f}",
                    f"{theirs.mean():.6f}",
                    f"{np.max(np.abs(ours - theirs)):.1e}",
                    f"{our_time:.2f}",
                    f"{their_time:.2f}",
                    f"{their_time / our_time:.0f}x",
                ]
            )
            print(*rows[-1], flush=True)
    header = (
        f"{corpus_name(args.corpus)}: {X.shape[0]} documents, {X.shape[1]} words; "
        f"the topics of SmoothedLDA(n_components={args.n_components}) after one "
        f"pass, top {args.top_n} words; CPU seconds on one thread"
    )
    table = simple_table(
        [
            "measure",
            "ours",
            "gensim",
            "largest difference",
            "ours (s)",
            "gensim (s)",
            "speed-up",
        ],
        rows,
    )
    print(table)
    write_results(
        RESULTS_DIR / f"coherence_{corpus_name(args.corpus)}.rst", [header, table]
    )


if __name__ == "__main__":
    main()
