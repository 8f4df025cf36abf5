"""The cost model as a calculator: one setting in, every figure of docs/cost-model.md out (`specdash model`)."""

from collections.abc import Sequence
from dataclasses import dataclass

from specdash.costmodel.acceptance import (
    conditional_from_survival,
    predict_accept_length,
    tau_from_simulated_acc_len,
)
from specdash.costmodel.depth import depth_sweep, optimal_depth
from specdash.costmodel.gaps import decompose
from specdash.costmodel.throughput import CostParams, throughput, verified_tokens

DEFAULT_STEPS = 3  # SGLang's common EAGLE-3 setting 3/1/4


@dataclass(frozen=True)
class Acceptance:
    """How the accept length is given: exactly one of these."""

    accept_length: float | None = None  # tau itself (bonus token included)
    conditional_rates: Sequence[float] | None = None  # p_1..p_k, e.g. training acc_i
    survival_rates: Sequence[float] | None = None  # s_1..s_k, e.g. vLLM's per-position rates
    iid_rate: float | None = None  # Leviathan's alpha, the same at every position
    simulated_acc_len: float | None = None  # SpecForge's, bonus token excluded

    def curve(self, length: int) -> list[float] | None:
        """Conditional rates for a depth sweep, when the input describes a curve."""
        if self.conditional_rates:
            return list(self.conditional_rates)
        if self.survival_rates:
            return conditional_from_survival(self.survival_rates)
        if self.iid_rate is not None:
            return [self.iid_rate] * length
        return None

    def __post_init__(self) -> None:
        if len(self._given()) != 1:
            raise ValueError(f"give exactly one way to know the accept length, got {self._given() or 'none'}")
        for name in ("conditional_rates", "survival_rates"):
            rates = getattr(self, name)
            if rates is not None and len(rates) == 0:
                raise ValueError(f"{name} is empty: give at least one rate")

    def _given(self) -> list[str]:
        return [
            name
            for name in (
                "accept_length",
                "conditional_rates",
                "survival_rates",
                "iid_rate",
                "simulated_acc_len",
            )
            if getattr(self, name) is not None
        ]

    @property
    def kind(self) -> str:
        return self._given()[0]


def calculate(
    params: CostParams,
    acceptance: Acceptance,
    steps: int | None = None,
    topk: int = 1,
    draft_tokens: int | None = None,
    measured_tps: float | None = None,
    measured_accept_length: float | None = None,
    max_steps: int = 16,
) -> dict[str, object]:
    """Every figure for one setting: accept length, round time and its parts, tok/s, speedup, break-even
    tau; the optimal depth when the acceptance is a curve; with a measurement, the back-solve and gap."""
    kind = acceptance.kind
    curve = acceptance.curve(max(max_steps, steps or 0))
    if steps is None:
        steps = len(curve) if curve and kind != "iid_rate" else DEFAULT_STEPS
    draft_tokens = verified_tokens(steps, topk, draft_tokens)
    extrapolated, approximation = False, None
    if curve is not None:
        tau = predict_accept_length(curve, steps, topk, draft_tokens)
        accept_length, extrapolated, approximation = tau.accept_length, tau.extrapolated, tau.approximation
    elif acceptance.simulated_acc_len is not None:
        accept_length = tau_from_simulated_acc_len(acceptance.simulated_acc_len)
    else:
        # exactly one way is given (__post_init__), neither a curve nor SpecForge's: tau itself
        assert acceptance.accept_length is not None
        accept_length = acceptance.accept_length
    result = throughput(params, accept_length, steps, draft_tokens, topk)
    out: dict[str, object] = {
        "baseline_tps": params.baseline_tps,
        "base_step_ms": params.base_step_ms,
        "steps": steps,
        "topk": topk,
        "draft_tokens": draft_tokens,
        "accept_length": accept_length,
        "accept_length_from": kind,
        "extrapolated": extrapolated,
        "approximation": approximation,
        "round_ms": result.round_ms,
        "compute_ms": result.round.compute_ms,
        "comm_ms": result.round.comm_ms,
        "draft_ms": result.round.draft_ms,
        "overhead_ms": result.round.overhead_ms,
        "tps": result.tps,
        "speedup": result.speedup,
        "break_even_accept_length": result.break_even_accept_length,
    }
    if curve is not None:
        best = optimal_depth(depth_sweep(params, curve, max_steps, topk))
        out.update(
            optimal_steps=best.steps,
            optimal_draft_tokens=best.draft_tokens,
            optimal_accept_length=best.accept_length,
            optimal_tps=best.tps,
            optimal_extrapolated=best.extrapolated,
        )
    if measured_tps is not None:
        # a directly given tau is itself a measurement (as in the story); a curve is a prediction
        if measured_accept_length is None and kind in ("accept_length", "simulated_acc_len"):
            measured_accept_length = accept_length
        gap = decompose(result, measured_tps, measured_accept_length)
        out.update(
            measured_tps=measured_tps,
            measured_accept_length=measured_accept_length,
            measured_round_ms=gap.measured_round_ms,
            gap=gap.gap,
            acceptance_factor=gap.acceptance_factor,
            round_factor=gap.round_factor,
            unexplained_ms=gap.unexplained_ms,
        )
    return out
