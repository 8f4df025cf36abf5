"""SGLang's batch benchmarks, JSONL one object per case:

- `bench_one_batch_server` (`--result-filename`): one batch of `batch_size` requests; `output_throughput`
  is aggregate; `acc_length` is the server's average accept length, -1 (or absent) when unknown.
- `bench_one_batch` (`--result-filename`): one batch through the model runner alone (no server, no
  speculation); `median_decode_throughput` is batch size / the median decode step latency;
- `bench_offline_throughput` (`--result-filename`): every prompt at once through the engine; aggregate
  throughput only, no speculation settings.

Neither names its model or drafter: pass --deployment, and --run/--checkpoint for speculative runs."""

from collections.abc import Iterator
from typing import Annotated, TextIO

from pydantic import Field

from specdash.ingest.formats.base import Format
from specdash.ingest.formats.common import (
    EngineModel,
    Model,
    benchmark,
    choose_deployment,
    json_objects,
    missing_deployment,
    per_request,
    safe_raw,
    validate,
)
from specdash.ingest.problems import Problem
from specdash.ingest.records import SPECULATION_UNKNOWN


class OneBatchResult(EngineModel):
    run_name: str | None = None
    batch_size: Annotated[int, Field(ge=1)]
    input_len: Annotated[int, Field(ge=0)] | None = None
    output_len: Annotated[int, Field(ge=1)] | None = None
    latency: Annotated[float, Field(gt=0)] | None = None
    output_throughput: Annotated[float, Field(gt=0)]
    last_gen_throughput: float | None = None  # -1 when the server did not say
    acc_length: float | None = None  # -1 when the server did not say


class OneBatchOfflineResult(EngineModel):
    run_name: str | None = None
    batch_size: Annotated[int, Field(ge=1)]
    input_len: Annotated[int, Field(ge=0)] | None = None
    output_len: Annotated[int, Field(ge=1)] | None = None
    median_decode_latency: Annotated[float, Field(gt=0)] | None = None
    median_decode_throughput: Annotated[float, Field(gt=0)]
    acc_length: float | None = None  # never written by bench_one_batch; read to refuse one that says so


class OfflineResult(EngineModel):
    backend: str | None = None
    successful_requests: Annotated[int, Field(ge=1)]
    total_latency: Annotated[float, Field(gt=0)] | None = None
    total_input_tokens: Annotated[int, Field(ge=0)] | None = None
    total_output_tokens: Annotated[int, Field(ge=0)] | None = None
    output_throughput: Annotated[float, Field(gt=0)]
    last_gen_throughput: float | None = None


def _first_line(head: str) -> str:
    return head.lstrip().split("\n", 1)[0]


def detect_one_batch(head: str, filename: str) -> bool:
    first = _first_line(head)
    return first.startswith("{") and all(
        key in first for key in ('"batch_size"', '"input_len"', '"output_len"', '"output_throughput"')
    )


def detect_one_batch_offline(head: str, filename: str) -> bool:
    first = _first_line(head)
    return first.startswith("{") and all(
        key in first for key in ('"batch_size"', '"input_len"', '"median_decode_throughput"')
    )


def detect_offline(head: str, filename: str) -> bool:
    first = _first_line(head)
    return first.startswith("{") and '"successful_requests"' in first and '"total_latency"' in first


def _records(
    stream: TextIO, path: str, model: type[Model], link
) -> Iterator[tuple[int, dict, Model, str] | Problem]:
    """Each line validated against `model`, with the deployment it goes to (neither tool names one):
    (line, raw object, validated record, deployment), or the line's problems."""
    for item in json_objects(stream, path):
        if isinstance(item, Problem):
            yield item
            continue
        line, data = item
        result = validate(model, data, path, line)
        if isinstance(result, list):
            yield from result
            continue
        deployment = choose_deployment(link)
        if deployment is None:
            yield missing_deployment(path, line)
            continue
        yield line, data, result, deployment


