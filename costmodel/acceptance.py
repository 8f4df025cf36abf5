"""Acceptance length tau (tokens per round, bonus token included) from per-position acceptance rates."""

from collections.abc import Sequence

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
    """Leviathan et al. (2023): every drafted token accepted independently with probability `rate`."""
    if rate >= 1.0:
        return float(steps + 1)
    return (1.0 - rate ** (steps + 1)) / (1.0 - rate)


def extend_rates(rates: Sequence[float], steps: int, decay: float = EXTRAPOLATION_DECAY) -> tuple[list[float], bool]:
    """The first `steps` conditional rates; positions past the trained ones decay geometrically from
    the last trained rate. Returns the rates and whether any were extrapolated."""
    if not rates:
        raise ValueError("need at least one trained position to extrapolate from")
    out = list(rates[:steps])
    extrapolated = steps > len(rates)
    while len(out) < steps:
        out.append(out[-1] * decay)
    return out, extrapolated
