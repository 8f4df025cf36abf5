"""The result block SGLang's `bench_serving` and `vllm bench serve` print to the console
(`============ Serving Benchmark Result ============`, one `Label:  value` line a figure), as users
paste it into issue threads and capture it with `| tee`: one benchmark per block.

The two tools print the same frame with different lines. SGLang (`sglang.bench_serving`,
`sglang.benchmark.metrics.print_metrics`): `Backend:`, `Traffic request rate:`, `Max request concurrency:`
(`not set` without a cap), `Concurrency:` (the mean in flight it measured) and `Accept length:` (the
server's average, printed only when speculating). vLLM (`vllm.benchmarks.serve`): `Failed requests:`,
`Maximum request concurrency:` and `Request rate configured (RPS):` (newer versions; older ones print
`Traffic request rate:` and `Maximum request concurrency:` above the block), and with speculation a
`Speculative Decoding` section: `Acceptance rate (%):`, `Acceptance length:`, `Drafts:`,
`Draft tokens:`, `Accepted tokens:` and `Per-position acceptance (%):` with a `Position i:` line each,
in percent. Neither names the model in the block: `--deployment`, else the model of the `Namespace(...)`
arguments line the tool prints before it."""

import re
from collections.abc import Iterator
from typing import Annotated, TextIO

from pydantic import Field

from specdash.db.records import NonNegFloat, PositiveFloat
from specdash.ingest.formats.base import Format
from specdash.ingest.formats.common import (
    EngineModel,
    benchmark,
    choose_deployment,
    client_load,
    deployment_name,
    draft_setting,
    missing_deployment,
    no_per_request,
    per_request,
    prose_or_source,
    streamed_several_tokens,
    tokens_per_gap,
    validate,
)
from specdash.ingest.jsontext import LinedDict
from specdash.ingest.lines import ANSI_ESCAPE, TooLong, bounded_lines
from specdash.ingest.problems import Problem
from specdash.ingest.records import SPECULATION_UNKNOWN

NAME = "serving-console"
HELP = "SGLang bench_serving / vLLM bench serve printed result block (Serving Benchmark Result), one a run"

HEADER = re.compile(r"^(?P<prefix>[^`=]{0,40}?)=+ ?Serving Benchmark Result ?=+\s*$")
FIGURE = re.compile(r"^\s*(?P<label>[A-Za-z][^:]{0,60}):\s+(?P<value>\S.*?)\s*$")
POSITION = re.compile(r"^\s*Position (?P<index>\d{1,3}):\s+(?P<value>\S+)\s*$")
CLOSING = re.compile(r"^={20,}\s*$")
NAMESPACE_MODEL = re.compile(r"Namespace\(.*?\bmodel='(?P<model>[^']{1,200})'")
NAMESPACE_DATASET = re.compile(r"Namespace\(.*?\bdataset_name='(?P<dataset>[^']{1,200})'")
# The load the tool was started with, for a block that prints neither (older SGLang versions).
NAMESPACE_LOAD = {
    "max_concurrency=": re.compile(r"Namespace\(.*?\bmax_concurrency=(\d{1,9})\b"),
    "request_rate=": re.compile(r"Namespace\(.*?\brequest_rate=(inf|\d{1,9}(?:\.\d{1,9})?)\b"),
}

# Each printed label and the field it fills; every other label is kept in raw only.
LABELS = {
    "Backend": "backend",
    "max_concurrency=": "max_concurrency",
    "request_rate=": "request_rate",
    "Traffic request rate": "request_rate",
    "Request rate configured (RPS)": "request_rate",
    "Max request concurrency": "max_concurrency",
    "Maximum request concurrency": "max_concurrency",
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Benchmark duration (s)": "duration_s",
    "Total input tokens": "total_input_tokens",
    "Total generated tokens": "total_output_tokens",
    "Output token throughput (tok/s)": "output_throughput",
    "Concurrency": "concurrency",
    "Accept length": "accept_length",
    "Mean E2E Latency (ms)": "mean_e2e_ms",
    "Mean TTFT (ms)": "mean_ttft_ms",
    "Mean ITL (ms)": "mean_itl_ms",
    "Median TTFT (ms)": "median_ttft_ms",
    "P99 TTFT (ms)": "p99_ttft_ms",
    "Median TPOT (ms)": "median_tpot_ms",
    "P99 TPOT (ms)": "p99_tpot_ms",
    "Median ITL (ms)": "median_itl_ms",
    "P99 ITL (ms)": "p99_itl_ms",
    "Acceptance rate (%)": "acceptance_rate_percent",
    "Acceptance length": "acceptance_length",
    "Drafts": "drafts",
    "Draft tokens": "draft_tokens",
    "Accepted tokens": "accepted_tokens",
}
# Means read only to measure the tokens an ITL entry stands for (common.tokens_per_gap).
CROSS_CHECKS = ("mean_e2e_ms", "mean_ttft_ms", "mean_itl_ms")
# vLLM prints these two above its block in the versions whose block lacks them.
PREAMBLE = ("Traffic request rate", "Maximum request concurrency")


