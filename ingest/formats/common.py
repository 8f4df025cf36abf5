"""What the engine formats share: tolerant input models, field-located problems, the derivation of
per-request decode tok/s, deployment names, and a raw record safe to store."""

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from specdash.costmodel.priors import drafter_family, is_block_family
from specdash.costmodel.throughput import verified_tokens
from specdash.ingest.formats.base import Located
from specdash.ingest.jsontext import LENIENT_DECODER, LinedDict
from specdash.ingest.lines import TooLong, bounded_lines
from specdash.ingest.links import LinkOptions
from specdash.ingest.problems import Problem, error_message, field_first
from specdash.ingest.records import (
    OWN_HEAD_ALGORITHMS,
    BenchmarkRecord,
    ConcurrencySource,
    DeploymentRecord,
    RunRecord,
)

# Per-request lists a benchmark may carry (one value per prompt); kept out of the stored raw record.
DETAIL_KEYS = frozenset(
    {
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
        "latencies",
        "start_times",
        "queue_times",
        "input_texts",
        "input_request_ids",
        "document_lens",
        "documents_list",
    }
)
MAX_RAW_STRING = 2000
# tokens a streamed gap stands for past which a run speculated (streamed_several_tokens)
CHUNK_TOKENS_SPECULATING = 1.5


class EngineModel(BaseModel):
    """An engine's record: unknown keys ignored (engines add keys between versions), numbers finite."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False, populate_by_name=True, defer_build=True)


def located_problems(
    path: str, line: int | None, error: ValidationError, data: Any = None, prefix: str = ""
) -> list[Problem]:
    """One problem per error, on the line of the offending key when the data knows it."""
    problems = []
    for item in error.errors(include_url=False):
        loc = [str(part) for part in item["loc"]]
        where = line
        node = data
        for part in item["loc"]:  # walk down to the innermost object that knows its lines
            if isinstance(node, LinedDict):
                where = node.line_of(part) if isinstance(part, str) else node.line
                node = node.get(part) if isinstance(part, str) else None
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
                if isinstance(node, LinedDict):
                    where = node.line
            else:
                break
        message = error_message(item)
        field = ".".join([prefix, *loc] if prefix else loc) or None
        if not loc:
            field, message = field_first(field, message)
        problems.append(Problem(path, where, field, message))
    return problems


Model = TypeVar("Model", bound=BaseModel)


def validate(
    model: type[Model], data: Any, path: str, line: int | None, prefix: str = ""
) -> Model | list[Problem]:
    """The model instance, or the list of problems."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return located_problems(path, line, exc, data, prefix)


def benchmark(path: str, line: int | None, prefix: str = "", **fields) -> Iterator["Located | Problem"]:
    """A benchmark record from fields an engine parser derived; problems name the record's fields."""
    try:
        yield Located(line, BenchmarkRecord(**fields))
    except ValidationError as exc:
        yield from located_problems(path, line, exc, None, prefix)


@dataclass(frozen=True)
class Load:
    """Per-request decode tok/s and the concurrency of a client benchmark, each with how it was told."""

    decode_tps: float | None
    decode_from: str
    concurrency: int | None
    concurrency_source: ConcurrencySource | None
    concurrency_from: str

    def raw(self) -> dict:
        return {"decode_tps": self.decode_from, "concurrency": self.concurrency_from}


def tokens_per_gap(
    *,
    mean_itl_ms: float | None,
    mean_e2e_ms: float | None,
    mean_ttft_ms: float | None,
    output_tokens: float | None,
    completed: int | None,
) -> float | None:
    """The tokens each entry of a client's ITL list stands for, from the run's own means: the entries tile
    every request's decode phase (E2E - TTFT), so there are decode time / mean ITL of them for the tokens
    after each first one. 1 where the client spread each streamed chunk's gap over its tokens (SGLang's
    native backend), about the accept length where it kept one gap a chunk. None when a figure is missing."""
    if not (mean_itl_ms and mean_e2e_ms and output_tokens and completed) or mean_ttft_ms is None:
        return None
    decode_ms = completed * (mean_e2e_ms - mean_ttft_ms)
    decode_tokens = output_tokens - completed
    if decode_ms <= 0 or decode_tokens <= 0:
        return None
    return max(1.0, decode_tokens * mean_itl_ms / decode_ms)  # a streamed gap carries a token at least


