"""The rules one record must meet on its own, whatever format produced it: the bounds that depend on its
speculation setting or its drafter family, fields that must agree with each other within a stated
tolerance, and the values a log states that its summary record carries in `raw`. Each returns the
refusal as (field, message) naming the value and the bound or the contradicting field; None when the
record keeps the rule."""

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from specdash.costmodel.throughput import draft_width
from specdash.db.records import MAX_INT, MAX_STEPS, NAME_CHARS
from specdash.ingest.formats.common import STATED_ACCEPT
from specdash.ingest.records import (
    LIVE_CONCURRENCY,
    BenchmarkRecord,
    MetricRows,
    PredictionRecord,
    SpeculationSetting,
)
from specdash.ingest.rules.tolerances import (
    ACCEPT_DIGITS,
    EXACT,
    FEWEST_OUTPUT_TOKENS,
    RATE_DIGITS,
    RATE_SPREAD,
)

Refusal = tuple[str, str]


def setting_text(setting: SpeculationSetting) -> str:
    return f"{setting.num_steps}/{setting.setting().width}/{setting.num_draft_tokens}"


def accept_length_refusal(setting: SpeculationSetting, value: float | None) -> Refusal | None:
    """An accept length (tokens a round emits, bonus included) the setting cannot emit."""
    ceiling = setting.max_accept_length()
    if value is None or ceiling is None or value <= ceiling * (1 + EXACT):
        return None
    if setting.speculative_algorithm is None:
        return "accept_length", f"{value:g} without speculation (a baseline emits exactly 1)"
    rule = (
        f"a {setting.speculative_algorithm} round verifies its block of draft tokens"
        if setting.drafts_a_block()
        else "min(draft tokens, steps + 1)"
    )
    return (
        "accept_length",
        f"{value:g} is more than a round of {setting_text(setting)} can emit (at most {ceiling:g}: {rule})",
    )


def draft_tokens_refusal(setting: SpeculationSetting) -> Refusal | None:
    """More draft tokens than a chain or tree of the setting's steps can hold. A chain or tree drafts one
    position a step, top-k candidates the first and top-k x top-k after (SGLang's EAGLE tree), and N
    counts the root; a block drafter drafts its block in one step and is bounded by its family only."""
    tokens = setting.num_draft_tokens
    if tokens is None or setting.speculative_algorithm is None or setting.drafts_a_block():
        return None
    topk = draft_width(setting.topk)
    steps = setting.num_steps or MAX_STEPS
    most = 1 + topk + (steps - 1) * topk * topk
    if tokens <= most:
        return None
    shape = "chain" if topk == 1 else f"top-{topk} tree"
    told = f"{setting.num_steps} steps" if setting.num_steps else f"at most {MAX_STEPS} steps (none stated)"
    return (
        "num_draft_tokens",
        f"{tokens} draft tokens for a {shape} of {told}: it verifies at most {most} "
        f"(1 + top-k + (steps - 1) x top-k^2, the root included)",
    )


def tpot_refusal(record: BenchmarkRecord) -> Refusal | None:
    """Per-request decode against 1000 / median TPOT: both are the typical rate of one request, one a
    median over requests, the other possibly a mean, so they may differ by the spread of the rates."""
    if record.median_tpot_ms is None:
        return None
    from_tpot = 1000.0 / record.median_tpot_ms
    if from_tpot / RATE_SPREAD <= record.decode_tps <= from_tpot * RATE_SPREAD:
        return None
    return (
        "decode_tps",
        f"{record.decode_tps:g} disagrees with median_tpot_ms {record.median_tpot_ms:g} "
        f"(1000 / TPOT = {from_tpot:g} tok/s; a mean and a median of the rates differ by at most a "
        f"factor of {RATE_SPREAD:g})",
    )


_QUANTILE_PAIRS = tuple((f"median_{name}_ms", f"p99_{name}_ms") for name in ("tpot", "ttft", "itl"))


