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
from specdash.costmodel.throughput import verified_tokens


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


class _Design:
    """The observations as arrays, for residuals and their Jacobian over every observation at once: a
    fit evaluates them hundreds of times, and a Python loop over thousands of observations per evaluation
    (with a finite-difference Jacobian, one per free parameter) was what an ingest spent its time on."""

    def __init__(
        self, observations: Sequence[LoadObservation], start: LoadParams, free: Sequence[str]
    ) -> None:
        self.start = start
        self.free = tuple(free)
        obs = list(observations)
        speculative = np.array([o.speculative for o in obs], dtype=bool)
        batch = np.array([max(o.concurrency, 1.0) for o in obs], dtype=float)
        steps = np.array([o.steps if o.speculative else 0 for o in obs], dtype=float)
        verified = np.array(
            [verified_tokens(o.steps, o.topk, o.draft_tokens) if o.speculative else 1 for o in obs],
            dtype=float,
        )
        width = np.array([max(o.topk, 1) for o in obs], dtype=float)
        tau = np.where(speculative, np.array([o.accept_length for o in obs], dtype=float), 1.0)
        self.speculative = speculative
        self.steps = steps
        # 1000 tau / measured tok/s: residual = this / T_round - 1
        self.scale_ms = 1000.0 * tau / np.array([o.measured_tps for o in obs], dtype=float)
        # the three forwards a round's cost reads: the verify over B x N tokens of B requests (the step
        # itself without speculation), the load growth of drafting (B x topk) and of the overhead (B)
        verify_n = np.where(speculative, np.maximum(batch * verified, 1.0), batch)
        verify_b = np.minimum(batch, verify_n)
        draft_n = np.maximum(batch * width, 1.0)
        self.points = (
            (verify_n, verify_b),
            (draft_n, draft_n),
            (batch, batch),
        )
        drafters = [o.drafter for o in obs]
        names = sorted(set(drafters))
        self.drafter_names = names
        self.drafter_index = np.array([names.index(d) for d in drafters], dtype=int)
        fitted = {n[len(DRAFTER_PREFIX) :] for n in self.free if n.startswith(DRAFTER_PREFIX)}
        # a drafter not fitted costs its prior times the median move of the fitted ones (_assemble): a
        # median has no useful derivative, so such a fit differentiates numerically
        self.analytic = not fitted or all(
            d in fitted for d, s in zip(drafters, speculative, strict=True) if s
        )
        arch = start.architecture
        self.moe = (
            arch if arch is not None and arch.is_moe and arch.num_experts and arch.experts_per_token else None
        )
        self.position = {name: i for i, name in enumerate(self.free)}

    def _value(self, x: np.ndarray, name: str, default: float) -> float:
        i = self.position.get(name)
        return default if i is None else float(x[i])

    def _forward_shares(
        self, x: np.ndarray, n: np.ndarray, b: np.ndarray
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """S(n, b) = F(n, b) / T1 and its derivative in each free parameter it depends on."""
        p = self.start
        knee_log = self._value(x, "knee_log", float(np.log(p.knee_tokens)))
        knee = float(np.exp(knee_log))
        token_floor = self._value(x, "token_floor", p.token_floor)
        request_floor = self._value(x, "request_floor", p.request_floor)
        f = p.comm_fraction
        h_n = np.sqrt(1.0 + (n / knee) ** 2)
        h_1 = float(np.sqrt(1.0 + (1.0 / knee) ** 2))
        dense = h_n / h_1
        # d/d(log knee) of sqrt(1 + (n / knee)^2) is -(n / knee)^2 / sqrt(...)
        d_dense = (-((n / knee) ** 2) / h_n - dense * (-((1.0 / knee) ** 2) / h_1)) / h_1
        derivatives: dict[str, np.ndarray] = {}
        if self.moe is not None:
            assert self.moe.num_experts and self.moe.experts_per_token
            m = self._value(x, "expert_share", p.expert_share)
            k, e = self.moe.experts_per_token, self.moe.num_experts
            experts = e * (1.0 - (1.0 - k / e) ** n) / k
            shape = (1.0 - m) * dense + m * experts
            d_shape = (1.0 - m) * d_dense
            derivatives["expert_share"] = (1.0 - f) * (experts - dense)
        else:
            shape, d_shape = dense, d_dense
        derivatives["knee_log"] = (1.0 - f) * d_shape
        derivatives["token_floor"] = n - 1.0
        derivatives["request_floor"] = b - 1.0
        share = (1.0 - f) * shape + f + token_floor * (n - 1.0) + request_floor * (b - 1.0)
        return share, derivatives

    def rounds(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each observation's predicted T_round (ms) and its Jacobian in x (rows: observations)."""
        p = self.start
        step = self._value(x, "step_ms", p.step_ms)
        overhead = self._value(x, "overhead_ms", p.overhead_ms)
        g = self._value(x, "load_exponent", p.load_exponent)
        costs = np.array(
            [self._value(x, DRAFTER_PREFIX + d, p.draft_step_for(d)) for d in self.drafter_names], dtype=float
        )
        draft = costs[self.drafter_index]
        (s_v, d_v), (s_d, d_d), (s_o, d_o) = (self._forward_shares(x, n, b) for n, b in self.points)
        spec = self.speculative
        grow_d = np.where(spec, s_d**g, 0.0)
        grow_o = np.where(spec, s_o**g, 0.0)
        drafting = self.steps * draft
        total = step * s_v + drafting * grow_d + overhead * grow_o
        jac = np.zeros((total.size, len(self.free)), dtype=float)
        for j, name in enumerate(self.free):
            if name == "step_ms":
                jac[:, j] = s_v
            elif name == "overhead_ms":
                jac[:, j] = grow_o
            elif name == "load_exponent":
                jac[:, j] = drafting * grow_d * np.log(s_d) + overhead * grow_o * np.log(s_o)
            elif name.startswith(DRAFTER_PREFIX):
                drafter = name[len(DRAFTER_PREFIX) :]
                mine = self.drafter_index == (
                    self.drafter_names.index(drafter) if drafter in self.drafter_names else -1
                )
                jac[:, j] = np.where(mine, self.steps * grow_d, 0.0)
            else:
                jac[:, j] = step * d_v[name] + g * (
                    drafting * np.where(spec, s_d ** (g - 1.0), 0.0) * d_d[name]
                    + overhead * np.where(spec, s_o ** (g - 1.0), 0.0) * d_o[name]
                )
        return total, jac

    def residuals(self, x: np.ndarray) -> np.ndarray:
        """predicted / measured tok/s - 1 of each observation."""
        total, _ = self.rounds(x)
        residual: np.ndarray = self.scale_ms / total - 1.0
        return residual

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        total, jac = self.rounds(x)
        out: np.ndarray = (-self.scale_ms / total**2)[:, None] * jac
        return out


def fit_load_model(
    observations: Sequence[LoadObservation],
    prior: LoadParams,
    free: Sequence[str] | None = None,
    *,
    numeric_jacobian: bool = False,
) -> LoadFit:
    """Fit `free` parameters (free_parameters() by default) of `prior`, whose T1 is first set to what
    the benchmarks imply (a prior read from no-speculation runs, or from the depth sweep and the
    priors' round when there are none). Each parameter is pulled toward the prior (PRIOR_WEIGHTS).
    The Jacobian is analytic (`numeric_jacobian`: by finite differences, as a check of it)."""
    obs = list(observations)
    if not obs:
        raise NotEnoughObservations("no benchmarks to fit a load model to")
    # imported here: scipy.optimize takes most of a second to load and only fitting needs it
    from scipy.optimize import least_squares

    names = tuple(free) if free is not None else free_parameters(obs, prior)
    start = rescale_prior(prior, step_ms_from_observations(obs, prior)) if "step_ms" in names else prior
    bounds, scale, weight = _bounds_and_scales(start, names)
    prior_x = np.array([_value(start, n) for n in names], dtype=float)

    design = _Design(obs, start, names)
    pull = np.diag(weight / scale)

    def residuals(x: np.ndarray) -> np.ndarray:
        analytic = design.analytic and not numeric_jacobian
        fitted = design.residuals(x) if analytic else _residuals(_assemble(start, names, x), obs)
        return np.concatenate([fitted, weight * (x - prior_x) / scale])

    def jacobian(x: np.ndarray) -> np.ndarray:
        return np.vstack([design.jacobian(x), pull])

    jac: Any = jacobian if design.analytic and not numeric_jacobian else "2-point"
    x0 = np.clip(prior_x, bounds[0] + 0.01 * scale, bounds[1] - 0.01 * scale)
    # plain least squares first: from priors far off (a knee of 200 tokens where the machine has 3) every
    # benchmark looks like an outlier to the robust loss, which would then leave them all unexplained
    rough = least_squares(residuals, x0, jac=jac, bounds=(bounds[0], bounds[1]), x_scale=scale)
    result = least_squares(
        residuals,
        rough.x,
        jac=jac,
        bounds=(bounds[0], bounds[1]),
        loss=LOSS,
        f_scale=LOSS_SCALE,
        x_scale=scale,
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
