"""SpecBundle's published results (`docs/spec_bundle/public/raw_data/data.json` of SpecForge).

Shape: {target model: {benchmark: {"benchmark_name", "results": [{"batch_size", "steps", "topk",
"num_draft_tokens", "metrics": [{"Name", "output_throughput", "accept_length"}]}]}}}.

Stored as: one deployment per target model named "SpecBundle: <model>", spanning its batch sizes as load
levels (the file does not give the TP size); rows named like "Wihtout EAGLE3" [sic] are no-speculation baselines; every
other row is an EAGLE3 drafter named by its repository, stored as a run of that name with one
checkpoint "published". `dataset` is the benchmark name, `concurrency` the batch size,
`output_throughput` the aggregate tok/s as published, and per-request decode tok/s is
output_throughput / batch_size (every request of the batch decodes together)."""

import re
from collections.abc import Iterator
from typing import Annotated, Any, TextIO

from pydantic import Field

from specdash.ingest.formats.base import Format, Located
from specdash.ingest.formats.common import (
    EngineModel,
    benchmark,
    choose_deployment,
    deployment_record,
    run_record,
    validate,
)
from specdash.ingest.jsontext import JSONPositionError, LinedDict, iter_values_with_lines
from specdash.ingest.lines import MAX_DOCUMENT_CHARS, read_document
from specdash.ingest.links import PUBLISHED
from specdash.ingest.problems import Problem

NAME = "specbundle"
HELP = "SpecBundle data.json (SpecForge docs/spec_bundle): published EAGLE3 results per target model"

BASELINE_NAME = re.compile(r"^\s*wi(?:th|ht)out\b", re.IGNORECASE)  # "Wihtout EAGLE3" [sic], "Without ..."


class Metric(EngineModel):
    name: Annotated[str, Field(alias="Name", min_length=1, max_length=200)]
    output_throughput: Annotated[float, Field(gt=0)]
    accept_length: Annotated[float, Field(ge=1)]


class Result(EngineModel):
    batch_size: Annotated[int, Field(ge=1)]
    steps: Annotated[int, Field(ge=0)]
    topk: Annotated[int, Field(ge=0)]
    num_draft_tokens: Annotated[int, Field(ge=0)]
    metrics: list[Any]


class Benchmark(EngineModel):
    benchmark_name: str
    results: list[Any]


def detect(head: str, filename: str) -> bool:
    return head.lstrip().startswith("{") and all(
        key in head for key in ('"benchmark_name"', '"results"', '"metrics"', '"Name"')
    )


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    text = read_document(stream)
    if text is None:
        yield Problem(path, None, None, f"larger than {MAX_DOCUMENT_CHARS:,} characters", "parse")
        return
    try:
        values = list(iter_values_with_lines(text))
    except JSONPositionError as exc:
        yield Problem(path, exc.line, None, f"invalid JSON: {exc}", "parse")
        return
    if len(values) != 1 or not isinstance(values[0], LinedDict):
        yield Problem(path, 1, None, "expected one JSON object of target models", "parse")
        return
    document = values[0]
    deployments: set[str] = set()
    runs: set[str] = set()
    for model, benchmarks in document.items():
        where = document.line_of(model)
        if not isinstance(benchmarks, LinedDict):
            yield Problem(path, where, model, "expected an object of benchmarks")
            continue
        for bench_name, bench in benchmarks.items():
            prefix = f"{model}.{bench_name}"
            parsed = validate(Benchmark, bench, path, benchmarks.line_of(bench_name), prefix)
            if isinstance(parsed, list):
                yield from parsed
                continue
            for index, raw_result in enumerate(parsed.results):
                if not isinstance(raw_result, LinedDict):
                    yield Problem(path, bench.line, f"{prefix}.results.{index}", "expected an object")
                    continue
                yield from _result(
                    path,
                    link,
                    model,
                    parsed.benchmark_name,
                    raw_result,
                    f"{prefix}.results.{index}",
                    deployments,
                    runs,
                )


def _result(path, link, model, dataset, raw, prefix, deployments, runs) -> Iterator:
    result = validate(Result, raw, path, raw.line, prefix)
    if isinstance(result, list):
        yield from result
        return
    deployment = choose_deployment(link) or f"SpecBundle: {model}"
    if deployment not in deployments:
        deployments.add(deployment)
        yield Located(
            raw.line,
            deployment_record(
                deployment,
                target_model=model,
                engine="sglang",
                notes="SpecBundle published results; TP size and GPUs not given",
            ),
        )
    for index, raw_metric in enumerate(result.metrics):
        if not isinstance(raw_metric, LinedDict):
            yield Problem(path, raw.line, f"{prefix}.metrics.{index}", "expected an object")
            continue
        metric = validate(Metric, raw_metric, path, raw_metric.line, f"{prefix}.metrics.{index}")
        if isinstance(metric, list):
            yield from metric
            continue
        fields = dict(
            deployment=deployment,
            engine="sglang",
            concurrency=result.batch_size,
            concurrency_source="file",
            dataset=dataset,
            decode_tps=metric.output_throughput / result.batch_size,
            output_throughput=metric.output_throughput,
            label=metric.name,
            raw={
                "target_model": model,
                "batch_size": result.batch_size,
                "steps": result.steps,
                "topk": result.topk,
                "num_draft_tokens": result.num_draft_tokens,
                "Name": metric.name,
            },
        )
        if BASELINE_NAME.match(metric.name) or result.steps == 0:
            if metric.accept_length != 1:
                yield Problem(
                    path,
                    raw_metric.line,
                    f"{prefix}.metrics.{index}.accept_length",
                    f"a no-speculation row has accept length 1, not {metric.accept_length}",
                )
                continue
            yield from benchmark(path, raw_metric.line, f"{prefix}.metrics.{index}", **fields)
            continue
        drafter = metric.name.strip()
        if drafter not in runs and not (link and link.run):
            runs.add(drafter)
            yield Located(
                raw_metric.line, run_record(drafter, speculative_algorithm="EAGLE3", target_model=model)
            )
        yield from benchmark(
            path,
            raw_metric.line,
            f"{prefix}.metrics.{index}",
            **fields,
            run=drafter,
            checkpoint=PUBLISHED,
            drafter_path=drafter,
            speculative_algorithm="EAGLE3",
            num_steps=result.steps,
            topk=result.topk,
            num_draft_tokens=result.num_draft_tokens,
            accept_length=metric.accept_length,
        )


FORMATS = [Format(NAME, HELP, detect, parse)]
