"""Problems found in an input file, reported as `file:line: field.path: message`."""

from dataclasses import dataclass

from pydantic import ValidationError

MAX_REPORTED = 50


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    field: str | None
    message: str
    kind: str = "validation"  # validation | parse

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


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
        problems.append(Problem(path, line, field, message))
    return problems


def format_report(problems: list[Problem], limit: int = MAX_REPORTED) -> str:
    """Parse errors first, then validation errors, one a line, capped with a count of the rest."""
    ordered = [p for p in problems if p.kind == "parse"] + [p for p in problems if p.kind != "parse"]
    lines = [str(p) for p in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"... and {len(ordered) - limit} more problems")
    return "\n".join(lines)
