"""vLLM `vllm bench serve --save-result` results (and the older `benchmarks/benchmark_serving.py`).

One JSON object per file, or several with `--append-result` (one a line). `request_rate` is `"inf"`
for "all at once"; old versions spell the goodput key `request_goodput:`. Newer versions add
`spec_decode_*` keys from the server's Prometheus counters: acceptance rate in percent, acceptance
length including the bonus token, and per-position acceptance as survival fractions. `--metadata k=v`
pairs land at the top level; specdash reads `drafter=`, `deployment=`, `run=`, `checkpoint=`,
`speculative_algorithm=`, `num_steps=`, `topk=`, `num_draft_tokens=`, `dataset=` and `tp_size=`."""

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, TextIO

from pydantic import BeforeValidator, Field

from specdash.costmodel.throughput import draft_width
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
    safe_raw,
    streamed_several_tokens,
    tokens_per_gap,
    validate,
)
from specdash.ingest.jsontext import JSONPositionError, LinedDict, iter_values_with_lines
from specdash.ingest.lines import MAX_DOCUMENT_CHARS, read_document
from specdash.ingest.problems import Problem
from specdash.ingest.records import SPECULATION_UNKNOWN
from specdash.ingest.setting import algorithm_name

NAME = "vllm-bench-serve"
HELP = (
    "vLLM bench serve --save-result JSON (or JSONL with --append-result), spec_decode_* and --metadata keys"
)


def _blank_to_none(value):
    return None if isinstance(value, str) and not value.strip() else value


OptInt = Annotated[Annotated[int, Field(ge=1)] | None, BeforeValidator(_blank_to_none)]


class ServeResult(EngineModel):
    date: str | None = None
    backend: str | None = None
    label: str | None = None
    model_id: str | None = None
    num_prompts: Annotated[int, Field(ge=0)] | None = None
    request_rate: Annotated[float, Field(gt=0, allow_inf_nan=True)] | None = None
    max_concurrency: Annotated[int, Field(ge=1)] | None = None
    max_concurrent_requests: Annotated[int, Field(ge=1)] | None = None
    completed: Annotated[int, Field(ge=0)] | None = None
    total_input_tokens: NonNegFloat | None = None  # over the completed requests
    total_output_tokens: NonNegFloat | None = None
    output_throughput: NonNegFloat
    median_tpot_ms: PositiveFloat | None = None
    p99_tpot_ms: PositiveFloat | None = None
    median_ttft_ms: NonNegFloat | None = None
    p99_ttft_ms: NonNegFloat | None = None
    median_itl_ms: NonNegFloat | None = None
    p99_itl_ms: NonNegFloat | None = None
    mean_ttft_ms: NonNegFloat | None = None
    mean_itl_ms: NonNegFloat | None = None
    mean_e2el_ms: NonNegFloat | None = None
    spec_decode_acceptance_rate: Annotated[float, Field(ge=0, le=100)] | None = None
    spec_decode_acceptance_length: Annotated[float, Field(ge=1)] | None = None
    spec_decode_num_drafts: Annotated[int, Field(ge=0)] | None = None
    spec_decode_draft_tokens: Annotated[int, Field(ge=0)] | None = None
    spec_decode_accepted_tokens: Annotated[int, Field(ge=0)] | None = None
    spec_decode_per_position_acceptance_rates: list[Annotated[float, Field(ge=0, le=1)]] | None = None
    # --metadata keys specdash understands
    drafter: str | None = None
    drafter_path: str | None = None
    deployment: str | None = None
    run: str | None = None
    checkpoint: str | None = None
    speculative_algorithm: str | None = None
    num_steps: OptInt = None
    topk: OptInt = None
    num_draft_tokens: OptInt = None
    tp_size: OptInt = None
    dataset: str | None = None


def detect(head: str, filename: str) -> bool:
    start = head.lstrip()
    return start.startswith("{") and '"model_id"' in head and '"output_throughput"' in head


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    text = read_document(stream)
    if text is None:
        yield Problem(path, None, None, f"larger than {MAX_DOCUMENT_CHARS:,} characters", "parse")
        return
    try:
        for value in iter_values_with_lines(text):
            if not isinstance(value, LinedDict):
                yield Problem(path, None, None, "expected a JSON object per result", "parse")
                continue
            yield from record_from(value, path, link)
    except JSONPositionError as exc:
        yield Problem(path, exc.line, None, f"invalid JSON: {exc}", "parse")


