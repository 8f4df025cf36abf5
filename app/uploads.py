"""What the Upload page knows about a file before saving it: its format and every problem in it, found by
the same detection and parsers as `specdash ingest`, without touching the database."""

import io
from collections import Counter
from dataclasses import dataclass, field

from specdash.ingest.formats import detect_format
from specdash.ingest.pipeline import HEAD_BYTES
from specdash.ingest.problems import Problem, format_report


@dataclass
class UploadCheck:
    name: str
    size_bytes: int
    format: str | None = None
    records: Counter = field(default_factory=Counter)  # record kind -> count
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.format is not None and not self.problems and sum(self.records.values()) > 0

    @property
    def report(self) -> str:
        """The validation report, the same text `specdash ingest` prints."""
        return format_report(self.problems)

    @property
    def summary(self) -> str:
        if not self.records:
            return "no records"
        return ", ".join(f"{n} {kind}" for kind, n in sorted(self.records.items()))


def check_upload(name: str, data: bytes) -> UploadCheck:
    """Detect the format of an uploaded file and parse it in full; nothing is written."""
    check = UploadCheck(name, len(data))
    head = data[:HEAD_BYTES]
    if not head.strip():
        check.problems.append(Problem(name, None, None, "file is empty", "parse"))
        return check
    if b"\x00" in head:
        check.problems.append(
            Problem(name, None, None, "binary file, not a text format specdash reads", "parse")
        )
        return check
    fmt = detect_format(head.decode("utf-8", errors="replace"), name)
    if fmt is None:
        check.problems.append(
            Problem(name, None, None, "format not recognised (see 'specdash formats')", "parse")
        )
        return check
    check.format = fmt.name
    try:
        for item in fmt.parse(io.StringIO(data.decode("utf-8")), name):
            if isinstance(item, Problem):
                check.problems.append(item)
            else:
                check.records[item.record.kind] += 1
    except UnicodeDecodeError as exc:
        check.problems.append(Problem(name, None, None, f"not UTF-8 text: {exc.reason}", "parse"))
    if not check.records and not check.problems:
        check.problems.append(Problem(name, None, None, "no records found", "parse"))
    return check
