"""What every tracker reader gives: its name, help, detect(path), read(path, link) and inputs(path)."""

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem

# A file a reader reads, and whether its content says what was read (True: hashed whole) or only its
# presence does (False: its name, size and modification time, as for a checkpoint's multi-GB state file).
Input = tuple[Path, bool]


def no_inputs(path: str) -> list[Input]:
    return []


@dataclass(frozen=True)
class TrackerReader:
    name: str
    help: str
    detect: Callable[[str], bool]
    read: Callable[..., Iterator["Located | Problem"]]
    # The files read from `path`, which make its digest: a store read again unchanged is skipped.
    inputs: Callable[[str], list[Input]] = no_inputs


def whole(files: Iterable[Path]) -> list[Input]:
    return [(file, True) for file in files]


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
