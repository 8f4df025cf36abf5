"""What every tracker reader gives: its name, help, detect(path) and read(path, link)."""

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from specdash.ingest.formats.base import Located
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


def extra_module(name: str) -> ModuleType:
    """A module of an optional extra, imported when a reader first needs it (ImportError without the extra).
    tensorboardX ships no type information and protobuf modules make their classes at import: what a
    reader takes from them is untyped either way."""
    return importlib.import_module(name)


def decoded(
    frames: Iterable["bytes | Problem"], message_type: Any, path: str, what: str, problems: list[Problem]
) -> Iterator[Any]:
    """Each framed record of a tracker's file parsed as a `message_type` protobuf. A damaged frame or a
    record that does not decode ends the file there, its problem appended to `problems`."""
    for data in frames:
        if isinstance(data, Problem):
            problems.append(data)
            return
        message = message_type()
        try:
            message.ParseFromString(data)
        except Exception:  # protobuf's DecodeError
            problems.append(Problem(path, None, None, f"{what} does not decode", "parse"))
            return
        yield message
