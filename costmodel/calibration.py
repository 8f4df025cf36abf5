"""Calibration: fit a deployment's free cost parameters to measured benchmarks by robust least squares.

Works on plain observations (one per benchmark); the store builds them. The model fitted is the one of
docs/cost-model.md with one verify growth b for compute and collectives alike (throughput alone cannot
tell them apart: both multiply T_base (N - 1)) and a tree term for drafting with topk > 1:

    T_round = T_base (1 + b g (N - 1)) + K (t_draft_step[drafter] + t_branch (topk - 1)) + t_round_overhead
    tau     = measured accept length, or the chain of the training rates scaled by acc_to_acceptance

Deployment-level costs (b, t_over, t_branch) are shared by every drafter benchmarked on the deployment; the
draft step cost is one per drafter, pulled toward that drafter's prior (its family's published cost) with a
strength that a handful of benchmarks outweighs, so a drafter with few points never gets a wild value.
g is each observation's verify-growth shape from the target's architecture at its load and setting
(costmodel/priors.py, 1 when unknown): b is the growth per extra token where g = 1, and g carries the fit to
other loads.
"""

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Final

import numpy as np

from specdash.costmodel.acceptance import extend_rates, tree_shape
from specdash.costmodel.observations import CalibrationObservation, NotEnoughObservations
from specdash.costmodel.throughput import CostParams

# Residuals are relative errors. Past LOSS_SCALE (5 %) the Cauchy loss flattens out (log growth), so a
# benchmark far off the rest (a broken run no rule caught) barely moves the fit; soft-L1 and Huber
# still let one such point shift the others by a few %.
LOSS: Final = "cauchy"
LOSS_SCALE = 0.05
# A weak pull toward the starting (theory) values: it settles what the benchmarks cannot separate (with
# chain settings only, K draft steps and K extra verified tokens always come together).
PRIOR_WEIGHT = 0.005
# The pull of each drafter's draft cost toward its prior: a 0.1-baseline-step departure weighs like one
# benchmark 5 % off, so one drafter's few benchmarks move it only as far as they agree.
DRAFTER_PRIOR_WEIGHT = 0.05
# Each dataset's rounds may run a few % off the rest (its one measured baseline is noisy, its contexts
# longer): a factor per dataset with at least DATASET_MIN_OBSERVATIONS benchmarks, pulled toward 1 as hard
# as a drafter's cost is toward its prior. A dataset never benchmarked on the deployment gets 1.
DATASET_PRIOR_WEIGHT = 0.05
DATASET_MIN_OBSERVATIONS = 3
DATASET_SCALE_BOUNDS = (0.5, 2.0)
MIN_OBSERVATIONS = 4
# Above this many benchmarks, leave-one-out (one refit per benchmark) gives way to k-fold.
LOO_MAX_OBSERVATIONS = 300
CV_FOLDS = 20
ACC_FACTOR_BOUNDS = (0.05, 2.0)


@dataclass(frozen=True)
class FittedParams:
    draft_step_ms: float = 0.0
    draft_branch_ms: float = 0.0
    round_overhead_ms: float = 0.0
    verify_growth: float = 0.0
    acc_to_acceptance: float = 1.0
    # drafter -> its own draft step ms; drafters not in it (and predictions for new ones) use draft_step_ms
    draft_step_ms_by_drafter: tuple[tuple[str, float], ...] = ()
    # dataset -> factor on its whole round (1 for datasets not in it)
    round_scale_by_dataset: tuple[tuple[str, float], ...] = ()

    def draft_step_for(self, drafter: str) -> float:
        return dict(self.draft_step_ms_by_drafter).get(drafter, self.draft_step_ms)

    def cost_params(self, baseline_tps: float, comm_fraction: float = 0.0) -> CostParams:
        return CostParams(
            baseline_tps=baseline_tps,
            comm_fraction=comm_fraction,
            draft_step_ms=self.draft_step_ms,
            draft_branch_ms=self.draft_branch_ms,
            round_overhead_ms=self.round_overhead_ms,
            verify_growth_compute=self.verify_growth,
            verify_growth_comm=self.verify_growth,
        )


PARAM_NAMES = tuple(
    f.name
    for f in fields(FittedParams)
    if f.name not in ("draft_step_ms_by_drafter", "round_scale_by_dataset")
)
DRAFTER_PREFIX = "draft_step_ms:"
DATASET_PREFIX = "round_scale:"


def abs_error_quantiles(errors: Sequence[float]) -> tuple[float, float]:
    """(median, p90) of |error|."""
    values = np.abs(np.asarray(errors, dtype=float))
    return float(np.median(values)), float(np.percentile(values, 90))


