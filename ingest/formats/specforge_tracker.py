"""Training metrics exported from an experiment tracker (wandb, swanlab, mlflow, tensorboard) as CSV,
JSON or JSONL: one row per logged step, a step column (`step`, `_step`, `global_step`, `Step`) and one
column per metric key as SpecForge and the EAGLE repo log them (`train/acc_0`, `train/ploss_0`,
`eval/acc_0`, `train/lr`, ...). wandb's UI export names columns `<run> - train/acc_0` and adds
`__MIN`/`__MAX` columns: each prefix is a run of its own (an export of several runs holds one column set
per run), and the min/max columns are skipped."""

import json
import math
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import TextIO

from specdash.ingest.csvtext import csv_rows, header_of
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.formats.common import run_record
from specdash.ingest.jsontext import LENIENT_DECODER
from specdash.ingest.lines import TooLong, bounded_lines
from specdash.ingest.metric_points import MAX_KEY_CHARS
from specdash.ingest.problems import Problem
from specdash.ingest.records import MetricRows

STEP_COLUMNS = ("step", "_step", "global_step", "Step", "train/global_step")
METRIC_HINT = re.compile(r"\b(?:train|eval|test)/")


def _step_column(columns: list[str]) -> str | None:
    return next((c for c in STEP_COLUMNS if c in columns), None)


def detect_csv(head: str, filename: str) -> bool:
    columns = header_of(head)
    return (
        filename.lower().endswith(".csv")
        and _step_column(columns) is not None
        and any(METRIC_HINT.search(c) for c in columns)
    )


def detect_json(head: str, filename: str) -> bool:
    start = head.lstrip()
    return (
        start[:1] in "[{"
        and bool(METRIC_HINT.search(head[:4096]))
        and any(f'"{c}"' in head[:4096] for c in STEP_COLUMNS)
    )


def split_column(column: str) -> tuple[str | None, str]:
    """wandb's `<run> - <key>`: run names may hold " - ", metric keys do not, so split at the last one."""
    if " - " in column:
        run, key = column.rsplit(" - ", 1)
        if run.strip() and key.strip():
            return run.strip(), key.strip()
    return None, column


class Rows:
    """Turns tracker rows into metric points, one run per `<run> - ` column prefix (wandb's export of
    several runs), else the run the user named, else the file's name."""

    def __init__(self, path: str, link):
        self.path = path
        self.forced = link.run if link is not None and link.run else None
        self.announced: set[str] = set()
        self.refused = False

    def row(self, line: int, cells: dict) -> Iterator:
        step_key = _step_column(list(cells))
        if step_key is None:
            yield Problem(self.path, line, "step", "no step column (step, _step, global_step)")
            return
        try:
            number = float(cells[step_key])
            step = int(number)
        except (TypeError, ValueError, OverflowError):
            yield Problem(self.path, line, step_key, f"step {cells[step_key]!r} is not a number")
            return
        if step != number:  # "1.5" is no step; "1500.0" (a float column in an export) is 1500
            yield Problem(self.path, line, step_key, f"step {cells[step_key]!r} is not a whole number")
            return
        if step < 0:
            yield Problem(self.path, line, step_key, "step must be >= 0")
            return
        by_run: dict[str | None, dict[str, float]] = {}
        problems = []
        for column, cell in cells.items():
            if column == step_key or column.startswith("_") or cell is None or cell == "":
                continue
            prefix, key = split_column(column)
            if prefix is not None and key.endswith(("__MIN", "__MAX")):
                continue
            if not METRIC_HINT.search(key) and "/" not in key:
                continue  # wall time, runtime, epoch counters: not metrics
            if isinstance(cell, bool) or not isinstance(cell, (int, float, str)):
                continue
            try:
                value = float(cell)
            except ValueError:
                problems.append(Problem(self.path, line, column, f"{cell!r} is not a number"))
                continue
            if not math.isfinite(value):
                problems.append(Problem(self.path, line, column, "must be a finite number"))
            elif len(key) > MAX_KEY_CHARS:
                problems.append(Problem(self.path, line, column[:40], f"key longer than {MAX_KEY_CHARS}"))
            else:
                by_run.setdefault(prefix, {})[key] = value
        if problems:
            yield from problems
            return
        prefixes = [p for p in by_run if p is not None]
        if self.forced and len(prefixes) > 1:
            if not self.refused:
                self.refused = True
                yield Problem(
                    self.path,
                    line,
                    "run",
                    f"the export holds several runs ({', '.join(prefixes[:5])}); "
                    "--run would put all their points under one run: leave it out",
                )
            return
        for prefix, values in by_run.items():
            if not values:
                continue
            run = self.forced or prefix or PurePath(self.path).stem or "tracker-export"
            if run not in self.announced:
                self.announced.add(run)
                yield Located(line, run_record(run))
            yield Located(line, MetricRows(run, [(step, tuple(values), list(values.values()))]))


def parse_csv(stream: TextIO, path: str, link=None) -> Iterator:
    rows = Rows(path, link)
    for item in csv_rows(stream, path):
        if isinstance(item, Problem):
            yield item
        else:
            yield from rows.row(*item)


def parse_json(stream: TextIO, path: str, link=None) -> Iterator:
    """JSONL (one row a line) is streamed; a JSON array is read row by row from its lines too, which
    holds for the one-row-a-line arrays trackers write."""
    rows = Rows(path, link)
    for number, text in bounded_lines(stream):
        if isinstance(text, TooLong):
            yield Problem(
                path, number, None, f"line of {text.chars:,} characters is over the size cap", "parse"
            )
            continue
        body = text.strip().rstrip(",")
        if body in ("", "[", "]"):
            continue
        body = body.lstrip("[").rstrip("]").rstrip(",")
        try:
            cells = LENIENT_DECODER.decode(body)
        except json.JSONDecodeError as exc:
            yield Problem(path, number, None, f"invalid JSON: {exc.msg} (one row a line expected)", "parse")
            continue
        if not isinstance(cells, dict):
            yield Problem(path, number, None, "expected a JSON object per row", "parse")
            continue
        yield from rows.row(number, cells)


FORMATS = [
    Format(
        "tracker-csv",
        "tracker export CSV (wandb/swanlab/mlflow): step + train/acc_i, train/ploss_i, eval/... columns",
        detect_csv,
        parse_csv,
        bulk_points=True,
    ),
    Format(
        "tracker-json",
        "tracker export JSON/JSONL: one {step, train/acc_i, ...} object per row",
        detect_json,
        parse_json,
        bulk_points=True,
    ),
]
