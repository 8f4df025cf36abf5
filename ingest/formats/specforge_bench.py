"""SpecForge benchmark results against an SGLang server.

- `benchmarks/bench_eagle3.py`: one indented JSON object despite its `.jsonl` name:
  {"model": draft model path, "<benchmark>": [{"batch_size", "steps", "topk", "num_draft_tokens",
  "metrics": [{"latency", "output_throughput", "accept_length", "accuracy", ...}], "num_samples"}]}.
  steps 0 is the target-only baseline; null settings mean a running server was measured as is.
- `specforge benchmark` reports: {"model", "draft_model", "concurrency", "created_at", "runs": [{"config":
  {"label", "batch_size", "algorithm", "steps", "topk", "draft_tokens"} or null, "task": {"name", ...},
  "metrics": {"throughput_tokens_per_second", "accept_length", "latency_seconds", ...}}]}.

- `benchmarks/bench_model_speedup.py`: JSONL, one object per configuration and benchmark: {"batch_size",
  "steps", "topk", "num_draft_tokens", "acc_length", "duration", "throughput", "completion_tokens",
  "benchmark"}; steps 0 is the target alone.

Throughput is aggregate over the batch; per-request decode tok/s is throughput / batch size."""

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, TextIO

from pydantic import Field

from specdash.ingest.formats.base import Format
from specdash.ingest.formats.common import (
    EngineModel,
    benchmark,
    choose_deployment,
    json_objects,
    missing_deployment,
    safe_raw,
    validate,
)
from specdash.ingest.jsontext import JSONPositionError, LinedDict, iter_values_with_lines
from specdash.ingest.lines import MAX_DOCUMENT_CHARS, read_document
from specdash.ingest.problems import Problem

PositiveF = Annotated[float, Field(gt=0)]
Count = Annotated[int, Field(ge=0)]


class EagleMetrics(EngineModel):
    latency: Annotated[float, Field(ge=0)] | None = None
    output_throughput: PositiveF
    accept_length: Annotated[float, Field(ge=1)] | None = None
    num_questions: Count | None = None


class EagleConfig(EngineModel):
    batch_size: Annotated[int, Field(ge=1)]
    steps: Count | None = None
    topk: Count | None = None
    num_draft_tokens: Count | None = None
    metrics: list[Any]
    num_samples: Count | None = None


class TaskMetrics(EngineModel):
    num_samples: Count | None = None
    throughput_tokens_per_second: PositiveF
    accept_length: Annotated[float, Field(ge=1)] | None = None


class RunConfig(EngineModel):
    label: str | None = None
    batch_size: Annotated[int, Field(ge=1)] | None = None
    algorithm: str = "EAGLE3"
    steps: Count = 0
    topk: Count = 0
    draft_tokens: Count = 0


class ReportRun(EngineModel):
    config: RunConfig | None = None
    task: dict[str, Any]
    metrics: TaskMetrics


class Report(EngineModel):
    model: str | None = None
    draft_model: str | None = None
    concurrency: Annotated[int, Field(ge=1)] = 1
    created_at: str | None = None
    runs: list[Any]


def detect_bench_eagle3(head: str, filename: str) -> bool:
    return (
        head.lstrip().startswith("{")
        and all(
            key in head
            for key in ('"batch_size"', '"steps"', '"num_draft_tokens"', '"output_throughput"', '"latency"')
        )
        and '"benchmark_name"' not in head
    )


def detect_report(head: str, filename: str) -> bool:
    return head.lstrip().startswith("{") and '"runs"' in head and '"throughput_tokens_per_second"' in head


def _document(stream: TextIO, path: str) -> LinedDict | Problem:
    text = read_document(stream)
    if text is None:
        return Problem(path, None, None, f"larger than {MAX_DOCUMENT_CHARS:,} characters", "parse")
    try:
        values = list(iter_values_with_lines(text))
    except JSONPositionError as exc:
        return Problem(path, exc.line, None, f"invalid JSON: {exc}", "parse")
    if len(values) != 1 or not isinstance(values[0], LinedDict):
        return Problem(path, 1, None, "expected one JSON object", "parse")
    return values[0]


def _speculation(steps, topk, draft_tokens, accept_length, algorithm="EAGLE3") -> dict:
    if steps == 0 or (steps is None and (accept_length is None or accept_length == 1)):
        # a baseline: the target alone; an accept length other than 1 is kept for validation to refuse
        return {} if accept_length in (None, 1) else {"accept_length": accept_length}
    return dict(
        speculative_algorithm=algorithm,
        num_steps=steps or None,
        topk=topk or None,
        num_draft_tokens=draft_tokens or None,
        accept_length=accept_length,
    )


