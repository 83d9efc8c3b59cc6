"""Topics of text files from the command line: ``python -m sklearn_svi topics``
and ``... transform``."""

import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from ._report import TopicReport
from .lda import AnnealedLDA, FilteredLDA, SmoothedLDA, top_words
from .metrics import completion_score

# Fraction of the documents held out to report the fit, when there are at
# least MIN_HELD_OUT of them.
HELD_OUT_FRACTION = 0.05
MIN_HELD_OUT = 20
# Progress lines per pass.
REPORTS_PER_PASS = 4
# The estimators of ``--method``, with their defaults.
METHODS = {"smoothed": SmoothedLDA, "annealed": AnnealedLDA, "filtered": FilteredLDA}


def read_texts(path, column=None):
    """The non-empty texts of one file: one per line, or a column of a TSV file.

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
    return [text for _, text in _numbered_texts(path, column)]


def read_documents(paths, column=None):
    """The documents of files and folders, and where each comes from.

    Parameters
    ----------
    paths : sequence of str or Path
        Files, each holding one text per line (or a column of texts, see
        :func:`read_texts`), and folders, each of whose files (all of them,
        in sub-folders too, in sorted order) is one document.
    column : str or None, default=None
        The column of texts of the tab-separated files given directly.

    Returns
    -------
    texts : list of str
        The non-empty documents.
    sources : list of str
        Where each comes from: ``FILE:LINE`` for a line, the file's path for
        a file of a folder.

    Raises
    ------
    ValueError
        If a path does not exist or cannot be read, or no document is left.
    """
    texts, sources = [], []
    for path in map(Path, paths):
        try:
            if path.is_dir():
                for file in sorted(item for item in path.rglob("*") if item.is_file()):
                    text = file.read_text(encoding="utf-8", errors="replace").strip()
                    if text:
                        texts.append(text)
                        sources.append(str(file))
            else:
                for number, text in _numbered_texts(path, column):
                    texts.append(text)
                    sources.append(f"{path}:{number}")
        except OSError as error:
            raise ValueError(f"cannot read {path}: {error.strerror}") from error
    if not texts:
        raise ValueError(
            f"no text in {', '.join(map(str, paths))}: every file is empty."
        )
    return texts, sources


def _numbered_texts(path, column):
    """(line or row number from 1, text) of the non-empty texts of a file."""
    csv.field_size_limit(sys.maxsize)
    with open(path, encoding="utf-8", errors="replace", newline="") as stream:
        if column is None:
            rows = ((number, line) for number, line in enumerate(stream, start=1))
        else:
            reader = csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE)
            if column not in (reader.fieldnames or []):
                raise ValueError(
                    f"{path} has no column {column!r}; its columns are "
                    f"{reader.fieldnames}."
                )
            # Row numbers count the header as line 1.
            rows = (
                (number, row[column] or "")
                for number, row in enumerate(reader, start=2)
            )
        return [(number, text.strip()) for number, text in rows if text.strip()]


def _write_atomically(path, write):
    """Call ``write(temporary_path)`` and move the result to ``path``, so that
    a failure leaves nothing at ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, suffix=".partial")
    os.close(handle)
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def fit_topics(
    path,
    *,
    column=None,
    method="smoothed",
    n_components=20,
    passes=5,
    batch_size=256,
    min_df=5,
    n_words=10,
    output=None,
    report=None,
    random_state=0,
    stream=None,
):
    """Fit topics to text files, report progress, print the topics.

    The texts are counted by a CountVectorizer (English stop words removed,
    words in fewer than ``min_df`` texts dropped); 5% of them are held out
    and scored by document completion as the fit goes on.

    Parameters
    ----------
    path, column
        Files and folders (a str or a list), as for :func:`read_documents`.
    method : {"smoothed", "annealed", "filtered"}, default="smoothed"
        SmoothedLDA, AnnealedLDA or FilteredLDA, with its defaults.
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
        joblib; None saves nothing. Nothing is written if the fit fails.
    report : str or None, default=None
        Where to write the topics' HTML report (:class:`TopicReport`) of
        all the texts, held-out ones included; None writes none.
    random_state : int, default=0
        Seed of the order of the texts and of the model.
    stream : file, default=None
        Where the progress and the topics are written; None is standard
        output.

    Returns
    -------
    pipeline : Pipeline
        The fitted CountVectorizer and LDA estimator.
    """
    stream = sys.stdout if stream is None else stream
    paths = [path] if isinstance(path, str | os.PathLike) else list(path)
    texts, _ = read_documents(paths, column)
    if len(texts) < 2:
        raise ValueError(f"topics need at least 2 texts, found {len(texts)}.")
    vectorizer = CountVectorizer(stop_words="english", min_df=min_df, max_df=0.5)
    try:
        X = vectorizer.fit_transform(texts).astype(np.float64)
    except ValueError as error:
        raise ValueError(
            f"no words left to fit topics to ({error}); try a smaller --min-df."
        ) from error
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
    model = METHODS[method](
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
        _write_atomically(output, lambda temporary: joblib.dump(pipeline, temporary))
        print(f"\nSaved the vectoriser and the model to {output}.", file=stream)
    if report is not None:
        page = TopicReport(pipeline, texts, n_words=max(n_words, 30))
        _write_atomically(report, page.save)
        print(f"Wrote the topic report to {report}.", file=stream)
    return pipeline


def transform_texts(model_path, paths, output, *, column=None):
    """Write the topic proportions of documents as CSV.

    Parameters
    ----------
    model_path : str
        A pipeline saved by :func:`fit_topics` (``--output``).
    paths : sequence of str
        Files and folders, as for :func:`read_documents`.
    output : str
        The CSV file: a header ``source,topic0,topic1,...`` and one row per
        document. Nothing is written if anything fails.
    column : str or None, default=None
        As for :func:`read_documents`.

    Returns
    -------
    proportions : ndarray of shape (n_documents, n_topics)
    """
    try:
        pipeline = joblib.load(model_path)
    # A file that is not a pickle fails with errors of many kinds.
    except Exception as error:
        raise ValueError(f"cannot load a model from {model_path}: {error}") from error
    if not hasattr(pipeline, "transform") or not hasattr(pipeline, "steps"):
        raise ValueError(f"{model_path} does not hold a pipeline saved by topics.")
    texts, sources = read_documents(paths, column)
    proportions = pipeline.transform(texts)
    n_topics = proportions.shape[1]

    def write(temporary):
        with open(temporary, "w", encoding="utf-8", newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(["source", *(f"topic{k}" for k in range(n_topics))])
            for source, row in zip(sources, proportions):
                writer.writerow([source, *(f"{value:.6f}" for value in row)])

    _write_atomically(output, write)
    return proportions


def _report(model, current_pass, passes, count, n_batches, X_held_out, seconds, stream):
    """Print one progress line, with the held-out fit when there is one."""
    line = (
        f"pass {current_pass}/{passes}, minibatch {count}/{n_batches}, {seconds:.1f} s"
    )
    if X_held_out.shape[0]:
        score = completion_score(model, X_held_out)
        line += f", held-out log predictive per word {score:.4f}"
    print(line, file=stream, flush=True)
