"""The no-speculation baseline as a function of load (concurrency): measured, interpolated between measured
levels, or extrapolated from the nearest one with the load model of costmodel/priors.py."""

import math
from collections.abc import Mapping
from dataclasses import dataclass

from specdash.costmodel.priors import DeploymentFacts, load_factor


@dataclass(frozen=True)
class BaselineAtLoad:
    baseline_tps: float  # per-request decode tok/s without speculation
    rule: str  # "measured", "interpolated" or "extrapolated"


def baseline_at_load(
    measured_tps: Mapping[int, float], concurrency: int, facts: DeploymentFacts, comm_fraction: float = 0.0
) -> BaselineAtLoad | None:
    """Per-request baseline tok/s at `concurrency` from the measured levels {concurrency: tok/s}.

    Between two measured levels the step time is interpolated linearly in log(step) against log(load);
    outside them the nearest level's step is scaled by load_factor(B) / load_factor(B_nearest)."""
    levels = sorted((c, tps) for c, tps in measured_tps.items() if tps and tps > 0)
    if not levels:
        return None
    for level, tps in levels:
        if level == concurrency:
            return BaselineAtLoad(tps, "measured")
    below = [(c, t) for c, t in levels if c < concurrency]
    above = [(c, t) for c, t in levels if c > concurrency]
    if below and above:
        (c0, t0), (c1, t1) = below[-1], above[0]
        w = (math.log(concurrency) - math.log(c0)) / (math.log(c1) - math.log(c0))
        step_ms = math.exp((1 - w) * math.log(1000.0 / t0) + w * math.log(1000.0 / t1))
        return BaselineAtLoad(1000.0 / step_ms, "interpolated")
    nearest, tps = below[-1] if below else above[0]
    scale = load_factor(facts.architecture, facts.knee, concurrency, comm_fraction) / load_factor(
        facts.architecture, facts.knee, nearest, comm_fraction
    )
    return BaselineAtLoad(tps / scale, "extrapolated")
