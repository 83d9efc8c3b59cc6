"""The documentation builds without a single Sphinx warning, and its
examples run.

It needs the ``docs`` extra (Sphinx, its gallery, Matplotlib and pyLDAvis):
``pip install -e ".[docs]" && python -m pytest docs/test_build.py``, which
continuous integration runs after the test suite.
"""

import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent


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
