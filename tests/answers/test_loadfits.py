"""The load-model decisions of answers/loadfits.py without a database: which deployments' baselines are
estimated, a stored load fit reused or one made now, and how an active set predicts."""

import pytest

from specdash.answers.loadfits import estimate_deployments, fitted, needing_estimates, set_plan
from specdash.costmodel.calibrated import CalibratedSet, CostSet
from specdash.costmodel.load_observations import StoredFit
from specdash.costmodel.loadcosts import load_params_json
from specdash.costmodel.loadmodel import prior_load_params
from specdash.costmodel.priors import DeploymentFacts
from specdash.rows import ActiveSet, Baselines

FACTS = DeploymentFacts(gpu="H100", tp_size=1)


def _sweep() -> list:
    """A depth sweep at loads 1, 4 and 16 of one drafter: tok/s from a step that grows with load and depth."""
    rows = []
    for load in (1, 4, 16):
        for k in (1, 2, 3, 4, 5):
            tau = 1 + 0.8 * (1 - 0.7**k) / 0.3
            step = 10.0 * (1 + 0.05 * load) * (1 + 0.15 * k)
            rows.append((("7", k, 1, k + 1, load), 1000.0 * tau / step, tau))
    return rows


def test_only_deployments_measured_at_no_load_without_speculation_are_estimated():
    measured = Baselines(by_dataset={(1, 8, ""): 500.0}, by_concurrency={(1, 8): 500.0})
    assert needing_estimates([1, 2, 3], measured, None) == [2, 3]
    assert needing_estimates([1, 2, 3], measured, [1, 3]) == [3]
    assert needing_estimates([1, 2, 3], measured, []) == []


def test_a_fit_is_made_when_none_is_stored_and_reused_while_the_data_holds():
    keyed, families, facts = {5: _sweep(), 6: []}, {5: {"7": "eagle3"}}, {5: FACTS, 6: FACTS}
    outcomes = estimate_deployments(keyed, families, facts, {})
    assert list(outcomes) == [5]  # no benchmark to fit: no estimate
    made = fitted(outcomes)
    assert made.refitted == (5,) and made.estimates[5] == outcomes[5].estimate
    first = outcomes[5]
    stored = {5: StoredFit(first.data_key, first.benchmarks, first.estimate.to_json())}
    again = estimate_deployments(keyed, families, facts, stored)
    assert not again[5].refitted and again[5].estimate == first.estimate
    assert fitted(again).refitted == () and fitted(again).estimates == {5: first.estimate}


def test_a_set_predicts_by_load_only_when_its_fit_was_made_at_several_loads():
    theory = CostSet(baseline_tps=100.0)
    plan = set_plan(ActiveSet(3, 1, "theory", 1, theory), FACTS)
    assert (plan.id, plan.source, plan.costs, plan.load) == (3, "theory", theory, None)
    assert plan.band == theory.error_band()
    model = load_params_json(prior_load_params(FACTS, 20.0, {}))
    one_load = CostSet(fit=CalibratedSet(load_model=model, load_levels=1, error_band=0.12))
    assert set_plan(ActiveSet(4, 1, "calibrated", 2, one_load), FACTS).load is None
    several = CostSet(fit=CalibratedSet(load_model=model, load_levels=3, error_band=0.12))
    plan = set_plan(ActiveSet(5, 1, "calibrated", 3, several), FACTS)
    assert plan.load is not None and plan.load == several.fit.load_params(FACTS.architecture)
    assert plan.band == pytest.approx(0.12)
