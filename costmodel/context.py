"""Context length in the round: every decode forward reads each running request's KV cache once.

A request that has read `input` prompt tokens and emitted `output` decodes, on average over its output, at a
context of input + output / 2 tokens. Its KV cache holds that many tokens in every layer, and each forward
of the target (a step without speculation, or the verify of a round however many tokens it scores) reads it
once. At batch B and context c the forward therefore pays, beyond the weights and the per-token work,

    KV(B, c) = T1 * kv * B * c / 1000         kv: share of the batch-1 step T1 per request and 1,000 tokens

in the base step and in the verify alike; drafting (a one-layer drafter's own small cache) and the round's
bookkeeping do not. Since the same term enters both, a long context dilutes the verify's extra cost: the
speedup of speculation grows with context at a given batch, and at high batch it may come back where short
prompts lost it (vLLM RFC #48627 measured this on Gemma-4-31B/H100; MagicDec, Sadhukhan et al. 2024).

The load model and the stored predictions are fitted at the contexts the deployment's benchmarks ran at;
their median is the reference context, at which the shift is zero. A point at another context moves both
the round and the base step by KV(B, c) - KV(B, reference): never below the context-free step, since a
shorter context cannot make the weights read faster.

Layers that attend over a sliding window (Gemma's five in six) hold the last `window` tokens only: their
read grows with context up to the window and then stops, while the full-attention layers' keeps growing.
A request's read is therefore counted in tokens of the full-attention layers, c + r * min(c, window) with
r their K and V bytes per token over the full layers', and kv is the share of one such token.

The prior of kv is the ratio of a token's KV bytes to the weight bytes one step reads, both sharded alike
across tensor-parallel GPUs so the bandwidth cancels: (1 - f) * 1000 * kv_bytes_per_token / weight_bytes.
Llama-3.1-8B (32 layers x 8 KV heads x 128 x K and V x 2 bytes = 128 KiB a token, 16 GB of bf16 weights)
gives 0.0082. It is fitted (closed-form, pulled toward the prior) once benchmarks at two contexts exist."""

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from specdash.costmodel.priors import TargetArchitecture

# The context taken for benchmarks that do not state their lengths: a chat benchmark's mean prompt
# plus half its output is a few hundred to a couple of thousand tokens (ShareGPT, MT-Bench, random 1024/512).
DEFAULT_CONTEXT_TOKENS = 1000.0
# kv of a GQA target in bf16 whose architecture is not known (Llama-3.1-8B's, derived above).
GENERIC_KV_SHARE = 0.0082
# A KV read at most as costly per 1,000 tokens as a fifth of the weights: MHA without GQA in fp32 on a
# 1B model is ~0.13; more is not a KV read.
KV_SHARE_BOUNDS = (0.0, 0.2)
# Pull toward the prior: a departure of the whole generic prior weighs like one benchmark 5 % off.
KV_PRIOR_WEIGHT = (0.05 / GENERIC_KV_SHARE) ** 2
# The share of a step the context can take away when it shortens (the rest is weights, compute, launch).
MAX_CONTEXT_SHARE = 0.9
# Tokens per request, prompt or output, and the longest context a schedule is asked for: 10x the longest
# model window (10M tokens); the store's bound on a benchmark's lengths too (db/records.py).
MAX_CONTEXT_TOKENS = 100_000_000
# More distinct stated contexts than this (a scrape's windows) are kept to two significant digits.
MAX_LISTED_CONTEXTS = 12
# Contexts within this factor of a measured one are not extrapolated.
CONTEXT_SLACK = 1.25


# Two runs of one benchmark sample their outputs anew (ShareGPT: 1,153 and 1,144.5 tokens a request): their
# output lengths are compared in classes of this many tokens, their prompt lengths to the token.
OUTPUT_CLASS_TOKENS = 64


def length_class(input_tokens: float | None, output_tokens: float | None) -> tuple[int | None, int | None]:
    """What makes two benchmarks' contexts one for a repeat group: the prompt to the token, the output to
    OUTPUT_CLASS_TOKENS (rounded half up, as SQL's ROUND does positives)."""
    return (
        None if input_tokens is None else math.floor(input_tokens + 0.5),
        None if output_tokens is None else math.floor(output_tokens / OUTPUT_CLASS_TOKENS + 0.5),
    )


def context_bucket(context: float) -> float:
    """A context to two significant digits: live windows state a slightly different mean each, and one
    prediction per bucket and load bounds the work however long a deployment was scraped."""
    return float(f"{context:.2g}")


def parse_contexts(text: str) -> tuple[float, ...]:
    """Context lengths in tokens separated by commas ("8k" = 8,000), sorted, each once; ValueError saying
    how to write them. An empty text is no context."""
    try:
        contexts = {
            float(part.strip().lower().replace("k", "e3")) for part in text.split(",") if part.strip()
        }
    except ValueError:
        raise ValueError(
            f"{text!r}: give context lengths in tokens separated by commas, e.g. 1000,8k,32k"
        ) from None
    if any(not 0 <= c <= MAX_CONTEXT_TOKENS for c in contexts):
        raise ValueError(
            f"{text!r}: every context length must be between 0 and {MAX_CONTEXT_TOKENS:,} tokens"
        )
    return tuple(sorted(contexts))


