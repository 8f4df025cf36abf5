"""SGLang `bench_serving` results (`python -m sglang.bench_serving --output-file x.jsonl`, and
`sglang.benchmark.serving`): JSONL, one object per run, versions 0.5.2 to 0.5.23.

Versions differ: old ones have no `server_info`; newer ones nest the server's arguments in it (under
`decode` with PD disaggregation); `request_rate` is the bare token `Infinity` for "all at once";
`accept_length` is null without speculation and otherwise the server's cumulative average. Versions
before 0.5.2 have no TPOT and no concurrency: per-request decode and concurrency are derived
(common.client_load) and the fields used noted."""

import math
import re
from collections.abc import Iterator
from typing import Annotated, Any, TextIO

from pydantic import Field

from specdash.db.records import NonNegFloat, PositiveFloat
from specdash.ingest.formats.base import Format
from specdash.ingest.formats.common import (
    EngineModel,
    benchmark,
    choose_deployment,
    client_load,
    deployment_name,
    drafter_of,
    json_objects,
    missing_deployment,
    no_per_request,
    per_request,
    safe_raw,
    tokens_per_gap,
    validate,
)
from specdash.ingest.problems import Problem
from specdash.ingest.records import SPECULATION_UNKNOWN
from specdash.ingest.setting import algorithm_name

NAME = "sglang-bench-serving"
HELP = "SGLang bench_serving JSONL (python -m sglang.bench_serving --output-file), 0.5.2 to 0.5.23 and older"


class ServerArgs(EngineModel):
    """The server arguments `server_info` carries (SGLang's /server_info answer)."""

    model_path: str | None = None
    served_model_name: str | None = None
    tp_size: Annotated[int, Field(ge=1)] | None = None
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: Annotated[int, Field(ge=1)] | None = None
    speculative_eagle_topk: Annotated[int, Field(ge=1)] | None = None
    speculative_num_draft_tokens: Annotated[int, Field(ge=1)] | None = None
    version: str | None = None


class ServingResult(EngineModel):
    tag: str | None = None
    backend: str | None = None
    dataset_name: str | None = None
    request_rate: Annotated[float, Field(gt=0, allow_inf_nan=True)] | str | None = None
    max_concurrency: Annotated[int, Field(ge=1)] | None = None
    completed: Annotated[int, Field(ge=0)] | None = None
    total_input_tokens: NonNegFloat | None = None  # over the completed requests
    total_output_tokens: NonNegFloat | None = None
    random_input_len: NonNegFloat | None = None
    random_output_len: NonNegFloat | None = None
    random_range_ratio: NonNegFloat | None = None
    output_throughput: NonNegFloat
    median_tpot_ms: PositiveFloat | None = None
    p99_tpot_ms: PositiveFloat | None = None
    median_ttft_ms: NonNegFloat | None = None
    p99_ttft_ms: NonNegFloat | None = None
    mean_e2e_latency_ms: NonNegFloat | None = None
    mean_ttft_ms: NonNegFloat | None = None
    mean_itl_ms: NonNegFloat | None = None
    median_itl_ms: NonNegFloat | None = None
    p99_itl_ms: NonNegFloat | None = None
    concurrency: NonNegFloat | None = None
    accept_length: Annotated[float, Field(ge=1)] | None = None


KNOWN_VERSIONS = ((0, 5, 2), (0, 5, 23))  # the versions whose files the fixtures hold


def version_note(version: str | None) -> str | None:
    """A note when the file comes from a version outside those known: read from the fields it has."""
    numbers = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    if numbers is None:
        return None
    found = tuple(int(n or 0) for n in numbers.groups())
    if KNOWN_VERSIONS[0] <= found <= KNOWN_VERSIONS[1]:
        return None
    return f"{version} is outside the versions known (0.5.2 to 0.5.23): read from the fields it has"


def server_args_of(info: Any) -> dict:
    """The server arguments in a `server_info` object, wherever this version put them."""
    if not isinstance(info, dict):
        return {}
    if isinstance(info.get("decode"), list) and info["decode"] and isinstance(info["decode"][0], dict):
        info = info["decode"][0]  # PD disaggregation: the decode server is the one that speculates
    args = dict(info)
    if isinstance(info.get("server_args"), dict):
        args.update(info["server_args"])
    return args


# the datasets whose requests all have the stated random lengths when the range ratio is 1
RANDOM_DATASETS = ("random", "random-ids")


