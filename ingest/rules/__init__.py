"""The plausibility and consistency rules every parsed record meets before the store takes it, whatever
format produced it: the ingest pipeline (ingest/pipeline.py) runs each batch through FileRules.apply().
The rules of one record are in bounds.py, the slack of each bound (and its derivation) in tolerances.py,
those of a file that disagrees with itself in within_file.py, and names that must resolve in names.py
(applied as records are linked)."""

from collections.abc import Iterable, Iterator

from specdash.ingest.formats.base import Format, Located
from specdash.ingest.problems import Problem
from specdash.ingest.rules.bounds import record_refusals
from specdash.ingest.rules.within_file import Ledger, RepeatedPoints, Resumes

__all__ = ["FileRules", "record_problems"]


def record_problems(record: object, path: str, line: int | None) -> list[Problem]:
    """The refusals of one record on its own, each `path:line: field: message`."""
    return [
        Problem(path, where if where is not None else line, field, message)
        for where, field, message in record_refusals(record)
    ]


class FileRules:
    """The rules applied to one batch of records (a file, a followed log's chunk, a live window)."""

    def __init__(self, path: str, fmt: Format, problems: list[Problem]):
        self.path, self.problems = path, problems
        self.is_log = fmt.is_log
        self.ledger = Ledger(self.is_log)
        self.resumes = Resumes() if fmt.resumes else None

    def apply(self, items: Iterable[Located], repeated: RepeatedPoints | None = None) -> Iterator[Located]:
        """The records that keep every rule; each refusal goes to `problems` and its record is left out.
        `repeated`: of a file read whole, the metric points it may give twice (the others are not
        remembered)."""
        self.ledger.repeated = repeated
        if self.resumes is not None and iter(items) is not items:  # two passes need a batch read twice
            self.resumes.survey(items)
            items = self.resumes.keep_later(items)
        said: set[Problem] = set()  # a log line every benchmark of its server start repeats is said once
        for item in items:
            found = record_problems(item.record, self.path, item.line)
            if not found and (conflict := self.ledger.conflict(item.record, item.line)) is not None:
                found = [Problem(self.path, item.line, *conflict)]
            if found:
                self.problems.extend(p for p in found if p not in said)
                said.update(found)
                continue
            yield item

    @property
    def notes(self) -> list[str]:
        """What the rules did that the summary says: where a training log resumed, the repeats it kept."""
        notes = [self.resumes.note() if self.resumes is not None else None, self.ledger.note()]
        return [note for note in notes if note]
