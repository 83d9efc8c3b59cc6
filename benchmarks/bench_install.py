"""The README's set-up commands from a fresh clone: their time, what they compile.

Clones this repository into a temporary folder, makes a new virtual
environment there, and runs, as a newcomer would, the first command
(``pip install -e .`` and the demo) and the installation of the second
(``pip install -e ".[test]"``; the test run that follows it is not timed).
Prints the wall time of each and the number of compiler calls in pip's
verbose log: the second install should compile nothing.

Run ``python benchmarks/bench_install.py``. Downloads go through pip as
usual, so a warm pip cache makes the installs faster.
"""

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import argument_parser
from tables import simple_table, write_results

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"

# A compiler call in pip's verbose log of a build.
COMPILER_CALL = re.compile(r"^\s*(gcc|cc|clang|x86_64-linux-gnu-gcc)\s", re.MULTILINE)


def timed(command, folder):
    """Run ``command`` in a shell in ``folder``; its wall time and output."""
    started = time.perf_counter()
    result = subprocess.run(
        command,
        shell=True,
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, result.stdout + result.stderr


def main(argv=None):
    argument_parser(__doc__).parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(clone / "venv")], check=True)
        python = clone / "venv" / "bin" / "python"
        steps = [
            ("pip install -e .", f"{python} -m pip install -v -e ."),
            ("python -m sklearn_svi demo", f"{python} -m sklearn_svi demo"),
            ('pip install -e ".[test]"', f'{python} -m pip install -v -e ".[test]"'),
        ]
        total = 0.0
        for label, command in steps:
            seconds, output = timed(command, clone)
            total += seconds
            compiled = len(COMPILER_CALL.findall(output))
            rows.append([label, f"{seconds:.1f}", str(compiled)])
            print(*rows[-1], flush=True)
    rows.append(["together", f"{total:.1f}", ""])
    header = (
        "The README's set-up commands from a fresh clone in a fresh virtual "
        "environment (the test run of the second command not included): wall "
        "seconds, and compiler calls in pip's verbose log"
    )
    table = simple_table(["command", "seconds", "compiler calls"], rows)
    print(table)
    write_results(RESULTS_DIR / "install.rst", [header, table])


if __name__ == "__main__":
    main()