class ConsoleResult(EngineModel):
    backend: str | None = None
    request_rate: Annotated[float, Field(gt=0, allow_inf_nan=True)] | None = None
    max_concurrency: Annotated[int, Field(ge=1)] | None = None
    completed: Annotated[int, Field(ge=0)] | None = None
    failed: Annotated[int, Field(ge=0)] | None = None
    duration_s: PositiveFloat | None = None
    total_input_tokens: Annotated[int, Field(ge=0)] | None = None
    total_output_tokens: Annotated[int, Field(ge=0)] | None = None
    output_throughput: NonNegFloat
    concurrency: NonNegFloat | None = None
    accept_length: Annotated[float, Field(ge=1)] | None = None
    mean_e2e_ms: NonNegFloat | None = None
    mean_ttft_ms: NonNegFloat | None = None
    mean_itl_ms: NonNegFloat | None = None
    median_ttft_ms: NonNegFloat | None = None
    p99_ttft_ms: NonNegFloat | None = None
    median_tpot_ms: PositiveFloat | None = None
    p99_tpot_ms: PositiveFloat | None = None
    median_itl_ms: NonNegFloat | None = None
    p99_itl_ms: NonNegFloat | None = None
    acceptance_rate_percent: Annotated[float, Field(ge=0, le=100)] | None = None
    acceptance_length: Annotated[float, Field(ge=1)] | None = None
    drafts: Annotated[int, Field(ge=0)] | None = None
    draft_tokens: Annotated[int, Field(ge=0)] | None = None
    accepted_tokens: Annotated[int, Field(ge=0)] | None = None
    position_percent: list[Annotated[float, Field(ge=0, le=100)]] | None = None


def detect(head: str, filename: str) -> bool:
    """Positive evidence: the block's header line followed by the tool's first figure line."""
    if prose_or_source(filename):
        return False
    lines = head.splitlines()
    for number, line in enumerate(lines[:20000]):
        if HEADER.match(ANSI_ESCAPE.sub("", line)):
            after = "\n".join(lines[number + 1 : number + 40])
            return "Successful requests:" in after
    return False


class Block:
    """One printed block as read so far: each field's text and the line it was on."""

    def __init__(self, line: int, prefix: str, preamble: dict[str, tuple[int, str]]):
        self.line, self.prefix = line, prefix
        self.values: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        self.printed: dict[str, str] = {}
        self.positions: list[tuple[int, str]] = []
        for label, (at, value) in preamble.items():
            self.add(at, label, value)

    def add(self, number: int, label: str, value: str) -> None:
        self.printed[label] = value[:200]
        if (field := LABELS.get(label)) is not None:
            self.values[field], self.lines[field] = value, number

    def read(self, number: int, text: str) -> None:
        if self.prefix and text.startswith(self.prefix):
            text = text[len(self.prefix) :]
        if (position := POSITION.match(text)) is not None:
            self.positions.append((number, position["value"]))
        elif (figure := FIGURE.match(text)) is not None:
            self.add(number, figure["label"].strip(), figure["value"])


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    block: Block | None = None
    preamble: dict[str, tuple[int, str]] = {}
    context: dict[str, str] = {}
    for number, raw in bounded_lines(stream):
        if isinstance(raw, TooLong):
            continue  # a progress bar or a paste run together: no figure of the block is that long
        text = ANSI_ESCAPE.sub("", raw).rstrip("\r\n")
        header = HEADER.match(text)
        if header is not None:
            if block is not None:
                yield from record_from(block, path, link, context)
            block, preamble = Block(number, header["prefix"], preamble), {}
        elif block is not None and CLOSING.match(text.removeprefix(block.prefix)):
            yield from record_from(block, path, link, context)
            block = None
        elif block is not None:
            block.read(number, text)
        else:
            _remember(number, text, preamble, context)
    if block is not None:
        yield from record_from(block, path, link, context)


def _remember(number: int, text: str, preamble: dict, context: dict) -> None:
    """What the tool prints above a block: its arguments (model, dataset, load) and vLLM's load lines;
    a figure the block prints itself wins."""
    if "Namespace(" in text:
        if (model := NAMESPACE_MODEL.search(text)) is not None:
            context["model"] = model["model"]
        if (dataset := NAMESPACE_DATASET.search(text)) is not None:
            context["dataset"] = dataset["dataset"]
        for label, pattern in NAMESPACE_LOAD.items():
            if (value := pattern.search(text)) is not None:
                preamble[label] = (number, value[1])
    figure = FIGURE.match(text)
    if figure is not None and figure["label"].strip() in PREAMBLE:
        preamble[figure["label"].strip()] = (number, figure["value"])


