"""What a fit is given: one trusted benchmark as a plain observation, and the error of too few of them.
Apart from costmodel/calibration.py's fit so that the load model and the store can name them without
loading numpy (an ingest of training metrics needs neither)."""

from dataclasses import dataclass


class NotEnoughObservations(ValueError):
    pass


@dataclass(frozen=True)
class CalibrationObservation:
    """One trusted benchmark as the fit sees it. tok/s are per request (decode)."""

    steps: int
    topk: int
    draft_tokens: int
    measured_tps: float
    baseline_tps: float  # no-speculation tok/s on the same deployment, concurrency (and dataset)
    measured_accept_length: float | None = None
    training_rates: tuple[float, ...] | None = None  # conditional acc_i of the drafter, when known
    label: str = ""
    drafter: str = ""  # which drafter (run) was benchmarked; each gets its own draft step cost
    growth_shape: float = 1.0  # g: the architecture's verify growth at this load and setting, relative
    dataset: str = ""
    # T_base at this load / T_base at the fit's reference load (same dataset): drafting and the round's
    # bookkeeping run over the whole batch and grow with the step as the load does
    load_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.topk < 1 or self.draft_tokens < 2:
            raise ValueError(f"{self.label}: need steps >= 1, topk >= 1, draft_tokens >= 2")
        if not (self.measured_tps > 0 and self.baseline_tps > 0):
            raise ValueError(f"{self.label}: measured and baseline tok/s must be > 0")
        if not self.measured_accept_length and not self.training_rates:
            raise ValueError(f"{self.label}: need a measured accept length or training rates")
