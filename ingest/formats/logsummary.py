"""Split a server log's periodic decode statistics into load levels and summarise each at steady state.

Each interval line reports the requests running when it was written and the tokens generated per second
since the previous line (vLLM: every 10 s; SGLang: every `decode_log_interval` decode steps, the time
including any prefill and idle time in between). Rules, applied per server start:

- idle intervals (nothing running, nothing generated) end an episode of load;
- tail intervals (`Running: 0` yet tokens generated: the last requests finished inside them) are left out;
- a load level is a hold of the running count: runs of at least two intervals at one count, with later
  runs within 25 % of it joined to the level; counts in between levels are ramps, left out. An episode
  that never holds a count (request-rate load) is one level at its median running count, marked varying;
- a level with under 15 % of the request-intervals of the server's largest level (a test request, the
  ramp-down of a run) is left out as brief; levels at the same count are one benchmark;
- at a held level only intervals at exactly that count are used (others lost or waited for a request);
- intervals in which a prefill ran are left out when at least two, and a third, of the level's are free
  of prefill (low load: the prefill belongs to a request's time to first token, not to its decode);
  otherwise (prefills in most intervals) the intervals with the least prefill, at or below the level's
  lower quartile of prefill tokens, are used: they come nearest to the decode-only speed a client's TPOT
  measures, as every request of the level was decoding in them;
- the interval in which a load began (the first busy one after idle or the start-up) is left out where
  another measures the level; a load that never filled an interval (a short run per server start) keeps
  its intervals, marked as lower bounds of the speed (`lower_bound`): a log an engine wrote is never
  refused for being short.

The aggregate tok/s is the sum over ranks of each rank's median; per request it is aggregate / running
count (varying levels: the median per interval of tok/s / running)."""

import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from specdash.ingest.problems import Problem

MAX_INTERVALS = 200_000  # per server start (23 days of vLLM lines); the rest is counted and left out
HOLD = 2  # intervals at one running count that make it a held level
SAME_LEVEL = 0.25  # relative difference of running counts still the same level
BRIEF = 0.15  # share of the largest level's request-intervals below which a level is brief
CLEAN_SHARE = 1 / 3
# A benchmark label's ending when the load began inside every interval it used (Level.lower_bound).
LOWER_BOUND_NOTE = " (a lower bound: the load began inside its interval)"

REASONS = {
    "idle": "idle (nothing running or generated)",
    "tail": "requests finished inside it (running 0, tokens generated)",
    "no-tokens": "requests running, no tokens generated (prefill only)",
    "ramp": "load changing (ramp-up, ramp-down or between levels)",
    "brief": "a brief load level (too few requests to be a benchmark)",
    "off-level": "running count off the level's (a request finished or waited inside it)",
    "prefill": "a prefill ran inside it",
    "more-prefill": "more prefill than the level's least-prefill quarter",
    "start": "the load began inside it (idle before): its tokens are spread over the whole interval",
    "short": "no interval of the level at its running count with tokens generated",
    "cap": f"over {MAX_INTERVALS:,} intervals in one server start",
}


SHORT = {
    "idle": "idle",
    "tail": "tail (running 0, tokens generated)",
    "no-tokens": "with no tokens generated",
    "ramp": "ramp (load changing)",
    "brief": "in a brief load level",
    "off-level": "off the level's running count",
    "prefill": "with a prefill in them",
    "more-prefill": "with more prefill than the least-prefill quarter",
    "start": "in which the load began",
    "short": "of a level with no usable interval",
    "cap": "over the interval cap",
}


