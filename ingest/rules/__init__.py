"""The plausibility and consistency rules every parsed record meets before the store takes it, whatever
format produced it: load_file() runs each record of a batch through apply_rules(). The rules of one record
are in bounds.py, their tolerances (and the evidence for each) in tolerances.py, and the rules of a file
that disagrees with itself in within_file.py."""

from collections.abc import Iterable, Iterator

from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem
from specdash.ingest.rules.bounds import record_refusals

__all__ = ["apply_rules", "record_problems"]


def record_problems(record: object, path: str, line: int | None) -> list[Problem]:
    """The refusals of one record on its own, each `path:line: field: message`."""
    return [
        Problem(path, where if where is not None else line, field, message)
        for where, field, message in record_refusals(record)
    ]


def apply_rules(items: Iterable[Located], path: str, problems: list[Problem]) -> Iterator[Located]:
    """The records that keep every rule; each refusal goes to `problems` and its record is left out."""
    said: set[Problem] = set()  # a log line every benchmark of its server start repeats is said once
    for item in items:
        found = record_problems(item.record, path, item.line)
        if found:
            problems.extend(p for p in found if p not in said)
            said.update(found)
            continue
        yield item
