"""README.rst's benchmark tables are those that benchmarks/update_readme.py
writes from benchmarks/results/, README.rst renders without a warning, and
its examples run as written."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_readme_tables_match_results():
    script = ROOT / "benchmarks" / "update_readme.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        "README.rst's tables differ from benchmarks/results/; run "
        "python benchmarks/update_readme.py\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )


def test_readme_renders_without_warnings():
    # GitHub renders README.rst with docutils; a malformed table shows as an
    # error there.
    core = pytest.importorskip("docutils.core")
    utils = pytest.importorskip("docutils.utils")
    source = (ROOT / "README.rst").read_text(encoding="utf-8")
    try:
        core.publish_doctree(
            source, settings_overrides={"halt_level": 2, "report_level": 5}
        )
    except utils.SystemMessage as message:
        pytest.fail(f"README.rst does not render cleanly: {message}")


def python_blocks(text):
    """The bodies of the ``.. code-block:: python`` directives of ``text``."""
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    return [textwrap.dedent(block) for block in blocks]


def test_readme_examples_run_as_written(tmp_path, monkeypatch):
    # The example reads corpus.txt, one text per line, from the working
    # directory: a corpus of 400 short texts over 60 words is written there.
    rng = np.random.default_rng(0)
    words = [f"word{i}" for i in range(60)]
    lines = [" ".join(rng.choice(words, size=12)) for _ in range(400)]
    (tmp_path / "corpus.txt").write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks((ROOT / "README.rst").read_text(encoding="utf-8"))
    assert blocks, "README.rst has no Python example"
    for block in blocks:
        namespace = {}
        exec(compile(block, "README.rst", "exec"), namespace)
        assert namespace["proportions"].shape == (400, 50)