def streamed_several_tokens(gap_tokens: float | None) -> bool:
    """Whether a run's streamed chunks carried several tokens each (tokens_per_gap): speculation (or a stream
    interval) that a file without its speculation keys does not state, as a client run against another
    engine writes it. A step without speculation streams each request one token, so a gap a chunk stands
    for one token in every such run at hand, and about the accept length in speculating ones (vLLM's
    client: 2.60 against 2.62, 2.32 against 2.33); half a token over one is no rounding of the means. Such
    a run is never a step without speculation. (A client that spreads each chunk's gap over its tokens,
    SGLang's native one, shows 1 either way: this says nothing of it.)"""
    return gap_tokens is not None and gap_tokens > CHUNK_TOKENS_SPECULATING


def client_load(
    *,
    median_tpot_ms: float | None,
    median_itl_ms: float | None,
    accept_length: float | None,
    output_throughput: float | None,
    concurrency: float | None,
    request_rate: float | None,
    prompts: int | None,
    tokens_per_itl: float | None = None,
) -> Load:
    """Per request and aggregate never confused, concurrency never a silent 1.

    Per-request decode: 1000 / median TPOT; else 1000 / median ITL, and when speculating times the
    tokens an ITL entry stands for (`tokens_per_gap`, measured from the run's means), or the accept
    length where those means are missing (an engine streams a chunk a verify round); else aggregate /
    concurrency when the concurrency is known. Concurrency: the file's (a cap, or the measured mean in
    flight); an all-at-once run (`inf`) with no cap has every prompt in flight; a request-rate run is
    derived by Little's law, aggregate / per-request tok/s."""
    decode, decode_from = None, "unknown"
    if median_tpot_ms and median_tpot_ms > 0:
        decode, decode_from = 1000.0 / median_tpot_ms, "1000 / median_tpot_ms"
    elif median_itl_ms and median_itl_ms > 0:
        if accept_length and accept_length > 1 and tokens_per_itl is not None:
            decode = tokens_per_itl * 1000.0 / median_itl_ms
            decode_from = (
                f"{tokens_per_itl:.2f} tokens an ITL entry (mean ITL x decode tokens / decode time) * 1000 / "
                "median_itl_ms"
            )
        elif accept_length and accept_length > 1:
            decode = accept_length * 1000.0 / median_itl_ms
            decode_from = "accept_length * 1000 / median_itl_ms (ITL per verify round)"
        else:
            decode, decode_from = 1000.0 / median_itl_ms, "1000 / median_itl_ms"
    source: ConcurrencySource | None
    if concurrency and concurrency >= 1:
        level, source, told = max(1, round(concurrency)), "file", "the file's"
    elif request_rate is not None and math.isinf(request_rate) and prompts:
        level, source, told = prompts, "derived: prompt count", "every prompt at once, no cap"
    elif decode and output_throughput:
        level = max(1, round(output_throughput / decode))
        source, told = "derived: Little's law", "output_throughput / per-request tok/s"
    else:
        level, source, told = None, None, "unknown"
    if decode is None and level and output_throughput:
        decode, decode_from = output_throughput / level, "output_throughput / concurrency"
    return Load(decode, decode_from, level, source, told)


def per_request(total: float | None, requests: float | None) -> float | None:
    """A total over a benchmark's requests (tokens) as the mean per request; None when either is unknown
    or no request completed."""
    if total is None or not requests or requests <= 0:
        return None
    return total / requests


def draft_setting(
    algorithm: str | None, drafted: int | None, topk: int = 1, draft_tokens: int | None = None
) -> tuple[int | None, int | None]:
    """(steps K, draft tokens N) of a setting an engine states as `drafted` speculative tokens (vLLM's
    num_speculative_tokens, the positions of its per-position rates): a chain drafts one a step (K =
    drafted, N = K + 1); a block drafter (DFlash, DSpark) drafts them all in one step (K = 1, N = drafted + 1)."""
    if not drafted:
        return None, None
    if is_block_family(drafter_family(algorithm)):
        return 1, verified_tokens(1, 1, draft_tokens, tokens_per_step=drafted)
    return drafted, verified_tokens(drafted, topk, draft_tokens)


def no_per_request(path: str, line: int | None) -> Problem:
    return Problem(
        path,
        line,
        "decode_tps",
        "per-request decode cannot be told: no median TPOT or ITL, "
        "and no concurrency to divide the aggregate output_throughput by",
    )


