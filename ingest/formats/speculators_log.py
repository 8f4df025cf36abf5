"""vllm-project/speculators trainer console output, as its rich log handler writes it.

Each record is a block: `[14:02:07] INFO     train/loss_0=2.400, train/full_acc_0=0.612, ...   trainer.py:498`
with the message wrapped onto continuation lines indented under it (the time column is blank when it
repeats, the source path sits at the right of the first line). Read:
- training steps: `train/loss_i`, `train/full_acc_i` (position i right and every earlier one), `train/cond_acc_i`
  (position i right given the earlier ones were) ..., `lr`, `global_step`: stored as written, with
  `train/acc_i` = `train/cond_acc_i` (the conditional acceptance specdash's acc_i stands for) and
  `train/lr`; step = `global_step`;
- validation: `val/loss_epoch`, `val/cond_acc_i_epoch`, ...: stored at the last global step;
- `Checkpoint saved to /out/run/2`: a checkpoint (epoch 2) whose per-position acceptance is the last
  logged `train/cond_acc_i`.

The run is `--run`, else named by the folder holding the checkpoints when one is saved before the first
batch of points is handed on, else the file's name."""

import math
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import TextIO

from specdash.costmodel.accuracies import ACCURACY_PREFIX, accuracy_position, rates_from_accuracies
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.formats.common import prose_or_source, run_record
from specdash.ingest.lines import TooLong, bounded_lines, strip_ansi
from specdash.ingest.links import path_parts, run_from_parents
from specdash.ingest.metric_points import MAX_KEY_CHARS
from specdash.ingest.problems import Problem
from specdash.ingest.records import CheckpointRecord, MetricRows

NAME = "speculators-log"
HELP = "vllm-project/speculators trainer console (rich blocks of train/loss_i=..., train/full_acc_i=...)"

BLOCK_START = re.compile(r"^(?:\[[^\]]{1,40}\]|\s{4,})\s*(DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(.*)$")
SOURCE_COLUMN = re.compile(r"\s{2,}[\w.\-]+\.py:\d+\s*$")
PAIR = re.compile(r"(?:^|,\s)([A-Za-z_][\w/.\-]*)=([^,\s]+)")
METRIC_KEY = re.compile(r"\btrain/(?:loss|full_acc|cond_acc)_\d+=")
COND_ACC = re.compile(r"^train/cond_acc_(\d+)$")
SAVED = re.compile(r"Checkpoint saved to (\S+)")
BATCH_STEPS = 2000
MAX_BLOCK_CHARS = 200_000


def detect(head: str, filename: str) -> bool:
    """Positive evidence: a log record (time or blank column, level) whose message holds training pairs."""
    if prose_or_source(filename) or not METRIC_KEY.search(head):
        return False
    return any(BLOCK_START.match(line) and METRIC_KEY.search(line) for line in head.splitlines()[:5000])


def _blocks(stream: TextIO, path: str) -> Iterator[tuple[int, str] | Problem]:
    """(first line, message) per log record, continuation lines joined."""
    start, parts, size = None, [], 0
    for number, text in bounded_lines(stream):
        if isinstance(text, TooLong):
            yield Problem(
                path, number, None, f"line of {text.chars:,} characters is over the size cap", "parse"
            )
            continue
        line = strip_ansi(text).rstrip()
        match = BLOCK_START.match(line)
        if match:
            if start is not None:
                yield start, " ".join(parts)
            start, parts, size = number, [SOURCE_COLUMN.sub("", match[2]).strip()], len(match[2])
        elif start is not None and line[:1].isspace() and line.strip():
            if size < MAX_BLOCK_CHARS:
                parts.append(line.strip())
                size += len(line)
        elif start is not None:
            yield start, " ".join(parts)
            start, parts, size = None, [], 0
    if start is not None:
        yield start, " ".join(parts)


class TrainerLog:
    def __init__(self, path: str, link) -> None:
        self.path = path
        self.run: str | None = link.run if link is not None and link.run else None
        self.announced = False
        self.step = 0
        self.acceptance: dict[int, float] = {}
        self.batch: list[tuple[int, tuple[str, ...], list[float]]] = []
        self.batch_line = 0
        self.saved: set[str] = set()

    def announce(self, line: int) -> Iterator[Located]:
        if not self.announced:
            self.run = self.run or PurePath(self.path).stem or "speculators-train"
            self.announced = True
            yield Located(line, run_record(self.run, framework="speculators"))

    def flush(self) -> Iterator[Located]:
        if self.batch:
            yield from self.announce(self.batch_line)
            assert self.run is not None  # announce() named it
            yield Located(self.batch_line, MetricRows(self.run, self.batch))
            self.batch = []

    def metrics(self, line: int, message: str) -> Iterator:
        values: dict[str, float] = {}
        problems = []
        for key, text in PAIR.findall(message):
            try:
                value = float(text)
            except ValueError:
                continue  # profile=None, a learning-rate group name: not a number
            if key == "global_step":
                self.step = int(value) if math.isfinite(value) and value >= 0 else self.step
                continue
            if key == "epoch":
                continue
            name = "train/lr" if key == "lr" else key
            if "/" not in name:
                continue
            if not math.isfinite(value):
                problems.append(Problem(self.path, line, key, f"must be a finite number, not {text}"))
            elif len(name) > MAX_KEY_CHARS:
                problems.append(
                    Problem(self.path, line, key[:40] + "...", f"key longer than {MAX_KEY_CHARS}")
                )
            else:
                values[name] = value
                if match := COND_ACC.match(name):
                    values[f"{ACCURACY_PREFIX}{match[1]}"] = value
        if problems:
            yield from problems
            return
        if not values:
            return
        positions = {position: v for k, v in values.items() if (position := accuracy_position(k)) is not None}
        if positions:
            self.acceptance = positions
        if not self.batch:
            self.batch_line = line
        self.batch.append((self.step, tuple(values), list(values.values())))
        if len(self.batch) >= BATCH_STEPS:
            yield from self.flush()

    def checkpoint(self, line: int, save_path: str) -> Iterator:
        parts = path_parts(save_path)
        if save_path in self.saved or not parts:
            return
        self.saved.add(save_path)
        if not self.announced and self.run is None and len(parts) >= 2:
            self.run = run_from_parents(parts[:-1])
        yield from self.flush()
        yield from self.announce(line)
        assert self.run is not None  # announce() named it
        name = parts[-1][:200]
        rates = rates_from_accuracies(self.acceptance)
        yield Located(
            line,
            CheckpointRecord(
                run=self.run,
                name=name,
                path=save_path[:1000],
                acceptance=rates or None,
                epoch=int(name) if name.isdigit() else None,
                step=self.step,
            ),
        )


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    log = TrainerLog(path, link)
    for item in _blocks(stream, path):
        if isinstance(item, Problem):
            yield item
            continue
        line, message = item
        if "=" in message and ("train/" in message or "val/" in message):
            yield from log.metrics(line, message)
        elif "Checkpoint saved to" in message and (match := SAVED.search(message)):
            yield from log.checkpoint(line, match[1])
    yield from log.flush()


FORMATS = [Format(NAME, HELP, detect, parse, decode_errors="replace", bulk_points=True)]
