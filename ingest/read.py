"""Reading a file before anything is stored: its sha256, its format (detected, or forced and checked), and
its validated records, parsed with no lock held into a temporary spool. Every problem is reported on its
line (`file:line: field: message`); nothing here touches the store.

A path that is not one text file (a folder of TensorBoard event files, an `mlflow.db`, a W&B offline run, a
Trackio store, a SpecForge config or output folder) is a path source: the tracker reader that detects it
(`ingest.trackers`), a digest of the files it reads, and its records into the same spool."""

import hashlib
import io
import os
import pickle
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath
from typing import Any, BinaryIO

from specdash.ingest.formats import BY_NAME, detect_format
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.problems import Problem, unreadable_number
from specdash.ingest.records import MetricRows
from specdash.ingest.rules.within_file import RepeatedPoints
from specdash.ingest.trackers.base import TrackerReader

HEAD_BYTES = 64 * 1024
CHUNK_BYTES = 1024 * 1024
SPOOL_BATCH = 2000

Progress = Callable[[int], None]
Opener = Callable[[], BinaryIO]


def sha256_of(opener: Opener) -> str:
    digest = hashlib.sha256()
    with opener() as stream:
        while chunk := stream.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def detect_file(opener: Opener, name: str, fmt_name: str | None) -> Format | Problem:
    """The file's format: detected, or the one forced, which must fit what the file holds."""
    with opener() as stream:
        head = stream.read(HEAD_BYTES)
    if fmt_name and fmt_name not in BY_NAME:
        return Problem(name, None, None, f"unknown format {fmt_name!r}; see 'specdash formats'", "parse")
    if not head.strip():
        return Problem(name, None, None, "file is empty", "parse")
    if b"\x00" in head:
        return Problem(name, None, None, "binary file, not a text format specdash reads", "parse")
    text = head.decode("utf-8-sig", errors="replace")
    if fmt_name:
        forced = BY_NAME[fmt_name]
        if forced.detect(text, name):
            return forced
        # A forced format still needs the file to look like it: parsing a file of another format as this
        # one stores its numbers under the wrong meaning (an aggregate read as per-request tok/s).
        found = detect_format(text, name)
        why = (
            f"it reads as {found.name}"
            if found
            else "its content shows none of that format's fields or lines"
        )
        return Problem(name, None, None, f"--format {fmt_name} does not fit this file: {why}", "parse")
    fmt = detect_format(text, name)
    if fmt is None:
        return Problem(
            name, None, None, "format not recognised; pass --format (see 'specdash formats')", "parse"
        )
    return fmt


class Spool:
    """The validated records of a file, pickled in batches to a temporary file: parsing needs no lock, and
    records waiting for the write lock need no memory."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        self.batch: list[Located] = []
        self.count = 0
        self.weight = 0
        self.repeated = RepeatedPoints()  # the metric points the file may give twice, for its rules

    def add(self, item: Located) -> None:
        self.batch.append(item)
        self.repeated.see(item.record)
        self.count += 1
        # a batch of metric rows weighs its steps: a tracker's history comes 2,000 steps a record
        self.weight += len(item.record.steps) if isinstance(item.record, MetricRows) else 1
        if self.weight >= SPOOL_BATCH:
            self._dump()

    def _dump(self) -> None:
        if self.batch:
            pickle.dump(self.batch, self.file, protocol=pickle.HIGHEST_PROTOCOL)
            self.batch, self.weight = [], 0

    def __iter__(self) -> Iterator[Located]:
        self._dump()
        self.file.seek(0)
        while True:
            try:
                batch = pickle.load(self.file)
            except EOFError:
                return
            yield from batch

    def close(self) -> None:
        self.file.close()


class _CountingReader(io.RawIOBase):
    """Counts bytes as the parser reads them, for the progress bar."""

    def __init__(self, raw: BinaryIO, progress: Progress | None):
        self.raw, self.progress = raw, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        if self.progress and data:
            self.progress(len(data))
        return len(data)


class _LineTracked:
    """A text stream that knows the line it last handed out, so a value no parser expected (a 400-digit
    number, nesting past the interpreter's limit) is still reported on its line."""

    def __init__(self, text: io.TextIOBase):
        self._text = text
        self._newlines = 0
        self.line = 1

    def readline(self, size: int = -1) -> str:
        text = self._text.readline(size)
        self.line = self._newlines + 1
        self._newlines += text.count("\n")
        return text

    def read(self, size: int = -1) -> str:
        text = self._text.read(size)
        self.line = self._newlines + 1
        self._newlines += text.count("\n")
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self.readline, "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._text, name)


def checked(items: Iterable[Located | Problem], name: str, problems: list[Problem]) -> Iterator[Located]:
    """A parser's valid records; its problems go to `problems` (the rules of ingest/rules/ apply later,
    in the ingest pipeline)."""
    for item in items:
        if isinstance(item, Problem):
            problems.append(item)
        else:
            yield item


def parse_file(
    fmt: Format,
    name: str,
    opener: Opener,
    link: Any,
    progress: Progress | None,
    problems: list[Problem],
    sink: Callable[[Located], None],
) -> int:
    """Parse and validate every record of the file into sink(Located); returns the bytes read."""
    sizes: list[int] = []
    for item in parse_records(fmt, name, opener, link, progress, problems, sizes.append):
        sink(item)
    return sizes[0]


def parse_records(
    fmt: Format,
    name: str,
    opener: Opener,
    link: Any,
    progress: Progress | None,
    problems: list[Problem],
    read: Callable[[int], None],
) -> Iterator[Located]:
    """Every valid record of the file as it is read; its problems go to `problems`, and once it is read
    whole, read(bytes read)."""
    with opener() as raw:
        counting = _CountingReader(raw, progress)
        # utf-8-sig: a byte-order mark at the start is not part of the text; newlines of any kind are read.
        text = _LineTracked(
            io.TextIOWrapper(
                io.BufferedReader(counting, CHUNK_BYTES), encoding="utf-8-sig", errors=fmt.decode_errors
            )
        )
        try:
            yield from checked(fmt.parse(text, name, link), name, problems)
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, None, None, f"not UTF-8 text: {exc.reason}", "parse"))
        except RecursionError:
            problems.append(Problem(name, text.line, None, "nested too deeply to read", "parse"))
        except (OverflowError, ValueError) as exc:  # a number no parser should have passed on
            problems.append(Problem(name, text.line, None, unreadable_number(exc), "parse"))
        read(raw.tell() if raw.seekable() else 0)


