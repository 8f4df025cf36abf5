"""A depth schedule: the best draft depth at each batch size under a load model, and the same schedule in
vLLM's and TensorRT-LLM's own configuration syntax."""

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.depth import DepthPoint
from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.throughput import verified_tokens

# vLLM checks only that a range is positive; the last one reaches past any batch a server admits.
VLLM_MAX_BATCH = 4096


@dataclass(frozen=True)
class ScheduleEntry:
    concurrency: float
    num_steps: int  # 0: no speculation at this batch size
    accept_length: float
    tok_s: float  # per request
    aggregate_tok_s: float  # tok_s x concurrency
    speedup: float  # against the no-speculation step at this batch size
    baseline_estimated: bool  # the speedup is against an estimated baseline
    extrapolated: bool = False  # a load (or context) the deployment was never measured at
    context_tokens: float | None = None  # the mean decode context (None: the benchmarks')
    # every depth considered (0: no speculation) with its predicted per-request tok/s: the picked depth
    # is the best of these, or the evidence's (answers/schedule.py)
    by_depth: tuple[tuple[int, float], ...] = ()
    evidence: str | None = None  # why a depth other than the curve's best was picked

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            # a whole batch size reads as one (8, not 8.0): the engines' schedules key on integers
            "concurrency": _whole(self.concurrency),
            "context_tokens": None if self.context_tokens is None else _whole(round(self.context_tokens, 1)),
            "num_steps": self.num_steps,
            "tok_s": round(self.tok_s, 3),
            "aggregate_tok_s": round(self.aggregate_tok_s, 3),
            "speedup": round(self.speedup, 4),
            "baseline_estimated": self.baseline_estimated,
            "extrapolated": self.extrapolated,
        }
        if self.by_depth:
            out["by_depth"] = [
                {"num_steps": k, "tok_s": round(tps, 3), "aggregate_tok_s": round(tps * self.concurrency, 3)}
                for k, tps in self.by_depth
            ]
        if self.evidence:
            out["evidence"] = self.evidence
        return out


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def accept_lengths(
    acceptance: Sequence[float] | Mapping[int, float], max_steps: int, topk: int = 1
) -> dict[int, float]:
    """tau per candidate depth: a mapping {K: measured tau} as given (only those depths are candidates),
    or conditional per-position rates, chained (and extrapolated past their length) for K = 1..max_steps."""
    if isinstance(acceptance, Mapping):
        return {int(k): float(v) for k, v in acceptance.items() if 1 <= int(k) <= max_steps}
    return {k: predict_accept_length(acceptance, k, topk).accept_length for k in range(1, max_steps + 1)}


def depth_schedule(
    params: LoadParams,
    acceptance: Sequence[float] | Mapping[int, float],
    concurrencies: Sequence[float],
    max_steps: int = 10,
    topk: int = 1,
    drafter: str = "",
    baseline_estimated: bool = False,
) -> list[ScheduleEntry]:
    """At each concurrency, the depth K (0 = no speculation) with the most predicted per-request tok/s;
    among equally fast ones the shallowest."""
    taus = accept_lengths(acceptance, max_steps, topk)
    out = []
    for batch in sorted(concurrencies):
        base = params.tps(1.0, batch, 0)
        best = (base, 0, 1.0)
        for steps, tau in sorted(taus.items()):
            tps = params.tps(tau, batch, steps, verified_tokens(steps, topk), topk, drafter)
            if round(tps, 9) > round(best[0], 9):
                best = (tps, steps, tau)
        tps, steps, tau = best
        out.append(ScheduleEntry(batch, steps, tau, tps, tps * batch, tps / base, baseline_estimated))
    return out


