"""A Trackio project store (speculators' `--logger trackio`): `{TRACKIO_DIR}/{project}.db`, or the folder.

Trackio documents its storage schema (its docs' "Storage Schema and Direct Queries"; the schema is made by
`SQLiteStorage.init_db()` in trackio/sqlite_storage.py): one SQLite file per project, `configs (run_id,
run_name, config JSON, created_at)` and `metrics (run_id, timestamp, run_name, step, metrics JSON)`, one
row per logged step. Read here with sqlite3, read-only, a step at a time; no Trackio needed."""

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from specdash.ingest.formats.base import Located
from specdash.ingest.formats.metric_names import flatten
from specdash.ingest.problems import Problem
from specdash.ingest.trackers.base import Input, TrackerReader, whole
from specdash.ingest.trackers.batching import metric_batches
from specdash.ingest.trackers.runs import announce, run_fields

NAME = "trackio"
HELP = "Trackio project store ({project}.db in TRACKIO_DIR, or the folder): runs, configs, metrics"
SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_RUNS = 100_000


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}


def _is_store(file: Path) -> bool:
    try:
        with open(file, "rb") as handle:
            if handle.read(16) != SQLITE_MAGIC:
                return False
        with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as connection:
            metrics, configs = _columns(connection, "metrics"), _columns(connection, "configs")
    except (OSError, sqlite3.Error):
        return False
    return {"run_id", "run_name", "step", "metrics"} <= metrics and {
        "run_id",
        "run_name",
        "config",
    } <= configs


def stores(path: str) -> list[Path]:
    root = Path(path)
    if root.is_file():
        return [root] if _is_store(root) else []
    if root.is_dir():
        return [file for file in sorted(root.glob("*.db")) if _is_store(file)]
    return []


def detect(path: str) -> bool:
    return bool(stores(path))


def _points(connection, run_id: str, label: str, problems: list) -> Iterator[tuple[int, str, float]]:
    rows = connection.execute(
        "SELECT id, step, metrics FROM metrics WHERE run_id = ? ORDER BY step, id", (run_id,)
    )
    for row_id, step, text in rows:
        try:
            values = json.loads(text)
        except ValueError:
            problems.append(
                Problem(label, None, f"metrics[{row_id}]", "not a JSON object of metrics", "parse")
            )
            continue
        if not isinstance(values, dict):
            continue
        for key, value in values.items():
            if not str(key).startswith("_"):  # Trackio's own (_timestamp, ...)
                for name, number in flatten(str(key), value):
                    yield int(step), name, number


def _read(file: Path, forced: str | None) -> Iterator["Located | Problem"]:
    label = str(file)
    with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as connection:
        runs = connection.execute(
            "SELECT run_id, run_name, config FROM configs ORDER BY created_at, id"
        ).fetchmany(MAX_RUNS)
        for run_id, run_name, text in runs:
            try:
                config = json.loads(text)
            except ValueError:
                config = {}
            params = {
                k: v if isinstance(v, str) else json.dumps(v)
                for k, v in config.items()
                if not k.startswith("_")
            }
            name = forced or run_name or run_id
            context = {"trackio_run_id": run_id, "project": file.stem}
            yield from announce(label, run_fields(name, None, None, None, params, context))
            problems: list[Problem] = []
            yield from metric_batches(label, name[:200], _points(connection, run_id, label, problems))
            yield from problems


def read(path: str, link=None) -> Iterator["Located | Problem"]:
    files = stores(path)
    if not files:
        yield Problem(
            path, None, None, "not a Trackio project store (a .db with metrics and configs)", "parse"
        )
        return
    forced = link.run if link is not None and link.run else None
    for file in files:
        yield from _read(file, forced)


def inputs(path: str) -> list[Input]:
    files = stores(path)
    # a store in WAL mode keeps its latest rows in the -wal file beside it
    return whole([*files, *(w for f in files if (w := f.with_name(f.name + "-wal")).is_file())])


READER = TrackerReader(NAME, HELP, detect, read, inputs)
