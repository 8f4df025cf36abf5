"""The prediction of one point, measured or not: a checkpoint on a deployment at a depth, top-k, load and
dataset, with its expected-error band and what it extrapolates. It is the stored predictions' own
computation (answers/predicting.predict_under) under the set that judges the deployment's benchmarks
(answers/verdicts.VERDICT_ORDER: calibrated, else theory), so a point that was benchmarked reads the same here
as on the Leaderboard and the Alerts page."""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.answers.context import context_model_for
from specdash.answers.predicting import PredictionCache, predict_under, trained_accept_length
from specdash.answers.refresh_context import refresh_context
from specdash.answers.verdicts import verdict_rank
from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.context import ContextModel
from specdash.costmodel.depth import DepthPoint
from specdash.costmodel.domain import PredictionSource, TauSource
from specdash.costmodel.priors import drafter_family
from specdash.costmodel.sources import AcceptLengthChoice
from specdash.costmodel.throughput import verified_tokens
from specdash.costmodel.uncertainty import extrapolated_band, prior_error_band
from specdash.db.acceptance import measured_acceptance
from specdash.db.loadmodels import served_loads
from specdash.db.models import Benchmark
from specdash.rows import Drafter, PredictionKey, RefreshContext, SetPlan


@dataclass(frozen=True)
class PointAnswer:
    """The predicted numbers of one point and what they rest on."""

    steps: int  # 0: no speculation
    topk: int
    draft_tokens: int
    concurrency: float
    tps: float  # per request
    accept_length: float
    round_ms: float
    baseline_tps: float  # the step without speculation at this load, per request
    baseline_estimated: bool  # no run without speculation on the deployment: the baseline is an estimate
    band: float  # expected relative error, widened where the load is extrapolated
    extrapolated_depth: bool  # acceptance past the positions the rates hold for
    extrapolated_load: bool  # outside the loads the deployment was measured at
    speedup_held: bool = False  # extrapolated: held at the nearest measured load's speedup (see predict)
    context_tokens: float | None = None  # the mean decode context asked for (None: the benchmarks')
    extrapolated_context: bool = False  # no benchmark of the deployment ran near that context

    @property
    def speedup(self) -> float:
        return self.tps / self.baseline_tps

    @property
    def extrapolated(self) -> bool:
        return self.extrapolated_depth or self.extrapolated_load or self.extrapolated_context

    def depth_point(self) -> DepthPoint:
        """The point as a depth curve draws it (its hollow marker: acceptance extrapolated)."""
        return DepthPoint(
            steps=self.steps,
            draft_tokens=self.draft_tokens,
            accept_length=self.accept_length,
            extrapolated=self.extrapolated_depth,
            tps=self.tps,
            round_ms=self.round_ms,
            speedup=self.speedup,
            break_even_accept_length=self.round_ms * self.baseline_tps / 1000.0,
        )