@dataclass(frozen=True)
class CalibrationFit:
    params: FittedParams
    prior: FittedParams
    free: tuple[str, ...]  # the parameters fitted; the others keep their prior value
    n_observations: int
    # (predicted - measured) / measured tok/s of each observation, in the observations' order
    errors: tuple[float, ...]
    cv_errors: tuple[float, ...]  # the same, each predicted by a fit that did not see it
    cross_validation: str  # "leave-one-out" or "20-fold"

    @property
    def median_abs_rel_error(self) -> float:
        return abs_error_quantiles(self.errors)[0]

    @property
    def p90_abs_rel_error(self) -> float:
        return abs_error_quantiles(self.errors)[1]

    @property
    def loo_median_abs_rel_error(self) -> float:
        return abs_error_quantiles(self.cv_errors)[0]

    @property
    def loo_p90_abs_rel_error(self) -> float:
        return abs_error_quantiles(self.cv_errors)[1]


class _Arrays:
    """The observations as numpy columns, so one residual evaluation is a few vector operations."""

    def __init__(self, observations: Sequence[CalibrationObservation]):
        obs = list(observations)
        self.n = len(obs)
        self.steps = np.array([o.steps for o in obs], dtype=float)
        self.branches = np.array([o.topk - 1 for o in obs], dtype=float)
        self.extra_verified = np.array([o.draft_tokens - 1 for o in obs], dtype=float)
        self.shape = np.array([o.growth_shape for o in obs], dtype=float)
        self.load_scale = np.array([o.load_scale for o in obs], dtype=float)
        self.drafter_names = sorted({o.drafter for o in obs})
        self.drafter_index = np.array([self.drafter_names.index(o.drafter) for o in obs], dtype=int)
        self.datasets = np.array([o.dataset for o in obs], dtype=object)
        self.measured_tps = np.array([o.measured_tps for o in obs], dtype=float)
        self.base_step_ms = np.array([1000.0 / o.baseline_tps for o in obs], dtype=float)
        self.measured_tau = np.array([o.measured_accept_length or np.nan for o in obs], dtype=float)
        self.has_tau = ~np.isnan(self.measured_tau)
        self.has_rates = np.array([bool(o.training_rates) for o in obs])
        shapes = [tree_shape(o.steps, o.topk, o.draft_tokens) for o in obs]
        depth = max((d for d, _ in shapes), default=0)
        self.rates = np.zeros((self.n, max(depth, 1)))
        self.in_depth = np.zeros_like(self.rates, dtype=bool)
        self.width = np.array([w for _, w in shapes], dtype=float)[:, None]
        for i, (o, (d, _)) in enumerate(zip(obs, shapes, strict=True)):
            if o.training_rates and d:
                self.rates[i, :d] = extend_rates(o.training_rates, d)[0]
                self.in_depth[i, :d] = True

    def subset(self, keep: np.ndarray) -> "_Arrays":
        sub = object.__new__(_Arrays)
        for name, value in vars(self).items():
            sub.__dict__[name] = value[keep] if isinstance(value, np.ndarray) else value
        sub.n = int(np.count_nonzero(keep))
        # drafters left without benchmarks drop out of the fit (their prior alone would set them)
        present = sorted({self.drafter_names[i] for i in sub.drafter_index})
        sub.drafter_index = np.array(
            [present.index(self.drafter_names[i]) for i in sub.drafter_index], dtype=int
        )
        sub.drafter_names = present
        return sub

    def draft_steps(self, p: FittedParams) -> np.ndarray:
        per = np.array([p.draft_step_for(name) for name in self.drafter_names], dtype=float)
        return per[self.drafter_index] if self.n else np.zeros(0)

    def predicted_tau(self, acc_to_acceptance: float) -> np.ndarray:
        accepted = 1.0 - (1.0 - np.minimum(1.0, self.rates * acc_to_acceptance)) ** self.width
        tau: np.ndarray = 1.0 + (np.cumprod(accepted, axis=1) * self.in_depth).sum(axis=1)
        return tau

    def dataset_scales(self, p: FittedParams) -> np.ndarray | float:
        if not p.round_scale_by_dataset:
            return 1.0
        scales = dict(p.round_scale_by_dataset)
        return np.array([scales.get(d, 1.0) for d in self.datasets], dtype=float)

    def round_ms(self, p: FittedParams) -> np.ndarray:
        round_ms: np.ndarray = self.dataset_scales(p) * (
            self.base_step_ms * (1.0 + p.verify_growth * self.shape * self.extra_verified)
            + self.load_scale
            * (self.steps * (self.draft_steps(p) + p.draft_branch_ms * self.branches) + p.round_overhead_ms)
        )
        return round_ms

    def predicted_tps(self, p: FittedParams) -> np.ndarray:
        """What a prediction would say: tau from training rates when known, else the measured tau."""
        tau = np.where(self.has_rates, self.predicted_tau(p.acc_to_acceptance), self.measured_tau)
        tps: np.ndarray = 1000.0 * tau / self.round_ms(p)
        return tps

    def residuals(self, p: FittedParams) -> np.ndarray:
        """Relative tok/s errors of the round-time model (measured tau where known), then relative tau
        errors where both training rates and a measured tau exist."""
        tau_rates = self.predicted_tau(p.acc_to_acceptance)
        tau = np.where(self.has_tau, self.measured_tau, tau_rates)
        tps_error = 1000.0 * tau / self.round_ms(p) / self.measured_tps - 1.0
        both = self.has_tau & self.has_rates
        return np.concatenate([tps_error, tau_rates[both] / self.measured_tau[both] - 1.0])


