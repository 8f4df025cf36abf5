"""JSON reading that keeps line numbers: records of a JSON document's top-level arrays, and JSONL lines."""

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

from specdash.ingest.problems import LongInteger

_WS = re.compile(r"[ \t\n\r]*")


class JSONPositionError(ValueError):
    def __init__(self, message: str, line: int | None):  # None: the document as a whole
        super().__init__(message)
        self.line = line


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


class _Decoder(json.JSONDecoder):
    """A decoder for which JSON nested too deeply for the interpreter is invalid JSON like any other."""

    def raw_decode(self, s: str, idx: int = 0):
        try:
            return super().raw_decode(s, idx)
        except RecursionError:
            raise json.JSONDecodeError("nested too deeply to read", s, idx) from None


def whole_number(digits: str) -> int | float:
    """A JSON integer; one longer than Python converts (its int-string limit, 4300 digits by default) is not
    a number any engine measures: NaN, which every numeric field refuses on its own line and field."""
    limit = sys.get_int_max_str_digits()
    if limit and len(digits.lstrip("-")) > limit:
        return LongInteger(len(digits.lstrip("-")))
    return int(digits)


STRICT_DECODER = _Decoder(parse_constant=_reject_constant, parse_int=whole_number)


def decode_line(text: str, decoder: json.JSONDecoder = STRICT_DECODER) -> Any:
    """One JSON value; a value nested too deeply for the decoder is a ValueError like any bad JSON."""
    try:
        return decoder.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


class _Cursor:
    def __init__(self, text: str, decoder: json.JSONDecoder):
        self.text, self.decoder, self.pos = text, decoder, 0
        self._line, self._line_pos = 1, 0

    def line(self, pos: int | None = None) -> int:
        pos = self.pos if pos is None else pos
        if pos < self._line_pos:
            return self.text.count("\n", 0, pos) + 1
        self._line += self.text.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def skip(self) -> str:
        match = _WS.match(self.text, self.pos)
        assert match is not None  # a pattern of `*` matches, if only the empty string
        self.pos = match.end()
        return self.text[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        if self.skip() != char:
            found = self.text[self.pos : self.pos + 1] or "end of file"
            raise JSONPositionError(f"expected '{char}', found {found!r}", self.line())
        self.pos += 1

    def value(self) -> Any:
        self.skip()
        try:
            value, self.pos = self.decoder.raw_decode(self.text, self.pos)
        except json.JSONDecodeError as exc:
            raise JSONPositionError(exc.msg, exc.lineno) from None
        except RecursionError:
            raise JSONPositionError("nested too deeply to read", self.line()) from None
        except ValueError as exc:
            raise JSONPositionError(str(exc), self.line()) from None
        return value


def iter_document(text: str, decoder: json.JSONDecoder = STRICT_DECODER) -> Iterator[tuple[str, int, Any]]:
    """Yield (key, line, value) for each element of every top-level array of a JSON object, and
    (key, line, value) for top-level scalars and objects."""
    cur = _Cursor(text, decoder)
    cur.expect("{")
    if cur.skip() == "}":
        return
    while True:
        key = cur.value()
        if not isinstance(key, str):
            raise JSONPositionError("expected a key", cur.line())
        cur.expect(":")
        if cur.skip() == "[":
            cur.pos += 1
            if cur.skip() == "]":
                cur.pos += 1
            else:
                while True:
                    cur.skip()
                    line = cur.line()
                    yield key, line, cur.value()
                    nxt = cur.skip()
                    cur.pos += 1
                    if nxt == "]":
                        break
                    if nxt != ",":
                        raise JSONPositionError(f"expected ',' or ']' in '{key}'", cur.line(cur.pos - 1))
        else:
            line = cur.line()
            yield key, line, cur.value()
        nxt = cur.skip()
        cur.pos += 1
        if nxt == "}":
            break
        if nxt != ",":
            raise JSONPositionError("expected ',' or '}'", cur.line(cur.pos - 1))
    if cur.skip():
        raise JSONPositionError("extra data after the JSON document", cur.line())


# Engines write Python's json.dumps output: bare Infinity/NaN are valid there (validation decides later
# whether a field may be infinite).
LENIENT_DECODER = _Decoder(parse_int=whole_number)
MAX_DEPTH = 64


class LinedDict(dict):
    """A JSON object that remembers the line it starts on and the line of each key."""

    line: int = 1
    key_lines: dict[str, int]

    def line_of(self, key: str | int | None) -> int:
        return self.key_lines.get(key, self.line) if isinstance(key, str) else self.line


def _unexpected(found: str, wanted: str) -> str:
    return (
        f"file ends before the JSON does (truncated?); expected {wanted}"
        if not found
        else f"expected {wanted}, found {found!r}"
    )


def _walk(cur: _Cursor, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise JSONPositionError(f"nested deeper than {MAX_DEPTH} levels", cur.line())
    char = cur.skip()
    if char == "{":
        obj = LinedDict()
        obj.line, obj.key_lines = cur.line(), {}
        cur.pos += 1
        if cur.skip() == "}":
            cur.pos += 1
            return obj
        while True:
            cur.skip()
            key_line = cur.line()
            key = cur.value()
            if not isinstance(key, str):
                raise JSONPositionError("expected a key", key_line)
            cur.expect(":")
            obj[key] = _walk(cur, depth + 1)
            obj.key_lines[key] = key_line
            nxt = cur.skip()
            cur.pos += 1
            if nxt == "}":
                return obj
            if nxt != ",":
                raise JSONPositionError(_unexpected(nxt, "',' or '}'"), cur.line(cur.pos - 1))
    if char == "[":
        items: list[Any] = []
        cur.pos += 1
        if cur.skip() == "]":
            cur.pos += 1
            return items
        while True:
            items.append(_walk(cur, depth + 1))
            nxt = cur.skip()
            cur.pos += 1
            if nxt == "]":
                return items
            if nxt != ",":
                raise JSONPositionError(_unexpected(nxt, "',' or ']'"), cur.line(cur.pos - 1))
    if not char:
        raise JSONPositionError("unexpected end of file", cur.line())
    return cur.value()


def iter_values_with_lines(text: str, decoder: json.JSONDecoder = LENIENT_DECODER) -> Iterator[Any]:
    """Every JSON value of a text holding one or more (a document, or JSONL written by appending),
    objects as LinedDicts so problems can name their line."""
    cur = _Cursor(text, decoder)
    while cur.skip():
        yield _walk(cur, 0)