def parse_bench_eagle3(stream: TextIO, path: str, link=None) -> Iterator:
    document = _document(stream, path)
    if isinstance(document, Problem):
        yield document
        return
    drafter = document.get("model") if isinstance(document.get("model"), str) else None
    deployment = choose_deployment(link)
    if deployment is None:
        yield missing_deployment(path, 1)
        return
    for name, configs in document.items():
        if name == "model":
            continue
        if not isinstance(configs, list):
            yield Problem(path, document.line_of(name), name, "expected a list of configurations")
            continue
        for index, raw in enumerate(configs):
            prefix = f"{name}.{index}"
            config = validate(EagleConfig, raw, path, document.line_of(name), prefix)
            if isinstance(config, list):
                yield from config
                continue
            for run_index, raw_metrics in enumerate(config.metrics):
                where = raw_metrics.line if isinstance(raw_metrics, LinedDict) else raw.line
                metrics = validate(EagleMetrics, raw_metrics, path, where, f"{prefix}.metrics.{run_index}")
                if isinstance(metrics, list):
                    yield from metrics
                    continue
                spec = _speculation(config.steps, config.topk, config.num_draft_tokens, metrics.accept_length)
                yield from benchmark(
                    path,
                    where,
                    f"{prefix}.metrics.{run_index}",
                    deployment=deployment,
                    engine="sglang",
                    drafter_path=drafter if spec else None,
                    concurrency=config.batch_size,
                    concurrency_source="file",
                    dataset=name,
                    num_prompts=metrics.num_questions or config.num_samples,
                    decode_tps=metrics.output_throughput / config.batch_size,
                    output_throughput=metrics.output_throughput,
                    raw=dict(raw_metrics),
                    **spec,
                )


def parse_report(stream: TextIO, path: str, link=None) -> Iterator:
    document = _document(stream, path)
    if isinstance(document, Problem):
        yield document
        return
    report = validate(Report, document, path, document.line)
    if isinstance(report, list):
        yield from report
        return
    deployment = choose_deployment(link)
    if deployment is None:
        yield missing_deployment(path, document.line)
        return
    try:
        measured_at = (
            datetime.strptime(report.created_at, "%Y-%m-%dT%H:%M:%S%z") if report.created_at else None
        )
    except ValueError:
        measured_at = None
    for index, raw in enumerate(report.runs):
        where = raw.line if isinstance(raw, LinedDict) else document.line
        run = validate(ReportRun, raw, path, where, f"runs.{index}")
        if isinstance(run, list):
            yield from run
            continue
        config = run.config
        batch = (config.batch_size if config else None) or report.concurrency
        if config is None:  # a running server measured as is: speculation shows in the accept length
            spec = _speculation(None, None, None, run.metrics.accept_length, "unknown")
        else:
            spec = _speculation(
                config.steps,
                config.topk,
                config.draft_tokens,
                run.metrics.accept_length,
                config.algorithm.upper(),
            )
        yield from benchmark(
            path,
            where,
            f"runs.{index}",
            deployment=deployment,
            engine="sglang",
            drafter_path=report.draft_model if spec else None,
            concurrency=batch,
            concurrency_source="file",
            dataset=str(run.task.get("name")) if run.task.get("name") else None,
            num_prompts=run.metrics.num_samples,
            decode_tps=run.metrics.throughput_tokens_per_second / batch,
            output_throughput=run.metrics.throughput_tokens_per_second,
            label=config.label if config else "server",
            measured_at=measured_at,
            raw={"task": run.task, "metrics": dict(raw["metrics"]) if isinstance(raw, dict) else None},
            **spec,
        )


class SpeedupRecord(EngineModel):
    batch_size: Annotated[int, Field(ge=1)]
    steps: Count
    topk: Count
    num_draft_tokens: Count
    acc_length: Annotated[float, Field(ge=1)] | None = None
    duration: PositiveF | None = None
    throughput: PositiveF
    completion_tokens: Count | None = None
    benchmark: str | None = None


SPEEDUP_KEYS = (
    '"batch_size"',
    '"steps"',
    '"num_draft_tokens"',
    '"acc_length"',
    '"throughput"',
    '"completion_tokens"',
    '"benchmark"',
)


def detect_model_speedup(head: str, filename: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    return first.startswith("{") and all(key in first for key in SPEEDUP_KEYS)


def parse_model_speedup(stream: TextIO, path: str, link=None) -> Iterator:
    """`benchmarks/bench_model_speedup.py --output x.jsonl`: a server launched per configuration with
    `--max-running-requests batch_size`, the prompts sent batch_size at a time; throughput = completion
    tokens / duration over the whole run (aggregate, prefill and waits included). steps 0 = no speculation;
    the drafter is the script's --speculative-draft-model-path, which the file does not hold."""
    deployment = choose_deployment(link)
    for item in json_objects(stream, path):
        if isinstance(item, Problem):
            yield item
            continue
        number, data = item
        result = validate(SpeedupRecord, data, path, number)
        if isinstance(result, list):
            yield from result
            continue
        if deployment is None:
            yield missing_deployment(path, number)
            continue
        spec = _speculation(result.steps, result.topk, result.num_draft_tokens, result.acc_length)
        yield from benchmark(
            path,
            number,
            deployment=deployment,
            engine="sglang",
            concurrency=result.batch_size,
            concurrency_source="file",
            dataset=result.benchmark,
            decode_tps=result.throughput / result.batch_size,
            output_throughput=result.throughput,
            raw=safe_raw(data),
            **spec,
        )


FORMATS = [
    Format(
        "specforge-bench-eagle3",
        "SpecForge benchmarks/bench_eagle3.py results (one indented JSON object)",
        detect_bench_eagle3,
        parse_bench_eagle3,
    ),
    Format(
        "specforge-model-speedup",
        "SpecForge benchmarks/bench_model_speedup.py results (JSONL, one per config)",
        detect_model_speedup,
        parse_model_speedup,
    ),
    Format(
        "specforge-benchmark",
        "SpecForge `specforge benchmark` JSON report (runs with config, task, metrics)",
        detect_report,
        parse_report,
    ),
]
