"""CSV read a row at a time with line numbers and the same per-line size cap as every other format."""

import csv
from collections.abc import Iterator
from typing import TextIO

from specdash.ingest.lines import MAX_LINE_CHARS, TooLong, bounded_lines
from specdash.ingest.problems import Problem

# A cell a spreadsheet would read as a formula (or, after a tab or carriage return, as the start of one).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: object) -> object:
    """A value as a CSV cell that a spreadsheet shows as text: a text cell starting with = + - @, a tab or a
    carriage return gets a leading ' (OWASP's advice for CSV injection); numbers stay numbers."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_rows(stream: TextIO, path: str) -> Iterator[tuple[int, dict[str, str]] | Problem]:
    """(line, {column: cell}) for each data row; blank cells are left out. Over-long lines and
    malformed rows come as parse problems."""
    too_long: list[int] = []

    def texts() -> Iterator[str]:
        for number, text in bounded_lines(stream, MAX_LINE_CHARS):
            if isinstance(text, TooLong):
                too_long.append(number)
                yield "\n"
            else:
                yield text

    reader = csv.reader(texts())
    try:
        header = next(reader, None)
    except csv.Error as exc:
        yield Problem(path, 1, None, f"invalid CSV: {exc}", "parse")
        return
    if not header:
        return
    header = [name.strip().lstrip("\ufeff") for name in header]
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield Problem(path, reader.line_num, None, f"invalid CSV: {exc}", "parse")
            continue
        if too_long:
            yield Problem(
                path, too_long.pop(), None, f"line longer than {MAX_LINE_CHARS:,} characters", "parse"
            )
            continue
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            yield Problem(
                path,
                reader.line_num,
                None,
                f"{len(row)} cells but the header names {len(header)} columns",
                "parse",
            )
            continue
        yield (
            reader.line_num,
            {name: cell.strip() for name, cell in zip(header, row, strict=False) if cell.strip()},
        )


def header_of(head: str) -> list[str]:
    first = head.lstrip("\ufeff").split("\n", 1)[0]
    try:
        return [name.strip() for name in next(csv.reader([first]))]
    except (csv.Error, StopIteration):
        return []
