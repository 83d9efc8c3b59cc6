"""The documentation builds without a single Sphinx warning."""

import subprocess
import sys
from pathlib import Path

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