def context_of(result: ServingResult) -> tuple[float | None, float | None, str | None]:
    """(mean input tokens, mean output tokens per request, where they came from): the totals over the
    completed requests; else, for a random dataset at range ratio 1 (every request exactly as long as
    asked), the lengths asked for; else unknown."""
    stated = (
        per_request(result.total_input_tokens, result.completed),
        per_request(result.total_output_tokens, result.completed),
    )
    if stated != (None, None):
        return *stated, "total_input_tokens / completed, total_output_tokens / completed"
    if result.dataset_name in RANDOM_DATASETS and result.random_range_ratio == 1:
        if result.random_input_len is not None or result.random_output_len is not None:
            return (
                result.random_input_len,
                result.random_output_len,
                "random_input_len, random_output_len (random dataset, range ratio 1)",
            )
    return None, None, None


def detect(head: str, filename: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    return (
        first.startswith("{")
        and '"output_throughput"' in first
        and '"model_id"' not in first
        and any(key in first for key in ('"dataset_name"', '"sharegpt_output_len"', '"random_input_len"'))
    )


def parse(stream: TextIO, path: str, link=None) -> Iterator:
    for item in json_objects(stream, path):
        if isinstance(item, Problem):
            yield item
        else:
            yield from record_from(item[1], path, item[0], link)


def record_from(data: dict, path: str, line: int, link) -> Iterator:
    result = validate(ServingResult, data, path, line)
    server = validate(ServerArgs, server_args_of(data.get("server_info")), path, line, "server_info")
    if isinstance(result, list) or isinstance(server, list):
        yield from (result if isinstance(result, list) else [])
        yield from (server if isinstance(server, list) else [])
        return
    deployment = choose_deployment(
        link, deployment_name("sglang", server.model_path or server.served_model_name, server.tp_size)
    )
    if deployment is None:
        yield missing_deployment(path, line)
        return
    algorithm = algorithm_name(server.speculative_algorithm)
    if algorithm is None and result.accept_length is not None:
        algorithm = SPECULATION_UNKNOWN  # old versions: speculation shows only in the accept length
    in_flight = result.concurrency if result.concurrency and result.concurrency >= 1 else None
    rate = result.request_rate if isinstance(result.request_rate, float) else None
    if isinstance(result.request_rate, str) and result.request_rate.strip().lower() in ("inf", "infinity"):
        rate = math.inf
    load = client_load(
        median_tpot_ms=result.median_tpot_ms,
        median_itl_ms=result.median_itl_ms,
        accept_length=result.accept_length,
        output_throughput=result.output_throughput,
        concurrency=result.max_concurrency or in_flight,
        request_rate=rate,
        prompts=result.completed,
        tokens_per_itl=tokens_per_gap(
            mean_itl_ms=result.mean_itl_ms,
            mean_e2e_ms=result.mean_e2e_latency_ms,
            mean_ttft_ms=result.mean_ttft_ms,
            output_tokens=result.total_output_tokens,
            completed=result.completed,
        ),
    )
    if load.decode_tps is None or load.concurrency is None:
        yield no_per_request(path, line)
        return
    derived = load.raw()
    input_tokens, output_tokens, context_from = context_of(result)
    if context_from is not None and context_from.startswith("random"):
        derived["context"] = context_from  # asked for, not counted: say so
    if (note := version_note(server.version)) is not None:
        derived["version"] = note
    speculative = algorithm is not None
    yield from benchmark(
        path,
        line,
        deployment=deployment,
        engine="sglang",
        engine_version=server.version,
        speculative_algorithm=algorithm,
        drafter_path=drafter_of(
            algorithm, server.speculative_draft_model_path, server.model_path or server.served_model_name
        ),
        num_steps=server.speculative_num_steps if speculative else None,
        topk=server.speculative_eagle_topk if speculative else None,
        num_draft_tokens=server.speculative_num_draft_tokens if speculative else None,
        concurrency=load.concurrency,
        concurrency_source=load.concurrency_source,
        dataset=result.dataset_name,
        num_prompts=result.completed,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        decode_tps=load.decode_tps,
        output_throughput=result.output_throughput,  # 0 beside a measured TPOT is refused, not dropped
        accept_length=result.accept_length,
        median_tpot_ms=result.median_tpot_ms,
        p99_tpot_ms=result.p99_tpot_ms,
        median_ttft_ms=result.median_ttft_ms,
        p99_ttft_ms=result.p99_ttft_ms,
        median_itl_ms=result.median_itl_ms,
        p99_itl_ms=result.p99_itl_ms,
        request_rate=rate,
        label=result.tag,
        raw={**safe_raw(data), "specdash_derived": derived},
    )


FORMATS = [Format(NAME, HELP, detect, parse)]
