"""The documentation builds without a single Sphinx warning, and its
examples run."""

import doctest
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_svi.factorization import _estimator as factorization_estimator
from sklearn_svi.lda import _estimators as lda_estimators
from sklearn_svi.metrics import _coherence as coherence_metrics
from sklearn_svi.metrics import _completion as completion_metrics
from sklearn_svi.metrics import _stability as stability_metrics
from sklearn_svi.mixture import _estimator as mixture_estimator

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_docs_build_without_warnings(tmp_path):
    # The HTML and the doctrees go to tmp_path; the API pages that autosummary
    # writes into docs/generated/ are git-ignored.
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "-d",
        str(tmp_path / "doctrees"),
        str(DOCS),
        str(tmp_path / "html"),
    ]
    result = subprocess.run(
        command, cwd=DOCS.parent, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, (
        f"sphinx exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    html = tmp_path / "html"
    # The gallery: every example ran and drew its figure.
    examples = sorted((DOCS / "examples").glob("plot_*.py"))
    assert len(examples) >= 6
    for example in examples:
        assert (html / "_images" / f"sphx_glr_{example.stem}_001.png").exists()
    # Names of scikit-learn and NumPy link to their documentation.
    guide = (html / "user_guide.html").read_text(encoding="utf-8")
    assert (
        "https://scikit-learn.org/stable/modules/generated/"
        "sklearn.mixture.BayesianGaussianMixture.html" in guide
    )
    example = (html / "auto_examples" / "plot_topics.html").read_text(encoding="utf-8")
    assert "https://numpy.org/doc/stable/reference/generated/" in example
    # The topics example's pyLDAvis page is part of the site, and linked.
    assert 'href="../pyldavis_topics.html"' in example
    assert "LDAvis" in (html / "pyldavis_topics.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "module",
    [
        lda_estimators,
        mixture_estimator,
        factorization_estimator,
        completion_metrics,
        coherence_metrics,
        stability_metrics,
    ],
)
def test_docstring_examples(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