def decode_context(input_tokens: float | None, output_tokens: float | None) -> float | None:
    """The mean context a request decodes at: its prompt plus half its output; None when not stated."""
    if input_tokens is None:
        return None
    return float(input_tokens) + 0.5 * float(output_tokens or 0.0)


def kv_bytes_per_token(arch: TargetArchitecture | None) -> float | None:
    """K and V of every layer for one token, when the architecture says its KV geometry."""
    if arch is None or not (arch.num_layers and arch.kv_bytes_per_layer_token):
        return None
    return float(arch.num_layers * arch.kv_bytes_per_layer_token)


@dataclass(frozen=True)
class SlidingWindow:
    """Layers attending over the last `tokens` tokens only, `ratio` times the full-attention layers' K and
    V bytes per token."""

    tokens: float
    ratio: float


def sliding_window(arch: TargetArchitecture | None) -> SlidingWindow | None:
    """The target's sliding-window layers against its full-attention ones, when its geometry says both."""
    full = kv_bytes_per_token(arch)
    if arch is None or not (full and arch.window_tokens and arch.windowed_kv_bytes_per_token):
        return None
    return SlidingWindow(float(arch.window_tokens), arch.windowed_kv_bytes_per_token / full)


def kv_tokens(context: float, window: SlidingWindow | None) -> float:
    """The KV a request reads at `context`, in tokens of the full-attention layers: the windowed layers'
    read stops growing at their window."""
    if window is None:
        return context
    return context + window.ratio * min(max(context, 0.0), window.tokens)


def kv_share_prior(arch: TargetArchitecture | None, comm_fraction: float = 0.0) -> float:
    """kv from the target's KV geometry and active weights; of a target whose size alone is known, the
    generic one scaled as GQA models' KV grows (about the square root of the parameters: Llama-3.1 8B and
    70B, 0.0082 and 0.0023); GENERIC_KV_SHARE when nothing is known."""
    per_token = kv_bytes_per_token(arch)
    params = (arch.active_params_b or arch.total_params_b) if arch is not None else None
    if per_token is None and params:
        return min(GENERIC_KV_SHARE * math.sqrt(8.0 / params), KV_SHARE_BOUNDS[1])
    if per_token is None or not params:
        return GENERIC_KV_SHARE
    weight_bytes = params * 1e9 * 2.0  # bf16 weights: what a batch-1 step reads
    share = (1.0 - comm_fraction) * 1000.0 * per_token / weight_bytes
    return min(max(share, KV_SHARE_BOUNDS[0]), KV_SHARE_BOUNDS[1])


@dataclass(frozen=True)
class ContextPoint:
    """One benchmark as the KV fit sees it: its batch and context, the batch-1 step of its deployment, its
    measured round (or step) and the prediction at the reference context; `group` names the setting and
    load it shares with the same measurement at other contexts."""

    batch: float
    context: float
    step_ms: float  # T1
    measured_ms: float  # 1000 tau / measured tok/s (tau = 1 without speculation)
    predicted_ms: float  # the round (or step) predicted at the reference context
    group: tuple[float, int, int] = (1.0, 0, 1)  # (batch, steps, topk); steps 0: the plain step

    @property
    def offset_per_request(self) -> float:
        """How much longer than the reference prediction it took, per request in flight (ms)."""
        return (self.measured_ms - self.predicted_ms) / max(self.batch, 1.0)


