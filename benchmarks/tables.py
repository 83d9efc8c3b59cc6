"""Plain-text tables that are also reStructuredText simple tables, and reports."""

import re
from dataclasses import dataclass

import numpy as np


def simple_table(header, rows):
    """Format rows of strings as a reStructuredText simple table.

    The first column is left-aligned and the others right-aligned, so the
    table reads well as plain text too.

    Parameters
    ----------
    header : list of str
        The column titles.
    rows : list of list of str
        The cells, one list per row.

    Returns
    -------
    table : str
        The table, without a trailing newline.
    """
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    rule = "  ".join("=" * width for width in widths)

    def line(cells):
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([rule, line(header), rule, *map(line, rows), rule])


def mean_spread(values, digits, sign=""):
    """``"mean ± standard deviation"`` of ``values`` with ``digits`` decimals.

    Parameters
    ----------
    values : array-like
        The measurements, one per seed.
    digits : int
        Number of decimals.
    sign : str, default=""
        ``"+"`` to always show the sign of the mean.

    Returns
    -------
    text : str
    """
    return f"{np.mean(values):{sign}.{digits}f} ± {np.std(values):.{digits}f}"


def write_results(path, sections):
    """Write the sections of a report, separated by blank lines, to ``path``.

    Parameters
    ----------
    path : pathlib.Path
        The reStructuredText file under ``benchmarks/results``.
    sections : list of str
        The paragraphs and tables of the report.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join(sections) + "\n")
    print(f"Wrote {path}")


def report(path, settings, table):
    """Print the settings and the table of a comparison, and write them.

    Parameters
    ----------
    path : pathlib.Path
        The reStructuredText file under ``benchmarks/results``.
    settings : str
        The paragraph that states what was measured.
    table : str
        The table of the results.
    """
    print()
    print(settings)
    print(table)
    write_results(path, [settings, table])


@dataclass(frozen=True)
class SimpleTable:
    """A table of :func:`simple_table`, read back from a results file.

    Attributes
    ----------
    lines : tuple of str
        The table as written: a rule, the header, a rule, one line per row
        and a closing rule.
    """

    lines: tuple

    def cells(self, line):
        """The cells of one of the table's lines, cut where the rule's
        columns start."""
        starts = [match.start() for match in re.finditer("=+", self.lines[0])]
        ends = [*starts[1:], None]
        return [line[start:end].strip() for start, end in zip(starts, ends)]

    @property
    def header(self):
        """The column titles."""
        return self.cells(self.lines[1])

    def row(self, label):
        """The cells of the row whose first cell is ``label``, by column title.

        Raises
        ------
        KeyError
            If no row has that label.
        """
        for line in self.lines[3:-1]:
            cells = self.cells(line)
            if cells[0] == label:
                return dict(zip(self.header, cells))
        raise KeyError(f"no row {label!r} in the table with header {self.header}")

    def __str__(self):
        return "\n".join(self.lines)


def read_tables(path):
    """The simple tables of a results file, in order.

    Parameters
    ----------
    path : pathlib.Path
        A file written by :func:`write_results`.

    Returns
    -------
    tables : list of SimpleTable
    """
    rule = re.compile(r"=+( +=+)*")
    tables, lines, n_rules = [], [], 0
    for line in path.read_text().splitlines():
        is_rule = rule.fullmatch(line) is not None
        if lines or is_rule:
            lines.append(line)
            n_rules += is_rule
        if n_rules == 3:
            tables.append(SimpleTable(tuple(lines)))
            lines, n_rules = [], 0
    return tables
