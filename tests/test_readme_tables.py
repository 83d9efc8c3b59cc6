"""README.rst's benchmark tables are those that benchmarks/update_readme.py
writes from benchmarks/results/, and README.rst renders without a warning."""

import subprocess
import sys
from pathlib import Path

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
