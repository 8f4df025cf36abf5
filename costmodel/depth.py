"""Throughput as a function of draft depth, and the depth that maximises it for an acceptance curve."""

from collections.abc import Sequence
from dataclasses import dataclass

from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.throughput import CostParams, throughput, verified_tokens


@dataclass(frozen=True)
class DepthPoint:
    steps: int
    draft_tokens: int
    accept_length: float
    extrapolated: bool
    tps: float
    round_ms: float
    speedup: float
    break_even_accept_length: float


def depth_sweep(
    params: CostParams, rates: Sequence[float], max_steps: int, topk: int = 1, block: bool = False
) -> list[DepthPoint]:
    """One point per draft depth d = 1..max_steps for a drafter with conditional rates `rates`
    (extrapolated past their length). A chain runs K = d steps and verifies K + 1 tokens; a tree K * topk + 1.
    A block drafter (`block`: DFlash, DSpark) drafts a block of d tokens in one step: K = 1, N = d + 1, and
    its draft cost (params.draft_step_ms, per round for such a family) is paid once whatever the depth."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    points = []
    for depth in range(1, max_steps + 1):
        steps = 1 if block else depth
        draft_tokens = verified_tokens(steps, topk, tokens_per_step=depth if block else 1)
        tau = predict_accept_length(rates, steps, topk, draft_tokens, block=block)
        result = throughput(params, tau.accept_length, steps, draft_tokens, topk)
        points.append(
            DepthPoint(
                steps=steps,
                draft_tokens=draft_tokens,
                accept_length=tau.accept_length,
                extrapolated=tau.extrapolated,
                tps=result.tps,
                round_ms=result.round_ms,
                speedup=result.speedup,
                break_even_accept_length=result.break_even_accept_length,
            )
        )
    return points


def optimal_depth(points: list[DepthPoint]) -> DepthPoint:
    """The fastest point; among equally fast ones the shallowest (it drafts less for the same tok/s)."""
    if not points:
        raise ValueError("no depth points to choose from")
    return max(points, key=lambda p: (round(p.tps, 9), -p.steps, -p.draft_tokens))
