"""Back-solve a measurement and split its gap from the prediction into acceptance and round-time parts."""

from dataclasses import dataclass

from specdash.costmodel.throughput import Throughput


def measured_round_ms(measured_tps: float, accept_length: float) -> float:
    """The inverse of the model: a round that emits tau tokens at `measured_tps` lasts 1000 tau / tok/s."""
    if measured_tps <= 0:
        raise ValueError(f"measured tok/s must be > 0, got {measured_tps}")
    return 1000.0 * accept_length / measured_tps


@dataclass(slots=True)  # built once per benchmark: a frozen dataclass's __init__ costs 5x
class GapDecomposition:
    measured_tps: float
    predicted_tps: float
    gap: float  # 1 - measured / predicted; positive = slower than predicted
    measured_round_ms: float
    predicted_round_ms: float
    # measured / predicted = acceptance_factor * round_factor; None when the benchmark has no tau
    acceptance_factor: float | None
    round_factor: float | None
    unexplained_ms: float  # measured round time the model does not account for
    measured_accept_length: float
    predicted_accept_length: float

    @property
    def measured_token_ms(self) -> float:
        return 1000.0 / self.measured_tps

    @property
    def predicted_token_ms(self) -> float:
        return 1000.0 / self.predicted_tps

    @property
    def round_token_ms(self) -> float:
        """Extra ms per token from the longer round: (T_m - T_p) / tau_m."""
        return (self.measured_round_ms - self.predicted_round_ms) / self.measured_accept_length

    @property
    def acceptance_token_ms(self) -> float:
        """Extra ms per token from fewer tokens per round: T_p (1/tau_m - 1/tau_p).
        With round_token_ms it adds up to measured_token_ms - predicted_token_ms."""
        return self.predicted_round_ms * (
            1.0 / self.measured_accept_length - 1.0 / self.predicted_accept_length
        )


def decompose(
    predicted: Throughput, measured_tps: float, measured_accept_length: float | None = None
) -> GapDecomposition:
    """`T_round_measured = 1000 * tau / tok/s`; without a measured tau the predicted one stands in
    and the whole gap is put on the round time (the factors stay None: they cannot be told apart)."""
    if measured_accept_length is not None and measured_accept_length > 0:
        known, tau_m = True, measured_accept_length
    else:
        known, tau_m = False, predicted.accept_length
    round_ms = measured_round_ms(measured_tps, tau_m)
    predicted_round_ms = predicted.round_ms  # a sum of the round's parts: taken once
    return GapDecomposition(
        measured_tps=measured_tps,
        predicted_tps=predicted.tps,
        gap=1.0 - measured_tps / predicted.tps,
        measured_round_ms=round_ms,
        predicted_round_ms=predicted_round_ms,
        acceptance_factor=tau_m / predicted.accept_length if known else None,
        round_factor=predicted_round_ms / round_ms if known else None,
        unexplained_ms=round_ms - predicted_round_ms,
        measured_accept_length=tau_m,
        predicted_accept_length=predicted.accept_length,
    )
