"""Fit a deployment's load model (costmodel/loadmodel.py) to its benchmarks at every load by robust least
squares, and predict held-out ones: the same loss as costmodel/calibration.py, relative tok/s residuals."""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from specdash.costmodel.calibration import LOSS, LOSS_SCALE, abs_error_quantiles
from specdash.costmodel.loadmodel import (
    DRAFTER_PREFIX,
    EXPERT_SHARE_BOUNDS,
    FLOOR_BOUNDS,
    KNEE_BOUNDS,
    LOAD_EXPONENT_BOUNDS,
    PRIOR_WEIGHTS,
    LoadObservation,
    LoadParams,
    rescale_prior,
    step_ms_from_observations,
)
from specdash.costmodel.observations import NotEnoughObservations


@dataclass(frozen=True)
class LoadFit:
    params: LoadParams
    prior: LoadParams
    free: tuple[str, ...]
    n_observations: int
    errors: tuple[float, ...]  # predicted / measured tok/s - 1 of each observation, in order

    @property
    def median_abs_rel_error(self) -> float:
        return float(abs_error_quantiles(self.errors)[0])


def free_parameters(observations: Sequence[LoadObservation], prior: LoadParams) -> tuple[str, ...]:
    """What the benchmarks can inform: T1, the knee and floor always (the priors hold them where the
    data cannot), a MoE target's expert share, each drafter's cost and the overhead once anything
    speculated, the load exponent once speculation was measured at two loads, and the per-request
    floor once anything was measured at two loads."""
    free = ["step_ms", "knee_log", "token_floor"]
    if prior.architecture is not None and prior.architecture.is_moe:
        free.append("expert_share")
    speculative = [o for o in observations if o.speculative]
    if speculative:
        free += [DRAFTER_PREFIX + d for d in sorted({o.drafter for o in speculative})]
        free.append("overhead_ms")
        if len({round(o.concurrency, 6) for o in speculative}) > 1:
            free.append("load_exponent")
    if len({round(o.concurrency, 6) for o in observations}) > 1:
        free.append("request_floor")
    return tuple(free)


def _value(p: LoadParams, name: str) -> float:
    if name.startswith(DRAFTER_PREFIX):
        return float(p.draft_step_for(name[len(DRAFTER_PREFIX) :]))
    if name == "knee_log":
        return float(np.log(p.knee_tokens))
    value: float = getattr(p, name)
    return value


def _assemble(prior: LoadParams, free: Sequence[str], x: "Sequence[float] | np.ndarray") -> LoadParams:
    drafters = dict(prior.draft_step_ms_by_drafter)
    plain: dict[str, float] = {}
    for name, value in zip(free, x, strict=True):
        if name.startswith(DRAFTER_PREFIX):
            drafters[name[len(DRAFTER_PREFIX) :]] = float(value)
        elif name == "knee_log":
            plain["knee_tokens"] = float(np.exp(value))
        else:
            plain[name] = float(value)
    # drafters the benchmarks did not see keep their family's prior times how far the fitted ones moved
    # from theirs: the deployment drafts faster or slower than the priors for every drafter alike
    ratios = [
        drafters[n[len(DRAFTER_PREFIX) :]] / prior.draft_step_for(n[len(DRAFTER_PREFIX) :])
        for n in free
        if n.startswith(DRAFTER_PREFIX) and prior.draft_step_for(n[len(DRAFTER_PREFIX) :]) > 0
    ]
    if ratios:
        factor = float(np.median(ratios))
        fitted = {n[len(DRAFTER_PREFIX) :] for n in free if n.startswith(DRAFTER_PREFIX)}
        drafters = {d: v if d in fitted else v * factor for d, v in drafters.items()}
        plain["draft_step_ms"] = prior.draft_step_ms * factor
    values: dict[str, Any] = {**plain, "draft_step_ms_by_drafter": tuple(sorted(drafters.items()))}
    return replace(prior, **values)


