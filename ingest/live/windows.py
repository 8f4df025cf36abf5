"""Scrapes over time cut into windows; each window with enough decode becomes a benchmark record.

A counter's increase over a window is PromQL's: summed over consecutive scrapes, a value below the one
before is a reset (a restarted server) and counts in full as the increase since; a series first seen in
a scrape started at 0 (engines create labelled series when first used). A window with too little decode
(an idle server, prefill only) is skipped with its reason, never stored as a zero."""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from specdash.ingest.live.engines import LLAMA_CPP, SGLANG, VLLM, Reading, position_quantity
from specdash.ingest.live.exposition import Labels
from specdash.ingest.problems import Problem, from_validation_error
from specdash.ingest.records import (
    LIVE_CONCURRENCY,
    SPECULATION_FIELDS,
    SPECULATION_UNKNOWN,
    BenchmarkRecord,
    ConcurrencySource,
    SpeculationSetting,
)
from specdash.ingest.rules import record_problems

# Fewer decoded tokens than this in a window is a few requests' tails: too little to time decode by.
MIN_DECODE_TOKENS = 32
DEFAULT_WINDOW_SECONDS = 60.0
# A window closes at the first scrape at least this share of --window after its start (scrapes drift).
WINDOW_SLACK = 0.05
CONCURRENCY_SOURCE: ConcurrencySource = LIVE_CONCURRENCY
SOURCE_FORMAT = "live"  # the format every window's record is stored under
# Why a window was skipped, as counted in a scrape's summary.
IDLE, PREFILL_ONLY, TOO_LITTLE, NO_LATENCY, NOTHING_FINISHED, INCONSISTENT = (
    "idle",
    "prefill only",
    "too little decode",
    "no decode latency",
    "no request finished",
    "inconsistent scrape",
)


@dataclass(frozen=True)
class WindowOptions:
    deployment: str
    run: str | None = None
    checkpoint: str | None = None
    setting: SpeculationSetting | None = None  # `--setting`; else the engine's metrics, else unknown
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    min_decode_tokens: int = MIN_DECODE_TOKENS


@dataclass(frozen=True)
class WindowOutcome:
    """One window: its benchmark record, or why it was skipped, or the problems of a record that failed
    validation (an accept length a --setting cannot hold)."""

    start: datetime
    end: datetime
    scrapes: int
    record: BenchmarkRecord | None = None
    skipped: str | None = None
    detail: str = ""
    problems: tuple[Problem, ...] = ()

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def series_increase(before: dict[Labels, float] | None, after: dict[Labels, float]) -> tuple[float, int]:
    """A counter's increase between two scrapes, summed over its series, and how many series reset."""
    total, resets = 0.0, 0
    for key, value in after.items():
        previous = (before or {}).get(key)
        if previous is None:
            total += value  # born between the scrapes, from 0
        elif value < previous:
            total += value  # reset: counting again from 0
            resets += 1
        else:
            total += value - previous
    return total, resets


@dataclass
class Deltas:
    """Every counter's increase over a window, and the resets seen on the way."""

    values: dict[str, float] = field(default_factory=dict)
    resets: int = 0

    def __getitem__(self, quantity: str) -> float:
        return self.values.get(quantity, 0.0)


def window_deltas(readings: Sequence[Reading]) -> Deltas:
    deltas = Deltas()
    for before, after in zip(readings, readings[1:], strict=False):
        for quantity, series in after.counters.items():
            increase, resets = series_increase(before.counters.get(quantity), series)
            deltas.values[quantity] = deltas.values.get(quantity, 0.0) + increase
            deltas.resets += resets
    return deltas


@dataclass(frozen=True)
class Decode:
    """Tokens decoded in a window, the request-seconds they took, and every token generated."""

    tokens: float
    seconds: float
    generated: float
    how: str


def decode_of(engine: str, d: Deltas, latency_per: str | None = None) -> Decode:
    """vLLM times each request's engine steps (a round emits several tokens), so its decoded tokens are
    the generated ones less each request's first (from prefill, counted by the TTFT histogram); without
    that histogram, its per-request TPOT histogram gives the finished requests' mean time per token, over
    which the decoded tokens took tokens x mean TPOT request-seconds. SGLang observes its inter-token
    latency once per token. llama-server adds each finished request's decoded tokens and generation time."""
    if engine == VLLM and latency_per == "request":
        tokens = max(0.0, d["generation_tokens"] - d["first_tokens"])
        mean_tpot = d["latency_sum"] / d["latency_count"] if d["latency_count"] > 0 else 0.0
        how = "1 / mean per-request TPOT of the requests finished in the window (request TPOT histogram)"
        return Decode(tokens, tokens * mean_tpot, d["generation_tokens"], how)
    if engine == VLLM:
        tokens = max(0.0, d["generation_tokens"] - d["first_tokens"])
        how = "(generation tokens - first tokens) / inter-token latency sum (one observation per step)"
        return Decode(tokens, d["latency_sum"], d["generation_tokens"], how)
    if engine == SGLANG:
        how = "inter-token latency count / sum (one observation per token)"
        return Decode(d["latency_count"], d["latency_sum"], d["latency_count"] + d["first_tokens"], how)
    how = "tokens predicted / tokens predicted seconds (finished requests)"
    return Decode(d["generation_tokens"], d["decode_seconds"], d["generation_tokens"], how)