def drafter_of(algorithm: str | None, drafter: str | None, model: str | None) -> str | None:
    """The drafter a speculative benchmark names; None for MTP/NEXTN served from the target's own head
    (no draft model, or the target itself as SGLang fills it in)."""
    if algorithm is None:
        return None
    if algorithm in OWN_HEAD_ALGORITHMS and (not drafter or drafter == model):
        return None
    return drafter


# Files that write about logs rather than being one: documents and source code.
PROSE_OR_SOURCE = (".md", ".markdown", ".rst", ".adoc", ".html", ".htm", ".ipynb", ".py", ".sh", ".tex")


def prose_or_source(filename: str) -> bool:
    return filename.lower().endswith(PROSE_OR_SOURCE)


def clean_path(text: str) -> bool:
    """A path as a program prints it, not one quoted in prose or markup."""
    return (
        bool(text)
        and not any(mark in text for mark in "`'\"<>|*")
        and not text.endswith((",", ".", ";", ")"))
    )


def model_short_name(model_path: str | None) -> str | None:
    if not model_path:
        return None
    parts = PurePosixPath(str(model_path).rstrip("/")).parts
    return parts[-1] if parts else None


def deployment_name(
    engine: str, model: str | None, tp_size: int | None = None, quantization: str | None = None
) -> str | None:
    """A default deployment name from what an engine file says: "Llama-3.1-8B-Instruct, TP8, sglang";
    a quantized target is a deployment of its own ("..., TP1, fp8, vllm")."""
    short = model_short_name(model)
    if not short:
        return None
    quant = quantization if quantization and quantization.lower() not in short.lower() else None
    return ", ".join(part for part in (short, f"TP{tp_size}" if tp_size else None, quant, engine) if part)


def choose_deployment(link: LinkOptions | None, *candidates: str | None) -> str | None:
    if link is not None and link.deployment:
        return link.deployment
    return next((c for c in candidates if c), None)


def missing_deployment(path: str, line: int | None) -> Problem:
    return Problem(
        path, line, "deployment", "the file does not say which deployment it measured; pass --deployment NAME"
    )


def safe_raw(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy for Benchmark.raw: no per-request lists, no NaN/inf, strings capped."""
    if isinstance(value, Mapping):
        if depth > 8:
            return None
        return {str(k)[:200]: safe_raw(v, depth + 1) for k, v in value.items() if k not in DETAIL_KEYS}
    if isinstance(value, list):
        return [safe_raw(v, depth + 1) for v in value[:64]]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str) and len(value) > MAX_RAW_STRING:
        return value[:MAX_RAW_STRING] + "..."
    return value


def deployment_record(name: str, **fields) -> DeploymentRecord:
    return DeploymentRecord(name=name, **{k: v for k, v in fields.items() if v is not None})


def run_record(name: str, **fields) -> RunRecord:
    return RunRecord(name=name, **{k: v for k, v in fields.items() if v is not None})


def json_objects(stream: TextIO, path: str) -> Iterator[tuple[int, dict] | Problem]:
    """The JSON object on each line of a JSON Lines file, as (line, object), or the line's problem (over
    the size cap, invalid JSON, not an object); blank lines skipped."""
    for number, text in bounded_lines(stream):
        if isinstance(text, TooLong):
            yield Problem(
                path, number, None, f"record of {text.chars:,} characters is over the size cap", "parse"
            )
        elif text.strip():
            try:
                data = LENIENT_DECODER.decode(text)
            except json.JSONDecodeError as exc:
                yield Problem(path, number, None, f"invalid JSON: {exc.msg}", "parse")
                continue
            if isinstance(data, dict):
                yield number, data
            else:
                yield Problem(path, number, None, "expected a JSON object", "parse")


# Where a log's summary record keeps the lowest and highest accept length its lines stated, and on which
# lines (the rules of ingest/rules/ judge each: a median can hide one line's impossible value).
STATED_ACCEPT = "stated_accept_length"


def stated_in(raw: dict, stated: list[tuple[int, float]]) -> dict:
    """`raw` with the lowest and highest of (line, accept length) pairs a log's lines stated, when any:
    {"low": 0.5, "low_line": 12, "high": 3.1, "high_line": 40}."""
    if stated:
        low, high = min(stated, key=lambda p: p[1]), max(stated, key=lambda p: p[1])
        raw[STATED_ACCEPT] = {"low": low[1], "low_line": low[0], "high": high[1], "high_line": high[0]}
    return raw
