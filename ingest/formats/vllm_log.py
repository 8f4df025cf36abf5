"""vLLM server logs: one benchmark per server start and load level, from the periodic throughput lines
and the speculative-decoding metrics lines.

Read as written by every version in use, after ANSI colour codes and `(APIServer pid=N)` prefixes:
- a server start: `vLLM API server version X`, `non-default args: {...}` (0.10+), `args: Namespace(...)`
  (older), or an engine's `Initializing a V1 LLM engine (vX) with config: model=..., speculative_config=
  SpeculativeConfig(method='eagle3', model=..., num_spec_tokens=3), ...` once intervals have been seen
  (a start that served nothing is dropped when a line printed once a start, the version or the
  arguments, comes again: it died);
- throughput: `[Engine 000: ]Avg prompt throughput: ..., Avg generation throughput: 95.3 tokens/s,
  Running: 1 reqs, ...` (V1 and V0), every 10 s, tokens over the interval and the running count at its end;
- V1 `SpecDecoding metrics: Mean acceptance length: 2.35, ..., Accepted: 452 tokens, Drafted: 960 tokens,
  Per-position acceptance rate: 0.710, 0.420, 0.220, ...` and the older `Draft acceptance rate: 47.1%`
  wording (per interval);
- V0 `Speculative metrics: Draft acceptance rate: 0.651, System efficiency: 0.523, Number of speculative
  tokens: 5, Number of accepted tokens: ..., Number of draft tokens: ..., Number of emitted tokens: ...`
  (cumulative since start-up: each interval gets the difference to the previous line).

Intervals are split into load levels by `logsummary`; an interval with prompt throughput had a prefill."""

import re
from collections.abc import Iterator
from typing import TextIO

from specdash.ingest.formats.base import Format
from specdash.ingest.formats.common import (
    benchmark,
    choose_deployment,
    deployment_name,
    draft_setting,
    drafter_of,
    missing_deployment,
    prose_or_source,
    stated_in,
)
from specdash.ingest.formats.logsummary import (
    LOWER_BOUND_NOTE,
    Interval,
    Level,
    ServerIntervals,
    starts_benchmarks,
)
from specdash.ingest.lines import TooLong, bounded_lines, python_literal, strip_ansi
from specdash.ingest.records import SPECULATION_UNKNOWN
from specdash.ingest.setting import algorithm_name

NAME = "vllm-log"
HELP = "vLLM server log: throughput and SpecDecoding / V0 Speculative metrics lines, a benchmark per start and load"

NUMBER = r"(\d+(?:\.\d+)?)"
THROUGHPUT = re.compile(
    rf"(?:Engine (\d+): |\d+ Engines Aggregated: )?Avg prompt throughput: {NUMBER} tokens/s, "
    rf"Avg generation throughput: {NUMBER} tokens/s, Running: (\d+) reqs"
)
MEAN_LENGTH = re.compile(r"Mean acceptance length: (-?\d+(?:\.\d+)?)")
ACCEPTED = re.compile(r"Accepted: (\d+) tokens")
DRAFTED = re.compile(r"Drafted: (\d+) tokens")
PER_POSITION = re.compile(r"Per-position acceptance rate: ((?:\d+(?:\.\d+)?(?:, )?)+)")
V0_SPEC_TOKENS = re.compile(r"Number of speculative tokens: (\d+)")
V0_DRAFT = re.compile(r"Number of draft tokens(?: tokens)?: (\d+)")
V0_EMITTED = re.compile(r"Number of emitted tokens(?: tokens)?: (\d+)")
V0_EFFICIENCY = re.compile(rf"System efficiency: {NUMBER}")
CONFIG_MODEL = re.compile(r"with config: model='([^']*)'")
SPEC_CONFIG = re.compile(r"speculative_config=SpeculativeConfig\(([^)]*)\)")
TP_SIZE = re.compile(r"tensor_parallel_size=(\d+)")
QUANTIZATION = re.compile(r"\bquantization=(?:'([^']*)'|([\w-]+))")
VERSION = re.compile(r"LLM engine \(v([\w.+\-]+)\)|vLLM API server version ([\w.+\-]+)")
KEY_VALUE = re.compile(r"(\w+)=(?:'([^']*)'|([^,\s]+))")
NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")
NAMESPACE = re.compile(r"\bargs: Namespace\((.*)\)\s*$")
# A line as the logger wrote it: the record follows the logger's "] " (or starts the line), not a quote.
LOGGED = re.compile(
    r"(?:^|\] )(?:(?:Engine \d+: |\d+ Engines Aggregated: )?Avg prompt throughput: \d|SpecDecoding metrics: \w|Speculative metrics: \w"
    r"|vLLM API server version \d|Initializing an? (?:V1 )?LLM engine \(v)",
    re.MULTILINE,
)
START_MARKERS = ("vLLM API server version", "non-default args:", "args: Namespace(", "with config:")
# What `vllm serve` prints once a start, in its API server (an engine's `with config:` is once an engine)
ONCE_A_START = START_MARKERS[:3]