def _gap_tokens(result: ServeResult) -> float | None:
    """The tokens each inter-token gap stood for (vLLM's client times one gap a streamed chunk)."""
    return tokens_per_gap(
        mean_itl_ms=result.mean_itl_ms,
        mean_e2e_ms=result.mean_e2el_ms,
        mean_ttft_ms=result.mean_ttft_ms,
        output_tokens=result.total_output_tokens,
        completed=result.completed,
    )


def _measured_at(date: str | None) -> datetime | None:
    try:
        return datetime.strptime(date, "%Y%m%d-%H%M%S") if date else None
    except ValueError:
        return None


def drafted_per_round(result: ServeResult) -> int | None:
    """The tokens drafted per round the server's counters state, when a whole number. The per-position
    rates list every position the drafter was set up for: under a per-batch-size schedule
    (`num_speculative_tokens_per_batch_size`) the positions past the depth it ran at read 0.0, so the
    counters, not the list's length, say the depth."""
    drafts, tokens = result.spec_decode_num_drafts, result.spec_decode_draft_tokens
    if not drafts or not tokens:
        return None
    per_round = tokens / drafts
    return round(per_round) if abs(per_round - round(per_round)) < 1e-6 and per_round >= 1 else None


def record_from(data: LinedDict, path: str, link) -> Iterator:
    if data.get("request_rate") == "inf":
        data["request_rate"] = float("inf")
    result = validate(ServeResult, data, path, data.line)
    if isinstance(result, list):
        yield from result
        return
    deployment = choose_deployment(
        link, result.deployment, deployment_name("vllm", result.model_id, result.tp_size)
    )
    if deployment is None:
        yield missing_deployment(path, data.line)
        return
    rates = result.spec_decode_per_position_acceptance_rates or None
    speculating = (
        result.spec_decode_acceptance_length is not None
        or bool(result.drafter or result.drafter_path)
        or streamed_several_tokens(_gap_tokens(result))
    )
    algorithm = algorithm_name(result.speculative_algorithm) or (SPECULATION_UNKNOWN if speculating else None)
    steps = result.num_steps or drafted_per_round(result) or (len(rates) if rates else None)
    speculative = algorithm is not None
    steps, draft_tokens = (
        draft_setting(algorithm, steps, draft_width(result.topk), result.num_draft_tokens)
        if speculative
        else (None, None)
    )
    # max_concurrent_requests is the peak in flight the client saw, not the load it held: not a concurrency
    load = client_load(
        median_tpot_ms=result.median_tpot_ms,
        median_itl_ms=result.median_itl_ms,
        accept_length=result.spec_decode_acceptance_length,
        output_throughput=result.output_throughput,
        concurrency=result.max_concurrency,
        request_rate=result.request_rate,
        prompts=result.completed if result.completed is not None else result.num_prompts,
    )
    if load.decode_tps is None or load.concurrency is None:
        yield no_per_request(path, data.line)
        return
    yield from benchmark(
        path,
        data.line,
        deployment=deployment,
        run=result.run if speculative else None,
        checkpoint=result.checkpoint if speculative else None,
        drafter_path=(result.drafter_path or result.drafter) if speculative else None,
        engine="vllm",
        speculative_algorithm=algorithm,
        num_steps=steps,
        topk=draft_width(result.topk) if steps else None,
        num_draft_tokens=draft_tokens,
        concurrency=load.concurrency,
        concurrency_source=load.concurrency_source,
        dataset=result.dataset,
        num_prompts=result.completed if result.completed is not None else result.num_prompts,
        # the totals count the completed requests only (failed ones add nothing)
        input_tokens=per_request(result.total_input_tokens, result.completed),
        output_tokens=per_request(result.total_output_tokens, result.completed),
        decode_tps=load.decode_tps,
        output_throughput=result.output_throughput,  # 0 beside a measured TPOT is refused, not dropped
        accept_length=result.spec_decode_acceptance_length if speculative else None,
        position_survival=rates if speculative else None,
        median_tpot_ms=result.median_tpot_ms,
        p99_tpot_ms=result.p99_tpot_ms,
        median_ttft_ms=result.median_ttft_ms,
        p99_ttft_ms=result.p99_ttft_ms,
        median_itl_ms=result.median_itl_ms,
        p99_itl_ms=result.p99_itl_ms,
        request_rate=result.request_rate,
        label=result.label,
        measured_at=_measured_at(result.date),
        raw={**safe_raw(data), "specdash_derived": load.raw()},
    )


FORMATS = [Format(NAME, HELP, detect, parse)]
