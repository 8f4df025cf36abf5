"""Summarise a server log's periodic decode statistics into one benchmark, with bounded memory.

Each log interval reports the requests running, the aggregate decode tok/s and (when speculating) the
accept length. The summary keeps, per engine rank, the intervals at the rank's dominant running count
(the steady state of a benchmark at fixed concurrency): aggregate tok/s is their median (summed over
ranks), per-request tok/s is aggregate / running, and the spread of per-request tok/s (p10, p90) is
kept alongside."""

import random
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass

RESERVOIR = 20_000  # samples kept per (rank, running) bucket; exact below this
MAX_BUCKETS = 4096


@dataclass(frozen=True)
class LogSummary:
    concurrency: int
    output_throughput: float
    decode_tps: float
    decode_tps_p10: float
    decode_tps_p90: float
    interval_count: int
    accept_length: float | None


def _quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) == 1:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=10, method="inclusive")
    return cuts[0], cuts[-1]


class IntervalSummary:
    def __init__(self) -> None:
        self._counts: Counter = Counter()
        self._samples: dict[tuple[str, int], list[tuple[float, float | None]]] = defaultdict(list)
        self._random = random.Random(0)  # deterministic: the same log gives the same summary
        self.intervals = 0
        self.idle = 0

    def add(self, rank: str, running: int, gen_tps: float, accept_length: float | None) -> None:
        self.intervals += 1
        if running <= 0 or gen_tps <= 0:
            self.idle += 1
            return
        bucket = (rank, running)
        if bucket not in self._counts and len(self._counts) >= MAX_BUCKETS:
            return
        self._counts[bucket] += 1
        samples = self._samples[bucket]
        sample = (gen_tps, accept_length)
        if len(samples) < RESERVOIR:
            samples.append(sample)
        else:  # reservoir sampling keeps a uniform sample of an unbounded stream
            slot = self._random.randrange(self._counts[bucket])
            if slot < RESERVOIR:
                samples[slot] = sample

    def result(self) -> LogSummary | None:
        if not self._counts:
            return None
        dominant: dict[str, int] = {}
        for (rank, running), count in self._counts.items():
            best = dominant.get(rank)
            if best is None or (count, running) > (self._counts[(rank, best)], best):
                dominant[rank] = running
        concurrency, aggregate, per_request, accepts, intervals = 0, 0.0, [], [], 0
        for rank, running in sorted(dominant.items()):
            samples = self._samples[(rank, running)]
            concurrency += running
            aggregate += statistics.median(tps for tps, _ in samples)
            per_request.extend(tps / running for tps, _ in samples)
            accepts.extend(a for _, a in samples if a is not None)
            intervals += self._counts[(rank, running)]
        p10, p90 = _quantiles(per_request)
        return LogSummary(
            concurrency=concurrency,
            output_throughput=aggregate,
            decode_tps=aggregate / concurrency,
            decode_tps_p10=p10,
            decode_tps_p90=p90,
            interval_count=intervals,
            accept_length=statistics.median(accepts) if accepts else None,
        )
