"""Round time and decode throughput of speculative decoding on a deployment (docs/cost-model.md)."""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CostParams:
    """A deployment's cost structure. Times in ms; growth factors per extra verified token."""

    baseline_tps: float  # no-speculation decode, per request
    comm_fraction: float = 0.0  # share f of a baseline step spent in TP collectives
    draft_step_ms: float = 0.0  # one autoregressive draft step
    round_overhead_ms: float = 0.0  # fixed per round: scheduling, tree building, sampling, ...
    verify_growth_compute: float = 0.0  # b_c: compute grows by b_c per extra verified token
    verify_growth_comm: float = 0.0  # b_m: collectives grow by b_m per extra verified token
    draft_branch_ms: float = 0.0  # extra drafting per step for each candidate beyond the first (topk > 1)

    def __post_init__(self) -> None:
        if not (self.baseline_tps > 0 and math.isfinite(self.baseline_tps)):
            raise ValueError(f"baseline_tps must be a positive number, got {self.baseline_tps}")
        if not 0.0 <= self.comm_fraction <= 1.0:
            raise ValueError(f"comm_fraction must be in [0, 1], got {self.comm_fraction}")
        for name in (
            "draft_step_ms",
            "round_overhead_ms",
            "verify_growth_compute",
            "verify_growth_comm",
            "draft_branch_ms",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    @classmethod
    def from_base_step_ms(cls, base_step_ms: float, **costs: float) -> "CostParams":
        """The same profile given by its no-speculation step time instead of tok/s."""
        return cls(baseline_tps=1000.0 / base_step_ms, **costs)

    @property
    def base_step_ms(self) -> float:
        return 1000.0 / self.baseline_tps

    @property
    def verify_growth(self) -> float:
        """The single growth per extra verified token equivalent to b_c and b_m together."""
        f = self.comm_fraction
        return (1.0 - f) * self.verify_growth_compute + f * self.verify_growth_comm


@dataclass(slots=True)  # built once per benchmark: a frozen dataclass's __init__ costs 5x
class RoundTime:
    compute_ms: float
    comm_ms: float
    draft_ms: float
    overhead_ms: float

    @property
    def total_ms(self) -> float:
        return self.compute_ms + self.comm_ms + self.draft_ms + self.overhead_ms


@dataclass(slots=True)  # built once per benchmark: a frozen dataclass's __init__ costs 5x
class Throughput:
    accept_length: float
    round: RoundTime
    tps: float
    speedup: float
    break_even_accept_length: float

    @property
    def round_ms(self) -> float:
        return self.round.total_ms


def verified_tokens(
    steps: int, topk: int = 1, draft_tokens: int | None = None, tokens_per_step: int = 1
) -> int:
    """N, the tokens one verify forward scores (root included): given, else K * topk * tokens_per_step + 1:
    K + 1 for a chain (one token a step), K * topk + 1 for a full tree of `topk` candidates per step, and
    for a block drafter (DFlash, DSpark: all its tokens in one step) its block of tokens_per_step + 1."""
    if draft_tokens is not None:
        return draft_tokens
    return steps * topk * tokens_per_step + 1


def draft_width(topk: int | None) -> int:
    """Candidates per draft step: the top-k, 1 (a chain) when not stated. The one rule for a top-k not
    stated; `Setting.width` and every reader of a stored or parsed top-k ask it."""
    return topk or 1


def draft_steps(num_steps: int | None, topk: int | None, num_draft_tokens: int | None) -> int | None:
    """K of a speculation setting: given, else N - 1 for a chain; None for a tree that does not say."""
    if num_steps:
        return num_steps
    if num_draft_tokens and draft_width(topk) == 1:
        return num_draft_tokens - 1
    return None


def round_time(params: CostParams, steps: int, draft_tokens: int | None = None, topk: int = 1) -> RoundTime:
    """One round: K draft steps, one verify forward of N tokens, fixed overhead.
    TP collectives are paid once per verify, not per token."""
    extra = max(verified_tokens(steps, topk, draft_tokens) - 1, 0)
    t_base = params.base_step_ms
    return RoundTime(
        compute_ms=(1.0 - params.comm_fraction) * t_base * (1.0 + params.verify_growth_compute * extra),
        comm_ms=params.comm_fraction * t_base * (1.0 + params.verify_growth_comm * extra),
        draft_ms=steps * (params.draft_step_ms + params.draft_branch_ms * max(topk - 1, 0)),
        overhead_ms=params.round_overhead_ms,
    )


def throughput(
    params: CostParams, accept_length: float, steps: int, draft_tokens: int | None = None, topk: int = 1
) -> Throughput:
    """Per-request decode tok/s = 1000 * tau / T_round; speedup against the no-speculation baseline;
    break-even tau = T_round / T_base, the accept length at which speculation merely pays for itself."""
    rt = round_time(params, steps, draft_tokens, topk)
    round_ms = rt.total_ms
    tps = 1000.0 * accept_length / round_ms
    return Throughput(
        accept_length=accept_length,
        round=rt,
        tps=tps,
        speedup=tps / params.baseline_tps,
        break_even_accept_length=round_ms / params.base_step_ms,
    )
