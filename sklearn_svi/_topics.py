"""Topics of a text file from the command line: ``python -m sklearn_svi topics``."""

import csv
import sys
import time

import joblib
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from .lda import SmoothedLDA, top_words
from .metrics import completion_score

# Fraction of the documents held out to report the fit, when there are at
# least MIN_HELD_OUT of them.
HELD_OUT_FRACTION = 0.05
MIN_HELD_OUT = 20
# Progress lines per pass.
REPORTS_PER_PASS = 4


def read_texts(path, column=None):
    """The non-empty texts of a file: one per line, or a column of a TSV file.

    Parameters
    ----------
    path : str or Path
        A UTF-8 text file with one text per line, or, when ``column`` is
        given, a tab-separated file whose first line names the columns.
        Bytes that are not UTF-8 are replaced.
    column : str or None, default=None
        The column holding the texts.

    Returns
    -------
    texts : list of str
        Stripped of surrounding white space.
    """
    csv.field_size_limit(sys.maxsize)
    with open(path, encoding="utf-8", errors="replace", newline="") as stream:
        if column is None:
            texts = [line.strip() for line in stream]
        else:
            reader = csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
            if column not in (reader.fieldnames or []):
                raise ValueError(
                    f"{path} has no column {column!r}; its columns are "
                    f"{reader.fieldnames}."
                )
            texts = [(row[column] or "").strip() for row in reader]
    return [text for text in texts if text]


def fit_topics(
    path,
    *,
    column=None,
    n_components=20,
    passes=5,
    batch_size=256,
    min_df=5,
    n_words=10,
    output=None,
    random_state=0,
    stream=None,
):
    """Fit SmoothedLDA to a text file, report progress, print the topics.

    The texts are counted by a CountVectorizer (English stop words removed,
    words in fewer than ``min_df`` texts dropped); 5% of them are held out
    and scored by document completion as the fit goes on.

    Parameters
    ----------
    path, column
        As for :func:`read_texts`.
    n_components : int, default=20
        Number of topics.
    passes : int, default=5
        Passes over the training texts.
    batch_size : int, default=256
        Texts per minibatch.
    min_df : int, default=5
        Minimum number of texts a word must appear in.
    n_words : int, default=10
        Words printed per topic.
    output : str or None, default=None
        Where to save the fitted pipeline (vectoriser and model) with
        joblib; None saves nothing.
    random_state : int, default=0
        Seed of the order of the texts and of the model.
    stream : file, default=None
        Where the progress and the topics are written; None is standard
        output.

    Returns
    -------
    pipeline : Pipeline
        The fitted CountVectorizer and SmoothedLDA.
    """
    stream = sys.stdout if stream is None else stream
    texts = read_texts(path, column)
    vectorizer = CountVectorizer(stop_words="english", min_df=min_df, max_df=0.5)
    X = vectorizer.fit_transform(texts).astype(np.float64)
    rng = np.random.default_rng(random_state)
    order = rng.permutation(X.shape[0])
    n_held_out = round(HELD_OUT_FRACTION * X.shape[0])
    if n_held_out < MIN_HELD_OUT:
        n_held_out = 0
    X_held_out, X_train = X[order[:n_held_out]], X[order[n_held_out:]]
    if not np.any(np.asarray(X_held_out.sum(axis=1)) >= 2):
        # Document completion needs texts of two words or more.
        X_held_out = X_held_out[:0]
    print(
        f"{X.shape[0]} texts, {X.shape[1]} words; fitting {n_components} topics "
        f"on {X_train.shape[0]} texts, {n_held_out} held out.",
        file=stream,
    )
    model = SmoothedLDA(
        n_components=n_components,
        batch_size=batch_size,
        total_samples=X_train.shape[0],
        random_state=random_state,
    )
    start = time.perf_counter()
    for current_pass in range(1, passes + 1):
        shuffled = X_train[rng.permutation(X_train.shape[0])]
        n_batches = -(-shuffled.shape[0] // batch_size)
        # Each partial_fit call takes whole minibatches, a few per report.
        for chunk in np.array_split(
            np.arange(n_batches), min(REPORTS_PER_PASS, n_batches)
        ):
            model.partial_fit(
                shuffled[chunk[0] * batch_size : (chunk[-1] + 1) * batch_size]
            )
            _report(
                model,
                current_pass,
                passes,
                chunk[-1] + 1,
                n_batches,
                X_held_out,
                time.perf_counter() - start,
                stream,
            )
    print(file=stream)
    for k, words in enumerate(
        top_words(model, vectorizer.get_feature_names_out(), n_words)
    ):
        print(f"topic {k:2d}: {' '.join(words)}", file=stream)
    pipeline = make_pipeline(vectorizer, model)
    if output is not None:
        joblib.dump(pipeline, output)
        print(f"\nSaved the vectoriser and the model to {output}.", file=stream)
    return pipeline


def _report(model, current_pass, passes, count, n_batches, X_held_out, seconds, stream):
    """Print one progress line, with the held-out fit when there is one."""
    line = (
        f"pass {current_pass}/{passes}, minibatch {count}/{n_batches}, {seconds:.1f} s"
    )
    if X_held_out.shape[0]:
        score = completion_score(model, X_held_out)
        line += f", held-out log predictive per word {score:.4f}"
    print(line, file=stream, flush=True)
