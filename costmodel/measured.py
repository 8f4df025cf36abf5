"""Per-position acceptance of a drafter known only from its benchmarks: from measured accept lengths of
chain speculation at several depths, or from vLLM's per-position survival rates."""

from collections.abc import Mapping, Sequence

from specdash.costmodel.acceptance import conditional_from_survival

_BISECTIONS = 60


def _stretch_rate(survival: float, positions: int, accepted: float) -> float:
    """The constant conditional rate a with survival * (a + a^2 + ... + a^n) = accepted, in [0, 1]."""
    if survival <= 0 or accepted <= 0:
        return 0.0
    if accepted >= survival * positions:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = (low + high) / 2
        if survival * sum(mid**i for i in range(1, positions + 1)) < accepted:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def conditional_from_accept_lengths(accept_lengths: Mapping[int, float]) -> list[float]:
    """Conditional rates p_1..p_Kmax reproducing measured chain accept lengths tau(K) (bonus token included)
    at the depths K measured: between two measured depths the rate is constant (Leviathan et al.'s i.i.d.
    rule within each stretch). tau(K) - tau(K') is the expected number of tokens accepted at positions
    K'+1..K; a deeper depth measured no higher than a shallower one adds rate 0 (noise, not a gain)."""
    rates: list[float] = []
    survival, depth, tau = 1.0, 0, 1.0
    for steps in sorted(k for k in accept_lengths if k >= 1):
        measured = accept_lengths[steps]
        rate = _stretch_rate(survival, steps - depth, measured - tau)
        rates += [rate] * (steps - depth)
        survival *= rate ** (steps - depth)
        depth, tau = steps, max(tau, measured)
    return rates


def conditional_from_measured(
    survival_rates: Sequence[float] | None, accept_lengths: Mapping[int, float]
) -> tuple[list[float], str]:
    """The best per-position curve the benchmarks give, and where it came from: per-position survival
    when a benchmark reports it (it measures each position), else accept lengths at several depths."""
    if survival_rates:
        return conditional_from_survival(survival_rates), "survival"
    if accept_lengths:
        return conditional_from_accept_lengths(accept_lengths), "accept_length"
    return [], "none"
