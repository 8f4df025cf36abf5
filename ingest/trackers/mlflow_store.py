"""An MLflow tracking store: its runs, their params (TTT length, target) and metric histories.

Three kinds of path, read without starting MLflow where its documented layout allows:
- a SQLite store (`mlflow.db`, or a `sqlite:///...` tracking URI): the tables `experiments`, `runs`
  (run_uuid, name, status, start_time, end_time, lifecycle_stage), `params` (key, value, run_uuid) and
  `metrics` (key, value, timestamp, run_uuid, step, is_nan), read-only, histories streamed by cursor;
- a file store (an `mlruns/` folder, or a `file:` URI): `<experiment>/<run>/meta.yaml`, `params/<key>`,
  `metrics/<key>` (lines of `timestamp value step`; a key with `/` is a sub-folder), streamed a line at a
  time and merged by step;
- any other tracking URI (an MLflow server): MLflow's own client (`mlflow-skinny`, the trackers extra),
  one metric's history at a time.
SpecForge's `--report-to mlflow` logs `train/...` and `eval/...` keys per step (one run per `run_id`);
speculators and older SpecForge scripts log their arguments as params (`ttt_length`, `target_model_path`)."""

import heapq
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem
from specdash.ingest.trackers.base import Input, TrackerReader, extra_problem, whole
from specdash.ingest.trackers.batching import metric_batches
from specdash.ingest.trackers.runs import announce, run_fields
from specdash.ingest.yamltext import YAMLPositionError, load_yaml_with_lines

NAME = "mlflow"
HELP = (
    "MLflow tracking store (mlflow.db, an mlruns/ folder, or a tracking URI): runs, params, metric histories"
)
SQLITE_MAGIC = b"SQLite format 3\x00"
MLFLOW_TABLES = {"experiments", "runs", "params", "metrics"}
STATUS = {"RUNNING": "running", "SCHEDULED": "running", "FINISHED": "finished", "FAILED": "killed"}
STATUS.update(KILLED="killed")
FILE_STATUS = {1: "running", 2: "running", 3: "finished", 4: "killed", 5: "killed"}  # RunStatus numbers
MAX_RUNS = 100_000


def _sqlite_path(path: str) -> Path | None:
    if path.startswith("sqlite:///"):
        return Path(unquote(path[len("sqlite:///") :]))
    candidate = Path(path)
    if not candidate.is_file():
        return None
    try:
        with open(candidate, "rb") as handle:
            if handle.read(16) != SQLITE_MAGIC:
                return None
        with _connect(candidate) as connection:
            tables = {
                row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
    except (OSError, sqlite3.Error):
        return None
    return candidate if MLFLOW_TABLES <= tables else None


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _folder_path(path: str) -> Path | None:
    folder = Path(unquote(urlparse(path).path)) if path.startswith("file:") else Path(path)
    if not folder.is_dir():
        return None
    try:
        experiments = [
            entry for entry in os.scandir(folder) if entry.is_dir() and not entry.name.startswith(".")
        ]
    except OSError:
        return None
    return folder if any(os.path.isfile(os.path.join(e.path, "meta.yaml")) for e in experiments) else None


def _is_server_uri(path: str) -> bool:
    return path.startswith(("http://", "https://", "databricks"))


def detect(path: str) -> bool:
    return _sqlite_path(path) is not None or _folder_path(path) is not None or _is_server_uri(path)


def _unique(name: str, run_id: str, seen: set[str]) -> str:
    """Runs of one name in several experiments stay apart: the second gets its id's first 8 characters."""
    unique = name if name not in seen else f"{name} ({run_id[:8]})"
    seen.add(unique)
    return unique


def _read_sqlite(db: Path, label: str, forced: str | None) -> Iterator["Located | Problem"]:
    with _connect(db) as connection:
        experiments = dict(connection.execute("SELECT experiment_id, name FROM experiments"))
        runs = connection.execute(
            "SELECT run_uuid, name, status, start_time, end_time, experiment_id FROM runs "
            "WHERE lifecycle_stage IS NULL OR lifecycle_stage = 'active' ORDER BY start_time, run_uuid"
        ).fetchmany(MAX_RUNS)
        seen: set[str] = set()
        for run_id, name, status, start, end, experiment in runs:
            params = dict(connection.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,)))
            run = forced or _unique(name or run_id, run_id, seen)
            context = {"mlflow_run_id": run_id, "experiment": experiments.get(experiment)}
            yield from announce(label, run_fields(run, STATUS.get(status or ""), start, end, params, context))
            history = connection.execute(
                "SELECT step, key, CASE WHEN is_nan THEN 'nan' ELSE value END FROM metrics "
                "WHERE run_uuid = ? ORDER BY step, timestamp, key",
                (run_id,),
            )
            yield from metric_batches(label, run[:200], ((s, k, float(v)) for s, k, v in history))


