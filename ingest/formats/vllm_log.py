"""vLLM server logs: the periodic throughput lines and the speculative-decoding metrics lines,
summarised into one benchmark.

Read as written by every version in use, after ANSI colour codes and `(APIServer pid=N)` prefixes:
- throughput: `[Engine 000: ]Avg prompt throughput: ..., Avg generation throughput: 95.3 tokens/s,
  Running: 1 reqs, ...` (V1 and V0);
- V1 `SpecDecoding metrics: Mean acceptance length: 2.35, ..., Accepted: 452 tokens, Drafted: 960 tokens,
  Per-position acceptance rate: 0.710, 0.420, 0.220, Avg Draft acceptance rate: 47.1%`, and the older
  `SpecDecoding metrics: Draft acceptance rate: 47.1%, ...` wordings (per interval);
- V0 `Speculative metrics: Draft acceptance rate: 0.651, ..., Number of speculative tokens: 5, ...`
  (cumulative since start-up);
- the engine's start-up config line: model, speculative_config (method, draft model, tokens), TP size."""

import re
from collections.abc import Iterator
from typing import TextIO

from specdash.ingest.formats import Format
from specdash.ingest.formats.common import (
    algorithm_name,
    benchmark,
    choose_deployment,
    deployment_name,
    missing_deployment,
)
from specdash.ingest.formats.logsummary import IntervalSummary
from specdash.ingest.lines import TooLong, bounded_lines, strip_ansi
from specdash.ingest.problems import Problem
from specdash.ingest.records import SPECULATION_UNKNOWN

NAME = "vllm-log"
HELP = "vLLM server log: throughput and 'SpecDecoding metrics' / V0 'Speculative metrics' lines"

NUMBER = r"(\d+(?:\.\d+)?)"
THROUGHPUT = re.compile(rf"(?:Engine (\d+): )?Avg prompt throughput: {NUMBER} tokens/s, "
                        rf"Avg generation throughput: {NUMBER} tokens/s, Running: (\d+) reqs")
MEAN_LENGTH = re.compile(rf"Mean acceptance length: {NUMBER}")
ACCEPTED = re.compile(r"Accepted: (\d+) tokens")
DRAFTED = re.compile(r"Drafted: (\d+) tokens")
PER_POSITION = re.compile(r"Per-position acceptance rate: ((?:\d+(?:\.\d+)?(?:, )?)+)")
V0_SPEC_TOKENS = re.compile(r"Number of speculative tokens: (\d+)")
V0_DRAFT = re.compile(r"Number of draft tokens(?: tokens)?: (\d+)")
V0_EMITTED = re.compile(r"Number of emitted tokens(?: tokens)?: (\d+)")
CONFIG_MODEL = re.compile(r"with config: model='([^']*)'")
SPEC_CONFIG = re.compile(r"speculative_config=SpeculativeConfig\(([^)]*)\)")
TP_SIZE = re.compile(r"tensor_parallel_size=(\d+)")
VERSION = re.compile(r"LLM engine \(v([\w.+\-]+)\)|vLLM API server version ([\w.+\-]+)")
KEY_VALUE = re.compile(r"(\w+)=(?:'([^']*)'|([^,\s]+))")


def detect(head: str, filename: str) -> bool:
    return any(marker in head for marker in (
        "SpecDecoding metrics:", "Speculative metrics:", "Avg generation throughput:",
        "vLLM API server version", "LLM engine (v"))


class SpecTotals:
    """Accepted and drafted tokens and drafts, summed over the V1 intervals, per position too."""

    def __init__(self) -> None:
        self.accepted = self.drafts = 0.0
        self.by_position: list[float] = []
        self.position_drafts = 0.0  # drafts of the intervals that reported per-position rates
        self.lines = 0
        self.unsized = 0  # intervals whose number of drafts could not be told
        self.v0: tuple[int, int, int] | None = None  # last cumulative (k, draft tokens, emitted)

    def add_v1(self, line: str, spec_tokens: int | None) -> None:
        accepted, drafted = ACCEPTED.search(line), DRAFTED.search(line)
        if accepted is None or drafted is None:
            return
        self.lines += 1
        rates_match, mean = PER_POSITION.search(line), MEAN_LENGTH.search(line)
        rates = [float(r) for r in rates_match[1].rstrip(", ").split(", ")] if rates_match else []
        k = len(rates) or spec_tokens
        if k:
            drafts = int(drafted[1]) / k
        elif mean and float(mean[1]) > 1:
            drafts = int(accepted[1]) / (float(mean[1]) - 1)
        else:
            self.unsized += 1
            return
        self.accepted += int(accepted[1])
        self.drafts += drafts
        if rates:
            self.position_drafts += drafts
        for position, rate in enumerate(rates):
            if position == len(self.by_position):
                self.by_position.append(0.0)
            self.by_position[position] += rate * drafts

    def accept_length(self) -> float | None:
        if self.drafts > 0:
            return 1 + self.accepted / self.drafts
        if self.v0 is not None:
            k, draft_tokens, emitted = self.v0
            return emitted / (draft_tokens / k) if draft_tokens and k else None
        return None

    def survival(self) -> list[float] | None:
        if not self.by_position or self.position_drafts <= 0:
            return None
        return [min(1.0, total / self.position_drafts) for total in self.by_position]


