"""The rules one record must meet on its own, whatever format produced it: the bounds that depend on its
speculation setting or its drafter family, fields that must agree with each other within a stated
tolerance, and the values a log states that its summary record carries in `raw`. Each returns the
refusal as (field, message) naming the value and the bound or the contradicting field; None when the
record keeps the rule."""

import math
from collections.abc import Callable, Iterator
from typing import Any

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
    AGGREGATE_ABOVE,
    AGGREGATE_BELOW,
    EXACT,
    SURVIVAL_SHARE,
    TPOT_FACTOR,
)

Refusal = tuple[str, str]


def setting_text(setting: SpeculationSetting) -> str:
    return f"{setting.num_steps}/{setting.topk or 1}/{setting.num_draft_tokens}"


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
    topk = setting.topk or 1
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
    if record.median_tpot_ms is None:
        return None
    from_tpot = 1000.0 / record.median_tpot_ms
    if from_tpot / TPOT_FACTOR <= record.decode_tps <= from_tpot * TPOT_FACTOR:
        return None
    return (
        "decode_tps",
        f"{record.decode_tps:g} disagrees with median_tpot_ms {record.median_tpot_ms:g} "
        f"(1000 / TPOT = {from_tpot:g} tok/s; allowed within a factor of {TPOT_FACTOR:g})",
    )


def order_refusal(record: BenchmarkRecord) -> Refusal | None:
    """Medians under their p99s, p10 under p90, survival that never rises with the position."""
    for name in ("tpot", "ttft", "itl"):
        median, p99 = getattr(record, f"median_{name}_ms"), getattr(record, f"p99_{name}_ms")
        if median is not None and p99 is not None and median > p99 * (1 + EXACT):
            return f"median_{name}_ms", f"{median:g} is above p99_{name}_ms {p99:g}"
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


def aggregate_refusal(record: BenchmarkRecord) -> Refusal | None:
    """Per-request decode x concurrency against the aggregate output throughput, as a file states them. A
    live window's three figures are specdash's own, derived from one engine's counters over one window
    (concurrency from the running gauge), so there is no file to contradict itself."""
    if record.output_throughput is None or record.concurrency_source == LIVE_CONCURRENCY:
        return None
    product = record.decode_tps * record.concurrency
    ratio = product / record.output_throughput
    if 1 / AGGREGATE_BELOW <= ratio <= AGGREGATE_ABOVE:
        return None
    return (
        "decode_tps",
        f"{record.decode_tps:g} x concurrency {record.concurrency} = {product:g} tok/s contradicts "
        f"output_throughput {record.output_throughput:g} (a factor of {ratio:.3g}; allowed "
        f"{1 / AGGREGATE_BELOW:g} to {AGGREGATE_ABOVE:g}: the aggregate also counts prefill and idle time)",
    )


def survival_refusal(record: BenchmarkRecord) -> Refusal | None:
    """Per-position survival against the stated accept length: a chain emits 1 + sum of survival."""
    survival, stated = record.position_survival, record.accept_length
    if not survival or stated is None or (record.topk or 1) != 1 or record.drafts_a_block():
        return None
    implied = 1 + sum(survival)
    if abs(implied - stated) <= SURVIVAL_SHARE * stated:
        return None
    return (
        "accept_length",
        f"{stated:g} contradicts position_survival, which implies {implied:.4g} (1 + sum of survival; "
        f"allowed within {SURVIVAL_SHARE:.0%})",
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


def _plain_numbers(values: list[Any]) -> bool:
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
