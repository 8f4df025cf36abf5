"""TensorBoard event files (`events.out.tfevents.*`, or a folder of them): scalars by tag and step.

SpecForge's `--report-to tensorboard` writes `{output_dir}/runs/events.out.tfevents.*` through torch's
SummaryWriter (`add_scalar(key, value, global_step=step)` per metric, specforge/tracker.py); speculators
writes `{log_dir}/{run_name}/events.out.tfevents.*`. An event file is a sequence of TFRecords (a little-
endian uint64 length, its masked CRC-32C, the data, the data's masked CRC-32C), each an `Event` protobuf;
the protobufs are tensorboardX's (the optional `trackers` extra), the framing is read here so a file
being written is read up to its last complete record. Scalars are `simple_value` (torch, tensorboardX)
or a one-number `tensor` (TensorBoard's own summary API); images, histograms and text are skipped."""

import os
import struct
from collections.abc import Iterator
from pathlib import Path

from specdash.ingest.formats.base import Located
from specdash.ingest.formats.common import run_record
from specdash.ingest.problems import Problem
from specdash.ingest.trackers.base import (
    Input,
    TrackerReader,
    decoded,
    extra_module,
    extra_problem,
    whole,
)
from specdash.ingest.trackers.batching import metric_batches

NAME = "tensorboard"
HELP = "TensorBoard event files (events.out.tfevents.*, or a folder of them): scalars by tag and step"
PREFIX = "events.out.tfevents."
MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_FILES = 10_000
# folders that hold a run's event files rather than naming the run
HOLDERS = {"runs", "logs", "tensorboard", "tb", "tb_logs", "events"}


def event_files(path: str) -> list[Path]:
    """The event files at `path`: the file itself, or every one under the folder, in name order."""
    root = Path(path)
    if root.is_file():
        return [root] if root.name.startswith(PREFIX) else []
    if not root.is_dir():
        return []
    found: list[Path] = []
    for folder, _dirs, files in os.walk(root):
        found.extend(Path(folder) / name for name in files if name.startswith(PREFIX))
        if len(found) >= MAX_FILES:
            break
    return sorted(found)[:MAX_FILES]


def detect(path: str) -> bool:
    return bool(event_files(path))


def run_name(event_file: Path) -> str:
    """The run an event file belongs to: its folder, or the folder above a `runs/`-like holder."""
    parent = event_file.parent
    if parent.name.lower() in HOLDERS and parent.parent.name:
        return parent.parent.name
    return parent.name or event_file.name


def _masked_crc(data: bytes, crc32c) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(stream, path: str, crc32c) -> Iterator[bytes | Problem]:
    """The data of each complete TFRecord; a torn last record (a file being written) ends the stream."""
    while True:
        header = stream.read(12)
        if len(header) < 12:
            return
        length, length_crc = struct.unpack("<QI", header)
        if length_crc != _masked_crc(header[:8], crc32c) or length > MAX_RECORD_BYTES:
            yield Problem(
                path, None, None, "not a TensorBoard event record (bad length or checksum)", "parse"
            )
            return
        data = stream.read(length)
        if len(data) < length or len(stream.read(4)) < 4:
            return
        yield data


def _scalar(value) -> float | None:
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind == "tensor":
        tensor = value.tensor
        for field in ("float_val", "double_val", "int_val", "int64_val"):
            numbers = getattr(tensor, field)
            if len(numbers) == 1:
                return float(numbers[0])
        content = tensor.tensor_content
        if len(content) == 4 and tensor.dtype == 1:  # DT_FLOAT
            return struct.unpack("<f", content)[0]
        if len(content) == 8 and tensor.dtype == 2:  # DT_DOUBLE
            return struct.unpack("<d", content)[0]
    return None


def scalar_events(stream, path: str, problems: list) -> Iterator[tuple[int, list[tuple[int, str, float]]]]:
    """(offset just past the record, its scalars as (step, tag, value)) for each complete event record from
    the stream's position: a followed file resumes at the last offset."""
    crc32c = extra_module("tensorboardX.crc32c").crc32c
    event_type = extra_module("tensorboardX.proto.event_pb2").Event

    for event in decoded(records(stream, path, crc32c), event_type, path, "an event record", problems):
        found = []
        if event.HasField("summary"):
            for value in event.summary.value:
                number = _scalar(value)
                if number is not None:
                    found.append((event.step, value.tag, number))
        yield stream.tell(), found


def points(event_file: Path, problems: list) -> Iterator[tuple[int, str, float]]:
    with open(event_file, "rb") as stream:
        for _offset, found in scalar_events(stream, str(event_file), problems):
            yield from found


def read(path: str, link=None) -> Iterator["Located | Problem"]:
    try:
        extra_module("tensorboardX")
    except ImportError:
        yield extra_problem(path, "tensorboardX")
        return
    files = event_files(path)
    if not files:
        yield Problem(path, None, None, "no events.out.tfevents.* files", "parse")
        return
    forced = link.run if link is not None and link.run else None
    announced: set[str] = set()
    for event_file in files:
        run = forced or run_name(event_file)
        if run not in announced:
            announced.add(run)
            yield Located(None, run_record(run[:200]))
        problems: list[Problem] = []
        yield from metric_batches(str(event_file), run[:200], points(event_file, problems))
        yield from problems


def inputs(path: str) -> list[Input]:
    return whole(event_files(path))


READER = TrackerReader(NAME, HELP, detect, read, inputs)
