"""Round time and decode throughput of speculative decoding on a deployment (DESIGN.md section 3)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class CostParams:
    """A deployment's cost structure. Times in ms; growth factors per extra verified token."""

    baseline_tps: float
    comm_fraction: float = 0.0
    draft_step_ms: float = 0.0
    round_overhead_ms: float = 0.0
    verify_growth_compute: float = 0.0
    verify_growth_comm: float = 0.0

    @property
    def base_step_ms(self) -> float:
        return 1000.0 / self.baseline_tps


@dataclass(frozen=True)
class RoundTime:
    compute_ms: float
    comm_ms: float
    draft_ms: float
    overhead_ms: float

    @property
    def verify_ms(self) -> float:
        return self.compute_ms + self.comm_ms

    @property
    def total_ms(self) -> float:
        return self.compute_ms + self.comm_ms + self.draft_ms + self.overhead_ms


@dataclass(frozen=True)
class Throughput:
    accept_length: float
    round: RoundTime
    tps: float
    speedup: float
    break_even_accept_length: float

    @property
    def round_ms(self) -> float:
        return self.round.total_ms


def round_time(params: CostParams, steps: int, draft_tokens: int | None = None) -> RoundTime:
    """One round: K draft steps, one verify forward of N tokens (chain: N = K + 1), fixed overhead.
    TP collectives are paid once per verify, not per token."""
    verified = draft_tokens if draft_tokens is not None else steps + 1
    extra = max(verified - 1, 0)
    t_base = params.base_step_ms
    return RoundTime(
        compute_ms=(1.0 - params.comm_fraction) * t_base * (1.0 + params.verify_growth_compute * extra),
        comm_ms=params.comm_fraction * t_base * (1.0 + params.verify_growth_comm * extra),
        draft_ms=steps * params.draft_step_ms,
        overhead_ms=params.round_overhead_ms,
    )


def throughput(
    params: CostParams, accept_length: float, steps: int, draft_tokens: int | None = None
) -> Throughput:
    """Per-request decode tok/s = 1000 * tau / T_round; speedup against the no-speculation baseline."""
    rt = round_time(params, steps, draft_tokens)
    tps = 1000.0 * accept_length / rt.total_ms
    return Throughput(
        accept_length=accept_length,
        round=rt,
        tps=tps,
        speedup=tps / params.baseline_tps,
        break_even_accept_length=rt.total_ms / params.base_step_ms,
    )