def _drafter_param(arrays: _Arrays, name: str) -> str:
    """A drafter's draft-cost parameter: plain `draft_step_ms` when the benchmarks name no drafters. A
    named drafter, even the only one, gets its own: predictions read its cost by name
    (`FittedParams.draft_step_for`), so a fitted plain value would be shadowed by the drafter's prior."""
    return "draft_step_ms" if len(arrays.drafter_names) == 1 and not name else DRAFTER_PREFIX + name


def _free_parameters(arrays: _Arrays) -> tuple[str, ...]:
    free = [_drafter_param(arrays, name) for name in arrays.drafter_names]
    if arrays.branches.any():
        free.append("draft_branch_ms")
    free += ["round_overhead_ms", "verify_growth"]
    if arrays.has_rates.any():
        free.append("acc_to_acceptance")
    names, counts = np.unique(arrays.datasets.astype(str), return_counts=True)
    if len(names) > 1:
        free += [
            DATASET_PREFIX + n for n, c in zip(names, counts, strict=True) if c >= DATASET_MIN_OBSERVATIONS
        ]
    return tuple(free)


def _value(p: FittedParams, name: str) -> float:
    if name.startswith(DRAFTER_PREFIX):
        return p.draft_step_for(name[len(DRAFTER_PREFIX) :])
    if name.startswith(DATASET_PREFIX):
        return dict(p.round_scale_by_dataset).get(name[len(DATASET_PREFIX) :], 1.0)
    value: float = getattr(p, name)
    return value


def _assemble(prior: FittedParams, values: dict[str, float]) -> FittedParams:
    """FittedParams from fitted values; drafters fitted get their own draft cost (the others keep their
    prior's), and the shared draft_step_ms, used for drafters never benchmarked here, is their median."""
    drafters = dict(prior.draft_step_ms_by_drafter)
    scales = dict(prior.round_scale_by_dataset)
    plain = {}
    for name, value in values.items():
        if name.startswith(DRAFTER_PREFIX):
            drafters[name[len(DRAFTER_PREFIX) :]] = value
        elif name.startswith(DATASET_PREFIX):
            scales[name[len(DATASET_PREFIX) :]] = value
        else:
            plain[name] = value
    fitted = [v for n, v in values.items() if n.startswith(DRAFTER_PREFIX)]
    if fitted and "draft_step_ms" not in plain:
        plain["draft_step_ms"] = float(np.median(fitted))
    base = {n: getattr(prior, n) for n in PARAM_NAMES} | plain
    return FittedParams(
        **base,
        draft_step_ms_by_drafter=tuple(sorted(drafters.items())),
        round_scale_by_dataset=tuple(sorted(scales.items())),
    )


def _fit(arrays: _Arrays, prior: FittedParams, free: tuple[str, ...], start: FittedParams) -> FittedParams:
    # imported here: scipy.optimize takes most of a second to load and only calibration needs it
    from scipy.optimize import least_squares

    base_ms = float(np.median(arrays.base_step_ms))
    # natural size of each parameter, for the prior's pull and the solver's steps
    scale = {
        "draft_step_ms": 0.1 * base_ms,
        "draft_branch_ms": 0.1 * base_ms,
        "round_overhead_ms": 0.1 * base_ms,
        "verify_growth": 0.1,
        "acc_to_acceptance": 0.1,
    }

    scale["round_scale"] = 0.1

    def kind(name: str) -> str:
        if name.startswith(DRAFTER_PREFIX):
            return "draft_step_ms"
        return "round_scale" if name.startswith(DATASET_PREFIX) else name

    bounds = {"acc_to_acceptance": ACC_FACTOR_BOUNDS, "round_scale": DATASET_SCALE_BOUNDS}
    lower = np.array([bounds.get(kind(n), (0.0, np.inf))[0] for n in free])
    upper = np.array([bounds.get(kind(n), (0.0, np.inf))[1] for n in free])
    prior_x = np.array([_value(prior, n) for n in free])
    x_scale = np.array([scale[kind(n)] for n in free])
    weight = np.array(
        [
            DATASET_PRIOR_WEIGHT
            if kind(n) == "round_scale"
            else DRAFTER_PRIOR_WEIGHT
            if kind(n) == "draft_step_ms" and n != "draft_step_ms"
            else PRIOR_WEIGHT
            for n in free
        ]
    )

    def params(x: np.ndarray) -> FittedParams:
        return _assemble(prior, dict(zip(free, (float(v) for v in x), strict=True)))

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.concatenate([arrays.residuals(params(x)), weight * (x - prior_x) / x_scale])

    # the solver stalls on a starting point at a bound: start just inside
    x0 = np.clip([_value(start, n) for n in free], lower + 0.01 * x_scale, upper - 0.01 * x_scale)
    result = least_squares(
        residuals, x0, bounds=(lower, upper), loss=LOSS, f_scale=LOSS_SCALE, x_scale=x_scale
    )
    return params(result.x)