def detect(head: str, filename: str) -> bool:
    """Positive evidence: a whole throughput, speculative-decoding or start-up line of vLLM's."""
    if prose_or_source(filename):
        return False
    text = strip_ansi(head) if "\x1b" in head else head
    return bool(LOGGED.search(text))


def _int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _tokens(value) -> int | None:
    """Speculative tokens as the config states them: 0 is kept (the rules refuse it with metrics printed)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number <= 10**6 else None


def _config_line(line: str) -> dict:
    """Model, TP size, quantization and speculative config from an engine's `with config:` line."""
    found: dict = {}
    if model := CONFIG_MODEL.search(line):
        found["model"] = model[1]
    if tp := TP_SIZE.search(line):
        found["tp_size"] = int(tp[1])
    if (quant := QUANTIZATION.search(line)) and (quant[1] or quant[2]) not in (None, "None"):
        found["quantization"] = quant[1] or quant[2]
    if spec := SPEC_CONFIG.search(line):
        pairs = {key: quoted if quoted else bare for key, quoted, bare in KEY_VALUE.findall(spec[1])}
        found["method"] = pairs.get("method")
        found["draft_model"] = pairs.get("model") or pairs.get("draft_model")
        tokens = _tokens(pairs.get("num_spec_tokens", pairs.get("num_speculative_tokens")))
        if tokens is not None:
            found["spec_tokens"] = tokens
    return {k: v for k, v in found.items() if v not in (None, "None")}


def _args(values: dict) -> dict:
    """The same fields from the API server's arguments (`non-default args` dict or `Namespace`)."""
    found: dict = {}
    for key in (
        "model",
        "tensor_parallel_size",
        "quantization",
        "speculative_model",
        "num_speculative_tokens",
        "speculative_config",
    ):
        value = values.get(key)
        if value in (None, "None", ""):
            continue
        if key == "model":
            found["model"] = str(value)
        elif key == "tensor_parallel_size" and _int(value):
            found["tp_size"] = _int(value)
        elif key == "quantization":
            found["quantization"] = str(value)
        elif key == "speculative_model":
            found["draft_model"] = str(value)
        elif key == "num_speculative_tokens" and _tokens(value) is not None:
            found["spec_tokens"] = _tokens(value)
        elif key == "speculative_config":
            spec = value
            if isinstance(spec, str):
                spec = python_literal(spec) if len(spec) <= 100_000 else None
            if isinstance(spec, dict):
                if spec.get("method"):
                    found["method"] = str(spec["method"])
                if spec.get("model"):
                    found["draft_model"] = str(spec["model"])
                if (tokens := _tokens(spec.get("num_speculative_tokens"))) is not None:
                    found["spec_tokens"] = tokens
    return found


def _non_default_args(line: str) -> dict:
    match = NON_DEFAULT.search(line)
    if match is None or len(match[1]) > 100_000:
        return {}
    values = python_literal(match[1])
    return _args(values) if isinstance(values, dict) else {}


