"""Readers of experiment trackers' own stores, read where they lie: TensorBoard event files, an MLflow
tracking store, W&B offline runs, a Trackio project store; SpecForge's training config, whose
checkpoints are folders beside it, and its output folder (config, store and checkpoints as one run). Each
module gives READER (NAME, HELP, detect(path), read(path, link) -> Iterator[Located | Problem],
inputs(path)): the records the training logs give (RunRecord, MetricRows in batches, CheckpointRecord), with
metric names mapped by `ingest.formats.metric_names` (one rule for logs and trackers).

A tracker's store is not one text file: the readers take a path (a file, a folder, or a tracking URI) and
open what they need, streaming metric histories in bounded memory. `specdash ingest PATH` reaches them
through ingest/read.py's path source, into the one ingest pipeline (ingest/pipeline.py)."""

from specdash.ingest.trackers.base import TrackerReader


def readers() -> list[TrackerReader]:
    from specdash.ingest.formats import specforge_config
    from specdash.ingest.trackers import (
        mlflow_store,
        specforge_output,
        tensorboard,
        trackio_store,
        wandb_offline,
    )

    # an output folder holds a tracker's store: it is read whole, as its run, before any store in it
    readers = [specforge_output.READER, tensorboard.READER, wandb_offline.READER, trackio_store.READER]
    return [*readers, mlflow_store.READER, specforge_config.READER]


def reader_named(name: str) -> TrackerReader | None:
    return next((reader for reader in readers() if reader.name == name), None)


def reader_for(path: str) -> TrackerReader | None:
    """The reader of a tracker store at `path` (a file, a folder or a tracking URI), or None."""
    return next((reader for reader in readers() if reader.detect(path)), None)
