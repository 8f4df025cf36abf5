"""Back-solve a measurement and split its gap from the prediction into acceptance and round-time parts."""

from dataclasses import dataclass

from specdash.costmodel.throughput import Throughput


@dataclass(frozen=True)
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

    @property
    def ratio(self) -> float:
        return self.measured_tps / self.predicted_tps


def decompose(
    predicted: Throughput, measured_tps: float, measured_accept_length: float | None = None
) -> GapDecomposition:
    """`T_round_measured = 1000 * tau / tok/s`; without a measured tau the predicted one stands in."""
    tau_m = measured_accept_length if measured_accept_length else predicted.accept_length
    measured_round_ms = 1000.0 * tau_m / measured_tps
    known = measured_accept_length is not None and measured_accept_length > 0
    return GapDecomposition(
        measured_tps=measured_tps,
        predicted_tps=predicted.tps,
        gap=1.0 - measured_tps / predicted.tps,
        measured_round_ms=measured_round_ms,
        predicted_round_ms=predicted.round_ms,
        acceptance_factor=tau_m / predicted.accept_length if known else None,
        round_factor=predicted.round_ms / measured_round_ms if known else None,
        unexplained_ms=measured_round_ms - predicted.round_ms,
    )
