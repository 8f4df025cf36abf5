"""A SpecForge output folder, read as one run: its training config, the tracker store the trainer wrote
into it, and its checkpoint folders.

SpecForge (specforge/training/assembly.py, tracker.py, checkpoint.py) writes under `output_dir`:
`runs/events.out.tfevents.*` with `--report-to tensorboard` (torch's SummaryWriter on
`{output_dir}/runs`), the MLflow store the run's tracking URI names (`mlflow.db`, `mlruns/`; kept in the
folder by `mlflow_tracking_uri: sqlite:///{output_dir}/mlflow.db`), `wandb/` when `wandb_dir` points there,
and `{run_id}-step{N}/training_state.pt` for each complete checkpoint (`{run_id}-latest` and `-best` are
links to one of them). It does not copy the config: the config file kept beside them (`*.yaml`, `*.yml`,
`*.json` holding `model.target_model_path`) gives the run's algorithm, TTT length and target.

Every store's metrics are the config's run (its `run_id`; without a config, the run the checkpoint folders
name, else the folder's name); what a tracker says of the run besides (its state and times) is kept, its
params are not (SpecForge logs its tracking options there, not the drafter's)."""

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from specdash.ingest.formats import specforge_config as config_reader
from specdash.ingest.formats.base import Located
from specdash.ingest.formats.common import run_record
from specdash.ingest.links import LinkOptions, parse_checkpoint_name
from specdash.ingest.problems import Problem
from specdash.ingest.records import RunRecord
from specdash.ingest.trackers import mlflow_store, tensorboard, trackio_store, wandb_offline
from specdash.ingest.trackers.base import Input, TrackerReader

NAME = "specforge-output"
HELP = "SpecForge output folder: its config, runs/ event files or MLflow store, {run_id}-step{N}/ checkpoints"
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
# where the trainer's trackers write inside output_dir, and what reads each
SPOTS = (
    ("runs", tensorboard.READER),
    ("mlflow.db", mlflow_store.READER),
    ("mlruns", mlflow_store.READER),
    ("wandb", wandb_offline.READER),
    ("trackio", trackio_store.READER),
)
MAX_ENTRIES = 10_000
RUN_STATE = ("status", "started_at", "ended_at")


def config_file(folder: Path) -> Path | None:
    """The SpecForge config kept in the folder (the first by name), or None."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file())[:MAX_ENTRIES]
    except OSError:
        return None
    return next(
        (folder / n for n in names if n.endswith(CONFIG_SUFFIXES) and config_reader.detect(str(folder / n))),
        None,
    )


def checkpoint_run_ids(folder: Path) -> list[str]:
    """The run ids the folder's `{run_id}-step{N}/` checkpoints name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)[:MAX_ENTRIES]
    except OSError:
        return []
    found: list[str] = []
    for entry in entries:
        parsed = parse_checkpoint_name(entry.name)
        if parsed is not None and parsed.run and parsed.run not in found and entry.is_dir():
            if os.path.isfile(os.path.join(entry.path, config_reader.STATE_FILE)):
                found.append(parsed.run)
    return found


def stores(folder: Path) -> list[tuple[Path, TrackerReader]]:
    return [(folder / spot, reader) for spot, reader in SPOTS if reader.detect(str(folder / spot))]


def detect(path: str) -> bool:
    folder = Path(path)
    return folder.is_dir() and (config_file(folder) is not None or bool(checkpoint_run_ids(folder)))


def _config(folder: Path) -> tuple[Path | None, dict | Problem | None]:
    file = config_file(folder)
    if file is None:
        return None, None
    try:
        with open(file, encoding="utf-8") as stream:
            text = stream.read(config_reader.MAX_CONFIG_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        return file, Problem(str(file), None, None, f"cannot read the config: {exc}", "parse")
    return file, config_reader.load_config(text, str(file))


def _tracker_items(folder: Path, run: str, link: Any) -> Iterator["Located | Problem"]:
    """Each store's records as the folder's run: its run record keeps only the state and times."""
    forced = dataclasses.replace(link, run=run) if isinstance(link, LinkOptions) else SimpleNamespace(run=run)
    for spot, reader in stores(folder):
        for item in reader.read(str(spot), forced):
            if isinstance(item, Located) and isinstance(item.record, RunRecord):
                state = {k: getattr(item.record, k) for k in RUN_STATE if k in item.record.model_fields_set}
                yield Located(item.line, RunRecord(name=run, **state))
            else:
                yield item


def read(path: str, link=None) -> Iterator["Located | Problem"]:
    folder = Path(path)
    file, data = _config(folder)
    if isinstance(data, Problem):
        yield data
        return
    ids = checkpoint_run_ids(folder)
    run_id = str(data["run_id"]) if data and data.get("run_id") else (ids[0] if ids else folder.name)
    forced = link.run if link is not None and getattr(link, "run", None) else None
    if data is not None and file is not None:
        fields = config_reader.run_of_config(data, str(file), forced)
        yield from config_reader.announce_config(str(file), fields)
    else:
        fields = {"name": (forced or run_id)[:200], "framework": "specforge"}
        yield Located(None, run_record(**fields))
    run = fields["name"]
    for checkpoint in config_reader.checkpoint_folders(folder, run_id, run):
        yield Located(None, checkpoint)
    yield from _tracker_items(folder, run, link)


def inputs(path: str) -> list[Input]:
    folder = Path(path)
    file, data = _config(folder)
    found: list[Input] = [(file, True)] if file is not None else []
    ids = checkpoint_run_ids(folder)
    run_id = (
        str(data["run_id"]) if isinstance(data, dict) and data.get("run_id") else (ids or [folder.name])[0]
    )
    found += config_reader.state_inputs(folder, run_id)
    for spot, reader in stores(folder):
        found += reader.inputs(str(spot))
    return found


READER = TrackerReader(NAME, HELP, detect, read, inputs)
