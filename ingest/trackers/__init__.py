"""Readers of experiment trackers' own stores, read where they lie: TensorBoard event files, an MLflow
tracking store, W&B offline runs, a Trackio project store; and SpecForge's training config, whose
checkpoints are folders beside it. Each module gives READER (NAME, HELP, detect(path), read(path, link) -> Iterator[Located |
Problem]): the records the training logs give (RunRecord, MetricRows in batches, CheckpointRecord), with
metric names mapped by `ingest.formats.metric_names` (one rule for logs and trackers).

A tracker's store is not one text file: the readers take a path (a file, a folder, or a tracking URI) and
open what they need, streaming metric histories in bounded memory."""

from specdash.ingest.trackers.base import TrackerReader


def readers() -> list[TrackerReader]:
    from specdash.ingest.formats import specforge_config
    from specdash.ingest.trackers import mlflow_store, tensorboard, trackio_store, wandb_offline

    readers = [tensorboard.READER, wandb_offline.READER, trackio_store.READER, mlflow_store.READER]
    return [*readers, specforge_config.READER]


def reader_for(path: str) -> TrackerReader | None:
    """The reader of a tracker store at `path` (a file, a folder or a tracking URI), or None."""
    return next((reader for reader in readers() if reader.detect(path)), None)