@dataclass(frozen=True)
class Context:
    """The mean prompt and output tokens per request finished in a window, and the counters they came from."""

    input_tokens: float | None = None
    output_tokens: float | None = None
    how: str | None = None


def context_of(engine: str, d: Deltas) -> Context:
    """vLLM observes each finished request's prompt and generation tokens in two histograms: their sums
    over their counts. SGLang adds a request's prompt and generation tokens and counts it in
    `num_requests_total` all when it finishes: the same mean. Only counters that move together at a
    request's finish give a per-request mean; vLLM's prompt and generation token counters move at each
    step instead (a window would divide tokens of requests still running by requests that finished), and
    llama-server counts no finished requests: neither is read."""

    def mean(total: str, count: str) -> float | None:
        told = total in d.values and count in d.values and d[count] > 0
        return d[total] / d[count] if told else None

    if engine == VLLM:
        how = "request_prompt_tokens and request_generation_tokens histograms: sum / count"
        told = Context(
            mean("request_prompt_tokens", "request_prompt_count"),
            mean("request_output_tokens", "request_output_count"),
            how,
        )
    elif engine == SGLANG:
        how = "prompt_tokens_total and generation_tokens_total / num_requests_total (all at finish)"
        told = Context(
            mean("prompt_tokens", "finished_requests"), mean("generation_tokens", "finished_requests"), how
        )
    else:
        return Context()
    return told if told.input_tokens is not None or told.output_tokens is not None else Context()


def metric_name(reading: Reading, quantity: str) -> str:
    """The engine's own name of a quantity a Reading holds (for a message)."""
    spec = reading.metrics
    if quantity.startswith("accepted_pos:"):
        return f"{spec.per_position}{{position={quantity.split(':', 1)[1]}}}"
    if quantity in ("latency_sum", "latency_count"):
        return f"{reading.latency}_{quantity.split('_', 1)[1]}"
    return spec.counters.get(quantity, quantity)


def inconsistency(before: Reading, after: Reading) -> str | None:
    """Why two consecutive scrapes cannot both be true of one engine, or None: a counter below zero, a
    series the earlier scrape had that the later one lacks (unless counters fell too: a restarted engine
    creates its labelled series again as it uses them), or a latency histogram whose sum went back while
    its count went on (a reset takes both back)."""
    for quantity, series in after.counters.items():
        for value in series.values():
            if value < 0:
                name = metric_name(after, quantity)
                return f"{name} is {value:g} at {after.at:%H:%M:%S}: a counter is never negative"
    restarted = any(
        value < before.counters.get(quantity, {}).get(labels, value)
        for quantity, series in after.counters.items()
        for labels, value in series.items()
    )
    if not restarted:
        for quantity, series in before.counters.items():
            missing = [labels for labels in series if labels not in after.counters.get(quantity, {})]
            if missing:
                shown = ",".join(f"{k}={v}" for k, v in missing[0])
                name = metric_name(before, quantity)
                return f"{name}{{{shown}}} was in the scrape before {after.at:%H:%M:%S} and is not in it"
    sums, counts = after.counters.get("latency_sum", {}), after.counters.get("latency_count", {})
    for labels, total in sums.items():
        sum_before = before.counters.get("latency_sum", {}).get(labels)
        count_before = before.counters.get("latency_count", {}).get(labels)
        count = counts.get(labels)
        if sum_before is None or count_before is None or count is None:
            continue
        if total < sum_before and count >= count_before:
            return (
                f"{after.latency} sum went back ({sum_before:g} -> {total:g}) while its count went on "
                f"({count_before:g} -> {count:g}) at {after.at:%H:%M:%S}"
            )
    return None


