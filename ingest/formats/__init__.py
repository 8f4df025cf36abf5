"""The input formats specdash reads. Each module gives NAME, HELP, detect() and parse().

detect(head, filename) looks at the first bytes (decoded text) and the file name; parse(stream, path)
reads a text stream and yields Located records or Problems."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from specdash.ingest.formats import native
from specdash.ingest.problems import Problem
from specdash.ingest.records import AnyRecord


@dataclass(frozen=True)
class Located:
    line: int | None
    record: AnyRecord


@dataclass(frozen=True)
class Format:
    name: str
    help: str
    detect: Callable[[str, str], bool]
    parse: Callable[[TextIO, str], Iterator["Located | Problem"]]


FORMATS: list[Format] = [
    Format(native.NAME, native.HELP, native.detect, native.parse),
]

BY_NAME = {f.name: f for f in FORMATS}


def detect_format(head: str, filename: str) -> Format | None:
    for fmt in FORMATS:
        if fmt.detect(head, filename):
            return fmt
    return None