def _number_or_none(field: str, value: str) -> int | float | str | None:
    """A field's number (its text when it is none, for the refusal to quote); None where the tool prints
    that there is none (`not set` without a cap, `trace` for a replayed trace's timing)."""
    if field in ("max_concurrency", "request_rate") and value.lower() in ("not set", "none", "trace"):
        return None
    for number in (int, float):
        try:
            return number(value)
        except ValueError:
            continue
    # read only to count an ITL entry's tokens: unreadable (a mark pasted after it), it is left out
    return None if field in CROSS_CHECKS else value


def fields_of(block: Block) -> LinedDict:
    """The block's figures as a dict that knows the line of each, for problems on their own lines."""
    data = LinedDict()
    data.line, data.key_lines = block.line, dict(block.lines)
    for field, value in block.values.items():
        data[field] = value if field == "backend" else _number_or_none(field, value)
    if block.positions:
        data["position_percent"] = [value for _, value in block.positions]
        data.key_lines["position_percent"] = block.positions[0][0]
    return data


def engine_of(block: Block, backend: str | None) -> str:
    """The engine measured: the backend SGLang's client names when it is one, else the tool's own."""
    for engine in ("sglang", "vllm"):
        if backend and backend.lower().startswith(engine):
            return engine
    return "sglang" if "Backend" in block.printed else "vllm"


def record_from(block: Block, path: str, link, context: dict) -> Iterator:
    data = fields_of(block)
    if "output_throughput" not in data:
        yield Problem(path, block.line, "output_throughput", "no 'Output token throughput (tok/s):' line")
        return
    result = validate(ConsoleResult, data, path, block.line)
    if isinstance(result, list):
        yield from result
        return
    engine = engine_of(block, result.backend)
    deployment = choose_deployment(link, deployment_name(engine, context.get("model")))
    if deployment is None:
        yield missing_deployment(path, block.line)
        return
    accept_length = result.acceptance_length or result.accept_length
    rates = [p / 100 for p in result.position_percent] if result.position_percent else None
    gap_tokens = tokens_per_gap(
        mean_itl_ms=result.mean_itl_ms,
        mean_e2e_ms=result.mean_e2e_ms,
        mean_ttft_ms=result.mean_ttft_ms,
        output_tokens=result.total_output_tokens,
        completed=result.completed,
    )
    speculated = accept_length is not None or rates or streamed_several_tokens(gap_tokens)
    algorithm = SPECULATION_UNKNOWN if speculated else None
    drafted = len(rates) if rates else None
    if drafted is None and result.drafts and result.draft_tokens:
        drafted = round(result.draft_tokens / result.drafts) or None
    steps, draft_tokens = draft_setting(algorithm, drafted) if algorithm else (None, None)
    load = client_load(
        median_tpot_ms=result.median_tpot_ms,
        median_itl_ms=result.median_itl_ms,
        accept_length=accept_length,
        output_throughput=result.output_throughput,
        concurrency=result.max_concurrency or result.concurrency,
        request_rate=result.request_rate,
        prompts=result.completed,
        tokens_per_itl=gap_tokens,
    )
    if load.decode_tps is None or load.concurrency is None:
        yield no_per_request(path, block.line)
        return
    yield from benchmark(
        path,
        block.line,
        deployment=deployment,
        engine=engine,
        speculative_algorithm=algorithm,
        num_steps=steps,
        topk=1 if steps else None,
        num_draft_tokens=draft_tokens,
        concurrency=load.concurrency,
        concurrency_source=load.concurrency_source,
        dataset=context.get("dataset"),
        num_prompts=result.completed,
        # both totals are summed over the successful requests only (bench_serving, vllm bench serve)
        input_tokens=per_request(result.total_input_tokens, result.completed),
        output_tokens=per_request(result.total_output_tokens, result.completed),
        decode_tps=load.decode_tps,
        output_throughput=result.output_throughput,
        accept_length=accept_length,
        position_survival=rates,
        median_tpot_ms=result.median_tpot_ms,
        p99_tpot_ms=result.p99_tpot_ms,
        median_ttft_ms=result.median_ttft_ms,
        p99_ttft_ms=result.p99_ttft_ms,
        median_itl_ms=result.median_itl_ms,
        p99_itl_ms=result.p99_itl_ms,
        request_rate=result.request_rate,
        raw={"printed": block.printed, "specdash_derived": load.raw()},
    )


FORMATS = [Format(NAME, HELP, detect, parse)]