def order_refusal(record: BenchmarkRecord) -> Refusal | None:
    """Medians under their p99s, p10 under p90, survival that never rises with the position."""
    for median_field, p99_field in _QUANTILE_PAIRS:
        median, p99 = getattr(record, median_field), getattr(record, p99_field)
        if median is not None and p99 is not None and median > p99 * (1 + EXACT):
            return median_field, f"{median:g} is above {p99_field} {p99:g}"
    low, high = record.decode_tps_p10, record.decode_tps_p90
    if low is not None and high is not None and low > high * (1 + EXACT):
        return "decode_tps_p10", f"{low:g} is above decode_tps_p90 {high:g}"
    survival = record.position_survival or []
    for k in range(1, len(survival)):
        if survival[k] > survival[k - 1] + EXACT:
            return (
                "position_survival",
                f"rises at position {k + 1} ({survival[k - 1]:g} -> {survival[k]:g}): a round cannot keep "
                "more drafts than fewer",
            )
    return None


def output_tokens_per_request(record: BenchmarkRecord) -> float | None:
    """Mean output tokens a request emitted, where the file says (bench_serving / bench serve totals)."""
    raw = record.raw or {}
    total, completed = raw.get("total_output_tokens"), raw.get("completed")
    if isinstance(total, int | float) and isinstance(completed, int | float) and completed > 0:
        return total / completed
    return None


def aggregate_ceiling(record: BenchmarkRecord) -> tuple[float, str]:
    """The most aggregate output tok/s the per-request decode rate and the concurrency allow, and why.

    At most `concurrency` requests are in flight, each decoding at its own rate, so the decoded tokens
    come at most at concurrency x the sum's typical rate (RATE_SPREAD covers the rates' spread about the
    stated median). The aggregate also counts each request's first token, which prefill emits: a request
    of L output tokens spends its decode time on L - 1 of them, so the aggregate can be L / (L - 1) of the
    decoded rate (2 at worst, when L is not stated). Idle time, queueing and prefill only lower the
    aggregate: there is no lower bound."""
    tokens = output_tokens_per_request(record)
    length = tokens if tokens is not None and tokens > FEWEST_OUTPUT_TOKENS else FEWEST_OUTPUT_TOKENS
    first_token = length / (length - 1)
    ceiling = record.decode_tps * record.concurrency * RATE_SPREAD * first_token
    why = (
        f"per-request decode x concurrency x {RATE_SPREAD:g} for the spread of request rates x "
        f"{first_token:.4g} for the first token prefill emits"
        f"{f' ({length:.4g} output tokens a request)' if tokens is not None else ' (output length unknown)'}"
    )
    return ceiling, why


def aggregate_refusal(record: BenchmarkRecord) -> Refusal | None:
    """An aggregate output throughput above what the requests in flight can decode (one-sided: a
    saturated, queued or disaggregated server emits far less than per-request decode x concurrency). A
    live window's figures are specdash's own, derived from one engine's counters over one window."""
    if record.output_throughput is None or record.concurrency_source == LIVE_CONCURRENCY:
        return None
    ceiling, why = aggregate_ceiling(record)
    if record.output_throughput <= ceiling * (1 + EXACT):
        return None
    return (
        "output_throughput",
        f"{record.output_throughput:g} tok/s is more than {record.concurrency} request(s) in flight at "
        f"{record.decode_tps:g} tok/s each can emit (at most {ceiling:.4g}: {why})",
    )


def survival_refusal(record: BenchmarkRecord) -> Refusal | None:
    """Per-position survival against the stated accept length of a chain, where both come from one set
    of counters (a result file or one window): 1 + sum of survival is the accept length, up to the
    printed digits. A log's summary takes its median accept length and its survival over other intervals,
    so it is not held to the identity (each log line's own values are bounded by stated_refusal)."""
    survival, stated = record.position_survival, record.accept_length
    if not survival or stated is None or not record.setting().is_chain or record.drafts_a_block():
        return None
    if record.interval_count is not None and record.concurrency_source != LIVE_CONCURRENCY:
        return None
    implied = 1 + sum(survival)
    allowed = ACCEPT_DIGITS + RATE_DIGITS * len(survival)
    if abs(implied - stated) <= allowed:
        return None
    return (
        "accept_length",
        f"{stated:g} contradicts position_survival, which implies {implied:.4g} (1 + sum of survival, "
        f"from the same counters; allowed {allowed:.3g} for the printed digits)",
    )


