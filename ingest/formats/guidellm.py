"""GuideLLM reports: the JSON or YAML `guidellm benchmark --output-path` writes, one benchmark per load level
(a sweep's synchronous, throughput and constant-rate runs, or `--rate-type concurrent` levels).

Shapes (vllm-project/guidellm, tests/fixtures/guidellm/README.md cites the files):
- 0.2-0.3 (`benchmark/benchmark.py`): `{"benchmarks": [...]}`, each with `args.strategy.type_`
  (`streams`, `rate`), `worker.backend_model` and `extras` (`--output-extras` JSON);
- 0.4-0.6 (`benchmark/schemas/generative/`): `metadata` (version 1), `args` (`model`, `profile`, `rate`)
  and benchmarks with `config.strategy` and `config.backend.model`;
- 0.7+ (`benchmark/schemas/`): `metadata` (version 2), `config` (`spec.backend.model`, `metadata.labels`
  from `--label k=v`) and the same benchmarks.
Every version keeps `metrics.<name>.successful` distribution summaries (mean, median, percentiles) for
`request_concurrency`, `time_per_output_token_ms`, `inter_token_latency_ms`, `time_to_first_token_ms` and
`output_tokens_per_second`, and `prompt_token_count` / `output_token_count` (tokens per request). specdash
stores per benchmark: the measured mean concurrency, per-request decode 1000 / median TPOT, aggregate output
tok/s, the mean prompt and output tokens per request, and TTFT/ITL/TPOT percentiles in the raw record.

A report does not say how the server speculated: the setting comes from a `setting` label or extra
(`EAGLE3/3/1/4`, ingest/setting.py), the link options' `setting` when the caller gives one, else it is
stored as speculating with an unknown setting. Labels/extras `deployment`, `run`, `checkpoint`,
`drafter`, `dataset`, `engine` and `tp_size` are read too."""

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, TextIO

from pydantic import Field

from specdash.ingest.formats.base import Format, Located
from specdash.ingest.formats.common import (
    EngineModel,
    benchmark,
    choose_deployment,
    deployment_name,
    deployment_record,
    missing_deployment,
    safe_raw,
    validate,
)
from specdash.ingest.jsontext import JSONPositionError, LinedDict
from specdash.ingest.lines import MAX_DOCUMENT_CHARS, read_document
from specdash.ingest.problems import SKIPPED, Problem
from specdash.ingest.records import SPECULATION_UNKNOWN, SpeculationSetting
from specdash.ingest.setting import parse_setting
from specdash.ingest.yamltext import YAMLPositionError, invalid_document, load_yaml_or_json

NAME = "guidellm"
HELP = "GuideLLM benchmark report (JSON or YAML, --output-path), one benchmark per load level"
CONCURRENCY_FIELD = "metrics.request_concurrency.successful.mean"
PERCENTILES = ("p50", "p90", "p95", "p99")
LATENCIES = ("time_to_first_token_ms", "inter_token_latency_ms", "time_per_output_token_ms")


class Summary(EngineModel):
    mean: Annotated[float, Field(ge=0)]
    median: Annotated[float, Field(ge=0)]
    count: Annotated[int, Field(ge=0)] | None = None
    percentiles: dict[str, float] | None = None


class StatusSummary(EngineModel):
    successful: Summary


class Metrics(EngineModel):
    request_concurrency: StatusSummary
    time_per_output_token_ms: StatusSummary
    output_tokens_per_second: StatusSummary
    time_to_first_token_ms: StatusSummary | None = None
    inter_token_latency_ms: StatusSummary | None = None
    prompt_token_count: StatusSummary | None = None  # tokens per request
    output_token_count: StatusSummary | None = None


def detect(head: str, filename: str) -> bool:
    start = head.lstrip()
    if start.startswith("{"):
        return (
            '"specdash"' not in head[:200]
            and '"benchmarks"' in head
            and any(
                key in head
                for key in ('"guidellm_version"', '"generative_benchmark"', '"request_concurrency"')
            )
        )
    if filename.lower().endswith((".yaml", ".yml")):
        return "benchmarks:" in head and any(
            key in head for key in ("guidellm_version:", "generative_benchmark", "request_concurrency:")
        )
    return False


