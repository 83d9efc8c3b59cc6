"""Plain-text tables that are also reStructuredText simple tables, and reports."""

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