class Windower:
    """Readings in, one WindowOutcome each time a window closes (its end reading starts the next). A
    window holding an inconsistent pair of scrapes, or a scrape that arrived cut short (`taint`), is
    skipped as an inconsistent scrape, never stored."""

    def __init__(self, options: WindowOptions):
        self.options = options
        self.readings: list[Reading] = []
        self.tainted: str | None = None

    def taint(self, reason: str) -> None:
        """A scrape of the window being gathered was lost in a way that casts doubt on the others."""
        if self.readings and self.tainted is None:
            self.tainted = reason

    def add(self, reading: Reading) -> WindowOutcome | None:
        if self.readings and (
            reading.engine != self.readings[0].engine or reading.at <= self.readings[-1].at
        ):
            self.readings, self.tainted = [], None  # another server, or a clock gone back: start afresh
        if self.readings and self.tainted is None:
            self.tainted = inconsistency(self.readings[-1], reading)
        self.readings.append(reading)
        elapsed = (reading.at - self.readings[0].at).total_seconds()
        if len(self.readings) < 2 or elapsed < self.options.window_seconds * (1 - WINDOW_SLACK):
            return None
        if self.tainted is None:
            outcome = window_outcome(self.readings, self.options)
            self.readings = [reading]
            return outcome
        first = self.readings[0]
        outcome = WindowOutcome(
            first.at, reading.at, len(self.readings), skipped=INCONSISTENT, detail=self.tainted
        )
        # the scrape that closed a doubtful window may be the doubtful one: the next window starts after it
        self.readings, self.tainted = [], None
        return outcome


def windows_of(readings: Iterable[Reading], options: WindowOptions) -> list[WindowOutcome]:
    windower = Windower(options)
    return [outcome for reading in readings if (outcome := windower.add(reading)) is not None]


def skip_counts(outcomes: Iterable[WindowOutcome]) -> Counter:
    """Skipped windows by reason."""
    return Counter(outcome.skipped for outcome in outcomes if outcome.skipped)


def window_outcome(readings: Sequence[Reading], options: WindowOptions) -> WindowOutcome:
    """The window from the first reading (its baseline) to the last."""
    first, last = readings[0], readings[-1]
    seconds = (last.at - first.at).total_seconds()
    d = window_deltas(readings)
    decode = decode_of(last.engine, d, last.latency_per)
    running = [r.running for r in readings[1:] if r.running is not None]
    mean_running = sum(running) / len(running) if running else None
    span = (first.at, last.at, len(readings))  # WindowOutcome's start, end and scrapes
    for before, after in zip(readings, readings[1:], strict=False):
        if (doubt := inconsistency(before, after)) is not None:
            return WindowOutcome(*span, skipped=INCONSISTENT, detail=doubt)
    if (why := _skip_reason(last, d, decode, mean_running, options)) is not None:
        return WindowOutcome(*span, skipped=why[0], detail=why[1])
    fields: dict[str, Any] = dict(
        deployment=options.deployment,
        run=options.run,
        checkpoint=options.checkpoint,
        engine=last.engine,
        engine_version=last.info.get("version"),
        decode_tps=decode.tokens / decode.seconds,
        output_throughput=decode.generated / seconds if decode.generated > 0 else None,
        interval_count=len(readings) - 1,
        measured_at=last.at,
        label=f"live {last.engine}, {seconds:.0f} s to {last.at:%Y-%m-%d %H:%M:%S} UTC",
    )
    if mean_running is not None:
        fields.update(concurrency=max(1, round(mean_running)), concurrency_source=CONCURRENCY_SOURCE)
    context = context_of(last.engine, d)
    fields.update(input_tokens=context.input_tokens, output_tokens=context.output_tokens)
    speculating = any(r.speculative for r in readings[1:]) or d["drafts"] > 0 or d["verify_calls"] > 0
    setting, setting_from = resolve_setting(options.setting, last, speculating)
    fields.update(setting)
    if setting["speculative_algorithm"] is not None:
        fields.update(accept_length=accept_length_of(readings, d), position_survival=survival_of(last, d))
    fields["raw"] = _raw(readings, d, decode, running, setting_from) | {"context_from": context.how}
    try:
        record = BenchmarkRecord(**fields)
    except ValidationError as exc:
        return WindowOutcome(*span, problems=tuple(from_validation_error(last.source, None, exc)))
    refused = record_problems(record, last.source, None)  # the pipeline's rules, told at once
    return WindowOutcome(*span, problems=tuple(refused)) if refused else WindowOutcome(*span, record=record)