@dataclass
class PointModel:
    """What predicting a checkpoint on a deployment reads once: the refresh's context for it, the judging
    set, the drafter's acceptance per position and the loads the deployment was measured at."""

    checkpoint_id: int
    deployment_id: int
    dataset: str
    context: RefreshContext
    plan: SetPlan
    rates: tuple[float, ...]  # the training rates, else those the measured accept lengths imply
    tau_source: TauSource
    measured_loads: tuple[int, ...]
    deepest_benchmarked: int  # the deepest draft the checkpoint was benchmarked at on the deployment
    cache: PredictionCache = field(default_factory=PredictionCache)
    # how rounds move with context (answers/context.py); None: at the benchmarks' context only
    lengths: ContextModel | None = None
    _memo: dict[str, float | None] = field(default_factory=dict, repr=False)

    @property
    def source(self) -> PredictionSource:
        return PredictionSource(self.plan.source)

    @property
    def version(self) -> int:
        return self.context.versions[self.plan.id]

    @property
    def depth(self) -> int:
        """Positions the rates hold for; deeper ones are extrapolated."""
        return len(self.rates)

    def load_extrapolated(self, concurrency: float) -> bool:
        loads = self.measured_loads
        return not loads or not min(loads) <= concurrency <= max(loads)

    def band(self, concurrency: float) -> float:
        band = self.plan.band if self.plan.band is not None else prior_error_band(self.tau_source)
        return extrapolated_band(band) if self.load_extrapolated(concurrency) else band

    def _tau(self, key: PredictionKey) -> AcceptLengthChoice:
        drafter = self.drafter
        if drafter.rates:
            trained = trained_accept_length(key, drafter, self.plan, self.cache)
            return AcceptLengthChoice(
                trained.accept_length, TauSource.TRAINING, trained.extrapolated, trained.approximation
            )
        tau = predict_accept_length(self.rates, key.steps, key.topk, key.draft_tokens)
        return AcceptLengthChoice(tau.accept_length, TauSource.MEASURED, tau.extrapolated, tau.approximation)

    @property
    def drafter(self) -> Drafter:
        return self.context.drafters[self.checkpoint_id]

    def predict(
        self, steps: int, topk: int = 1, concurrency: float = 1, context_tokens: float | None = None
    ) -> PointAnswer | None:
        """The point at K = `steps` (a chain, or a tree of `topk`), batch `concurrency` and a mean decode
        context of `context_tokens` (None: the context the deployment's benchmarks ran at); None without a
        baseline to predict against."""
        answer = self.at_reference(steps, topk, concurrency)
        if answer is None or context_tokens is None or self.lengths is None:
            return answer
        return self._at_context(answer, context_tokens)

    def round_at(self, steps: int, topk: int, concurrency: float) -> float | None:
        """The round (steps 0: the step without speculation) in ms at the benchmarks' context."""
        answer = self.at_reference(max(steps, 1), topk, concurrency)
        if answer is None:
            return None
        return answer.round_ms if steps else 1000.0 / answer.baseline_tps

    def step_ms(self) -> float | None:
        """T1: the step without speculation of one request alone, at the benchmarks' context (read once)."""
        if "step" not in self._memo:
            one = self._predict(1, 1, 1)
            self._memo["step"] = None if one is None or not one.baseline_tps else 1000.0 / one.baseline_tps
        return self._memo["step"]

    def _at_context(self, answer: PointAnswer, context: float) -> PointAnswer:
        """The answer moved to another context: the KV read of every request in flight moves the round
        and the step without speculation alike (costmodel/context.py)."""
        lengths, step = self.lengths, self.step_ms()
        assert lengths is not None
        if step is None:
            return answer
        batch = answer.concurrency
        round_ms = lengths.moved(answer.round_ms, step, batch, context)
        base_ms = lengths.moved(1000.0 / answer.baseline_tps, step, batch, context)
        outside = lengths.extrapolated(context)
        return replace(
            answer,
            tps=1000.0 * answer.accept_length / round_ms,
            round_ms=round_ms,
            baseline_tps=1000.0 / base_ms,
            band=extrapolated_band(answer.band) if outside and not answer.extrapolated_load else answer.band,
            context_tokens=context,
            extrapolated_context=outside,
        )

    def at_reference(self, steps: int, topk: int = 1, concurrency: float = 1) -> PointAnswer | None:
        """The point at the benchmarks' context. Outside the loads the deployment was measured at nothing
        says how its round grows with the batch, so no depth gains more there than at the nearest
        measured load: its speedup is held at that one's when the model's would be higher."""
        answer = self._predict(steps, topk, concurrency)
        if answer is None or not answer.extrapolated_load or not self.measured_loads:
            return answer
        nearest = min(self.measured_loads, key=lambda load: abs(load - concurrency))
        measured = self._predict(steps, topk, nearest)
        if measured is None or answer.speedup <= measured.speedup:
            return answer
        tps = answer.baseline_tps * measured.speedup
        return replace(answer, tps=tps, round_ms=1000.0 * answer.accept_length / tps, speedup_held=True)

    def _predict(self, steps: int, topk: int, concurrency: float) -> PointAnswer | None:
        key = PredictionKey(
            self.checkpoint_id,
            self.deployment_id,
            steps,
            topk,
            verified_tokens(steps, topk),
            concurrency,  # type: ignore[arg-type]  # a load never measured may be any number >= 1
            self.dataset,
        )
        tau = self._tau(key)
        family = drafter_family(self.drafter.speculative_algorithm)
        predicted = predict_under(self.plan, key, tau, family, self.context, self.cache)
        if predicted is None:
            return None
        values, result, _ = predicted
        return PointAnswer(
            steps=steps,
            topk=topk,
            draft_tokens=key.draft_tokens,
            concurrency=concurrency,
            tps=result.tps,
            accept_length=result.accept_length,
            round_ms=result.round_ms,
            baseline_tps=float(values.baseline_tps or 0.0),
            baseline_estimated=bool(values.baseline_estimated),
            band=self.band(concurrency),
            extrapolated_depth=tau.extrapolated,
            extrapolated_load=self.load_extrapolated(concurrency),
        )


def point_model(
    session: Session,
    checkpoint_id: int,
    deployment_id: int,
    dataset: str | None = None,
    acceptance: TauSource | None = None,
) -> PointModel | None:
    """The model of a checkpoint's points on a deployment (acceptance from `dataset`'s benchmarks, or all,
    when the checkpoint has no training rates or `acceptance` asks for MEASURED); None without an active set or an acceptance to predict
    with."""
    # a reader's context: no theory set added, no load fit stored
    context = refresh_context(session, [checkpoint_id], [deployment_id], add_theory_sets=False)
    plans: Sequence[SetPlan] = context.plans.get(deployment_id, ())
    drafter = context.drafters.get(checkpoint_id)
    if not plans or drafter is None:
        return None
    plan = min(plans, key=lambda p: verdict_rank(p.source))
    if acceptance == TauSource.MEASURED and drafter.rates:  # the benchmarks' acceptance asked for instead
        drafter = replace(drafter, rates=())
        context.drafters[checkpoint_id] = drafter
    rates, tau_source = drafter.rates, TauSource.TRAINING
    if not rates:
        rates, tau_source = measured_acceptance(session, checkpoint_id, dataset).rates, TauSource.MEASURED
    if not rates:
        return None
    loads = tuple(served_loads(session, deployment_id))
    deepest = session.scalar(
        select(func.max(Benchmark.num_steps)).where(
            Benchmark.checkpoint_id == checkpoint_id,
            Benchmark.deployment_id == deployment_id,
            Benchmark.superseded_by_id.is_(None),
        )
    )
    model = PointModel(
        checkpoint_id, deployment_id, dataset or "", context, plan, rates, tau_source, loads, deepest or 0
    )
    model.lengths = context_model_for(
        session,
        deployment_id,
        checkpoint_id,
        context.facts[deployment_id].architecture,
        plan.costs.comm_fraction or 0.0,
        model.round_at,
        model.step_ms,
    )
    return model
