"""SpecForge's training config (YAML or JSON, as `specforge/config/schema.py` loads it): the run it describes,
and the checkpoints its output folder holds. A path reader (like the tracker readers, `ingest.trackers`):
its checkpoints are folders beside it on disk, not text in the file.

The run is `run_id` (else the file's name); `training.strategy` is the algorithm (eagle3, dflash, dspark,
domino, peagle); the TTT length is `training.ttt_length` for a chain drafter and, for a block drafter
(DFlash, DSpark), the positions of its block, `model.draft_block_size - 1`; the target is
`model.target_model_path`. Checkpoints are `{output_dir}/{run_id}-step{N}/` folders (with their
`training_state.pt`), read when the output folder is on this machine: absolute, or relative to the config."""

import os
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any, TextIO

from pydantic import ValidationError

from specdash.costmodel.priors import drafter_family, is_block_family
from specdash.db.records import MAX_STEPS
from specdash.ingest.formats.base import Located
from specdash.ingest.formats.common import model_short_name, run_record
from specdash.ingest.jsontext import JSONPositionError
from specdash.ingest.lines import read_document
from specdash.ingest.links import parse_checkpoint_name
from specdash.ingest.problems import Problem
from specdash.ingest.records import CheckpointRecord, RunRecord
from specdash.ingest.setting import algorithm_name
from specdash.ingest.trackers.base import Input, TrackerReader
from specdash.ingest.yamltext import YAMLPositionError, invalid_document, load_yaml_or_json

NAME = "specforge-config"
HELP = "SpecForge training config (YAML/JSON: model.target_model_path, training.strategy, run_id, output_dir)"
STATE_FILE = "training_state.pt"  # SpecForge's CheckpointManager: the rank-0 payload of a complete checkpoint
MAX_CONFIG_CHARS = 1024 * 1024
MAX_CHECKPOINTS = 10_000


def looks_like_config(head: str, filename: str) -> bool:
    name = filename.lower()
    if not name.endswith((".yaml", ".yml", ".json")):
        return False
    return "target_model_path" in head and ("strategy" in head or "run_id" in head or "ttt_length" in head)


def detect(path: str) -> bool:
    file = Path(path)
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            return file.is_file() and looks_like_config(handle.read(64 * 1024), file.name)
    except OSError:
        return False


def load_config(text: str | None, path: str) -> dict | Problem:
    """The config's mapping, or the problem that stops it being one (too long, not YAML/JSON, no target)."""
    if text is None or len(text) > MAX_CONFIG_CHARS:
        return Problem(path, None, None, f"a config over {MAX_CONFIG_CHARS:,} characters", "parse")
    data = _load(text, path)
    if isinstance(data, dict) and not _section(data, "model").get("target_model_path"):
        return Problem(path, None, "model.target_model_path", "missing: not a SpecForge training config")
    return data


def announce_config(path: str, fields: dict) -> Iterator:
    """The config's run record (at line 1), or each field the records refuse."""
    try:
        yield Located(1, run_record(**fields))
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            field = ".".join(str(part) for part in error["loc"]) or None
            yield Problem(path, None, field, error["msg"])


def _load(text: str, path: str) -> dict | Problem:
    try:
        data = load_yaml_or_json(text, path)
    except (JSONPositionError, YAMLPositionError) as exc:
        return invalid_document(path, exc)
    if not isinstance(data, dict):
        return Problem(path, 1, None, "expected a mapping of config sections", "parse")
    return data