def _skip_reason(
    last: Reading, d: Deltas, decode: Decode, mean_running: float | None, options: WindowOptions
) -> tuple[str, str] | None:
    if decode.tokens < options.min_decode_tokens:
        running = f"{mean_running:.3g} running on average" if mean_running is not None else "no running gauge"
        if decode.generated == 0 and d["prompt_tokens"] == 0 and not mean_running:
            return IDLE, "nothing generated, nothing prefilled, no request running"
        if d["prompt_tokens"] > 0:
            return (
                PREFILL_ONLY,
                f"{d['prompt_tokens']:.0f} prompt tokens, {decode.tokens:.0f} decoded; {running}",
            )
        if last.engine == LLAMA_CPP and mean_running:
            return NOTHING_FINISHED, f"{running}; llama-server counts a request's tokens when it finishes"
        return (
            TOO_LITTLE,
            f"{decode.tokens:.0f} tokens decoded (at least {options.min_decode_tokens}); {running}",
        )
    if decode.seconds <= 0:
        return NO_LATENCY, f"{decode.tokens:.0f} tokens decoded but no decode time observed ({decode.how})"
    return None


def resolve_setting(flag: SpeculationSetting | None, last: Reading, speculating: bool) -> tuple[dict, str]:
    """The speculation setting of a window: `--setting` where given (its blanks filled from the engine),
    else what the engine's metrics tell (vLLM: one per-position counter per speculative token, a chain;
    SGLang: its steps and draft-token gauges), else speculation of an unknown kind."""
    engine: dict[str, Any] = dict(speculative_algorithm=SPECULATION_UNKNOWN if speculating else None)
    if speculating and last.steps:
        chain = last.engine == VLLM
        engine.update(
            num_steps=last.steps,
            topk=1 if chain else None,
            num_draft_tokens=last.steps + 1 if chain else last.draft_tokens,
        )
    if flag is not None:
        given = flag.setting_fields()
        if given["speculative_algorithm"] is None:
            return dict.fromkeys(given), "--setting"
        return {
            key: value if value is not None else engine.get(key) for key, value in given.items()
        }, "--setting"
    source = "unknown" if speculating and not last.steps else "engine metrics"
    return {key: engine.get(key) for key in SPECULATION_FIELDS}, source


def accept_length_of(readings: Sequence[Reading], d: Deltas) -> float | None:
    """vLLM and llama.cpp: 1 + accepted / drafts over the window (their counters' own definition, the
    bonus token included). SGLang: the mean of its accept-length gauge at the window's scrapes (each the
    last decode log interval's, bonus token included)."""
    if d["drafts"] > 0:
        return 1.0 + d["accepted"] / d["drafts"]
    gauges = [r.accept_length for r in readings[1:] if r.accept_length is not None]
    return sum(gauges) / len(gauges) if gauges else None


def survival_of(last: Reading, d: Deltas) -> list[float] | None:
    """Per-position survival s_k = rounds that kept at least k drafts / rounds: vLLM's and llama.cpp's
    per-position counters count exactly those rounds (position i counts a round that accepted more than
    i drafts), which is what BenchmarkRecord.position_survival holds. A scrape read while an engine was
    adding one step's counts can leave a later position a count ahead: survival is capped by the one
    before."""
    if not last.positions or d["drafts"] <= 0:
        return None
    survival, ceiling = [], 1.0
    for position in range(last.positions):
        ceiling = min(ceiling, max(0.0, d[position_quantity(position)] / d["drafts"]))
        survival.append(ceiling)
    return survival


def _raw(readings: Sequence[Reading], d: Deltas, decode: Decode, running: list, setting_from: str) -> dict:
    last = readings[-1]
    return {
        "source": last.source,
        "window": {
            "start": readings[0].at.isoformat(),
            "end": last.at.isoformat(),
            "seconds": (last.at - readings[0].at).total_seconds(),
            "scrapes": len(readings),
        },
        "increases": {key: round(value, 6) for key, value in sorted(d.values.items())},
        "counter_resets": d.resets,
        "decode": {"tokens": decode.tokens, "seconds": round(decode.seconds, 6), "from": decode.how},
        "latency_metric": last.latency,
        "latency_per": last.latency_per,
        "mean_latency_ms": (
            round(1000 * d["latency_sum"] / d["latency_count"], 6) if d["latency_count"] > 0 else None
        ),
        "running_samples": running,
        "accept_length_gauges": [r.accept_length for r in readings[1:] if r.accept_length is not None]
        or None,
        "setting_from": setting_from,
        "engine_setting": {
            "steps": last.steps,
            "draft_tokens": last.draft_tokens,
            "positions": last.positions,
        },
        "counted_at_finish": sorted(last.metrics.at_finish) or None,
        "engine_info": last.info or None,
    }
