"""SpecForge (and EAGLE repo) training console output.

Read line by line, whatever prefix the logger put in front (or none):
- `step 50: {'train/lr': 9.5e-05, 'train/acc_0': 0.71, 'train/ploss_0': 1.9, ...}`: the tracker's
  metrics dict, a Python dict repr (a fast path for the all-numeric dict; ast.literal_eval, never eval,
  for anything else); the rebuilt trainer (2026) `print`s bare `step 50: {'acc_0': 0.71, 'ploss_0': 1.9,
  'acc': 0.7, 'loss': 2.3, 'grad_norm': 0.5, 'lr': 9.5e-05}` without a tracker, list values as lists
  (`'eval/per_position_acc': [0.71, 0.52]`): names are stored by `metric_names.stored_name`;
- `Train Epoch [3/5], position 0,  Acc: 0.71` and `... position 0, pLoss: 1.93` (also `Test Epoch`,
  `Train Step [n]`): epoch averages, stored as train/epoch_acc_i, train/epoch_ploss_i at step = epoch;
- `Eval - Step 1200 [..], position 0,  Acc: 0.69`: stored as eval/acc_i, eval/ploss_i;
- `Saved model configuration to /out/run7/epoch_2_step_24000`: a checkpoint, whose per-position
  acceptance is the training accuracy last logged before it;
- the `【args】` block (`key ···· value`): run name (output_dir), TTT length, target model.

Points go to the long metric table without a pydantic model per line: a long run logs millions."""

import math
import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import TextIO

from specdash.costmodel.accuracies import ACCURACY_PREFIX, accuracy_position, rates_from_accuracies
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.formats.common import clean_path, model_short_name, prose_or_source, run_record
from specdash.ingest.formats.metric_names import flatten, looks_like_trainer_metrics, stored_name
from specdash.ingest.lines import TooLong, bounded_lines, python_literal, strip_ansi
from specdash.ingest.links import parse_checkpoint_name, path_parts, run_from_parents
from specdash.ingest.metric_points import MAX_KEY_CHARS
from specdash.ingest.problems import Problem
from specdash.ingest.records import CheckpointRecord, MetricRows, RunRecord

NAME = "specforge-log"
HELP = "SpecForge/EAGLE training console output: 'step N: {...}', 'Train Epoch [e/E], position i' lines"

NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?inf|nan"
STEP_DICT = re.compile(r"\bstep (-?\d+): (\{.*\})\s*$")  # a negative step is read, then refused
EPOCH_LINE = re.compile(
    rf"\b(Train|Test|Eval) (Epoch|Step) \[(\d+)(?:/\d+)?\], position (\d+),\s+(Acc|pLoss): ({NUM})"
)
EVAL_STEP = re.compile(rf"\bEval - Step (\d+) \[[^\]]*\], position (\d+),\s+(Acc|pLoss): ({NUM})")
SAVED = re.compile(r"Saved model configuration to (\S+)")
ARG = re.compile(r"^(\w+)\s+\u00b7+ (.*)$")
RAW_KEY = re.compile(r"'([^']{1,200})': ")
MAX_LITERAL_CHARS = 200_000
MAX_STEP_DIGITS = 19  # a step past MAX_INT is refused by the rules; one this long is not read as a number
BATCH_STEPS = 2000  # logged steps handed to the store at a time
FIRST_ACCURACY = f"{ACCURACY_PREFIX}0"  # a step dict with it carries the acceptance curve


def _evidence(line: str) -> bool:
    """A whole log line of this format, not a mention of one: the record runs to the end of the line."""
    if "step " in line and (match := STEP_DICT.search(line)):
        return _pairs(match[2]) is not None and looks_like_trainer_metrics(RAW_KEY.findall(match[2]))
    if "position" in line and (match := EPOCH_LINE.search(line) or EVAL_STEP.search(line)):
        return not line[match.end() :].strip()
    if "Saved model configuration to" in line and (match := SAVED.search(line)):
        return clean_path(match[1]) and not line[match.end() :].strip()
    return bool(ARG.match(line.strip())) and "\u00b7\u00b7" in line


def detect(head: str, filename: str) -> bool:
    if prose_or_source(filename):
        return False
    if not ("step " in head or "position" in head or "Saved model configuration" in head or "\u00b7" in head):
        return False
    return any(_evidence(strip_ansi(line)) for line in head.splitlines()[:5000])


_KEY_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}  # quoted keys as split from a line -> names
MAX_KEY_SETS = 10_000  # a log has a handful of key sets; a file with endless new ones must not grow memory
# A key set as a pattern of the whole dict with a group per value, and the names it gives: a log repeats
# one key set line after line, and one match of the last one read takes all of a line's numbers.
_SHAPES: dict[tuple[str, ...], tuple[re.Pattern, tuple[str, ...]]] = {}
_LAST_SHAPE: list[tuple[re.Pattern, tuple[str, ...]]] = []


