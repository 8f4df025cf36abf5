"""The depth curve of a checkpoint on a deployment at one load (the predicted point at every draft depth)
and the best depth on it: what the What-if chart, the Checkpoints page's by-depth chart and each load of
the schedule draw and choose."""

from dataclasses import dataclass

from sqlalchemy.orm import Session

from specdash.answers.points import PointAnswer, PointModel, point_model
from specdash.costmodel.depth import DepthPoint, optimal_depth
from specdash.costmodel.domain import PredictionSource, TauSource

# the deepest draft considered when neither the trained depth nor the measured ones reach further
DEFAULT_MAX_STEPS = 8


@dataclass(frozen=True)
class DepthAnswer:
    """K = 1..max_steps at one load and top-k, the best of them, and what they rest on."""

    answers: list[PointAnswer]
    concurrency: float
    source: PredictionSource
    version: int  # the parameter set's version
    tau_source: TauSource
    depth: int  # positions the acceptance holds for; deeper ones are extrapolated
    band: float  # expected relative error at this load
    extrapolated_load: bool  # the deployment was never measured at this load
    context_tokens: float | None = None  # the mean decode context asked for (None: the benchmarks')
    extrapolated_context: bool = False  # no benchmark of the deployment ran near that context

    @property
    def points(self) -> list[DepthPoint]:
        return [a.depth_point() for a in self.answers]

    @property
    def best(self) -> PointAnswer:
        """The fastest depth; among equally fast ones the shallowest (costmodel.depth.optimal_depth)."""
        chosen = optimal_depth(self.points)
        return next(a for a in self.answers if a.steps == chosen.steps)

    @property
    def baseline_tps(self) -> float:
        return self.answers[0].baseline_tps

    @property
    def baseline_estimated(self) -> bool:
        return self.answers[0].baseline_estimated


def default_max_steps(model: PointModel) -> int:
    """The deepest draft a curve and a schedule consider unless told: the trained depth (or the deepest
    position the measured acceptance holds for), the deepest the checkpoint was benchmarked at on the
    deployment, and no fewer than DEFAULT_MAX_STEPS so the optimum and the fall after it show."""
    return max(model.drafter.ttt_length or model.depth, model.deepest_benchmarked, DEFAULT_MAX_STEPS)


def curve_of(
    model: PointModel,
    concurrency: float,
    topk: int = 1,
    max_steps: int | None = None,
    context_tokens: float | None = None,
) -> DepthAnswer | None:
    """The depth curve of a point model at one load and context (None: the benchmarks'); None without a
    baseline there."""
    deepest = max_steps or default_max_steps(model)
    answers = [model.predict(steps, topk, concurrency, context_tokens) for steps in range(1, deepest + 1)]
    if not answers or any(a is None for a in answers):
        return None
    return DepthAnswer(
        answers=[a for a in answers if a is not None],
        concurrency=concurrency,
        source=model.source,
        version=model.version,
        tau_source=model.tau_source,
        depth=model.depth,
        band=answers[0].band if answers[0] is not None else model.band(concurrency),
        extrapolated_load=model.load_extrapolated(concurrency),
        context_tokens=context_tokens,
        extrapolated_context=any(a is not None and a.extrapolated_context for a in answers),
    )


def depth_curve(
    session: Session,
    checkpoint_id: int,
    deployment_id: int,
    concurrency: float,
    topk: int = 1,
    max_steps: int | None = None,
    dataset: str | None = None,
    acceptance: TauSource | None = None,
) -> DepthAnswer | None:
    """The checkpoint's predicted tok/s at K = 1..max_steps on the deployment at `concurrency` and `topk`
    (acceptance from its training rates, else, or when `acceptance` asks for MEASURED, from its benchmarks
    on `dataset` or all); None without a
    parameter set, a baseline or an acceptance to predict with."""
    model = point_model(session, checkpoint_id, deployment_id, dataset, acceptance)
    return None if model is None else curve_of(model, concurrency, topk, max_steps)


def checkpoint_max_steps(session: Session, checkpoint_id: int, deployment_id: int) -> int:
    """default_max_steps of the checkpoint on the deployment (DEFAULT_MAX_STEPS when it has no model)."""
    model = point_model(session, checkpoint_id, deployment_id)
    return DEFAULT_MAX_STEPS if model is None else default_max_steps(model)
