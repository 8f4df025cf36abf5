"""A file that disagrees with itself: the same checkpoint twice with different acceptance, the same metric
key and step twice with different values (native records), the same timestamped run of a benchmark twice
with different speeds. Each is a conflict naming both lines; the later record is refused.

Two measurements of one setting at one load, dataset and context (mean input and output tokens per request)
that differ (64.5 and 63.7 tok/s, no speculation) are no contradiction but a repeat, what a careful user
makes: both are kept, and the summary names the repeat group. A sweep over prompt lengths measures other
points, neither a repeat nor a conflict.

Training logs are the exception: a resumed run re-logs the steps after its checkpoint, so a log's later
values win (Resumes) and the summary says where it resumed and how many points were replaced."""

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from specdash.costmodel.context import length_class
from specdash.ingest.formats.base import Located
from specdash.ingest.records import (
    SPECULATION_FIELDS,
    BenchmarkRecord,
    CheckpointRecord,
    MetricRows,
    MetricsRecord,
)
from specdash.labels import setting_label

Conflict = tuple[str, str]  # field, message
# What makes two benchmarks measurements of one thing: the setting, the load, the dataset and the context,
# where and of which drafter (a repeat group when their speeds differ).
REPEAT_KEY_FIELDS = (
    "deployment",
    "engine",
    "concurrency",
    "dataset",
    *SPECULATION_FIELDS,
    "run",
    "checkpoint",
    "drafter_path",
)
MAX_REPEATS_NAMED = 3


@dataclass(slots=True)
class Measured:
    line: int | None
    decode_tps: float
    measured_at: Any


def repeat_key(record: BenchmarkRecord) -> tuple[Any, ...]:
    target = (record.raw or {}).get("target_model")  # SpecBundle: one deployment may serve several
    lengths = length_class(record.input_tokens, record.output_tokens)  # outputs sampled anew each run
    return (str(target), *lengths, *(getattr(record, name) for name in REPEAT_KEY_FIELDS))


def repeat_digest(record: BenchmarkRecord) -> bytes:
    """repeat_key in 16 bytes: a file's every benchmark is remembered by it, and the key's own tuple of
    strings (a few hundred bytes a benchmark) would grow the ingest's memory with the file."""
    # the key holds only str, int and None, whose repr tells equal values from unequal ones
    return hashlib.blake2b(repr(repeat_key(record)).encode(), digest_size=16).digest()


def context_words(record: BenchmarkRecord) -> str:
    """` with 1024 in / 512 out tokens` where the record states its context, else nothing."""
    told = [
        f"{value:g} {side}"
        for side, value in (("in", record.input_tokens), ("out", record.output_tokens))
        if value is not None
    ]
    return f" with {' / '.join(told)} tokens" if told else ""


class RepeatedPoints:
    """The metric points a file may give twice, found as its records are spooled: those of a record whose
    step is at or below the highest its run had before. A file read whole has only these remembered by
    the ledger: every point remembered (a few hundred bytes each) took 7.7 GB for a 1 GB file of 40
    million, and a file of ascending steps has none."""

    def __init__(self) -> None:
        self.highest: dict[str, int] = {}  # by run
        self.points: set[tuple[str, str, int]] = set()

    def see(self, record: object) -> None:
        if not isinstance(record, MetricsRecord):
            return
        highest = self.highest.get(record.run)
        if highest is None or record.step > highest:
            self.highest[record.run] = record.step
        else:
            self.points.update((record.run, key, record.step) for key in record.values)


