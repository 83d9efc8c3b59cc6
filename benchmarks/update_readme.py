"""Write the benchmark table of README.rst from benchmarks/results/.

GitHub renders README.rst without an include directive, so its table of
results is a copy (the documentation includes the results files
themselves). It stands between two comments that name it::

    .. results: NAME

    (the table)

    .. end results

and this script rewrites what stands between them from the results files,
as the function of that name below says. The prose around the table is not
touched; where a new run changes a number it quotes, edit it by hand.

Run ``python benchmarks/update_readme.py`` after a benchmark has written new
results; ``--check`` only reports whether README.rst is up to date (the
test suite runs it).
"""

import argparse
import difflib
import re
import sys
from pathlib import Path

from tables import read_tables, simple_table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parent.parent / "README.rst"
SECTION = re.compile(
    r"^(?P<indent> *)\.\. results: (?P<name>\S+)\n.*?^(?P=indent)\.\. end results$",
    re.MULTILINE | re.DOTALL,
)

QUALITY_ROWS = {
    corpus: {
        "SmoothedLDA()": "SmoothedLDA() default, plain SVI (L=1)",
        "tomotopy, fixed priors": "tomotopy collapsed Gibbs, fixed priors",
    }
    for corpus in ("healthtweets", "NewsArticles", "npm")
}
"""For each corpus of ``quality_CORPUS.rst``, README's label of each row
shown and the label of that row in the results."""


def results_table(name, index=0):
    """The ``index``-th table of ``benchmarks/results/NAME.rst``."""
    return read_tables(RESULTS_DIR / f"{name}.rst")[index]


def quality_against_tomotopy():
    """Our default and tomotopy at each CPU budget, on each corpus.

    The means over seeds of the first table of each ``quality_CORPUS.rst``
    (``bench_quality.py``), one row per entry of ``QUALITY_ROWS``; "-"
    where a model had no checkpoint within the budget or was not run to it.
    """
    budgets = results_table(f"quality_{next(iter(QUALITY_ROWS))}").header[2:]
    rows = []
    for corpus, labels in QUALITY_ROWS.items():
        table = results_table(f"quality_{corpus}")
        for shown, label in labels.items():
            cells = table.row(label)
            means = [cells[budget].split(" ± ")[0] for budget in budgets]
            rows.append([f"{corpus}: {shown}", *means])
    header = [
        "Held-out log predictive per word after",
        *(f"{budget.removesuffix(' s')} CPU s" for budget in budgets),
    ]
    return simple_table(header, rows)


README_TABLES = {
    "quality_against_tomotopy": quality_against_tomotopy,
}
"""The function that writes each table of README, by the name its markers
give."""


def section(indent, name):
    """The markers of a table and the table between them, at ``indent``."""
    lines = [f".. results: {name}", "", *README_TABLES[name]().splitlines()]
    lines += ["", ".. end results"]
    return "\n".join(f"{indent}{line}" if line else line for line in lines)


def updated(text):
    """``text`` with the table between each pair of markers written anew.

    Raises
    ------
    ValueError
        If the markers do not name each table of ``README_TABLES`` exactly
        once.
    """
    names = [match["name"] for match in SECTION.finditer(text)]
    if sorted(names) != sorted(README_TABLES):
        raise ValueError(
            f"README's markers name the tables {names}; this script writes "
            f"each of {list(README_TABLES)} once."
        )
    return SECTION.sub(lambda match: section(match["indent"], match["name"]), text)


def main(argv=None):
    """Rewrite README.rst's tables, or with ``--check`` report whether they
    are up to date (exit status 1 and a diff if not)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; fail with a diff if README.rst is out of date",
    )
    args = parser.parse_args(argv)
    text = README.read_text()
    new_text = updated(text)
    if not args.check:
        if new_text != text:
            README.write_text(new_text)
        print(f"Wrote the tables of {README}")
    elif new_text != text:
        sys.stdout.writelines(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                new_text.splitlines(keepends=True),
                "README.rst",
                "README.rst as update_readme.py writes it",
            )
        )
        sys.exit(1)
    else:
        print(f"The tables of {README} are up to date.")


if __name__ == "__main__":
    main()