def _namespace(line: str) -> dict:
    match = NAMESPACE.search(line)
    if match is None:
        return {}
    values = {key: quoted if quoted else bare for key, quoted, bare in KEY_VALUE.findall(match[1])}
    # --speculative-config parsed from JSON shows as a dict repr: {'method': 'eagle3', ...}
    if spec := re.search(r"\bspeculative_config=(\{[^{}]*\})", match[1]):
        values["speculative_config"] = spec[1]
    return _args(values)


class Server:
    """One start of the server: its configuration and intervals."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.config: dict = {}
        self.version: str | None = None
        self.intervals = ServerIntervals()
        self.v0_last: tuple[int, int] | None = None  # cumulative (draft tokens, emitted) of the last V0 line
        self.spec_lines = 0
        self.unsized = 0
        self.stated: dict[int, tuple[int, float]] = {}  # interval line -> (line, mean acceptance it stated)
        self.once_lines: set[str] = set()  # the ONCE_A_START lines seen

    @property
    def started(self) -> bool:
        return bool(self.intervals.intervals)

    def learn(self, found: dict) -> None:
        for key, value in found.items():
            self.config.setdefault(key, value)

    def last(self) -> Interval | None:
        return self.intervals.intervals[-1] if self.intervals.intervals else None

    def spec_v1(self, line: str, number: int = 0) -> None:
        accepted, drafted = ACCEPTED.search(line), DRAFTED.search(line)
        interval = self.last()
        if accepted is None or drafted is None or interval is None:
            return
        self.spec_lines += 1
        interval.speculated = True
        rates_match, mean = PER_POSITION.search(line), MEAN_LENGTH.search(line)
        if mean:
            self.stated[interval.line] = (number, float(mean[1]))
        rates = tuple(float(r) for r in rates_match[1].rstrip(", ").split(", ")) if rates_match else ()
        k = len(rates) or self.config.get("spec_tokens")
        if k:
            drafts = int(drafted[1]) / k
        elif mean and float(mean[1]) > 1:
            drafts = int(accepted[1]) / (float(mean[1]) - 1)
        else:
            self.unsized += 1
            return
        # tokens per round summed: the accepted drafts plus one bonus token per round
        interval.spec = (int(accepted[1]) + drafts, drafts, rates)

    def spec_v0(self, line: str) -> None:
        k, draft, emitted = V0_SPEC_TOKENS.search(line), V0_DRAFT.search(line), V0_EMITTED.search(line)
        if not (k and draft and emitted and int(k[1]) > 0):
            return
        self.spec_lines += 1
        self.config.setdefault("spec_tokens", int(k[1]))
        self.config["v0"] = True
        now = (int(draft[1]), int(emitted[1]))
        before = self.v0_last or (0, 0)
        self.v0_last = now
        interval = self.last()
        if interval is not None:
            interval.speculated = True
        rounds = (now[0] - before[0]) / int(k[1])
        if interval is not None and rounds > 0 and now[1] >= before[1]:
            interval.spec = (now[1] - before[1], rounds, ())


def _accept(level: Level) -> tuple[float | None, list[float] | None]:
    """Accept length and per-position survival over every interval of the level with spec data."""
    tokens = rounds = position_rounds = 0.0
    by_position: list[float] = []
    for interval in level.intervals:
        if interval.spec is None:
            continue
        emitted, drafts, rates = interval.spec
        tokens += emitted
        rounds += drafts
        if rates:
            position_rounds += drafts
        for position, rate in enumerate(rates):
            if position == len(by_position):
                by_position.append(0.0)
            by_position[position] += rate * drafts
    accept = tokens / rounds if rounds > 0 else None
    survival = [min(1.0, total / position_rounds) for total in by_position] if position_rounds > 0 else None
    return (max(1.0, accept) if accept is not None else None), survival


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    servers = [Server(1)]
    for number, text in bounded_lines(stream):
        if isinstance(text, TooLong):
            continue
        server = servers[-1]
        if "throughput" in text and (match := THROUGHPUT.search(strip_ansi(text))):
            server.intervals.add(
                Interval(number, match[1] or "0", int(match[4]), float(match[3]), prefill=float(match[2]))
            )
        elif "SpecDecoding metrics:" in text:
            server.spec_v1(strip_ansi(text), number)
        elif "Speculative metrics:" in text:
            server.spec_v0(strip_ansi(text))
        elif any(marker in text for marker in START_MARKERS):
            line = strip_ansi(text)
            once = next((kind for kind in ONCE_A_START if kind in line), None)
            if server.started:  # a new start once the previous one has measured something
                server = Server(number)
                servers.append(server)
            elif once is not None and once in server.once_lines:
                # the API server prints it once a start: seen again, the start before served nothing (died)
                server = servers[-1] = Server(number)
            if once is not None:
                server.once_lines.add(once)
            server.intervals.fresh = True  # its first interval follows the start-up
            if found := VERSION.search(line):
                server.version = server.version or found[1] or found[2]
            if "non-default args:" in line:
                server.learn(_non_default_args(line))
            elif "args: Namespace(" in line:
                server.learn(_namespace(line))
            elif "with config:" in line:
                server.learn(_config_line(line))
    yield from starts_benchmarks(
        path,
        servers,
        lambda index, server, level, left, speculating, first: _benchmark(
            path, link, server, index, len(servers), level, left, speculating, first
        ),
        "Running: 0 reqs on every 'Avg generation throughput' line",
        "no 'Avg generation throughput' lines with running requests",
    )


def _benchmark(
    path,
    link,
    server: Server,
    index: int,
    starts: int,
    level: Level,
    server_left,
    speculating: bool | None = None,
    first: int | None = None,
) -> Iterator:
    config = server.config
    config_spec = bool(config.get("draft_model") or config.get("method"))
    # several pieces: the start's config holds for the pieces that speculate as it says
    use_config = speculating is None or speculating == config_spec
    if not use_config:
        config = {k: v for k, v in config.items() if k not in ("method", "draft_model", "spec_tokens")}
    model = config.get("model")
    deployment = choose_deployment(
        link, deployment_name("vllm", model, config.get("tp_size"), config.get("quantization"))
    )
    if deployment is None:
        yield missing_deployment(path, level.first_line)
        return
    accept, survival = _accept(level)
    if speculating is None:
        speculating = server.spec_lines > 0 or config_spec
    algorithm = (algorithm_name(config.get("method")) or SPECULATION_UNKNOWN) if speculating else None
    k = config.get("spec_tokens") or (len(survival) if survival else None)
    speculative = algorithm is not None
    steps, draft_tokens = draft_setting(algorithm, k) if speculative else (None, None)
    drafter = drafter_of(algorithm, config.get("draft_model"), model)
    intervals = level.summary(server_left)
    start = f"start {index + 1} of {starts} (line {server.line}), " if starts > 1 else ""
    if first is not None:
        start += f"{'speculating' if speculating else 'no speculation'} from line {first}, "
    yield from benchmark(
        path,
        level.first_line,
        deployment=deployment,
        engine="vllm",
        engine_version=server.version,
        speculative_algorithm=algorithm,
        drafter_path=drafter,
        num_steps=steps,
        topk=1 if steps else None,
        num_draft_tokens=draft_tokens,
        concurrency=level.concurrency,
        concurrency_source="log",
        decode_tps=level.decode_tps,
        output_throughput=level.output_throughput,
        accept_length=accept if speculative else None,
        position_survival=survival if speculative else None,
        decode_tps_p10=level.decode_tps_p10,
        decode_tps_p90=level.decode_tps_p90,
        interval_count=len(level.used),
        label=f"server log, {start}{level.concurrency} running{LOWER_BOUND_NOTE if level.lower_bound else ''}",
        raw=stated_in(
            {
                "config": {k: v for k, v in config.items() if k != "v0"},
                "server_start_line": server.line,
                "intervals": intervals,
                "spec_decoding_lines": server.spec_lines,
                "unsized_spec_lines": server.unsized,
            },
            list(server.stated.values()) if speculative else [],  # every line of the start, whichever level
        ),
    )


FORMATS = [Format(NAME, HELP, detect, parse, decode_errors="replace")]
