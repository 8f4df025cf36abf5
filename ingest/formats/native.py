"""specdash's own format: a JSON document of entity arrays, or JSONL with one `{"kind": ...}` record a line."""

import itertools
import json
from collections.abc import Iterator
from typing import TextIO

from pydantic import TypeAdapter, ValidationError

from specdash.ingest.formats import native_csv
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.jsontext import JSONPositionError, decode_line, iter_document
from specdash.ingest.lines import MAX_DOCUMENT_CHARS, TooLong, bounded_lines, read_document
from specdash.ingest.problems import Problem, from_validation_error
from specdash.ingest.records import RECORD_TYPES

NAME = "specdash"
HELP = 'specdash\'s own JSON document ({"specdash": 1, "runs": [...], ...}) or JSONL of {"kind": ...} records'

FORMAT_VERSION = 1
# Top-level arrays of a document, and the record kind of their elements.
SECTIONS = {
    "deployments": "deployment",
    "runs": "run",
    "checkpoints": "checkpoint",
    "metrics": "metrics",
    "benchmarks": "benchmark",
    "predictions": "prediction",
}
MAX_RECORD_CHARS = 8 * 1024 * 1024
MAX_LINE_CHARS = MAX_RECORD_CHARS
ADAPTERS = {kind: TypeAdapter(model) for kind, model in RECORD_TYPES.items()}


def detect(head: str, filename: str) -> bool:
    start = head.lstrip()
    if start.startswith("{") and '"specdash"' in head[:200]:
        return True
    first = start.split("\n", 1)[0]
    return first.startswith("{") and '"kind"' in first


def _validate(path: str, line: int, kind: str, value, prefix: str):
    adapter = ADAPTERS.get(kind)
    if adapter is None:
        yield Problem(path, line, f"{prefix}kind" if prefix else "kind", f"unknown record kind {kind!r}")
        return
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != "kind"}
    try:
        yield Located(line, adapter.validate_python(value))
    except ValidationError as exc:
        yield from from_validation_error(path, line, exc, prefix.rstrip("."))


def _is_record_line(text: str) -> bool:
    try:
        value = decode_line(text)
    except ValueError:
        return False
    return isinstance(value, dict) and "specdash" not in value


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    """JSONL is streamed line by line; a document is read whole (documents are small, JSONL may not be)."""
    lines = bounded_lines(stream, MAX_LINE_CHARS)
    leading: list[tuple[int, str | TooLong]] = []
    for number, text in lines:
        leading.append((number, text))
        if isinstance(text, TooLong) or text.strip():
            break
    first = leading[-1][1] if leading else ""
    if isinstance(first, str) and _is_record_line(first):
        yield from _parse_lines(itertools.chain(leading, lines), path)
        return
    if isinstance(first, TooLong):
        yield Problem(path, leading[-1][0], None, f"line longer than {MAX_LINE_CHARS:,} characters", "parse")
        return
    rest = read_document(stream, MAX_DOCUMENT_CHARS)
    if rest is None:
        yield Problem(path, None, None, f"document larger than {MAX_DOCUMENT_CHARS:,} characters", "parse")
        return
    # the lines read ahead are blank but the first: all text (a line too long returned above)
    yield from _parse_document("".join(t for _, t in leading if isinstance(t, str)) + rest, path)


def _parse_document(text: str, path: str) -> Iterator:
    counters: dict[str, int] = {}
    version_seen = False
    try:
        for key, line, value in iter_document(text):
            if key == "specdash":
                version_seen = True
                if value != FORMAT_VERSION:
                    yield Problem(path, line, "specdash", f"format version {value!r} is not {FORMAT_VERSION}")
                continue
            kind = SECTIONS.get(key)
            if kind is None:
                yield Problem(path, line, key, f"unknown section; expected one of {', '.join(SECTIONS)}")
                continue
            index = counters.get(key, 0)
            counters[key] = index + 1
            yield from _validate(path, line, kind, value, f"{key}.{index}.")
    except JSONPositionError as exc:
        yield Problem(path, exc.line, None, f"invalid JSON: {exc}", kind="parse")
        return
    if not version_seen:
        yield Problem(path, 1, "specdash", 'missing format version ("specdash": 1)')


def _parse_lines(lines, path: str) -> Iterator:
    for number, text in lines:
        if isinstance(text, TooLong):
            yield Problem(path, number, None, f"line longer than {MAX_LINE_CHARS:,} characters", kind="parse")
            continue
        if not text.strip():
            continue
        try:
            value = decode_line(text)
        except (json.JSONDecodeError, ValueError) as exc:
            yield Problem(path, number, None, f"invalid JSON: {exc}", kind="parse")
            continue
        if not isinstance(value, dict):
            yield Problem(path, number, None, "expected a JSON object", kind="parse")
            continue
        yield from _validate(path, number, value.get("kind", ""), value, "")


FORMAT = Format(NAME, HELP, detect, parse)
CSV_FORMAT = Format(native_csv.NAME, native_csv.HELP, native_csv.detect, native_csv.parse)
