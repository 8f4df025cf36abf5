"""Problems found in an input file, reported as `file:line: field.path: message`."""

import re
from dataclasses import dataclass

from pydantic import ValidationError

MAX_REPORTED = 50
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
    kind: str = "validation"  # validation | parse

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        # one line of plain text wherever it is shown: a key or name from the file cannot break or drive it
        return text if text.isprintable() else _CONTROL.sub(_escape, text)


def from_validation_error(
    path: str, line: int | None, error: ValidationError, prefix: str = ""
) -> list[Problem]:
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"])
        field = f"{prefix}.{loc}" if prefix and loc else (prefix or loc or None)
        message = item["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
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