def _shape_of(quoted: tuple[str, ...], names: tuple[str, ...]) -> tuple[re.Pattern, tuple[str, ...]]:
    """The pattern of `{'name': number, ...}` with these keys: a key exactly as quoted, a value any run
    without a comma (float() says whether it is a number)."""
    shape = _SHAPES.get(quoted)
    if shape is None or shape[1] is not names:
        if len(_SHAPES) >= MAX_KEY_SETS:
            _SHAPES.clear()
        pattern = r"\{" + ", ".join(f"{re.escape(key)}: ([^,]+)" for key in quoted) + r"\}"
        shape = _SHAPES[quoted] = re.compile(pattern), names
    return shape


def _fast_pairs(text: str) -> tuple[tuple[str, ...], tuple[float, ...]] | None:
    """The common `{'name': number, ...}` line with string operations only; None when it is anything else."""
    if _LAST_SHAPE and (match := _LAST_SHAPE[0][0].fullmatch(text)) is not None:
        try:
            return _LAST_SHAPE[0][1], tuple(map(float, match.groups()))
        except ValueError:
            pass  # not all numbers: read the slow way below, which says so
    parts = text[1:-1].replace("': ", "', ").split(", ")
    if len(parts) % 2:
        return None
    quoted = tuple(parts[0::2])
    names = _KEY_NAMES.get(quoted)
    if names is None:
        joined = "".join(quoted)
        # every key quoted at both ends and nowhere else: 2 quotes each, adjacent at each boundary
        if not (
            joined[:1] == joined[-1:] == "'"
            and joined.count("'") == 2 * len(quoted)
            and joined.count("''") == len(quoted) - 1
        ):
            return None
        if len(_KEY_NAMES) >= MAX_KEY_SETS:
            _KEY_NAMES.clear()
        names = _KEY_NAMES.setdefault(quoted, tuple(stored_name(key[1:-1]) for key in quoted))
    if text.count("'") != 2 * len(quoted):
        return None  # a quoted value: not a plain number
    try:
        found = names, tuple(map(float, parts[1::2]))
    except ValueError:
        return None
    if not _LAST_SHAPE or _LAST_SHAPE[0][1] is not names:
        _LAST_SHAPE[:] = [_shape_of(quoted, names)]
    return found


def _pairs(text: str) -> tuple[tuple[str, ...], tuple[float, ...]] | None:
    """Keys and numbers of a dict repr; None when it is not a dict of names to numbers."""
    found = _fast_pairs(text) if len(text) > 2 else None
    if found is not None:
        return found
    if len(text) > MAX_LITERAL_CHARS:
        return None
    value = python_literal(text)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return None
    # numbers, and lists of numbers as `name/index`; strings and other values in the dict are not metrics
    numbers = {stored_name(k): v for key, item in value.items() for k, v in flatten(key, item)}
    return tuple(numbers), tuple(numbers.values())


def _run_of(run: str, args: dict[str, str]) -> RunRecord:
    ttt = args.get("ttt_length", "")
    specforge = bool(args)  # the args block is SpecForge's; epoch lines alone may be the EAGLE repo
    return run_record(
        run,
        framework="specforge" if specforge else None,
        speculative_algorithm="EAGLE3" if specforge else None,
        ttt_length=int(ttt) if ttt.isdigit() and int(ttt) > 0 else None,
        target_model=model_short_name(args.get("target_model_path")),
    )


def _problems(path: str, line: int, keys: tuple[str, ...], values: tuple[float, ...]) -> list[Problem]:
    """A logged step's values that cannot be stored: not finite, or under a key over the cap."""
    problems = []
    for key, value in zip(keys, values, strict=True):
        if not math.isfinite(value):
            problems.append(Problem(path, line, key, f"must be a finite number, not {value}"))
        elif len(key) > MAX_KEY_CHARS:
            problems.append(Problem(path, line, key[:40] + "...", f"key longer than {MAX_KEY_CHARS}"))
    return problems


