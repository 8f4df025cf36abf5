"""Reading text a line at a time with bounded memory, whatever the input holds."""

import ast
import re
import warnings
from collections.abc import Iterator
from typing import TextIO

# A single record (one JSON line, one log line) larger than this is refused, not read into memory.
MAX_LINE_CHARS = 8 * 1024 * 1024
# JSON formats that are one document are read whole, up to this size.
MAX_DOCUMENT_CHARS = 64 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def python_literal(text: str, default=None):
    r"""A Python literal from a log line (a dict repr, a Namespace's values) by ast.literal_eval, never eval;
    `default` when it is not one, too deep, or too big. Escape sequences Python would warn about ('\e' in
    a name) are read as written, without the warning."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, OverflowError):
        return default  # OverflowError: a literal like 10**400 + 1j that literal_eval adds up


class TooLong:
    """Stands for a line longer than the cap (its text is skipped, never held)."""

    def __init__(self, chars: int):
        self.chars = chars


def bounded_lines(stream: TextIO, max_chars: int = MAX_LINE_CHARS) -> Iterator[tuple[int, "str | TooLong"]]:
    """(line number, text) for every line; a line over max_chars comes as TooLong and is skipped."""
    number = 0
    readline = stream.readline
    while True:
        text = readline(max_chars + 1)
        if not text:
            return
        number += 1
        if len(text) <= max_chars or text.endswith("\n"):
            yield number, text
            continue
        chars = len(text)
        while True:  # drain the rest of the over-long line without keeping it
            rest = readline(_SKIP_CHUNK)
            chars += len(rest)
            if not rest or rest.endswith("\n"):
                chars -= rest.endswith("\n")
                break
        yield number, TooLong(chars)


def read_document(stream: TextIO, max_chars: int = MAX_DOCUMENT_CHARS) -> str | None:
    """The whole text, or None when it is larger than max_chars."""
    text = stream.read(max_chars + 1)
    return None if len(text) > max_chars else text


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text) if "\x1b" in text else text
