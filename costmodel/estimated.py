"""The no-speculation step of a deployment measured only with speculation, estimated from its speculative
benchmarks and marked estimated: from the depth sweep extrapolated to no drafting (a round of K = 0 that
verifies one token), or, with one depth only, each measured round divided by the priors' round factor."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specdash.costmodel.loadcosts import load_params_from_json, load_params_json
from specdash.costmodel.loadmodel import LoadObservation, LoadParams
from specdash.costmodel.priors import TargetArchitecture

DEPTH_SWEEP = "depth sweep"
PRIOR_ROUND_FACTOR = "prior round factor"


@dataclass(frozen=True)
class EstimatedBaseline:
    concurrency: float
    baseline_tps: float  # per-request decode tok/s without speculation: an estimate, never a measurement
    rule: str  # DEPTH_SWEEP or PRIOR_ROUND_FACTOR
    estimated: bool = True

    @property
    def step_ms(self) -> float:
        return 1000.0 / self.baseline_tps


@dataclass(frozen=True)
class BaselineEstimate:
    """Estimated baselines at the measured loads, and at any load through the fitted model."""

    levels: tuple[EstimatedBaseline, ...]
    params: LoadParams  # the load model fitted to the speculative benchmarks alone
    rule: str

    def at(self, concurrency: float) -> EstimatedBaseline:
        for level in self.levels:
            if abs(level.concurrency - concurrency) < 1e-9:
                return level
        return EstimatedBaseline(concurrency, 1000.0 / self.params.base_step_ms(concurrency), self.rule)

    def to_json(self) -> dict[str, Any]:
        """What a stored load fit keeps (db/load_fit_models.py): the levels, the rule, the fitted model."""
        return {
            "rule": self.rule,
            "levels": [[level.concurrency, level.baseline_tps, level.rule] for level in self.levels],
            "params": load_params_json(self.params),
        }

    @classmethod
    def from_json(
        cls, stored: Mapping[str, Any], architecture: TargetArchitecture | None = None
    ) -> "BaselineEstimate":
        """The estimate to_json() stored, on the deployment's target `architecture`."""
        levels = tuple(
            EstimatedBaseline(float(c), float(tps), str(rule)) for c, tps, rule in stored["levels"]
        )
        return cls(levels, load_params_from_json(stored["params"], architecture), str(stored["rule"]))


def prior_round_factor(prior: LoadParams, observation: LoadObservation) -> float:
    """T_round / T_base the priors expect for this benchmark's setting and load (independent of T1)."""
    o = observation
    round_ms = prior.round_ms(o.concurrency, o.steps, o.draft_tokens, o.topk, o.drafter)
    return round_ms / prior.base_step_ms(o.concurrency)


def estimate_baselines(observations: Sequence[LoadObservation], prior: LoadParams) -> BaselineEstimate:
    """Per measured load, the baseline the speculative benchmarks imply (no-speculation ones are
    ignored: with one, nothing needs estimating). With two or more draft depths the load model is fitted
    to them all and its step at K = 0 is the estimate; with one depth, each load's measured rounds are
    divided by the priors' round factor (their median)."""
    speculative = [o for o in observations if o.speculative]
    if not speculative:
        raise ValueError("no speculative benchmarks to estimate a baseline from")
    # imported here: the fit loads numpy, which a store without such benchmarks (an ingest of training
    # metrics) never needs
    from specdash.costmodel.loadfit import fit_load_model

    fit = fit_load_model(speculative, prior)
    loads = sorted({o.concurrency for o in speculative})
    if len({o.steps for o in speculative}) > 1:
        levels = tuple(
            EstimatedBaseline(load, 1000.0 / fit.params.base_step_ms(load), DEPTH_SWEEP) for load in loads
        )
        return BaselineEstimate(levels, fit.params, DEPTH_SWEEP)
    out = []
    for load in loads:
        steps = sorted(
            o.measured_round_ms / prior_round_factor(fit.params, o)
            for o in speculative
            if o.concurrency == load
        )
        mid = len(steps) // 2
        step_ms = steps[mid] if len(steps) % 2 else 0.5 * (steps[mid - 1] + steps[mid])
        out.append(EstimatedBaseline(load, 1000.0 / step_ms, PRIOR_ROUND_FACTOR))
    return BaselineEstimate(tuple(out), fit.params, PRIOR_ROUND_FACTOR)