@dataclass(frozen=True)
class ContextModel:
    """How a deployment's rounds move with context."""

    kv_share: float
    reference_tokens: float  # the median context of the benchmarks
    stated: bool  # some benchmark stated its lengths (else the reference is DEFAULT_CONTEXT_TOKENS)
    fitted: bool  # kv fitted from benchmarks at two or more contexts (else its prior)
    measured: tuple[float, ...] = ()  # the distinct contexts benchmarks stated
    # measured steps (else rounds) at stated contexts: (batch, context, ms per request beyond the
    # reference prediction). A point at a context is moved from the nearest one measured at its load
    # (or the nearest load), so that where the step was measured the prediction keeps to it.
    anchors: tuple[tuple[float, float, float], ...] = ()
    window: SlidingWindow | None = None  # the target's sliding-window layers, when it has any

    def kv_between(self, context: float, start: float) -> float:
        """How many more full-attention tokens a request reads at `context` than at `start`."""
        return kv_tokens(context, self.window) - kv_tokens(start, self.window)

    def shift_ms(self, step_ms: float, batch: float, context: float) -> float:
        """How much longer a forward at `context` takes than the reference prediction at this batch."""
        batch = max(batch, 1.0)
        if not self.anchors:
            return step_ms * self.kv_share * batch * self.kv_between(context, self.reference_tokens) / 1000.0
        loads = sorted({a[0] for a in self.anchors})
        below = [b for b in loads if b <= batch] or loads[:1]
        above = [b for b in loads if b >= batch] or loads[-1:]
        low, high = below[-1], above[0]
        per_request = self._per_request(low, step_ms, context)
        if high != low:  # between two measured loads: the offset per request moves with log(batch)
            w = math.log(batch / low) / math.log(high / low)
            per_request = (1.0 - w) * per_request + w * self._per_request(high, step_ms, context)
        return batch * per_request

    def _per_request(self, load: float, step_ms: float, context: float) -> float:
        """The offset per request at a measured load, moved from its nearest measured context."""
        at_load = [a for a in self.anchors if a[0] == load]
        _, measured_at, offset = min(at_load, key=lambda a: abs(math.log(max(a[1], 1.0) / max(context, 1.0))))
        return offset + step_ms * self.kv_share * self.kv_between(context, measured_at) / 1000.0

    def moved(self, ms: float, step_ms: float, batch: float, context: float | None) -> float:
        """A forward's (or round's) `ms` at the reference context moved to `context`; no lower than a
        tenth of it (the weights, compute and launches a shorter context does not take away)."""
        if context is None:
            return ms
        return max(ms + self.shift_ms(step_ms, batch, context), (1.0 - MAX_CONTEXT_SHARE) * ms)

    def extrapolated(self, context: float | None) -> bool:
        """A context no benchmark of the deployment ran near (any stated one when none was stated)."""
        if context is None:
            return False
        if not self.measured:
            return True
        return not min(self.measured) / CONTEXT_SLACK <= context <= max(self.measured) * CONTEXT_SLACK


def reference_context(contexts: Sequence[float]) -> float:
    """The median of the stated contexts, DEFAULT_CONTEXT_TOKENS when there are none."""
    return float(statistics.median(contexts)) if contexts else DEFAULT_CONTEXT_TOKENS


def spans_contexts(contexts: Sequence[float]) -> bool:
    """Two contexts far enough apart to tell the KV read from the rest of the step."""
    return bool(contexts) and max(contexts) > CONTEXT_SLACK * min(contexts)


def fit_kv_share(points: Sequence[ContextPoint], prior: float, window: SlidingWindow | None = None) -> float:
    """kv from how each setting and load's measurement changed between contexts (each group's mean taken
    out, so what the reference prediction got wrong does not count), in relative terms, plus the pull
    toward `prior`: linear in kv, so closed-form."""
    xx = KV_PRIOR_WEIGHT
    xy = KV_PRIOR_WEIGHT * prior
    groups: dict[tuple[float, int, int], list[ContextPoint]] = {}
    for p in points:
        if p.measured_ms > 0 and math.isfinite(p.measured_ms):
            groups.setdefault(p.group, []).append(p)
    for members in groups.values():
        if not spans_contexts([p.context for p in members]):
            continue
        mean_ms = statistics.fmean(p.measured_ms for p in members)
        mean_tokens = statistics.fmean(kv_tokens(p.context, window) for p in members)
        for p in members:
            x = (
                p.step_ms
                * max(p.batch, 1.0)
                * (kv_tokens(p.context, window) - mean_tokens)
                / 1000.0
                / mean_ms
            )
            y = (p.measured_ms - mean_ms) / mean_ms
            xx += x * x
            xy += x * y
    return min(max(xy / xx, KV_SHARE_BOUNDS[0]), KV_SHARE_BOUNDS[1])


def anchors_of(points: Sequence[ContextPoint]) -> tuple[tuple[float, float, float], ...]:
    """The plain steps' offsets per request at each load and context (the rounds' where no plain step was
    measured), averaged over repeats."""
    plain = [p for p in points if p.group[1] == 0] or list(points)
    cells: dict[tuple[float, float], list[float]] = {}
    for p in plain:
        cells.setdefault((p.batch, p.context), []).append(p.offset_per_request)
    return tuple((b, c, statistics.fmean(v)) for (b, c), v in sorted(cells.items()))


def context_model(
    contexts: Sequence[float],
    prior: float,
    points: Sequence[ContextPoint] = (),
    window: SlidingWindow | None = None,
) -> ContextModel:
    """The deployment's context model from the contexts its benchmarks stated and, when they span two,
    the points to fit kv to and anchor on."""
    reference = reference_context(contexts)
    fit = spans_contexts(contexts) and bool(points)
    kv = fit_kv_share(points, prior, window) if fit else prior
    anchors = anchors_of(points) if fit else ()
    measured = tuple(sorted(set(contexts)))
    if len(measured) > MAX_LISTED_CONTEXTS:  # a scrape's windows: two significant digits each
        measured = tuple(sorted({context_bucket(c) for c in contexts}))
    return ContextModel(kv, reference, bool(contexts), fit, measured, anchors, window)
