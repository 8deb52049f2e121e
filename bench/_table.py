"""The plain-text table every benchmark prints."""

from __future__ import annotations


def table(title: str, headers: list[str], rows: list[list[str]], note: str = "") -> None:
    # max() of one int fails: a section can have no rows (e.g. only variants that skip its sizes were chosen).
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(width) for c, width in zip(cells[1:], widths[1:], strict=True))])

    print()
    print(title)
    print(line(headers))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print(line(row))
    if note:
        print(note)