def _section(data: dict, name: str) -> dict:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def run_of_config(data: dict, path: str, forced_run: str | None = None) -> dict:
    """The RunRecord fields a SpecForge config gives (run name, algorithm, TTT length, target, config)."""
    model, training, tracking = (
        _section(data, "model"),
        _section(data, "training"),
        _section(data, "tracking"),
    )
    strategy = str(training.get("strategy") or "eagle3")  # SpecForge's default strategy
    algorithm = algorithm_name(strategy)
    block_size = _positive_int(model.get("draft_block_size"))
    if is_block_family(drafter_family(strategy)):
        ttt = block_size - 1 if block_size and block_size > 1 else None
    else:
        ttt = _positive_int(training.get("ttt_length")) or (7 if "ttt_length" not in training else None)
    run_id = data.get("run_id")
    name = forced_run or (str(run_id) if run_id else PurePath(path).stem or "specforge-run")
    config = {
        "strategy": strategy,
        "run_id": run_id,
        "output_dir": data.get("output_dir"),
        "report_to": tracking.get("report_to", "none"),
        "draft_model_config": model.get("draft_model_config"),
        "draft_block_size": block_size,
    }
    return dict(
        name=name[:200],
        framework="specforge",
        speculative_algorithm=algorithm,
        ttt_length=ttt if ttt and ttt <= MAX_STEPS else None,
        target_model=model_short_name(model.get("target_model_path")),
        config={k: v for k, v in config.items() if v is not None},
    )


def checkpoint_folders(folder: Path, run_id: str, run: str | None = None) -> Iterator[CheckpointRecord]:
    """The complete checkpoints of `run_id` in SpecForge's output folder: `{run_id}-step{N}/` holding
    `training_state.pt`; the `-latest` and `-best` links point at one of them and are not checkpoints."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    found = []
    for entry in entries[: MAX_CHECKPOINTS * 4]:
        parsed = parse_checkpoint_name(entry.name)
        if parsed is None or parsed.run != run_id or entry.is_symlink():
            continue
        if not entry.is_dir() or not os.path.isfile(os.path.join(entry.path, STATE_FILE)):
            continue  # a checkpoint still being written (or a failed one) has no state file yet
        found.append((parsed.step or 0, entry))
    for step, entry in sorted(found, key=lambda item: item[0])[:MAX_CHECKPOINTS]:
        yield CheckpointRecord(run=run or run_id, name=entry.name[:200], step=step, path=entry.path[:1000])


def _output_folder(path: str, output_dir: Any) -> Path | None:
    if not isinstance(output_dir, str) or not output_dir.strip():
        return None
    folder = Path(output_dir)
    if not folder.is_absolute():
        folder = Path(path).parent / folder
    return folder if folder.is_dir() else None


def read(path: str, link=None) -> Iterator:
    try:
        with open(path, encoding="utf-8") as stream:
            yield from parse(stream, path, link)
    except (OSError, UnicodeDecodeError) as exc:
        yield Problem(path, None, None, f"cannot read the config: {exc}", "parse")


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    """The run of a config read from `stream`; checkpoints too when `path` is the config on disk."""
    data = load_config(read_document(stream, MAX_CONFIG_CHARS), path)
    if isinstance(data, Problem):
        yield data
        return
    forced = link.run if link is not None and link.run else None
    announced = list(announce_config(path, run_of_config(data, path, forced)))
    yield from announced
    if not announced or not isinstance(run := announced[0], Located):
        return
    assert isinstance(run.record, RunRecord)
    folder = _output_folder(path, data.get("output_dir"))
    if folder is not None and data.get("run_id"):
        for checkpoint in checkpoint_folders(folder, str(data["run_id"]), run.record.name):
            yield Located(None, checkpoint)


def state_inputs(folder: Path, run_id: str) -> list[Input]:
    """The checkpoints' state files, by presence (name, size, time): they hold the optimizer's state."""
    found = checkpoint_folders(folder, run_id)
    return [(Path(checkpoint.path) / STATE_FILE, False) for checkpoint in found if checkpoint.path]


def inputs(path: str) -> list[Input]:
    found: list[Input] = [(Path(path), True)]
    try:
        with open(path, encoding="utf-8") as stream:
            data = load_config(read_document(stream, MAX_CONFIG_CHARS), path)
    except (OSError, UnicodeDecodeError):
        return found
    if isinstance(data, dict) and data.get("run_id"):
        folder = _output_folder(path, data.get("output_dir"))
        if folder is not None:
            found += state_inputs(folder, str(data["run_id"]))
    return found


READER = TrackerReader(NAME, HELP, detect, read, inputs)
