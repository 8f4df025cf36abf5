"""What each engine's `/metrics` says about decode and speculation, read into one engine-neutral Reading.

Names are the engines' own (tests/fixtures/live/README.md quotes the source of each):
- vLLM V1: `vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`, `..._num_accepted_tokens_total`,
  `..._num_accepted_tokens_per_pos_total{position}` (rounds that kept at least position+1 drafts: survival
  counts), `vllm:generation_tokens_total`, `vllm:num_requests_running`, and the inter-token latency
  histogram, observed once per request per engine step (a round), under its current name
  `vllm:inter_token_latency_seconds` or its name before 0.11, `vllm:time_per_output_token_seconds`; where
  neither is exposed, the per-request histogram `vllm:request_time_per_output_token_seconds` (one
  observation per finished request: its decode time over its output tokens after the first), and the
  histograms `vllm:request_prompt_tokens` and `vllm:request_generation_tokens` (one observation per
  finished request). Series carry `engine` (the data-parallel engine index): summed. No TP-rank label.
- SGLang: the gauges `sglang:spec_accept_length` (per decode log interval, bonus token included),
  `sglang:spec_num_steps`, `sglang:spec_num_draft_tokens`, `sglang:num_running_reqs`, with `tp_rank`,
  `pp_rank`, `moe_ep_rank` and `dp_rank` labels: every rank of one DP group reports the same batch (with
  --enable-metrics-for-all-schedulers), so one series per DP group is kept and DP groups are summed. The
  counters `sglang:spec_verify_calls_total`, `sglang:prompt_tokens_total`, `sglang:generation_tokens_total`
  and `sglang:num_requests_total` are increased when a request finishes;
  `sglang:inter_token_latency_seconds` counts one observation per token as tokens stream.
- llama.cpp `llama-server`: `llamacpp:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`,
  `..._num_accepted_tokens_total`, `..._num_accepted_tokens_per_pos_total{position}` (vLLM's schema),
  `llamacpp:tokens_predicted_total` and `llamacpp:tokens_predicted_seconds_total` (slot generation time),
  all added when a request finishes; `llamacpp:requests_processing`. One server, no labels."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from specdash.ingest.live.exposition import ExpositionError, Labels, Sample, Scrape, finite_value
from specdash.ingest.problems import Problem

VLLM, SGLANG, LLAMA_CPP = "vllm", "sglang", "llama.cpp"
# How many characters of an info metric's label a window keeps (vLLM's cache config has ~20 labels).
INFO_CHARS = 200
MAX_INFO_LABELS = 40
VERSION_LABELS = ("version", "engine_version", "vllm_version", "sglang_version", "build_version")


@dataclass(frozen=True)
class EngineMetrics:
    """Where one engine publishes each quantity a window needs."""

    engine: str
    prefix: str
    counters: dict[str, str]  # quantity -> sample name
    latency: tuple[str, ...] = ()  # histogram names timing decode, newest first
    latency_per: str = "token"  # what one observation of `latency` times: a token or a step (round)
    # a histogram of each finished request's mean time per output token, read when no `latency` is exposed
    request_latency: str | None = None
    per_position: str | None = None
    running: str = ""
    # labels of ranks that repeat one measurement (TP/PP ranks of one DP group): one series is kept
    replica_labels: frozenset[str] = frozenset()
    accept_gauge: str | None = None
    steps_gauge: str | None = None
    draft_tokens_gauge: str | None = None
    # counters that move only when a request finishes (a window then sees finished requests only)
    at_finish: frozenset[str] = frozenset()


ENGINES = (
    EngineMetrics(
        VLLM,
        "vllm:",
        counters={
            "drafts": "vllm:spec_decode_num_drafts_total",
            "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
            "accepted": "vllm:spec_decode_num_accepted_tokens_total",
            "generation_tokens": "vllm:generation_tokens_total",
            "prompt_tokens": "vllm:prompt_tokens_total",
            "first_tokens": "vllm:time_to_first_token_seconds_count",
            "finished_requests": "vllm:request_success_total",
            # observed once per finished request, so their sum over count is the finished requests' mean
            "request_prompt_tokens": "vllm:request_prompt_tokens_sum",
            "request_prompt_count": "vllm:request_prompt_tokens_count",
            "request_output_tokens": "vllm:request_generation_tokens_sum",
            "request_output_count": "vllm:request_generation_tokens_count",
        },
        latency=("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
        latency_per="step",
        request_latency="vllm:request_time_per_output_token_seconds",
        per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
        running="vllm:num_requests_running",
    ),
    EngineMetrics(
        SGLANG,
        "sglang:",
        counters={
            "verify_calls": "sglang:spec_verify_calls_total",
            "generation_tokens": "sglang:generation_tokens_total",
            "prompt_tokens": "sglang:prompt_tokens_total",
            "first_tokens": "sglang:time_to_first_token_seconds_count",
            "finished_requests": "sglang:num_requests_total",
        },
        latency=("sglang:inter_token_latency_seconds",),
        latency_per="token",
        running="sglang:num_running_reqs",
        replica_labels=frozenset({"tp_rank", "pp_rank", "moe_ep_rank"}),
        accept_gauge="sglang:spec_accept_length",
        steps_gauge="sglang:spec_num_steps",
        draft_tokens_gauge="sglang:spec_num_draft_tokens",
        at_finish=frozenset({"verify_calls", "prompt_tokens", "generation_tokens", "finished_requests"}),
    ),
    EngineMetrics(
        LLAMA_CPP,
        "llamacpp:",
        counters={
            "drafts": "llamacpp:spec_decode_num_drafts_total",
            "draft_tokens": "llamacpp:spec_decode_num_draft_tokens_total",
            "accepted": "llamacpp:spec_decode_num_accepted_tokens_total",
            "generation_tokens": "llamacpp:tokens_predicted_total",
            "decode_seconds": "llamacpp:tokens_predicted_seconds_total",
            "prompt_tokens": "llamacpp:prompt_tokens_total",
        },
        per_position="llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
        running="llamacpp:requests_processing",
        at_finish=frozenset({"drafts", "draft_tokens", "accepted", "generation_tokens", "decode_seconds"}),
    ),
)
BY_ENGINE = {engine.engine: engine for engine in ENGINES}


def position_quantity(position: int) -> str:
    """The counter of rounds that kept at least `position` + 1 drafts (position 0-based, as labelled)."""
    return f"accepted_pos:{position}"


@dataclass(frozen=True)
class Reading:
    """One scrape reduced to cumulative counters per series (a window takes their increase) and the
    gauges, each summed the way the engine means it."""

    engine: str
    source: str
    at: datetime
    counters: dict[str, dict[Labels, float]]  # quantity -> series -> value since the engine started
    running: float | None  # requests decoding now, over every DP engine / rank
    positions: int = 0  # per-position counters published
    latency: str | None = None  # the histogram the latency counters were read from
    accept_length: float | None = None  # SGLang's gauge: the last log interval's, over DP groups
    steps: int | None = None  # the speculation setting, where the metrics tell it
    draft_tokens: int | None = None
    speculative: bool = False  # the endpoint publishes speculative-decoding metrics that are on
    info: dict[str, str] = field(default_factory=dict)

    @property
    def metrics(self) -> EngineMetrics:
        return BY_ENGINE[self.engine]

    @property
    def latency_per(self) -> str | None:
        """What one observation of the latency histogram read times: a token, a step, or a request."""
        if self.latency is None:
            return None
        return "request" if self.latency == self.metrics.request_latency else self.metrics.latency_per


def detect_engine(scrape: Scrape) -> EngineMetrics:
    counts = {engine.engine: 0 for engine in ENGINES}
    for name in scrape.samples:
        for engine in ENGINES:
            if name.startswith(engine.prefix):
                counts[engine.engine] += 1
    best = max(counts, key=counts.__getitem__)
    if counts[best] == 0:
        raise ExpositionError(
            [
                Problem(
                    scrape.source, None, None, "no vllm:, sglang: or llamacpp: metrics: not a serving engine"
                )
            ]
        )
    return BY_ENGINE[best]


def read_engine(scrape: Scrape) -> Reading:
    """The Reading of one scrape; a NaN or infinite value of a metric it uses is an ExpositionError."""
    spec = detect_engine(scrape)
    counters = {
        quantity: _kept(scrape, scrape.series(name), spec.replica_labels)
        for quantity, name in spec.counters.items()
        if scrape.has(name)
    }
    fallback = (spec.request_latency,) if spec.request_latency else ()
    latency = next(
        (
            base
            for base in (*spec.latency, *fallback)
            if scrape.has(f"{base}_sum") and scrape.has(f"{base}_count")
        ),
        None,
    )
    if latency is not None:
        counters["latency_sum"] = _kept(scrape, scrape.series(f"{latency}_sum"), spec.replica_labels)
        counters["latency_count"] = _kept(scrape, scrape.series(f"{latency}_count"), spec.replica_labels)
    positions = _positions(scrape, spec, counters)
    running = _gauge(scrape, spec.running, spec.replica_labels)
    accept_length: float | None = None
    steps: int | None = None
    draft_tokens: int | None = None
    if spec.engine == SGLANG:
        accept_length, steps, draft_tokens, speculative = _sglang_speculation(scrape, spec, running, counters)
    else:
        drafts = counters.get("drafts", {})
        speculative = bool(drafts) and (spec.engine == VLLM or sum(drafts.values()) > 0)
        if spec.engine == VLLM and positions:
            steps = positions  # one per-position counter per speculative token
    return Reading(
        engine=spec.engine,
        source=scrape.source,
        at=scrape.at,
        counters=counters,
        running=sum(running.values()) if running else None,
        positions=positions,
        latency=latency,
        accept_length=accept_length,
        steps=steps,
        draft_tokens=draft_tokens,
        speculative=speculative,
        info=_info(scrape),
    )


def _positions(scrape: Scrape, spec: EngineMetrics, counters: dict) -> int:
    if spec.per_position is None:
        return 0
    by_position: dict[int, list[Sample]] = {}
    for sample in scrape.series(spec.per_position):
        position = sample.label("position")
        if position is None or not position.isdigit():
            raise ExpositionError(
                [
                    Problem(
                        scrape.source, scrape.line_of(sample), sample.name, "position label is not a number"
                    )
                ]
            )
        by_position.setdefault(int(position), []).append(
            Sample(sample.name, tuple(p for p in sample.labels if p[0] != "position"), sample.value)
        )
    for index, samples in by_position.items():
        counters[position_quantity(index)] = _kept(scrape, samples, spec.replica_labels)
    return max(by_position) + 1 if by_position else 0


def _kept(scrape: Scrape, samples: Iterable[Sample], replica_labels: frozenset[str]) -> dict[Labels, float]:
    """One value per series, after dropping the ranks that repeat one another: among series equal but for
    replica labels, the lowest rank's (SGLang's stats-logging rank is TP rank 0)."""
    kept: dict[Labels, tuple[tuple, float]] = {}
    for sample in samples:
        value = finite_value(scrape, sample)
        key = tuple(pair for pair in sample.labels if pair[0] not in replica_labels)
        rank = tuple(_rank_order(v) for k, v in sample.labels if k in replica_labels)
        if key not in kept or rank < kept[key][0]:
            kept[key] = (rank, value)
    return {key: value for key, (_, value) in kept.items()}


def _rank_order(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)


def _gauge(scrape: Scrape, name: str | None, replica_labels: frozenset[str]) -> dict[Labels, float]:
    return _kept(scrape, scrape.series(name), replica_labels) if name else {}


def _sglang_speculation(
    scrape: Scrape, spec: EngineMetrics, running: dict, counters: dict
) -> tuple[float | None, int | None, int | None, bool]:
    """(accept length, steps, draft tokens, speculative): the accept length gauge over DP groups, weighted
    by each group's running requests (a group with more requests runs more rounds), and the setting
    gauges. A gauge of 0 means no speculation (or no decode log interval yet): left out."""
    accept = {k: v for k, v in _gauge(scrape, spec.accept_gauge, spec.replica_labels).items() if v >= 1.0}
    weights = {key: running.get(key, 0.0) for key in accept}
    total = sum(weights.values())
    if accept and total > 0:
        accept_length = sum(accept[key] * weights[key] for key in accept) / total
    elif accept:
        accept_length = sum(accept.values()) / len(accept)
    else:
        accept_length = None
    steps = max(_gauge(scrape, spec.steps_gauge, spec.replica_labels).values(), default=0.0)
    draft_tokens = max(_gauge(scrape, spec.draft_tokens_gauge, spec.replica_labels).values(), default=0.0)
    verify = sum(counters.get("verify_calls", {}).values())
    return (
        accept_length,
        int(steps) if steps >= 1 else None,
        int(draft_tokens) if draft_tokens >= 1 else None,
        accept_length is not None or steps >= 1 or verify > 0,
    )


def _info(scrape: Scrape) -> dict[str, str]:
    """Model names, DP engines and the labels of info metrics (`vllm:cache_config_info`): what the
    endpoint says of itself, for the record's raw data and its engine version where one is labelled."""
    info: dict[str, str] = {}
    models, engines = set(), set()
    for samples in scrape.samples.values():
        for sample in samples:
            labels = dict(sample.labels)
            if "model_name" in labels:
                models.add(labels["model_name"])
            for key in ("engine", "dp_rank"):
                if key in labels:
                    engines.add(f"{key}={labels[key]}")
    if models:
        info["model_name"] = ", ".join(sorted(models))[:INFO_CHARS]
    if engines:
        info["engines"] = ", ".join(sorted(engines))[:INFO_CHARS]
    for name, samples in sorted(scrape.samples.items()):
        if not name.endswith("_info") or not samples:
            continue
        for key, value in samples[0].labels[:MAX_INFO_LABELS]:
            if key != "engine":
                info[f"{name}.{key}"] = value[:INFO_CHARS]
            if key in VERSION_LABELS and value:
                info.setdefault("version", value[:INFO_CHARS])
    return info