def load_depth_sweep(
    params: LoadParams,
    rates: Sequence[float],
    max_steps: int,
    concurrency: float,
    drafter: str = "",
    topk: int = 1,
    factor: float = 1.0,
) -> list[DepthPoint]:
    """costmodel.depth.depth_sweep at batch B = `concurrency` under a load model: one point per depth
    K = 1..max_steps (a chain, or a tree of `topk`), tau from the conditional `rates` (extrapolated past
    their length, times `factor`: a calibrated set's training-to-serving factor)."""
    base = params.tps(1.0, concurrency, 0)
    points = []
    for steps in range(1, max_steps + 1):
        tokens = verified_tokens(steps, topk)
        tau = predict_accept_length(rates, steps, topk, tokens, factor)
        round_ms = params.round_ms(concurrency, steps, tokens, topk, drafter)
        tps = 1000.0 * tau.accept_length / round_ms
        points.append(
            DepthPoint(
                steps=steps,
                draft_tokens=tokens,
                accept_length=tau.accept_length,
                extrapolated=tau.extrapolated,
                tps=tps,
                round_ms=round_ms,
                speedup=tps / base,
                break_even_accept_length=round_ms * base / 1000.0,
            )
        )
    return points


def schedule_ranges(entries: Sequence[ScheduleEntry], max_batch: int) -> list[tuple[int, int, int]]:
    """(first batch, last batch, K) ranges covering 1..max_batch: each entry's K holds up to the geometric
    midpoint between its concurrency and the next one's; neighbours with one K merge."""
    ordered = sorted(entries, key=lambda e: e.concurrency)
    ranges: list[tuple[int, int, int]] = []
    low = 1
    for i, entry in enumerate(ordered):
        if i + 1 < len(ordered):
            high = math.floor(math.sqrt(entry.concurrency * ordered[i + 1].concurrency))
        else:
            high = max_batch
        high = max(high, low)
        if ranges and ranges[-1][2] == entry.num_steps:
            ranges[-1] = (ranges[-1][0], high, entry.num_steps)
        else:
            ranges.append((low, high, entry.num_steps))
        low = high + 1
        if low > max_batch:
            break
    return ranges


def vllm_config(entries: Sequence[ScheduleEntry], method: str, model: str | None = None) -> str:
    """`--speculative-config` JSON for vLLM's dynamic speculative decoding. vLLM reads
    `num_speculative_tokens_per_batch_size` as a list of `[bs_lo, bs_hi, K]` entries, the first starting
    at batch 1, non-overlapping, each K clamped to `num_speculative_tokens`, the startup maximum
    (vllm/v1/spec_decode/dynamic/utils.py, validate_and_normalize_dynamic_sd_schedule)."""
    ranges = schedule_ranges(entries, VLLM_MAX_BATCH)
    deepest = max((k for _, _, k in ranges), default=0)
    if deepest == 0:
        return "# no draft depth beats no speculation at any batch size: serve without --speculative-config"
    return _speculative_config(method, model, deepest, [list(r) for r in ranges])


def _speculative_config(method: str, model: str | None, deepest: int, schedule: list[list[int]]) -> str:
    """The `--speculative-config` argument holding a schedule and its startup maximum."""
    config: dict[str, object] = {"method": method}
    if model:
        config["model"] = model
    config["num_speculative_tokens"] = deepest
    config["num_speculative_tokens_per_batch_size"] = schedule
    return "--speculative-config '" + json.dumps(config) + "'"


# The longest context a 2-D schedule's last range reaches: past any model's window (PR #48944's ranges
# are inclusive and must cover every context a request may have).
VLLM_MAX_CONTEXT = 10_000_000


def context_ranges(contexts: Sequence[float]) -> list[tuple[int, int]]:
    """(first, last) context tokens covering 0..VLLM_MAX_CONTEXT: each asked context holds up to the
    geometric midpoint between it and the next one."""
    ordered = sorted(set(contexts))
    out, low = [], 0
    for i, context in enumerate(ordered):
        high = (
            math.floor(math.sqrt(max(context, 1.0) * ordered[i + 1]))
            if i + 1 < len(ordered)
            else VLLM_MAX_CONTEXT
        )
        high = max(high, low)
        out.append((low, high))
        low = high + 1
    return out


