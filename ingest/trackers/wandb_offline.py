"""W&B offline runs (`wandb/offline-run-*/run-*.wandb`, a run folder, or the `wandb/` folder of several):
the run, its config and its history.

A `.wandb` file is W&B's transaction log: a 7-byte header (`:W&B`, magic 0xBEE1, version 0), then 32 KiB
blocks of chunks, each a 7-byte header (CRC-32 of type and data, little-endian length, type: full, first,
middle, last) and its data; a record too long for a block continues in the next. Each record is a
`wandb_internal_pb2.Record` protobuf. The SDK (0.31) no longer reads these files in Python (the reader
that was `wandb.sdk.internal.datastore` lives in its Go `wandb-core`), so the framing is read here and
the protobufs are the SDK's: the optional `wandb` extra. History items are `nested_key` paths with a
JSON value; `_step`, `_timestamp` and `_runtime` are W&B's own. SpecForge's W&B config carries its whole
resolved config under `specforge_config` (specforge/training/assembly.py): the run's algorithm, TTT
length and target come from it by the config reader's rules."""

import itertools
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specdash.ingest.formats.base import Located
from specdash.ingest.formats.specforge_config import run_of_config
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
from specdash.ingest.trackers.runs import announce, run_fields

NAME = "wandb-offline"
HELP = "W&B offline runs (wandb/offline-run-*/run-*.wandb): run, config, history"
HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_FILES = 10_000


def run_files(path: str) -> list[Path]:
    """The `.wandb` files at `path`: the file, a run folder's, or every run's under a `wandb/` folder."""
    root = Path(path)
    if root.is_file():
        return [root] if root.suffix == ".wandb" else []
    if not root.is_dir():
        return []
    found = sorted(root.glob("run-*.wandb")) or sorted(root.glob("*run-*/run-*.wandb"))
    return found[:MAX_FILES]


def detect(path: str) -> bool:
    files = run_files(path)
    if not files:
        return False
    try:
        with open(files[0], "rb") as handle:
            return handle.read(len(HEADER)) == HEADER
    except OSError:
        return False


def chunks(handle, path: str) -> Iterator[bytes | Problem]:
    """The records of a transaction log, a block at a time; a torn last record (a run still writing) ends it."""
    if handle.read(len(HEADER)) != HEADER:
        yield Problem(path, None, None, "not a W&B transaction log (no :W&B header)", "parse")
        return
    offset, pending = len(HEADER), bytearray()
    while True:
        room = BLOCK - offset % BLOCK
        if room < 7:  # the block's tail is padding
            if len(handle.read(room)) < room:
                return
            offset += room
            continue
        head = handle.read(7)
        if len(head) < 7:
            return
        checksum, length, kind = struct.unpack("<IHB", head)
        data = handle.read(length)
        offset += 7 + length
        if len(data) < length:
            return
        if kind == 0 and length == 0:
            continue
        if zlib.crc32(data, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != checksum or kind > LAST:
            yield Problem(path, None, None, "a damaged record in the W&B transaction log", "parse")
            return
        if kind == FULL:
            yield data
        elif kind == FIRST:
            pending = bytearray(data)
        elif kind in (MIDDLE, LAST):
            pending += data
            if len(pending) > MAX_RECORD_BYTES:
                yield Problem(path, None, None, "a record over the size cap", "parse")
                return
            if kind == LAST:
                yield bytes(pending)
                pending = bytearray()


def _value(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _config(run) -> dict:
    return {item.key or "/".join(item.nested_key): _value(item.value_json) for item in run.config.update}


def _history(record) -> Iterator[tuple[int, str, float]]:
    step = record.history.step.num
    for item in record.history.item:
        name = item.key or "/".join(item.nested_key)
        value = _value(item.value_json)
        if name.startswith("_") or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # W&B's _step/_runtime, and media, tables and histograms: not scalar metrics
        yield step, name, float(value)


def _run(run, path: str, forced: str | None) -> dict:
    config = _config(run)
    params = {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}
    name = forced or run.display_name or run.run_id or Path(path).parent.name
    fields = run_fields(
        name, "finished", None, None, params, {"wandb_run_id": run.run_id, "project": run.project}
    )
    fields.pop("config")
    fields["config"] = {"wandb_run_id": run.run_id, "project": run.project}
    specforge = config.get("specforge_config")
    if isinstance(specforge, dict) and isinstance(specforge.get("model"), dict):
        found = run_of_config(specforge, path, name)
        fields.update(
            {
                k: v
                for k, v in found.items()
                if k in ("speculative_algorithm", "ttt_length", "target_model") and v
            }
        )
        fields["framework"] = "specforge"
        fields["config"].update(found["config"])
    return fields


def _records(file: Path, forced: str | None, problems: list) -> Iterator:
    record_type = extra_module("wandb.proto.wandb_internal_pb2").Record

    with open(file, "rb") as handle:
        for record in decoded(chunks(handle, str(file)), record_type, str(file), "a record", problems):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                yield "run", _run(record.run, str(file), forced)
            elif kind == "history":
                yield from (("point", point) for point in _history(record))


def read(path: str, link=None) -> Iterator["Located | Problem"]:
    try:
        extra_module("wandb.proto.wandb_internal_pb2")
    except ImportError:
        yield extra_problem(path, "wandb", "wandb")
        return
    files = run_files(path)
    if not files:
        yield Problem(path, None, None, "no run-*.wandb files", "parse")
        return
    forced = link.run if link is not None and link.run else None
    for file in files:
        problems: list[Problem] = []
        state: dict[str, Any] = {"run": forced or file.parent.name}
        records = _records(file, forced, problems)

        def points(records=records, state=state):
            for kind, value in records:
                if kind == "run":
                    state["fields"] = value
                    state["run"] = value["name"]
                else:
                    yield value

        stream = points()
        first = next(stream, None)  # the run record comes first; its name names the points
        yield from announce(
            str(file), state.get("fields") or run_fields(state["run"], None, None, None, {}, {})
        )
        if first is not None:
            yield from metric_batches(str(file), state["run"][:200], itertools.chain([first], stream))
        yield from problems


def inputs(path: str) -> list[Input]:
    return whole(run_files(path))


READER = TrackerReader(NAME, HELP, detect, read, inputs)