def _counts(counts: Counter) -> str:
    return ", ".join(
        f"{n} {SHORT[reason]}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )


# vLLM's speculative counters over an interval: tokens emitted, rounds, per-position acceptance rates
Spec = tuple[float, float, tuple[float, ...]]


class Interval:
    # prefill: how much prefill ran inside the interval (vLLM prompt tokens/s, SGLang new tokens); 0: none
    __slots__ = (
        "line",
        "rank",
        "running",
        "gen_tps",
        "prefill",
        "accept",
        "spec",
        "total",
        "speculated",
        "starts_load",
    )

    def __init__(
        self,
        line: int,
        rank: str,
        running: int,
        gen_tps: float,
        prefill: float = 0.0,
        accept: float | None = None,
        spec: "Spec | None" = None,
    ):
        self.line, self.rank, self.running, self.gen_tps = line, rank, running, gen_tps
        self.prefill, self.accept, self.spec = prefill, accept, spec
        self.speculated = accept is not None  # set by the parser when speculative metrics belong to it
        self.total = running  # running count over all ranks when it was written
        self.starts_load = False  # the first busy interval after idle (or the start): load began inside it


@dataclass
class Level:
    concurrency: int
    varying: bool
    intervals: list[Interval] = field(default_factory=list)  # every interval of the level, in order
    used: list[Interval] = field(default_factory=list)
    left_out: Counter = field(default_factory=Counter)
    prefill_kept: int = 0  # used intervals with a prefill in them (too few prefill-free ones to use)
    output_throughput: float = 0.0
    decode_tps: float = 0.0
    decode_tps_p10: float = 0.0
    decode_tps_p90: float = 0.0
    accept_length: float | None = None
    running_low: int = 0
    running_high: int = 0
    # every used interval began idle (a load shorter than an interval, e.g. one line per server start):
    # its tokens are spread over the whole interval, so the rates are lower bounds of the decode speed
    lower_bound: bool = False

    @property
    def first_line(self) -> int:
        return self.intervals[0].line

    @property
    def mass(self) -> int:
        return sum(i.total for i in self.intervals)

    def summary(self, server_left_out: Counter | None = None) -> dict:
        """What the level used and left out, and why: for the raw record and the ingest report."""
        left_out, server_left_out = +self.left_out, +(server_left_out or Counter())
        load = (
            f"varying load, {self.running_low}-{self.running_high} running (median {self.concurrency})"
            if self.varying
            else f"{self.concurrency} running"
        )
        parts = [f"{len(self.used)} interval(s) used at {load}"]
        if left_out:
            parts.append("left out " + _counts(left_out))
        if self.prefill_kept:
            parts.append(f"{self.prefill_kept} with a prefill kept (too few prefill-free intervals)")
        if self.lower_bound:
            parts.append("the load began inside every used interval: its tok/s are lower bounds")
        if server_left_out:
            parts.append("in no benchmark of this server start: " + _counts(server_left_out))
        return {
            "used": len(self.used),
            "left_out": dict(left_out),
            "server_left_out": dict(server_left_out),
            "prefill_kept": self.prefill_kept,
            "varying_load": self.varying,
            "lower_bound": self.lower_bound,
            "reasons": {k: REASONS[k] for k in sorted({*left_out, *server_left_out})},
            "text": "; ".join(parts),
        }


def _quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) == 1:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=10, method="inclusive")
    return cuts[0], cuts[-1]


def speculation_pieces(intervals: list[Interval]) -> list[tuple[list[Interval], bool]]:
    """The intervals split where the busy ones switch between speculating and not for at least HOLD in a
    row (servers logged one after another with no start line between), each piece with its state."""
    busy = [i for i in intervals if i.running > 0 and i.gen_tps > 0]
    if not busy:
        return [(intervals, False)]
    cuts, state, run_start, run_length = [], busy[0].speculated, None, 0
    for interval in busy:
        if interval.speculated == state:
            run_start, run_length = None, 0
            continue
        run_start = run_start or interval
        run_length += 1
        if run_length >= HOLD:
            cuts.append(run_start.line)
            state, run_start, run_length = interval.speculated, None, 0
    if not cuts:
        return [(intervals, busy[0].speculated)]
    pieces: list[list[Interval]] = []
    current: list[Interval] = []
    states = [busy[0].speculated]
    cut_iter = iter(cuts)
    next_cut: int | None = next(cut_iter)
    for interval in intervals:
        if next_cut is not None and interval.line >= next_cut:
            pieces.append(current)
            current = []
            states.append(not states[-1])
            next_cut = next(cut_iter, None)
        current.append(interval)
    pieces.append(current)
    return list(zip(pieces, states, strict=True))


def server_pieces(server: "ServerIntervals"):
    """(intervals, speculating, first line) per piece of a server start: one piece with speculating None
    when the start never switches; otherwise each piece with its own state."""
    pieces = speculation_pieces(server.intervals)
    if len(pieces) == 1:
        yield server, None, None
        return
    for number, (intervals, speculating) in enumerate(pieces):
        piece = ServerIntervals()
        piece.intervals = intervals
        piece.over_cap = server.over_cap if number == 0 else 0
        piece.fresh = server.fresh if number == 0 else False
        yield piece, speculating, intervals[0].line if intervals else None