class Ledger:
    """What a file said so far, by identity, with the line that said it."""

    def __init__(self, is_log: bool):
        self.is_log = is_log  # a server log's starts measure one setting again: levels, not repeats
        self.checkpoints: dict[tuple[str, str], tuple[int | None, list[float]]] = {}
        self.points: dict[tuple[str, str, int], tuple[int | None, float]] = {}
        # of a file read whole, the points it may give twice (RepeatedPoints): only those are remembered
        self.repeated: RepeatedPoints | None = None
        self.measured: dict[bytes, list[Measured]] = {}  # by repeat_digest
        self.repeats: dict[bytes, BenchmarkRecord] = {}  # digest -> its first record, once they differ

    def conflict(self, record: Any, line: int | None) -> Conflict | None:
        if isinstance(record, CheckpointRecord) and record.acceptance is not None:
            return self._checkpoint(record, line)
        if isinstance(record, MetricsRecord):
            return self._metrics(record, line)
        if isinstance(record, BenchmarkRecord) and not self.is_log:
            return self._benchmark(record, line)
        return None

    def _checkpoint(self, record: CheckpointRecord, line: int | None) -> Conflict | None:
        assert record.acceptance is not None
        earlier = self.checkpoints.setdefault((record.run, record.name), (line, record.acceptance))
        if earlier[1] == record.acceptance:
            return None
        return (
            "acceptance",
            f"checkpoint '{record.run}/{record.name}' is given twice with different acceptance: line "
            f"{earlier[0]} says {earlier[1]}, line {line} says {record.acceptance}",
        )

    def _metrics(self, record: MetricsRecord, line: int | None) -> Conflict | None:
        repeated = self.repeated.points if self.repeated is not None else None
        for key, value in record.values.items():
            point = (record.run, key, record.step)
            if repeated is not None and point not in repeated:
                continue  # given once in the file
            earlier = self.points.setdefault(point, (line, value))
            if earlier[1] != value:
                return (
                    f"values.{key}",
                    f"run '{record.run}' step {record.step} is given twice with different values: line "
                    f"{earlier[0]} says {earlier[1]:g}, line {line} says {value:g}",
                )
        return None

    def _benchmark(self, record: BenchmarkRecord, line: int | None) -> Conflict | None:
        """A repeat of a setting, load and dataset is kept; the same timestamped run with another speed
        contradicts itself."""
        key = repeat_digest(record)
        earlier = self.measured.setdefault(key, [])
        at = record.measured_at
        for before in earlier:
            if at is not None and before.measured_at == at and before.decode_tps != record.decode_tps:
                return (
                    "decode_tps",
                    f"the run of '{record.deployment}' measured at {at.isoformat()} "
                    f"({setting_label(record.model_dump())} at concurrency {record.concurrency}"
                    f"{context_words(record)}) is given twice "
                    f"with different speeds: line {before.line} says {before.decode_tps:g} tok/s, line {line} "
                    f"says {record.decode_tps:g}",
                )
        if earlier and all(before.decode_tps != record.decode_tps for before in earlier):
            self.repeats.setdefault(key, record)
        earlier.append(Measured(line, record.decode_tps, record.measured_at))
        return None

    def note(self) -> str | None:
        """The repeat groups the file holds, the first few named with their speeds and lines."""
        if not self.repeats:
            return None
        named = []
        for key, record in list(self.repeats.items())[:MAX_REPEATS_NAMED]:
            runs = self.measured[key]
            speeds = " and ".join(f"{m.decode_tps:g}" for m in runs)
            lines = ", ".join(str(m.line) for m in runs)
            dataset = f" on {record.dataset}" if record.dataset else ""
            named.append(
                f"'{record.deployment}' {setting_label(record.model_dump())} at concurrency "
                f"{record.concurrency}{dataset}{context_words(record)}: {speeds} tok/s (lines {lines})"
            )
        more = len(self.repeats) - len(named)
        return (
            f"{len(self.repeats)} repeat group(s) kept, each measurement stored: "
            + "; ".join(named)
            + (f"; and {more} more" if more > 0 else "")
        )


@dataclass
class Stream:
    """One run's rows of one key set, in file order: where the step went back (a resume) and how far on."""

    last: int = -1  # the step of its previous row
    resumes: list[list[int]] = field(default_factory=list)  # [row position, resumed at step, highest after]


class Resumes:
    """A training log's re-logged steps: found in a first pass over its rows, the earlier rows of each
    re-logged step left out in the second, so the later values are the ones stored."""

    def __init__(self) -> None:
        self.streams: dict[tuple[str, tuple[str, ...]], Stream] = {}
        self.replaced = 0

    def survey(self, items: Iterable[Located]) -> None:
        position = 0
        for item in items:
            if not isinstance(item.record, MetricRows):
                continue
            for step, keys, _ in item.record.steps:
                stream = self.streams.setdefault((item.record.run, keys), Stream())
                if step <= stream.last and keys:  # back to a step already logged: the run resumed
                    stream.resumes.append([position, step, step])
                elif stream.resumes:
                    stream.resumes[-1][2] = max(stream.resumes[-1][2], step)
                stream.last = step
                position += 1
        self.streams = {k: s for k, s in self.streams.items() if s.resumes}

    def keep_later(self, items: Iterable[Located]) -> Iterator[Located]:
        position = 0
        for item in items:
            record = item.record
            if not isinstance(record, MetricRows) or not self.streams:
                yield item
                continue
            kept = []
            for row in record.steps:
                if not self._superseded(record.run, row[0], row[1], position):
                    kept.append(row)
                else:
                    self.replaced += len(row[1])
                position += 1
            if kept:
                yield Located(item.line, MetricRows(record.run, kept))

    def _superseded(self, run: str, step: int, keys: tuple[str, ...], position: int) -> bool:
        stream = self.streams.get((run, keys))
        if stream is None:
            return False
        return any(at > position and low <= step <= high for at, low, high in stream.resumes)

    def note(self) -> str | None:
        if not self.streams:
            return None
        steps = sorted({resume[1] for s in self.streams.values() for resume in s.resumes})
        shown = ", ".join(map(str, steps[:5])) + (f" and {len(steps) - 5} more" if len(steps) > 5 else "")
        return f"resumed at step {shown}, {self.replaced} points replaced by the later values"