class TrainingLog:
    """The parser's state over a log's lines (kept with a followed log's offset between chunks)."""

    def __init__(self, path: str, link):
        self.path = path
        self.forced_run = link.run if link is not None else None
        self.args: dict[str, str] = {}
        self.run: str | None = None
        self.checked: set[tuple[str, ...]] = set()  # key tuples already known to be short enough
        self.last_step: tuple[tuple[str, ...], tuple[float, ...]] | None = None
        self.epoch_acc: dict[int, float] = {}
        self.epoch_newer = False  # epoch averages logged after the last step dict
        self.saved: set[str] = set()
        self.batch: list[tuple[int, tuple[str, ...], tuple[float, ...]]] = []
        self.batch_line = 0

    def run_name(self, line: int) -> Iterator[Located]:
        """Decide the run on first use and announce it with what the args block said."""
        if self.run is None:
            output_dir = self.args.get("output_dir")
            parts = path_parts(output_dir) if output_dir else ()
            self.run = (
                self.forced_run or run_from_parents(parts) or PurePath(self.path).stem or "training-log"
            )
            yield Located(line, _run_of(self.run, self.args))

    def problems(self, line: int, keys: tuple[str, ...], values: tuple[float, ...]) -> list[Problem]:
        if math.isfinite(sum(values)) and (keys in self.checked or max(map(len, keys)) <= MAX_KEY_CHARS):
            self.checked.add(keys)
            return []  # the common case, checked in one go
        return _problems(self.path, line, keys, values)

    def add(self, step: int, keys: tuple[str, ...], values: tuple[float, ...]) -> bool:
        """The common step added to the open batch without a generator or a problems list (its run named,
        the batch not full, its keys checked on an earlier line, its values finite); False for any other,
        which metrics() takes."""
        batch = self.batch
        if (
            not batch
            or len(batch) >= BATCH_STEPS - 1
            or keys not in self.checked
            or not math.isfinite(sum(values))
        ):
            return False
        batch.append((step, keys, values))
        return True

    def metrics(self, line: int, step: int, keys: tuple[str, ...], values: tuple[float, ...]) -> Iterator:
        problems = self.problems(line, keys, values)
        if problems:
            yield from problems
            return
        if self.run is None:
            yield from self.run_name(line)
        if not self.batch:
            self.batch_line = line
        self.batch.append((step, keys, values))
        if len(self.batch) >= BATCH_STEPS:
            yield from self.flush()

    def flush(self) -> Iterator[Located]:
        if self.batch:
            assert self.run is not None  # a batch starts only once run_name() named the run
            yield Located(self.batch_line, MetricRows(self.run, self.batch))
            self.batch = []

    def acceptance(self) -> list[float]:
        """Per-position training accuracy last logged: epoch averages when newer than the last step."""
        latest = {}
        if self.last_step is not None:
            for key, value in zip(*self.last_step, strict=True):
                position = accuracy_position(key)
                if position is not None:
                    latest[position] = value
        if self.epoch_newer or not latest:
            latest.update(self.epoch_acc)
        return rates_from_accuracies(latest)

    def checkpoint(self, line: int, save_path: str) -> Iterator:
        if save_path in self.saved or not path_parts(save_path):
            return
        self.saved.add(save_path)
        yield from self.run_name(line)
        assert self.run is not None  # run_name() named it
        name = path_parts(save_path)[-1][:200]
        parsed = parse_checkpoint_name(name)
        yield Located(
            line,
            CheckpointRecord(
                run=self.run,
                name=name,
                path=save_path[:1000],
                acceptance=self.acceptance() or None,
                epoch=parsed.epoch if parsed else None,
                step=parsed.step if parsed else None,
            ),
        )


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    yield from parse_lines(TrainingLog(path, link), stream)


def parse_lines(log: TrainingLog, stream: TextIO, first_line: int = 1) -> Iterator:
    """The lines of `stream` read into `log`, whose state (args, run, checkpoints seen) carries over from
    earlier lines: a followed log is read a piece at a time. `first_line` numbers the first line."""
    path = log.path
    for number, text in bounded_lines(stream):
        number += first_line - 1
        if isinstance(text, TooLong):
            yield Problem(
                path, number, None, f"line of {text.chars:,} characters is over the size cap", "parse"
            )
            continue
        if "step " in text and (match := STEP_DICT.search(text)):
            found = _pairs(match[2])
            if found is None:
                yield Problem(path, number, None, "metrics are not a dict of names to numbers", "parse")
                continue
            if len(match[1]) > MAX_STEP_DIGITS:  # also past Python's int-string limit: said, not raised
                yield Problem(path, number, "step", f"a number of {len(match[1])} digits is no training step")
                continue
            if FIRST_ACCURACY in found[0]:
                log.last_step, log.epoch_newer = found, False
            step = int(match[1])
            if not log.add(step, *found):
                yield from log.metrics(number, step, *found)
        elif "position" in text and (match := EPOCH_LINE.search(text) or EVAL_STEP.search(text)):
            if not text[match.end() :].strip():  # the record ends the line; a quote in prose does not
                yield from _position_line(log, number, match)
        elif "Saved model configuration to" in text and (match := SAVED.search(strip_ansi(text))):
            if clean_path(match[1]):  # not a path quoted in prose (`/ckpt/x`,)
                yield from log.checkpoint(number, match[1])
        elif "\u00b7" in text and (match := ARG.match(strip_ansi(text).strip())):
            log.args.setdefault(match[1], match[2].strip())
    yield from log.flush()


def _position_line(log: TrainingLog, number: int, match: re.Match) -> Iterator:
    if match.re is EVAL_STEP:
        step, position, what, value = match[1], match[2], match[3], match[4]
        key = f"eval/{'acc' if what == 'Acc' else 'ploss'}_{position}"
    else:
        phase, _unit, step, position, what, value = match.groups()
        kind = "acc" if what == "Acc" else "ploss"
        key = f"{phase.lower()}/epoch_{kind}_{position}"
    number_value = float(value)
    if key.startswith("train/epoch_acc_") and math.isfinite(number_value):
        log.epoch_acc[int(position)] = number_value  # an epoch average beats the last step's noisy value
        log.epoch_newer = True
    yield from log.metrics(number, int(step), (key,), (number_value,))


FORMATS = [Format(NAME, HELP, detect, parse, decode_errors="replace", bulk_points=True)]