def parse_one_batch(stream: TextIO, path: str, link=None) -> Iterator:
    for item in _records(stream, path, OneBatchResult, link):
        if isinstance(item, Problem):
            yield item
            continue
        line, data, result, deployment = item
        accept = result.acc_length if result.acc_length is not None and result.acc_length > 0 else None
        if (problem := _accept_problem(accept, result.output_len, path, line)) is not None:
            yield problem
            continue
        dataset = f"random {result.input_len}/{result.output_len}" if result.input_len is not None else None
        yield from benchmark(
            path,
            line,
            deployment=deployment,
            engine="sglang",
            speculative_algorithm=SPECULATION_UNKNOWN if accept is not None else None,
            concurrency=result.batch_size,
            concurrency_source="file",
            dataset=dataset,
            num_prompts=result.batch_size,
            input_tokens=result.input_len,  # every request of the batch: input_len in, output_len out
            output_tokens=result.output_len,
            decode_tps=result.output_throughput / result.batch_size,
            output_throughput=result.output_throughput,
            accept_length=accept,
            label=result.run_name or None,
            raw=safe_raw(data),
        )


def _accept_problem(accept: float | None, output_len: int | None, path: str, line: int) -> Problem | None:
    """A batch's accept length below the bonus token, or above the tokens a request emits in all: a round
    cannot emit more than the request asks for (`output_len`), whatever the unstated setting."""
    if accept is None:
        return None
    if accept < 1:
        return Problem(path, line, "acc_length", f"{accept} is below 1 (it counts the bonus token)")
    if output_len is not None and accept > output_len:
        return Problem(
            path,
            line,
            "acc_length",
            f"{accept:g} tokens a round is more than the {output_len} a request emits in all (output_len)",
        )
    return None


def parse_one_batch_offline(stream: TextIO, path: str, link=None) -> Iterator:
    """`python -m sglang.bench_one_batch --result-filename`: the model runner alone, no server, no
    speculation; each decode step runs the whole batch, so per request = 1 / the median step latency."""
    for item in _records(stream, path, OneBatchOfflineResult, link):
        if isinstance(item, Problem):
            yield item
            continue
        line, data, result, deployment = item
        if result.acc_length is not None and result.acc_length not in (-1, 1):
            yield Problem(
                path,
                line,
                "acc_length",
                f"{result.acc_length:g}, yet bench_one_batch runs the model without speculation: each "
                "decode step emits exactly 1 token a request",
            )
            continue
        dataset = f"random {result.input_len}/{result.output_len}" if result.input_len is not None else None
        yield from benchmark(
            path,
            line,
            deployment=deployment,
            engine="sglang",
            concurrency=result.batch_size,
            concurrency_source="file",
            dataset=dataset,
            num_prompts=result.batch_size,
            input_tokens=result.input_len,
            output_tokens=result.output_len,
            decode_tps=result.median_decode_throughput / result.batch_size,
            output_throughput=result.median_decode_throughput,
            label=result.run_name or None,
            raw=safe_raw(data),
        )


def parse_offline(stream: TextIO, path: str, link=None) -> Iterator:
    for item in _records(stream, path, OfflineResult, link):
        if isinstance(item, Problem):
            yield item
            continue
        line, data, result, deployment = item
        yield from benchmark(
            path,
            line,
            deployment=deployment,
            engine="sglang",
            # every prompt is submitted at once: per request is the aggregate over the prompts
            concurrency=result.successful_requests,
            concurrency_source="derived: prompt count",
            dataset="offline",
            num_prompts=result.successful_requests,
            input_tokens=per_request(result.total_input_tokens, result.successful_requests),
            output_tokens=per_request(result.total_output_tokens, result.successful_requests),
            decode_tps=result.output_throughput / result.successful_requests,
            output_throughput=result.output_throughput,
            raw=safe_raw(data),
        )


FORMATS = [
    Format(
        "sglang-one-batch",
        "SGLang bench_one_batch_server JSONL (--result-filename); acc_length -1 = unknown",
        detect_one_batch,
        parse_one_batch,
    ),
    Format(
        "sglang-one-batch-offline",
        "SGLang bench_one_batch JSONL (--result-filename): one batch through the model runner, no server",
        detect_one_batch_offline,
        parse_one_batch_offline,
    ),
    Format(
        "sglang-offline",
        "SGLang bench_offline_throughput JSONL (--result-filename); aggregate throughput only",
        detect_offline,
        parse_offline,
    ),
]