def _linear_start(arrays: _Arrays, prior: FittedParams, free: tuple[str, ...]) -> FittedParams:
    """Non-negative least squares on the measured round times (1000 tau / tok/s), which are linear in
    the round-time parameters: a good start for the robust fit."""
    from scipy.optimize import nnls

    columns = {
        "verify_growth": arrays.base_step_ms * arrays.shape * arrays.extra_verified,
        "draft_branch_ms": arrays.load_scale * arrays.steps * arrays.branches,
        "round_overhead_ms": arrays.load_scale,
    }
    for index, name in enumerate(arrays.drafter_names):
        columns[_drafter_param(arrays, name)] = np.where(
            arrays.drafter_index == index, arrays.load_scale * arrays.steps, 0.0
        )
    names = [n for n in free if n in columns]
    known = arrays.has_tau
    if np.count_nonzero(known) < len(names):
        return prior
    design = np.column_stack([columns[n][known] for n in names])
    target = 1000.0 * arrays.measured_tau[known] / arrays.measured_tps[known] - arrays.base_step_ms[known]
    solution, _ = nnls(design, target)
    return _assemble(prior, dict(zip(names, (float(v) for v in solution), strict=True)))


def fit_calibration(
    observations: Sequence[CalibrationObservation], prior: FittedParams | None = None
) -> CalibrationFit:
    """Fit the free parameters (draft step, branch cost when trees were run, overhead, verify growth,
    and acc_to_acceptance when training rates are known) and measure the fit in-sample and by
    leave-one-out (k-fold above LOO_MAX_OBSERVATIONS)."""
    prior = prior or FittedParams()
    arrays = _Arrays(observations)
    free = _free_parameters(arrays)
    # the datasets' factors are pulled to 1 and need no benchmarks of their own beyond the minimum
    core = [n for n in free if not n.startswith(DATASET_PREFIX)]
    if arrays.n < max(MIN_OBSERVATIONS, len(core) + 1):
        raise NotEnoughObservations(
            f"{arrays.n} benchmark(s) for {len(core)} free parameter(s); need at least "
            f"{max(MIN_OBSERVATIONS, len(core) + 1)}"
        )
    params = _fit(arrays, prior, free, _linear_start(arrays, prior, free))
    errors = arrays.predicted_tps(params) / arrays.measured_tps - 1.0

    folds = np.arange(arrays.n) % CV_FOLDS if arrays.n > LOO_MAX_OBSERVATIONS else np.arange(arrays.n)
    cv_errors = np.empty(arrays.n)
    for fold in np.unique(folds):
        held_out = folds == fold
        training = arrays.subset(~held_out)
        held_out_params = _fit(training, prior, _free_parameters(training), params)
        test = arrays.subset(held_out)
        cv_errors[held_out] = test.predicted_tps(held_out_params) / test.measured_tps - 1.0
    return CalibrationFit(
        params=params,
        prior=prior,
        free=free,
        n_observations=arrays.n,
        errors=tuple(float(e) for e in errors),
        cv_errors=tuple(float(e) for e in cv_errors),
        cross_validation="leave-one-out" if arrays.n <= LOO_MAX_OBSERVATIONS else f"{CV_FOLDS}-fold",
    )


def fit_draft_costs(observations: Sequence[CalibrationObservation], prior: FittedParams) -> FittedParams:
    """Only each drafter's draft cost fitted, every shared cost kept at `prior`: what one to three
    benchmarks can say without giving wild parameters (fit_calibration needs more)."""
    if not observations:
        raise NotEnoughObservations("no benchmarks to fit a draft cost to")
    arrays = _Arrays(observations)
    free = tuple(_drafter_param(arrays, name) for name in arrays.drafter_names)
    return _fit(arrays, prior, free, prior)


def predict_observations(params: FittedParams, observations: Sequence[CalibrationObservation]) -> list[float]:
    """Predicted tok/s of each observation under `params` (tau from training rates when known)."""
    return [float(v) for v in _Arrays(observations).predicted_tps(params)]
