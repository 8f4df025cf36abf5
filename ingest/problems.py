"""Problems found in an input file, reported as `file:line: field.path: message`."""

import re
import sys
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

MAX_REPORTED = 50
# The kind of a part of a file that holds nothing to measure (a load level where no request completed): the
# tool wrote it, so it never refuses the file; it is said beside what was stored, and refuses only a file
# that has nothing else.
SKIPPED = "skipped"
# pydantic's errors of a number outside its field's range: the refusal names the value it got.
BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
# A record-level check names its field first: "accept_length: 9 is more than ...".
_CONTROL = re.compile(r"[^\S ]|[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    return match[0].encode("unicode_escape").decode("ascii")


_FIELD_FIRST = re.compile(r"^([a-z_][a-z0-9_]*): (.+)$", re.S)


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    field: str | None
    message: str
    kind: str = "validation"  # validation | parse | skipped (SKIPPED)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        # one line of plain text wherever it is shown: a key or name from the file cannot break or drive it
        return text if text.isprintable() else _CONTROL.sub(_escape, text)


def unreadable_number(exc: Exception) -> str:
    """What a value no parser can convert is, in the user's words (Python's own advice is for programmers)."""
    text = str(exc)
    if "integer string conversion" in text:
        return f"a number of more than {sys.get_int_max_str_digits()} digits: no engine writes one"
    return f"unreadable value: {text[:200]}"


class LongInteger(float):
    """An integer literal longer than Python converts (its int-string limit): read as NaN, which every
    numeric field refuses, and quoted by its length."""

    digits: int

    def __new__(cls, digits: int) -> "LongInteger":
        number = super().__new__(cls, "nan")
        number.digits = digits
        return number


def number_text(value: int | float) -> str:
    """A number as a refusal quotes it; an integer past Python's int-string limit by its size."""
    if isinstance(value, LongInteger):
        return f"an integer of {value.digits} digits"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    return repr(value)


def error_message(item: Any) -> str:
    """A pydantic error's message; a number out of its range also names the value it got."""
    message = str(item["msg"]).removeprefix("Value error, ")
    value = item.get("input")
    if isinstance(value, LongInteger):
        return f"{number_text(value)}: more than the {sys.get_int_max_str_digits()} an integer may have"
    if item["type"] in BOUND_ERRORS and isinstance(value, int | float) and not isinstance(value, bool):
        message = f"{message} (got {number_text(value)})"
    return message


def from_validation_error(
    path: str, line: int | None, error: ValidationError, prefix: str = ""
) -> list[Problem]:
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"])
        field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
        message = error_message(item)
        if not loc:
            field, message = field_first(field, message)
        problems.append(Problem(path, line, field, message))
    return problems


def field_first(field: str | None, message: str) -> tuple[str | None, str]:
    """A record-level message that names its field ("decode_tps: ...") reported against that field."""
    match = _FIELD_FIRST.match(message)
    if match is None:
        return field, message
    return (f"{field}.{match[1]}" if field else match[1]), match[2]


def format_report(problems: list[Problem], limit: int = MAX_REPORTED) -> str:
    """Parse errors first, then validation errors, one a line, capped with a count of the rest."""
    ordered = [p for p in problems if p.kind == "parse"] + [p for p in problems if p.kind != "parse"]
    lines = [str(p) for p in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"... and {len(ordered) - limit} more problems")
    return "\n".join(lines)


def skipped_note(problems: list[Problem]) -> str | None:
    """What was skipped as holding nothing to measure, said once per reason: `skipped, no successful
    requests to measure: line(s) 40, 52`."""
    lines: dict[str, list[str]] = {}
    for problem in problems:
        if problem.kind == SKIPPED:
            lines.setdefault(problem.message, []).append(str(problem.line) if problem.line else "?")
    parts = [f"skipped, {message}: line(s) {', '.join(at)}" for message, at in lines.items()]
    return "; ".join(parts) or None