def parse(stream: TextIO, path: str, link: Any = None) -> Iterator[Any]:
    text = read_document(stream)
    if text is None:
        yield Problem(path, None, None, f"larger than {MAX_DOCUMENT_CHARS:,} characters", "parse")
        return
    try:
        report = load_yaml_or_json(text, path)
    except (JSONPositionError, YAMLPositionError) as exc:
        yield invalid_document(path, exc)
        return
    if not isinstance(report, LinedDict) or not isinstance(report.get("benchmarks"), list):
        yield Problem(path, None, "benchmarks", "a GuideLLM report holds a list of benchmarks")
        return
    labels = _labels(report)
    described: set[str] = set()  # deployments named from the report's model, described once
    for index, bench in enumerate(report["benchmarks"]):
        if not isinstance(bench, LinedDict):
            yield Problem(path, report.line_of("benchmarks"), f"benchmarks[{index}]", "expected an object")
            continue
        yield from _benchmark(report, bench, index, path, link, {**labels, **_extras(bench)}, described)


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _labels(report: LinedDict) -> dict[str, str]:
    """0.7+: `--label k=v` pairs in config.metadata.labels."""
    labels = _get(report, "config", "metadata", "labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def _extras(bench: LinedDict) -> dict[str, str]:
    """0.2-0.3: `--output-extras` JSON in each benchmark's extras."""
    extras = bench.get("extras")
    return {str(k): str(v) for k, v in extras.items() if v is not None} if isinstance(extras, Mapping) else {}


def _model(report: LinedDict, bench: LinedDict) -> str | None:
    for value in (
        _get(bench, "config", "backend", "model"),  # 0.4+
        _get(bench, "worker", "backend_model"),  # 0.2-0.3
        _get(report, "args", "model"),  # 0.4-0.6
        _get(report, "config", "spec", "backend", "model"),  # 0.7+
    ):
        if isinstance(value, str) and value.strip():
            return value
    return None


def _strategy(bench: LinedDict) -> Mapping[str, Any]:
    strategy = _get(bench, "config", "strategy") or _get(bench, "args", "strategy")
    return strategy if isinstance(strategy, Mapping) else {}


def stated_setting(labels: Mapping[str, str], link: Any) -> SpeculationSetting:
    """The setting the caller or a `setting` label states; else speculating with an unknown setting (a
    GuideLLM run does not say how the server speculated)."""
    stated = getattr(link, "setting", None) or labels.get("setting")
    if isinstance(stated, SpeculationSetting):
        return stated
    if stated:
        return parse_setting(str(stated))
    return SpeculationSetting(speculative_algorithm=SPECULATION_UNKNOWN)


def _version(report: LinedDict) -> str | None:
    version = _get(report, "metadata", "guidellm_version")
    return str(version) if version is not None else None


def _latencies(metrics: Metrics) -> dict[str, dict[str, float]]:
    out = {}
    for name in (*LATENCIES, "request_concurrency", "output_tokens_per_second"):
        summary: StatusSummary | None = getattr(metrics, name)
        if summary is None:
            continue
        s = summary.successful
        out[name] = {"mean": s.mean, "median": s.median} | {
            p: v for p, v in (s.percentiles or {}).items() if p in PERCENTILES
        }
    return out


def _benchmark(
    report: LinedDict,
    bench: LinedDict,
    index: int,
    path: str,
    link: Any,
    labels: Mapping[str, str],
    described: set[str],
) -> Iterator[Any]:
    prefix = f"benchmarks[{index}]"
    if not isinstance(bench.get("metrics"), LinedDict):
        yield Problem(path, bench.line, f"{prefix}.metrics", "a benchmark needs its metrics")
        return
    metrics = validate(Metrics, bench["metrics"], path, bench.line_of("metrics"), f"{prefix}.metrics")
    if isinstance(metrics, list):
        yield from metrics
        return
    try:
        setting = stated_setting(labels, link)
    except ValueError as exc:
        yield Problem(path, report.line, "setting", str(exc))
        return
    model = _model(report, bench)
    tp_size = labels.get("tp_size")
    deployment = choose_deployment(
        link,
        labels.get("deployment"),
        deployment_name(
            labels.get("engine") or "guidellm", model, int(tp_size) if tp_size and tp_size.isdigit() else None
        ),
    )
    if deployment is None:
        yield missing_deployment(path, bench.line)
        return
    named = getattr(link, "deployment", None) or labels.get("deployment")
    if model and not named and deployment not in described:
        # a deployment named after the report's model serves that target (the depth advisor finds it by it)
        described.add(deployment)
        yield Located(bench.line, deployment_record(deployment, target_model=model))
    tpot, concurrency = metrics.time_per_output_token_ms.successful, metrics.request_concurrency.successful
    if not (tpot.median > 0 and concurrency.mean > 0):
        yield Problem(
            path, bench.line_of("metrics"), f"{prefix}.metrics", "no successful requests to measure", SKIPPED
        )
        return
    strategy = _strategy(bench)
    speculative = setting.speculative_algorithm is not None
    latency = _latencies(metrics)
    yield from benchmark(
        path,
        bench.line,
        prefix,
        deployment=deployment,
        run=(getattr(link, "run", None) or labels.get("run")) if speculative else None,
        checkpoint=(getattr(link, "checkpoint", None) or labels.get("checkpoint")) if speculative else None,
        drafter_path=labels.get("drafter") if speculative else None,
        engine=labels.get("engine"),
        **setting.setting_fields(),
        concurrency=max(1, round(concurrency.mean)),
        concurrency_source="measured mean",
        dataset=labels.get("dataset"),
        num_prompts=_successful(bench),
        input_tokens=_tokens(metrics.prompt_token_count),
        output_tokens=_tokens(metrics.output_token_count),
        decode_tps=1000.0 / tpot.median,
        output_throughput=metrics.output_tokens_per_second.successful.mean,
        median_tpot_ms=tpot.median,
        p99_tpot_ms=_percentile(latency, "time_per_output_token_ms", "p99"),
        median_ttft_ms=_median(latency, "time_to_first_token_ms"),
        p99_ttft_ms=_percentile(latency, "time_to_first_token_ms", "p99"),
        median_itl_ms=_median(latency, "inter_token_latency_ms"),
        p99_itl_ms=_percentile(latency, "inter_token_latency_ms", "p99"),
        request_rate=strategy.get("rate")
        if isinstance(strategy.get("rate"), int | float) and strategy["rate"] > 0
        else None,
        label=_label(strategy),
        measured_at=_started(bench),
        raw=_raw(report, strategy, model, concurrency.mean, latency, setting),
    )


def _raw(
    report: LinedDict,
    strategy: Mapping[str, Any],
    model: str | None,
    concurrency_mean: float,
    latency: Mapping[str, Mapping[str, float]],
    setting: SpeculationSetting,
) -> Any:
    """What the stored raw record keeps: the load as measured (the mean in flight and its field), every
    latency percentile, the strategy and how the setting was told; not the per-request samples."""
    return safe_raw(
        {
            "guidellm_version": _version(report),
            "strategy": dict(strategy),
            "model": model,
            "concurrency_mean": concurrency_mean,
            "concurrency_field": CONCURRENCY_FIELD,
            "metrics": latency,
            "setting": "stated" if setting.num_steps or setting.speculative_algorithm is None else "unknown",
            "specdash_derived": {"decode_tps": "1000 / metrics.time_per_output_token_ms.successful.median"},
        }
    )


def _successful(bench: LinedDict) -> int | None:
    """Requests that completed: request_totals at the benchmark (0.2-0.3) or in its metrics (0.4+)."""
    count = _get(bench, "request_totals", "successful") or _get(
        bench, "metrics", "request_totals", "successful"
    )
    return count if isinstance(count, int) and count >= 0 else None


def _tokens(summary: StatusSummary | None) -> float | None:
    """The mean tokens per successful request; a mean of 0 is a backend that reported no usage (GuideLLM
    counts a missing count as 0), not a request of no tokens."""
    if summary is None or not summary.successful.mean > 0:
        return None
    return summary.successful.mean


def _median(latency: Mapping[str, Mapping[str, float]], name: str) -> float | None:
    return latency[name]["median"] if name in latency else None


def _percentile(latency: Mapping[str, Mapping[str, float]], name: str, p: str) -> float | None:
    return latency.get(name, {}).get(p)


def _label(strategy: Mapping[str, Any]) -> str | None:
    kind = strategy.get("type_")
    if not kind:
        return None
    for key in ("streams", "rate"):
        if isinstance(strategy.get(key), int | float):
            return f"{kind} {key}={strategy[key]:g}"
    return str(kind)


def _started(bench: LinedDict) -> datetime | None:
    start = bench.get("start_time") or _get(bench, "scheduler_metrics", "measure_start_time")
    if isinstance(start, int | float) and start > 0:
        return datetime.fromtimestamp(start, UTC).replace(tzinfo=None)
    return None


FORMATS = [Format(NAME, HELP, detect, parse)]
