"""Acceptance length tau (tokens per round, bonus token included) from per-position acceptance rates."""

from collections.abc import Sequence
from dataclasses import dataclass

from specdash.costmodel.throughput import verified_tokens

# Beyond the trained TTT depth a drafter extrapolates; each extra position keeps this share of the
# previous position's conditional rate (a conservative decay; the prediction is marked extrapolated).
EXTRAPOLATION_DECAY = 0.9


def tau_chain(conditional_rates: Sequence[float]) -> float:
    """tau = 1 + sum_k prod_{j<=k} p_j for a chain whose position j is accepted with probability p_j
    given that every earlier position was."""
    tau, survival = 1.0, 1.0
    for rate in conditional_rates:
        survival *= rate
        tau += survival
    return tau


def tau_survival(survival_rates: Sequence[float]) -> float:
    """tau = 1 + sum_k s_k where s_k is the share of rounds that accepted at least k drafted tokens
    (vLLM's per-position acceptance rates are of this kind)."""
    return 1.0 + sum(survival_rates)


def tau_iid(rate: float, steps: int) -> float:
    """Leviathan et al. (2023): every drafted token accepted independently with probability `rate`,
    tau = (1 - a^(K+1)) / (1 - a)."""
    if rate >= 1.0:
        return float(steps + 1)
    return (1.0 - rate ** (steps + 1)) / (1.0 - rate)


def tau_from_simulated_acc_len(simulated_acc_len: float) -> float:
    """SpecForge's `simulated_acc_len` counts accepted draft tokens only; tau adds the bonus token."""
    return simulated_acc_len + 1.0


def conditional_from_survival(survival_rates: Sequence[float]) -> list[float]:
    """p_k = s_k / s_(k-1): the conditional rates of a survival curve (0 once nothing survives)."""
    rates, previous = [], 1.0
    for survival in survival_rates:
        rates.append(survival / previous if previous > 0 else 0.0)
        previous = survival
    return rates


def extend_rates(
    rates: Sequence[float], steps: int, decay: float = EXTRAPOLATION_DECAY
) -> tuple[list[float], bool]:
    """The first `steps` conditional rates; positions past the trained ones decay geometrically from
    the last trained rate. Returns the rates and whether any were extrapolated."""
    if not rates:
        raise ValueError("need at least one trained position to extrapolate from")
    out = list(rates[:steps])
    extrapolated = steps > len(rates)
    while len(out) < steps:
        out.append(out[-1] * decay)
    return out, extrapolated


def drafts_a_block(steps: int, topk: int = 1, draft_tokens: int | None = None) -> bool:
    """Whether a setting drafts more positions than it runs steps: only a block drafter does (DFlash's one
    step of 16 tokens), as a chain or tree drafts one position a step."""
    return topk == 1 and draft_tokens is not None and draft_tokens - 1 > steps


def tree_shape(
    steps: int, topk: int = 1, draft_tokens: int | None = None, block: bool | None = None
) -> tuple[int, float]:
    """(depth, candidates per depth) of the chain that stands in for a draft tree.

    The N - 1 drafted tokens a round verifies (N counts the root) reach at most min(K, N - 1) deep and are
    spread evenly over that depth, at most `topk` per position. A chain is depth K, one candidate each. A
    block drafter (`block`; None: told by `drafts_a_block`) drafts all N - 1 positions in its one step."""
    budget = (draft_tokens - 1) if draft_tokens is not None else steps * topk
    if block is None:
        block = drafts_a_block(steps, topk, draft_tokens)
    depth = max(0, budget if block and topk == 1 else min(steps, budget))
    if depth == 0:
        return 0, 1.0
    return depth, max(1.0, min(float(topk), budget / depth))


@dataclass(frozen=True)
class AcceptLength:
    accept_length: float
    extrapolated: bool  # some positions lie past the trained depth
    approximation: str | None  # the tree rule applied, None for a chain


def predict_accept_length(
    rates: Sequence[float],
    steps: int,
    topk: int = 1,
    draft_tokens: int | None = None,
    acc_to_acceptance: float = 1.0,
    block: bool | None = None,
) -> AcceptLength:
    """tau of a drafter with trained conditional rates `rates` at K steps (and a tree of `topk`, N tokens).

    Each rate is scaled by `acc_to_acceptance` (training accuracy -> serving acceptance, capped at 1);
    past the trained depth rates decay by EXTRAPOLATION_DECAY per position. A tree is approximated by a
    chain of `tree_shape` whose position j accepts when any of its w candidates does: 1 - (1 - p_j)^w,
    an optimistic rule (siblings are not independent, and not all hang below the accepted path). A block
    drafter (`block`, or a setting with more draft tokens than steps) is a chain N - 1 deep."""
    if topk == 1:
        draft_tokens = verified_tokens(steps, topk, draft_tokens)
    depth, width = tree_shape(steps, topk, draft_tokens, block)
    if depth == 0:
        return AcceptLength(1.0, False, None)
    extended, extrapolated = extend_rates(rates, depth)
    scaled = [min(1.0, rate * acc_to_acceptance) for rate in extended]
    approximation = None
    if topk > 1:
        scaled = [1.0 - (1.0 - rate) ** width for rate in scaled]
        approximation = (
            f"tree {steps}/{topk}/{draft_tokens} as a chain {depth} deep with {width:.3g} candidates "
            "per position: p -> 1-(1-p)^w"
        )
    return AcceptLength(tau_chain(scaled), extrapolated, approximation)