def _bounds_and_scales(prior: LoadParams, free: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    step = prior.step_ms
    table = {
        "step_ms": ((0.02 * step, 50.0 * step), 0.1 * step),
        "knee_log": ((float(np.log(KNEE_BOUNDS[0])), float(np.log(KNEE_BOUNDS[1]))), 0.5),
        "token_floor": (FLOOR_BOUNDS, 0.002),
        "request_floor": (FLOOR_BOUNDS, 0.002),
        "overhead_ms": ((0.0, np.inf), 0.1 * step),
        "load_exponent": (LOAD_EXPONENT_BOUNDS, 0.2),
        "expert_share": (EXPERT_SHARE_BOUNDS, 0.05),
        "draft_step_ms": ((0.0, np.inf), 0.1 * step),
    }
    kinds = ["draft_step_ms" if n.startswith(DRAFTER_PREFIX) else n for n in free]
    lower = np.array([table[k][0][0] for k in kinds], dtype=float)
    upper = np.array([table[k][0][1] for k in kinds], dtype=float)
    scale = np.array([table[k][1] for k in kinds], dtype=float)
    weight = np.array([PRIOR_WEIGHTS[k] for k in kinds], dtype=float)
    return np.vstack([lower, upper]), scale, weight


def _residuals(params: LoadParams, observations: Sequence[LoadObservation]) -> np.ndarray:
    return np.array(
        [
            params.tps(o.accept_length, o.concurrency, o.steps, o.draft_tokens, o.topk, o.drafter)
            / o.measured_tps
            - 1.0
            for o in observations
        ],
        dtype=float,
    )


def fit_load_model(
    observations: Sequence[LoadObservation], prior: LoadParams, free: Sequence[str] | None = None
) -> LoadFit:
    """Fit `free` parameters (free_parameters() by default) of `prior`, whose T1 is first set to what
    the benchmarks imply (a prior read from no-speculation runs, or from the depth sweep and the
    priors' round when there are none). Each parameter is pulled toward the prior (PRIOR_WEIGHTS)."""
    obs = list(observations)
    if not obs:
        raise NotEnoughObservations("no benchmarks to fit a load model to")
    # imported here: scipy.optimize takes most of a second to load and only fitting needs it
    from scipy.optimize import least_squares

    names = tuple(free) if free is not None else free_parameters(obs, prior)
    start = rescale_prior(prior, step_ms_from_observations(obs, prior)) if "step_ms" in names else prior
    bounds, scale, weight = _bounds_and_scales(start, names)
    prior_x = np.array([_value(start, n) for n in names], dtype=float)

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.concatenate([_residuals(_assemble(start, names, x), obs), weight * (x - prior_x) / scale])

    x0 = np.clip(prior_x, bounds[0] + 0.01 * scale, bounds[1] - 0.01 * scale)
    # plain least squares first: from priors far off (a knee of 200 tokens where the machine has 3) every
    # benchmark looks like an outlier to the robust loss, which would then leave them all unexplained
    rough = least_squares(residuals, x0, bounds=(bounds[0], bounds[1]), x_scale=scale)
    result = least_squares(
        residuals, rough.x, bounds=(bounds[0], bounds[1]), loss=LOSS, f_scale=LOSS_SCALE, x_scale=scale
    )
    params = _assemble(start, names, result.x)
    return LoadFit(
        params=params,
        prior=start,
        free=names,
        n_observations=len(obs),
        errors=tuple(float(e) for e in _residuals(params, obs)),
    )


def predict_load_observations(params: LoadParams, observations: Sequence[LoadObservation]) -> list[float]:
    """Predicted per-request tok/s of each observation."""
    return [
        params.tps(o.accept_length, o.concurrency, o.steps, o.draft_tokens, o.topk, o.drafter)
        for o in observations
    ]


def held_out_errors(
    observations: Sequence[LoadObservation],
    prior: LoadParams,
    group: Callable[[LoadObservation], Hashable],
    predict: Callable[[LoadObservation], bool] | None = None,
) -> list[tuple[LoadObservation, float]]:
    """Each group of observations (group(o), e.g. its load, or its load and setting) predicted by a fit
    to all the others; only observations for which `predict` holds are scored (all speculative ones by
    default). A group whose removal leaves nothing to fit is skipped."""
    obs = list(observations)
    scored = predict or (lambda o: o.speculative)
    out: list[tuple[LoadObservation, float]] = []
    for key in dict.fromkeys(group(o) for o in obs):
        test = [o for o in obs if group(o) == key and scored(o)]
        train = [o for o in obs if group(o) != key]
        if not test or not train:
            continue
        params = fit_load_model(train, prior).params
        for o, predicted in zip(test, predict_load_observations(params, test), strict=True):
            out.append((o, predicted / o.measured_tps - 1.0))
    return out
