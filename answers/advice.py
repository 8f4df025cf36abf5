"""Depth advice decided over what the store read: for a run on one deployment, the advice at each load it
serves, and what becomes of the run's advisory there (raised, updated, opened again, or quiet)."""

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from specdash.costmodel.calibrated import CostSet
from specdash.costmodel.domain import ACTIVE_STATUSES, GapStatus
from specdash.costmodel.load_observations import DeploymentLoad
from specdash.costmodel.priors import DeploymentFacts
from specdash.costmodel.sources import advice_loads
from specdash.summaries import AdvisorySummary

if TYPE_CHECKING:  # numpy (the load model's fit) only where a run is advised
    from specdash.costmodel.advisor import DepthAdvice


class AdviceTarget(NamedTuple):
    """One run advised on one deployment at one load, with the curve and parameter set used."""

    run_id: int
    deployment_id: int
    concurrency: int
    label: str
    curve: tuple[float, ...]
    source: str  # where the curve came from: training | prior
    parameter_set_id: int
    drafter_algorithm: str | None  # the run's speculative algorithm, which names the prior curve


class StoredAdvisory(NamedTuple):
    """A run's advisory on a deployment at a load as stored: its status, whether it holds, its values."""

    id: int
    status: str
    active: bool
    values: Mapping[str, Any]


class AdvisoryWrite(NamedTuple):
    """What becomes of one advisory: raised (no id), or the stored one changed."""

    target: AdviceTarget
    advisory_id: int | None  # None: a new advisory
    values: dict[str, Any] | None  # the advice's values to keep (None: left as they are)
    active: bool
    touched: bool  # its values changed while it held: its update time moves
    event: tuple[str, str] | None  # (status, note) specdash moves it to, saying why
    new: bool  # raised, or opened again: named among the refresh's new advisories


def run_target_model(target_model: str | None, config: Mapping[str, Any] | None) -> str | None:
    """The model a run trains a drafter for: the log's, else the trainer config's (None: neither says)."""
    target = target_model or (config or {}).get("target_model_path")
    return target if isinstance(target, str) and target else None


def serves(deployment_model: str | None, target_model: str) -> bool:
    """Whether a deployment serves the run's target model: the same model name, wherever it was loaded
    from and however it is cased."""
    return bool(deployment_model) and _short(deployment_model) == _short(target_model)


def _short(model: str | None) -> str:
    return (model or "").rstrip("/").rsplit("/", 1)[-1].strip().lower()


def load_label(deployment_name: str, concurrency: int) -> str:
    return deployment_name if concurrency == 1 else f"{deployment_name} at concurrency {concurrency}"


def advices_by_load(
    load: DeploymentLoad,
    loads: Sequence[int],
    curve: Sequence[float],
    trained_depth: int,
    drafter: str,
    min_gain: float,
) -> list[tuple[int, "DepthAdvice"]]:
    """The load model's advice (the schedule's depth) at every benchmarked load."""
    from specdash.costmodel.advisor import advise_depth_at_load

    scaled = [min(1.0, rate * load.acc_to_acceptance) for rate in curve]
    return [
        (c, advise_depth_at_load(load.params, scaled, trained_depth, c, drafter, min_gain=min_gain))
        for c in loads
    ]


def advices_by_baseline(
    costs: CostSet,
    stated_baseline_tps: float | None,
    measured_loads: Mapping[int, float],
    reference_at: Callable[[int], float | None],
    facts: DeploymentFacts,
    curve: Sequence[float],
    trained_depth: int,
    min_gain: float,
) -> list[tuple[int, "DepthAdvice"]]:
    """The batch-1 cost model's advice at each load with a measured baseline (else batch 1 at the
    stated one); `reference_at(load)` is the baseline at the calibrated set's reference load, if any."""
    from specdash.costmodel.advisor import advise_depth

    scaled = [
        min(1.0, rate * (1.0 if costs.acc_to_acceptance is None else costs.acc_to_acceptance))
        for rate in curve
    ]
    out = []
    for concurrency, baseline_tps in advice_loads(dict(measured_loads), stated_baseline_tps):
        # a calibrated set's drafting and overhead, fitted at its reference load, grow with the step
        advice = advise_depth(
            # the profile's costs, the priors for what it leaves unstated, at this load
            costs.costs(
                baseline_tps, facts, concurrency=concurrency, reference_baseline_tps=reference_at(concurrency)
            ),
            scaled,
            trained_depth,
            min_gain=min_gain,
        )
        out.append((concurrency, advice))
    return out


def advice_values(target: AdviceTarget, advice: "DepthAdvice") -> dict[str, Any]:
    """What an advisory keeps of the advice that holds."""
    message = advice.message(target.label) + (
        f" (curve: {target.drafter_algorithm or 'EAGLE3'} prior, before the run's own accuracies settle)"
        if target.source == "prior"
        else ""
    )
    return dict(
        trained_depth=advice.trained_depth,
        best_depth=advice.best.steps,
        gain=advice.gain,
        trained_tps=advice.at_trained.tps,
        best_tps=advice.best.tps,
        suggested_ttt=advice.suggested_ttt,
        time_factor=advice.time_factor,
        curve_source=target.source,
        curve=[round(r, 6) for r in target.curve],
        parameter_set_id=target.parameter_set_id,
        message=message,
    )


def decide(
    target: AdviceTarget, advice: "DepthAdvice", stored: StoredAdvisory | None
) -> AdvisoryWrite | None:
    """The advisory's change: the advice holds (a new advisory, or the stored one updated and opened
    again when specdash had resolved it), or the configuration is fine now (the stored one goes quiet,
    resolved when still open); None: nothing to change."""
    if not advice.advise:
        if stored is None or not stored.active:
            return None
        note = (
            f"configuration fine now: on {target.label} the best depth is {advice.best.steps} "
            f"({advice.gain:+.0%} against the trained {advice.trained_depth})"
        )
        # advisories share the alerts' statuses: resolved when still being looked at
        event = (GapStatus.RESOLVED, note) if stored.status in ACTIVE_STATUSES else None
        return AdvisoryWrite(target, stored.id, None, False, False, event, False)
    values = advice_values(target, advice)
    if stored is None:
        return AdvisoryWrite(target, None, values, True, False, (GapStatus.OPEN, values["message"]), True)
    if not stored.active:
        # resolved by specdash when it was fine; a person's status stays
        reopen = stored.status == GapStatus.RESOLVED
        event = (GapStatus.OPEN, f"advice holds again: {values['message']}") if reopen else None
        return AdvisoryWrite(target, stored.id, values, True, False, event, reopen)
    changed = any(stored.values.get(k) != v for k, v in values.items())
    return AdvisoryWrite(target, stored.id, values, True, changed, None, False)


def summarize(summary: AdvisorySummary, write: AdvisoryWrite) -> None:
    """Count one change into the refresh's summary (its new ids once stored)."""
    if write.active:
        summary.advised += 1
    elif write.event is not None:
        summary.resolved += 1