def stated_refusal(record: BenchmarkRecord) -> tuple[int | None, str, str] | None:
    """A log line's own accept length outside [1, what the setting emits]: the summary's median may hide
    it. Returns the line of the stated value with the refusal."""
    stated = (record.raw or {}).get(STATED_ACCEPT)
    if not isinstance(stated, dict):
        return None
    low, high = stated.get("low"), stated.get("high")
    if isinstance(low, float | int) and low < 1:
        why = f"{low:g} stated by the log is below 1 (a round emits at least its bonus token)"
        return stated.get("low_line"), "accept_length", why
    ceiling = record.max_accept_length()
    if isinstance(high, float | int) and ceiling is not None and high > ceiling * (1 + EXACT):
        return (
            stated.get("high_line"),
            "accept_length",
            f"{high:g} stated by the log is more than a round of {setting_text(record)} can emit "
            f"(at most {ceiling:g})",
        )
    return None


def zero_tokens_refusal(record: BenchmarkRecord) -> Refusal | None:
    """A vLLM log whose speculative config drafts 0 tokens, while it prints speculative metrics."""
    raw = record.raw or {}
    config = raw.get("config")
    if not isinstance(config, dict) or config.get("spec_tokens") != 0 or not raw.get("spec_decoding_lines"):
        return None
    return (
        "num_speculative_tokens",
        f"0 in the speculative config (server start at line {raw.get('server_start_line')}), yet the log "
        f"prints {raw['spec_decoding_lines']} speculative-metrics line(s): a server that drafts nothing "
        "cannot accept drafts",
    )


def stated_accept_refusal(record: BenchmarkRecord) -> Refusal | None:
    return accept_length_refusal(record, record.accept_length)


BENCHMARK_RULES: tuple[Callable[[BenchmarkRecord], Refusal | None], ...] = (
    stated_accept_refusal,
    draft_tokens_refusal,
    tpot_refusal,
    order_refusal,
    aggregate_refusal,
    survival_refusal,
    zero_tokens_refusal,
)


def record_refusals(record: Any) -> Iterator[tuple[int | None, str, str]]:
    """Every rule a record breaks, as (line or None for the record's own, field, message)."""
    if isinstance(record, BenchmarkRecord):
        fields = set()
        for rule in BENCHMARK_RULES:
            if (found := rule(record)) is not None:
                fields.add(found[0])
                yield None, *found
        if (stated := stated_refusal(record)) is not None and stated[1] not in fields:
            yield stated  # one refusal a field: the record's own value first
    elif isinstance(record, PredictionRecord):
        for found in (accept_length_refusal(record, record.accept_length), draft_tokens_refusal(record)):
            if found is not None:
                yield None, *found
    elif isinstance(record, MetricRows):
        if (rows := metric_rows_refusal(record)) is not None:
            yield None, *rows


def metric_rows_refusal(record: MetricRows) -> Refusal | None:
    """The bounds a training log's rows keep (MetricRows skip pydantic): steps 0..MAX_INT, finite
    numbers, metric names within the column."""
    checked_keys: set[tuple[str, ...]] = set()  # a log repeats a handful of key sets: each checked once
    for step, keys, values in record.steps:
        if not 0 <= step <= MAX_INT:
            return "step", f"{step} is outside 0..{MAX_INT}"
        if _plain_numbers(values) and (keys in checked_keys or _short_names(keys, checked_keys)):
            continue  # the common step, checked in C-level calls; else the loop below finds what is wrong
        for key, value in zip(keys, values, strict=False):
            if not _finite_number(value):
                return key[:NAME_CHARS], f"{value!r} must be a finite number"
            if len(key) > NAME_CHARS:
                return key[:40] + "...", f"metric name over {NAME_CHARS} characters"
    return None


def _plain_numbers(values: Sequence[Any]) -> bool:
    """Whether every value is a float or int (not bool) and finite: their sum is finite unless one is not
    (or the sum overflows, when the slow check decides)."""
    if not set(map(type, values)) <= {float, int}:
        return False
    try:
        return math.isfinite(sum(values))
    except OverflowError:  # an int too large for a float
        return False


def _finite_number(value: Any) -> bool:
    if not isinstance(value, float | int) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float (or for the store's REAL)
        return False


def _short_names(keys: tuple[str, ...], checked: set[tuple[str, ...]]) -> bool:
    if keys and max(map(len, keys)) > NAME_CHARS:
        return False
    checked.add(keys)
    return True