def _files(folder: Path) -> Iterator[tuple[str, Path]]:
    """(key, file) under a run's params/ or metrics/ folder; a key with `/` is a sub-folder."""
    for directory, _dirs, files in os.walk(folder):
        for name in files:
            file = Path(directory) / name
            yield file.relative_to(folder).as_posix(), file


def _metric_lines(key: str, file: Path) -> Iterator[tuple[int, str, float]]:
    with open(file, encoding="utf-8", errors="replace") as handle:
        for text in handle:
            parts = text.split()
            if len(parts) >= 3:
                try:
                    yield int(parts[2]), key, float(parts[1])
                except ValueError:
                    continue


def _file_runs(root: Path) -> Iterator[tuple[Path, dict, dict]]:
    for experiment in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        meta = _meta(experiment / "meta.yaml")
        for run_dir in sorted(p for p in experiment.iterdir() if p.is_dir()):
            run_meta = _meta(run_dir / "meta.yaml")
            if run_meta and run_meta.get("lifecycle_stage", "active") == "active":
                yield run_dir, run_meta, meta


def _meta(file: Path) -> dict:
    """A meta.yaml's mapping; one that cannot be read or parsed is empty: no run."""
    try:
        data = load_yaml_with_lines(file.read_text(encoding="utf-8"))
    except (OSError, YAMLPositionError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_folder(root: Path, label: str, forced: str | None) -> Iterator["Located | Problem"]:
    seen: set[str] = set()
    for run_dir, meta, experiment in _file_runs(root):
        params = {
            key: file.read_text(encoding="utf-8", errors="replace")
            for key, file in _files(run_dir / "params")
        }
        tag = run_dir / "tags" / "mlflow.runName"
        name = str(
            meta.get("run_name") or (tag.read_text(encoding="utf-8") if tag.is_file() else run_dir.name)
        )
        run = forced or _unique(name, run_dir.name, seen)
        context = {"mlflow_run_id": run_dir.name, "experiment": experiment.get("name")}
        status = FILE_STATUS.get(meta.get("status", 0))
        yield from announce(
            label, run_fields(run, status, meta.get("start_time"), meta.get("end_time"), params, context)
        )
        streams: list[Iterable] = [_metric_lines(key, file) for key, file in _files(run_dir / "metrics")]
        yield from metric_batches(label, run[:200], heapq.merge(*streams, key=lambda point: point[0]))


def read_with_client(uri: str, label: str, forced: str | None) -> Iterator["Located | Problem"]:
    """Through MLflow's client: for a tracking server, where the store's layout is not ours to read."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        yield extra_problem(label, "mlflow-skinny")
        return
    client = MlflowClient(tracking_uri=uri)
    seen: set[str] = set()
    for experiment in client.search_experiments():
        for found in _all_runs(client, experiment.experiment_id):
            info, data = found.info, found.data
            run = forced or _unique(info.run_name or info.run_id, info.run_id, seen)
            context = {"mlflow_run_id": info.run_id, "experiment": experiment.name}
            fields = run_fields(
                run, STATUS.get(info.status), info.start_time, info.end_time, data.params, context
            )
            yield from announce(label, fields)
            for key in sorted(data.metrics):  # one history in memory at a time
                history = client.get_metric_history(info.run_id, key)
                yield from metric_batches(label, run[:200], ((m.step, m.key, m.value) for m in history))


def _all_runs(client, experiment_id: str) -> Iterator:
    """Every run of an experiment, a page at a time, oldest first."""
    token, count = None, 0
    while count < MAX_RUNS:
        page = client.search_runs(
            [experiment_id], max_results=1000, order_by=["attributes.start_time ASC"], page_token=token
        )
        yield from page
        count += len(page)
        token = page.token
        if not token:
            return


def read(path: str, link=None) -> Iterator["Located | Problem"]:
    forced = link.run if link is not None and link.run else None
    if (db := _sqlite_path(path)) is not None:
        yield from _read_sqlite(db, path, forced)
    elif (folder := _folder_path(path)) is not None:
        yield from _read_folder(folder, path, forced)
    elif _is_server_uri(path):
        yield from read_with_client(path, path, forced)
    else:
        yield Problem(
            path, None, None, "not an MLflow tracking store (mlflow.db, mlruns/, a tracking URI)", "parse"
        )


def inputs(path: str) -> list[Input]:
    """The SQLite file (and its -wal), or every file of a file store but its runs' artifacts; a
    tracking server has none (nothing to tell a second read by)."""
    if (db := _sqlite_path(path)) is not None:
        return whole([db, *(w for w in [db.with_name(db.name + "-wal")] if w.is_file())])
    folder = _folder_path(path)
    if folder is None:
        return []
    found: list[Path] = []
    for directory, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "artifacts")
        found.extend(Path(directory) / name for name in sorted(files))
    return whole(found)


READER = TrackerReader(NAME, HELP, detect, read, inputs)