def not_a_file(path: str | Path) -> str | None:
    """Why a path cannot be ingested (missing, a folder, a FIFO or device that would never end), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        kind = (
            "FIFO"
            if stat.S_ISFIFO(mode)
            else "device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "socket"
            if stat.S_ISSOCK(mode)
            else "special file"
        )
        return f"is a {kind}, not a regular file: specdash reads files that end"
    return None


def open_regular(path: Path) -> BinaryIO:
    # O_NONBLOCK: a path swapped for a FIFO after the check must not block the open.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


# --- path sources: a tracker's store, a SpecForge config or output folder ---------------------------------
def path_reader(path: Path, fmt_name: str | None) -> TrackerReader | Problem | None:
    """The tracker reader of `path` (a folder, a tracker's file, a SpecForge config), or None for a file a
    text format reads (and anything else, whose problem the text path tells)."""
    from specdash.ingest.trackers import reader_for, reader_named

    name = str(path)
    if fmt_name and fmt_name in BY_NAME:
        return None
    if fmt_name:
        forced = reader_named(fmt_name)
        if forced is None or forced.detect(name):
            return forced
        return Problem(name, None, None, f"--format {fmt_name} does not fit this path", "parse")
    if path.is_dir():
        return reader_for(name) or Problem(
            name, None, None, "a folder holding no tracker store or SpecForge output specdash reads", "parse"
        )
    if not path.is_file():
        return None
    try:
        with open_regular(path) as stream:
            head = stream.read(HEAD_BYTES)
    except OSError:
        return None
    if b"\x00" not in head and detect_format(head.decode("utf-8-sig", errors="replace"), name):
        return None
    return reader_for(name)


def reader_format(reader: TrackerReader) -> Format:
    """A tracker reader as the format its records are stored under (it reads paths, never text)."""
    return Format(reader.name, reader.help, lambda head, name: False, reader.read, bulk_points=True)


def store_digest(reader: TrackerReader, path: str) -> tuple[str | None, int]:
    """The sha256 of what the reader reads at `path` (each file's name relative to it, its size and its
    content, or its time for a file read by presence) and their total size; None when it reads no file."""
    inputs = reader.inputs(path)
    if not inputs:
        return None, 0
    root, size = Path(path), 0
    digest = hashlib.sha256(f"{reader.name}\n".encode())
    for file, whole in inputs:
        info = os.stat(file)
        size += info.st_size
        name = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
        digest.update(f"{name}\0{info.st_size}\0".encode())
        if not whole:
            digest.update(f"{info.st_mtime_ns}\0".encode())
            continue
        with open(file, "rb") as stream:
            while chunk := stream.read(CHUNK_BYTES):
                digest.update(chunk)
    return digest.hexdigest(), size


def read_store(
    reader: TrackerReader, path: str, link: Any, problems: list[Problem], sink: Callable[[Located], None]
) -> None:
    """Every valid record the reader gives into sink(Located); its problems go to `problems`."""
    try:
        for item in checked(reader.read(path, link), path, problems):
            sink(item)
    except (OSError, sqlite3.Error) as exc:
        problems.append(Problem(path, None, None, f"cannot read: {exc}", "parse"))


# what a tracker's binary file begins with: SQLite (mlflow.db, a Trackio store), a W&B transaction log
STORE_MAGIC = (b"SQLite format 3\x00", b":W&B")


@contextmanager
def uploaded_store(name: str, data: bytes) -> Iterator[Path | None]:
    """An uploaded tracker file (an event file by its name, an SQLite store or W&B run by its first bytes)
    written under its own name to a temporary folder, to be read as that path; None for anything else.
    The folder is `upload-<first 8 hex digits of its sha256>`, which names an event file's run."""
    base = PurePath(name.replace("\\", "/")).name
    from specdash.ingest.trackers.tensorboard import PREFIX

    if not base or not (base.startswith(PREFIX) or data.startswith(STORE_MAGIC)):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="specdash-upload-") as folder:
        # an event file's run is its folder's name: the same for the same upload (the Link table's run wins)
        path = Path(folder) / f"upload-{hashlib.sha256(data).hexdigest()[:8]}" / base
        path.parent.mkdir()
        path.write_bytes(data)
        yield path
