"""What every tracker reader gives: its name, help, detect(path) and read(path, link)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from specdash.ingest.formats import Located
from specdash.ingest.problems import Problem


@dataclass(frozen=True)
class TrackerReader:
    name: str
    help: str
    detect: Callable[[str], bool]
    read: Callable[..., Iterator["Located | Problem"]]


def extra_problem(path: str, package: str, extra: str = "trackers") -> Problem:
    return Problem(
        path,
        None,
        None,
        f"reading this needs the {package} package: pip install 'specdash[{extra}]'",
        "parse",
    )
