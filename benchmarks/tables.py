"""Plain-text tables that are also reStructuredText simple tables."""


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