def vllm_context_config(entries: Sequence[ScheduleEntry], method: str, model: str | None = None) -> str:
    """`--speculative-config` JSON with a context axis, in the 5-item form `[bs_lo, bs_hi, ctx_lo, ctx_hi,
    K]` that vLLM PR #48944 (RFC #48627; proposed, not merged as of this writing) adds to
    `num_speculative_tokens_per_batch_size`: both ranges inclusive, each batch range's context ranges
    covering every context. One context asked: vllm_config's batch-only form."""
    contexts = sorted({e.context_tokens for e in entries if e.context_tokens is not None})
    if len(contexts) < 2:
        return vllm_config(entries, method, model)
    rows = _context_rows(entries, contexts)
    deepest = max(k for _, cells in rows for *_, k in cells)
    if deepest == 0:
        return "# no draft depth beats no speculation at any batch size and context: serve without it"
    cells = [[bs_lo, bs_hi, ctx_lo, ctx_hi, k] for (bs_lo, bs_hi), row in rows for ctx_lo, ctx_hi, k in row]
    return _speculative_config(method, model, deepest, cells)


def _context_rows(
    entries: Sequence[ScheduleEntry], contexts: Sequence[float]
) -> list[tuple[tuple[int, int], list[tuple[int, int, int]]]]:
    """One row per batch range (the same ranges at every context): its context ranges with their K,
    neighbours with one K merged; neighbouring batch ranges whose rows are the same merged too."""
    loads = sorted({e.concurrency for e in entries})
    steps = {(e.concurrency, e.context_tokens): e.num_steps for e in entries}
    bounds = [
        (lo, hi)
        for lo, hi, _ in schedule_ranges([_at(load, i) for i, load in enumerate(loads)], VLLM_MAX_BATCH)
    ]
    rows: list[tuple[tuple[int, int], list[tuple[int, int, int]]]] = []
    for (bs_lo, bs_hi), load in zip(bounds, loads, strict=False):
        cells: list[tuple[int, int, int]] = []
        for (ctx_lo, ctx_hi), context in zip(context_ranges(contexts), contexts, strict=True):
            k = steps.get((load, context), 0)
            if cells and cells[-1][2] == k:
                cells[-1] = (cells[-1][0], ctx_hi, k)
            else:
                cells.append((ctx_lo, ctx_hi, k))
        if rows and rows[-1][1] == cells:
            rows[-1] = ((rows[-1][0][0], bs_hi), cells)
        else:
            rows.append(((bs_lo, bs_hi), cells))
    return rows


def _at(load: float, index: int) -> ScheduleEntry:
    """A stand-in entry whose depth differs from its neighbours': schedule_ranges then keeps every load's
    own range."""
    return ScheduleEntry(load, index + 1, 1.0, 1.0, load, 1.0, False)


def trtllm_config(entries: Sequence[ScheduleEntry], decoding_type: str = "Eagle3") -> str:
    """`speculative_config` for TensorRT-LLM's `extra_llm_api_options` YAML. Its `draft_len_schedule`
    maps a batch size to the draft length used from that batch size up ("{1: 4, 4: 2, 8: 0} means
    batch_size >= 1: use draft_len=4 ... >= 8: use draft_len=0 (disable speculation)"), and must hold
    batch size 1 with `max_draft_len` as its value (tensorrt_llm/llmapi/llm_args.py, DecodingBaseConfig):
    deeper drafts later in the schedule are clamped to the batch-1 depth, and said so."""
    ranges = schedule_ranges(entries, VLLM_MAX_BATCH)
    if not ranges or ranges[0][2] == 0:
        return "# no speculation at batch size 1: TensorRT-LLM's schedule must start there; serve without it"
    first = ranges[0][2]
    lines = ["speculative_config:", f"  decoding_type: {decoding_type}", f"  max_draft_len: {first}"]
    lines.append("  draft_len_schedule:")
    clamped = []
    for low, _, steps in ranges:
        if steps > first:
            clamped.append(low)
        lines.append(f"    {low}: {min(steps, first)}")
    if clamped:
        lines.append(
            f"# clamped to max_draft_len {first} from batch size "
            + ", ".join(str(b) for b in clamped)
            + ": TensorRT-LLM starts the schedule at its deepest draft"
        )
    return "\n".join(lines)