class ServerIntervals:
    """The intervals of one server start, in log order, with the running count over all ranks."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self.over_cap = 0
        # the server's start-up was logged before its first interval: that interval began idle
        self.fresh = False
        self._running: dict[str, int] = {}

    def add(self, interval: Interval) -> None:
        if len(self.intervals) >= MAX_INTERVALS:
            self.over_cap += 1
            return
        self.intervals.append(interval)

    def _totals(self) -> None:
        """Running over all ranks at each interval; a rank not heard from yet counts its first value."""
        latest: dict[str, int] = {}
        for interval in self.intervals:
            latest.setdefault(interval.rank, interval.running)
        for interval in self.intervals:
            latest[interval.rank] = interval.running
            interval.total = sum(latest.values())

    def levels(self) -> tuple[list[Level], Counter]:
        """The load levels of this server, and what no level took (idle, ramps, brief levels)."""
        left: Counter = Counter()
        if self.over_cap:
            left["cap"] = self.over_cap
        self._totals()
        levels: list[Level] = []
        for episode in self._episodes(left):
            levels.extend(_episode_levels(episode, left))
        if not levels:
            return [], left
        largest = max(level.mass for level in levels)
        kept = []
        for level in levels:
            if level.mass < BRIEF * largest:
                left["brief"] += len(level.intervals)
            else:
                kept.append(level)
        merged: dict[tuple[int, bool], Level] = {}
        for level in kept:  # the same load again later (a rerun): one benchmark
            key = (level.concurrency, level.varying)
            if key in merged:
                merged[key].intervals.extend(level.intervals)
                merged[key].left_out.update(level.left_out)
            else:
                merged[key] = level
        result = []
        for level in merged.values():
            if _measure(level):
                result.append(level)
            else:
                left["short"] += len(level.intervals)
        return sorted(result, key=lambda level: level.first_line), left

    def _episodes(self, left: Counter) -> list[list[Interval]]:
        """Runs of busy intervals between idle ones. An episode's first interval began idle (after an idle
        one, or after the logged start-up) when the load started inside it; a log cut off mid-load did not."""
        episodes: list[list[Interval]] = []
        current: list[Interval] = []
        after_idle = self.fresh
        for interval in self.intervals:
            if interval.total == 0 and interval.gen_tps <= 0:
                left["idle"] += 1
                after_idle = True
                if current:
                    episodes.append(current)
                    current = []
            else:
                interval.starts_load = after_idle and not current
                after_idle = False
                current.append(interval)
        if current:
            episodes.append(current)
        return episodes


def _episode_levels(episode: list[Interval], left: Counter) -> list[Level]:
    tails = [i for i in episode if i.running == 0 or i.gen_tps <= 0]
    busy = [i for i in episode if i.running > 0 and i.gen_tps > 0]
    if not busy:
        for tail in tails:
            left[_tail_reason(tail)] += 1
        return []
    runs: list[tuple[int, int, int]] = []  # (running total, first index, last index) in busy
    start = 0
    for index in range(1, len(busy) + 1):
        if index == len(busy) or busy[index].total != busy[start].total:
            runs.append((busy[start].total, start, index - 1))
            start = index
    held = [run for run in runs if run[2] - run[1] + 1 >= HOLD]
    levels: list[tuple[int, int, int]] = []  # (running, first index, last index)
    for value, first, last in held:
        if levels and abs(value - levels[-1][0]) < SAME_LEVEL * levels[-1][0]:
            levels[-1] = (levels[-1][0], levels[-1][1], last)
        else:
            levels.append((value, first, last))
    if not levels:  # never held a count: request-rate load, one level at its median
        # the load's end: busy intervals whose count fell by more than SAME_LEVEL from the one before (the
        # requests finished inside them, so the count at their end is not the count their tokens ran at)
        drained = 0
        while (
            len(busy) - drained > 1 and busy[-1 - drained].total < (1 - SAME_LEVEL) * busy[-2 - drained].total
        ):
            drained += 1
        kept = busy[: len(busy) - drained]
        if drained:
            left["ramp"] += drained
        totals = sorted(i.total for i in kept)
        intervals = [i for i in episode if i not in busy[len(kept) :]]
        level = Level(max(1, round(statistics.median(totals))), varying=True, intervals=intervals)
        for tail in tails:
            level.left_out[_tail_reason(tail)] += 1
        return [level]
    out = []
    taken = 0
    for value, first, last in levels:
        left["ramp"] += first - taken
        level = Level(value, varying=False, intervals=busy[first : last + 1])
        out.append(level)
        taken = last + 1
    left["ramp"] += len(busy) - taken
    # a tail interval belongs to the level it ends
    for tail in tails:
        owner = next((lv for lv in reversed(out) if lv.intervals[0].line <= tail.line), out[0])
        owner.left_out[_tail_reason(tail)] += 1
        owner.intervals.append(tail)
    for level in out:
        level.intervals.sort(key=lambda i: i.line)
    return out


def _tail_reason(interval: Interval) -> str:
    return "tail" if interval.running == 0 else "no-tokens"


def _measure(level: Level) -> bool:
    """Choose the used intervals of a level and compute its figures; False when none is usable."""
    busy = [i for i in level.intervals if i.running > 0 and i.gen_tps > 0]
    if level.varying:
        used = busy
    else:
        modes: dict[str, int] = {}
        for rank in {i.rank for i in busy}:
            counts = Counter(i.running for i in busy if i.rank == rank)
            modes[rank] = max(counts, key=lambda r: (counts[r], r))
        used = [i for i in busy if i.running == modes[i.rank]]
        if len(busy) > len(used):
            level.left_out["off-level"] += len(busy) - len(used)
    if not used:
        return False
    clean = [i for i in used if not i.prefill]
    if len(clean) < len(used) and len(clean) >= HOLD and len(clean) >= CLEAN_SHARE * len(used):
        level.left_out["prefill"] += len(used) - len(clean)
        used = clean
    elif len(clean) < len(used) and len(used) > HOLD:
        cut = statistics.quantiles([i.prefill for i in used], n=4, method="inclusive")[0]
        least = [i for i in used if i.prefill <= cut]
        if HOLD <= len(least) < len(used):
            level.left_out["more-prefill"] += len(used) - len(least)
            used = least
    partial = [i for i in used if i.starts_load]
    if partial:
        # idle until the load began inside it: its tokens/s are spread over the whole interval, left out
        # where a full interval measures the load; a load that never filled one (a short run per server
        # start) is kept and marked: what the engine printed is a lower bound of its speed, not nothing
        if len(used) == len(partial):
            level.lower_bound = True
        else:
            level.left_out["start"] += len(partial)
            used = [i for i in used if i not in partial]
    level.prefill_kept = sum(1 for i in used if i.prefill)
    level.used = used
    totals = [i.total for i in busy]
    level.running_low, level.running_high = min(totals), max(totals)
    by_rank: dict[str, list[Interval]] = {}
    for interval in used:
        by_rank.setdefault(interval.rank, []).append(interval)
    level.output_throughput = sum(statistics.median(i.gen_tps for i in rows) for rows in by_rank.values())
    per_request = [i.gen_tps / i.running for i in used]
    if level.varying:
        level.decode_tps = statistics.median(per_request)
    else:
        level.concurrency = sum(rows[0].running for rows in by_rank.values())
        level.decode_tps = level.output_throughput / level.concurrency
    level.decode_tps_p10, level.decode_tps_p90 = _quantiles(per_request)
    accepts = [i.accept for i in used if i.accept is not None]
    level.accept_length = statistics.median(accepts) if accepts else None
    return True


def nothing_running(starts: list[ServerIntervals]) -> tuple[int, int] | None:
    """(first line, count) of a log's interval lines when every one says nothing was running: such a log
    measures no decode speed, whatever tokens it counts. None when a line had requests running."""
    lines = [i.line for start in starts for i in start.intervals]
    if not lines or any(i.running > 0 for start in starts for i in start.intervals):
        return None
    return lines[0], len(lines)


def starts_benchmarks(
    path: str, servers: list, benchmark: Callable, idle_lines: str, no_lines: str
) -> Iterator:
    """Each server start's benchmarks, piece by piece and level by level (`benchmark(index, server, level,
    left, speculating, first)`); a log with none is refused on its first line if none ran, else whole."""
    produced = False
    for index, server in enumerate(servers):
        for piece, speculating, first in server_pieces(server.intervals):
            levels, server_left = piece.levels()
            for level in levels:
                produced = True
                yield from benchmark(index, server, level, server_left, speculating, first)
    if produced:
        return
    if (idle := nothing_running([server.intervals for server in servers])) is not None:
        why = f"{idle_lines} ({idle[1]}, the first here): nothing was decoding, so the log measures no speed"
        yield Problem(path, idle[0], "running_requests", why)
    else:
        yield Problem(path, None, None, no_lines, "parse")
