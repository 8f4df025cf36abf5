"""Predictions of benchmark groups: one per group (checkpoint, deployment, setting, load, dataset) under each
active parameter set of its deployment, from typed rows and the refresh's context; the stored predictions
of benchmarks and the answers at points never measured (answers/points.py) both come from here.

The numbers come from the cost model: the baseline and accept length by costmodel/sources.py, the costs
by the set's CostSet, tok/s by costmodel.throughput."""

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from specdash.costmodel import CostParams, Throughput, predict_accept_length, throughput
from specdash.costmodel.acceptance import AcceptLength
from specdash.costmodel.loadcosts import cost_params_at
from specdash.costmodel.priors import drafter_family
from specdash.costmodel.sources import AcceptLengthChoice, choose_accept_length, choose_baseline
from specdash.costmodel.uncertainty import prior_error_band, with_noise
from specdash.rows import BenchmarkRow, Drafter, PredictionKey, PredictionValues, RefreshContext, SetPlan


class Predicted(NamedTuple):
    """One prediction of a group, as its benchmarks are judged against it: made under one of the
    deployment's sets (predict_group), or external, stored and compared with."""

    source: str
    values: PredictionValues
    result: Throughput | None  # None: an external prediction (its tok/s are known, not its round)
    params: CostParams | None


@dataclass
class PredictionCache:
    """What predicting a batch has worked out once for many groups: how many predictions it made, the
    costs per set and the trained accept lengths."""

    count: int = 0
    params: dict[tuple[Any, ...], CostParams] = field(default_factory=dict)  # per (set, baseline, ...)
    # tau depends on the checkpoint and setting, not the deployment: computed once for all deployments
    taus: dict[tuple[Any, ...], AcceptLength] = field(default_factory=dict)


def predict_group(
    key: PredictionKey, group: list[BenchmarkRow], context: RefreshContext, made: PredictionCache
) -> list[Predicted]:
    """The group's prediction under each active set of its deployment that has a baseline and an accept
    length to predict with."""
    drafter = context.drafters[key.checkpoint_id]
    family = drafter_family(drafter.speculative_algorithm, group[0].speculative_algorithm)
    # a drafter's training rates come first (choose_accept_length): then neither of these is read
    measured_taus = () if drafter.rates else [b.accept_length for b in group if b.accept_length]
    references = context.references
    history = references.get(max(b.id for b in group)) if not drafter.rates else None
    results = []
    for plan in context.plans.get(key.deployment_id, ()):
        trained = trained_accept_length(key, drafter, plan, made) if drafter.rates else None
        tau = choose_accept_length(trained, history, measured_taus)
        if tau is None:
            continue
        predicted = predict_under(plan, key, tau, family, context, made)
        if predicted is not None:
            results.append(Predicted(plan.source, *predicted))
    return results


def predict_under(
    plan: SetPlan,
    key: PredictionKey,
    tau: AcceptLengthChoice,
    family: str,
    context: RefreshContext,
    made: PredictionCache,
) -> tuple[PredictionValues, Throughput, CostParams] | None:
    """The prediction of one point under one parameter set, with the accept length chosen for it: the
    stored predictions of benchmarks and the answers at points never measured (specdash/answers) both
    come from here. None without a baseline to predict against."""
    baseline = baseline_of(key, plan, context)
    if baseline is None:
        return None
    baseline_tps, estimated = baseline
    drafter = context.drafters[key.checkpoint_id]
    if plan.load is not None:  # the round of batch and depth fitted to every load
        params = cost_params_at(
            plan.load, key.concurrency, key.steps, key.draft_tokens, key.topk, str(drafter.run_id)
        )
    else:
        params = cost_params(key, drafter, family, plan, baseline_tps, context, made)
    result = throughput(params, tau.accept_length, key.steps, key.draft_tokens, key.topk)
    round_ = result.round
    values = PredictionValues(
        parameter_set_id=plan.id,
        predicted_tps=result.tps,
        accept_length=tau.accept_length,
        accept_length_source=tau.source,
        round_ms=result.round_ms,
        compute_ms=round_.compute_ms,
        comm_ms=round_.comm_ms,
        draft_ms=round_.draft_ms,
        overhead_ms=round_.overhead_ms,
        baseline_tps=baseline_tps,
        baseline_estimated=estimated,
        extrapolated=tau.extrapolated,
        approximation=tau.approximation,
        error_band=with_noise(
            plan.band if plan.band is not None else prior_error_band(tau.source),
            context.noise.get(key.deployment_id),
        ),
    )
    made.count += 1
    return values, result, params


def baseline_of(key: PredictionKey, plan: SetPlan, context: RefreshContext) -> tuple[float, bool] | None:
    """The no-speculation tok/s a prediction under this set compares with, and whether it is an estimate:
    a load model's own step at this batch (estimated when its fit had no run without speculation); else
    measured, interpolated or the profile's (costmodel.sources.choose_baseline); else estimated from the
    deployment's depth sweep (costmodel/estimated.py). None when there is none."""
    if plan.load is not None:
        fit = plan.costs.fit
        return 1000.0 / plan.load.base_step_ms(key.concurrency), bool(fit and fit.baseline_estimated)
    baselines, facts = context.baselines, context.facts[key.deployment_id]
    chosen = choose_baseline(
        baselines.lookup(key.deployment_id, key.concurrency, key.dataset),
        baselines.levels(key.deployment_id, key.dataset),
        key.concurrency,
        facts,
        plan.costs.comm_fraction or 0.0,
        plan.costs.baseline_tps,
    )
    if chosen:
        return chosen, False
    estimate = context.estimates.get(key.deployment_id)
    if estimate is None:
        return None
    return estimate.at(key.concurrency).baseline_tps, True


def trained_accept_length(
    key: PredictionKey, drafter: Drafter, plan: SetPlan, made: PredictionCache
) -> AcceptLength:
    """tau from the drafter's trained rates under the set's acc-to-acceptance factor (cached)."""
    acc_to_acceptance = plan.costs.acc_to_acceptance
    tau_key = (key.checkpoint_id, key.steps, key.topk, key.draft_tokens, acc_to_acceptance)
    tau = made.taus.get(tau_key)
    if tau is None:
        tau = made.taus[tau_key] = predict_accept_length(
            drafter.rates, key.steps, key.topk, key.draft_tokens, acc_to_acceptance
        )
    return tau


def cost_params(
    key: PredictionKey,
    drafter: Drafter,
    family: str,
    plan: SetPlan,
    baseline_tps: float,
    context: RefreshContext,
    made: PredictionCache,
) -> CostParams:
    """The set's costs for this group (cached: a set's costs differ by drafter and dataset only when its
    fit has per-drafter or per-dataset values)."""
    costs, facts = plan.costs, context.facts[key.deployment_id]
    # a calibrated set's drafting and overhead were fitted at its reference load
    reference_tps = context.baselines.at_reference(
        key.deployment_id, costs.fit, key.concurrency, key.dataset, facts, costs.comm_fraction or 0.0
    )
    params_key = (
        plan.id,
        baseline_tps,
        family,
        key.concurrency,
        key.draft_tokens,
        drafter.run_id if costs.by_drafter else None,
        key.dataset if costs.by_dataset else None,
        reference_tps,
    )
    params = made.params.get(params_key)
    if params is None:
        params = made.params[params_key] = costs.costs(
            baseline_tps,
            facts,
            family,
            key.concurrency,
            key.draft_tokens,
            drafter.run_id,
            key.dataset,
            reference_tps,
        )
    return params