def _config(line: str) -> dict:
    found: dict = {}
    if model := CONFIG_MODEL.search(line):
        found["model"] = model[1]
    if tp := TP_SIZE.search(line):
        found["tp_size"] = int(tp[1])
    if spec := SPEC_CONFIG.search(line):
        pairs = {key: quoted if quoted else bare for key, quoted, bare in KEY_VALUE.findall(spec[1])}
        found["method"] = pairs.get("method")
        found["draft_model"] = pairs.get("model") or pairs.get("draft_model")
        tokens = pairs.get("num_spec_tokens") or pairs.get("num_speculative_tokens")
        if tokens and tokens.isdigit() and int(tokens) > 0:
            found["spec_tokens"] = int(tokens)
    return found


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    summary, spec, config = IntervalSummary(), SpecTotals(), {}
    version = None
    first_line = None
    for number, text in bounded_lines(stream):
        if isinstance(text, TooLong):
            continue
        if "throughput" in text and (match := THROUGHPUT.search(strip_ansi(text))):
            first_line = first_line or number
            summary.add(match[1] or "0", int(match[4]), float(match[3]), None)
        elif "SpecDecoding metrics:" in text:
            spec.add_v1(strip_ansi(text), config.get("spec_tokens"))
        elif "Speculative metrics:" in text:
            line = strip_ansi(text)
            k, draft, emitted = V0_SPEC_TOKENS.search(line), V0_DRAFT.search(line), V0_EMITTED.search(line)
            if k and draft and emitted and int(k[1]) > 0:
                spec.v0 = (int(k[1]), int(draft[1]), int(emitted[1]))
        elif "LLM engine (v" in text or "vLLM API server version" in text:
            line = strip_ansi(text)
            if found := VERSION.search(line):
                version = version or found[1] or found[2]
            if "with config:" in line and not config:
                config = _config(line)
    result = summary.result()
    if result is None:
        yield Problem(path, None, None, "no 'Avg generation throughput' lines with running requests", "parse")
        return
    deployment = choose_deployment(link, deployment_name("vllm", config.get("model"), config.get("tp_size")))
    if deployment is None:
        yield missing_deployment(path, first_line)
        return
    speculating = spec.lines > 0 or spec.v0 is not None or config.get("draft_model")
    algorithm = algorithm_name(config.get("method")) or (SPECULATION_UNKNOWN if speculating else None)
    k = config.get("spec_tokens") or (spec.v0[0] if spec.v0 else None) or len(spec.by_position) or None
    speculative = algorithm is not None
    yield from benchmark(
        path,
        first_line,
        deployment=deployment,
        engine="vllm",
        engine_version=version,
        speculative_algorithm=algorithm,
        drafter_path=config.get("draft_model") if speculative else None,
        num_steps=k if speculative else None,
        topk=1 if speculative and k else None,
        num_draft_tokens=k + 1 if speculative and k else None,
        concurrency=result.concurrency,
        decode_tps=result.decode_tps,
        output_throughput=result.output_throughput,
        accept_length=spec.accept_length() if speculative else None,
        position_survival=spec.survival() if speculative else None,
        decode_tps_p10=result.decode_tps_p10,
        decode_tps_p90=result.decode_tps_p90,
        interval_count=result.interval_count,
        label="server log",
        raw={"config": config, "intervals": summary.intervals, "idle_intervals": summary.idle,
             "spec_decoding_lines": spec.lines, "unsized_spec_lines": spec.unsized},
    )


FORMATS = [Format(NAME, HELP, detect, parse, decode_errors="replace")]
