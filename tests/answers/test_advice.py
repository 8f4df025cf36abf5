"""What becomes of a run's depth advisory, decided without a database: the advice and the stored
advisory in, the change out (raised, updated, opened again, quiet and resolved, or nothing)."""

import pytest

from specdash.answers.advice import (
    AdviceTarget,
    AdvisorySummary,
    StoredAdvisory,
    advice_values,
    decide,
    load_label,
    run_target_model,
    serves,
    summarize,
)
from specdash.costmodel.advisor import DepthAdvice
from specdash.costmodel.depth import DepthPoint

TARGET = AdviceTarget(7, 2, 1, "PCIe", (0.78, 0.7), "training", 11, "EAGLE3")


def _point(steps: int, tps: float) -> DepthPoint:
    return DepthPoint(steps, steps + 1, 2.0, False, tps, 10.0, 1.5, 1.2)


HOLDS = DepthAdvice(3, _point(7, 251.2), _point(3, 219.5), 0.02)  # 14 % deeper: worth raising
FINE = DepthAdvice(5, _point(5, 204.3), _point(5, 204.3), 0.02)


def _stored(status: str, active: bool, values=None) -> StoredAdvisory:
    return StoredAdvisory(40, status, active, values if values is not None else {})


def test_the_loads_are_named_but_batch_one():
    assert load_label("PCIe", 1) == "PCIe"
    assert load_label("PCIe", 8) == "PCIe at concurrency 8"


def test_a_prior_curve_says_so_in_the_message():
    assert advice_values(TARGET, HOLDS)["message"] == HOLDS.message("PCIe")
    prior = advice_values(TARGET._replace(source="prior"), HOLDS)["message"]
    assert prior == HOLDS.message("PCIe") + " (curve: EAGLE3 prior, before the run's own accuracies settle)"


def test_advice_that_holds_raises_a_new_open_advisory():
    write = decide(TARGET, HOLDS, None)
    assert write is not None
    assert write.advisory_id is None and write.active and write.new
    assert (
        write.values is not None
        and write.values["best_depth"] == 7
        and write.values["parameter_set_id"] == 11
    )
    assert write.event == ("open", write.values["message"])


def test_advice_that_holds_updates_the_stored_advisory_and_moves_its_time_only_when_it_changed():
    same = decide(TARGET, HOLDS, _stored("investigating", True, advice_values(TARGET, HOLDS)))
    assert same is not None and not same.touched and same.event is None and not same.new
    changed = decide(TARGET, HOLDS, _stored("open", True, {**advice_values(TARGET, HOLDS), "best_depth": 6}))
    assert changed is not None and changed.touched and changed.advisory_id == 40 and changed.event is None


def test_advice_that_holds_again_reopens_what_specdash_resolved_but_not_what_a_person_closed():
    reopened = decide(TARGET, HOLDS, _stored("resolved", False))
    assert reopened is not None and reopened.active and reopened.new
    assert reopened.event == ("open", f"advice holds again: {HOLDS.message('PCIe')}")
    dismissed = decide(TARGET, HOLDS, _stored("dismissed", False))
    assert dismissed is not None and dismissed.active and dismissed.event is None and not dismissed.new


@pytest.mark.parametrize(
    "status,resolved",
    [("open", True), ("investigating", True), ("explained", False), ("dismissed", False)],
)
def test_a_fine_configuration_quiets_the_advisory_and_resolves_it_while_open(status, resolved):
    write = decide(TARGET, FINE, _stored(status, True))
    assert write is not None and not write.active and write.values is None
    if resolved:
        assert write.event == (
            "resolved",
            "configuration fine now: on PCIe the best depth is 5 (+0% against the trained 5)",
        )
    else:
        assert write.event is None


def test_a_fine_configuration_changes_nothing_already_quiet():
    assert decide(TARGET, FINE, None) is None
    assert decide(TARGET, FINE, _stored("resolved", False)) is None


def test_the_summary_counts_what_holds_and_what_was_resolved():
    summary = AdvisorySummary()
    for write in (
        decide(TARGET, HOLDS, None),
        decide(TARGET, FINE, _stored("open", True)),
        decide(TARGET, FINE, _stored("explained", True)),
    ):
        assert write is not None
        summarize(summary, write)
    assert (summary.advised, summary.resolved, summary.new) == (1, 1, [])


def test_a_run_is_for_its_logged_target_model_else_its_trainer_configs():
    assert run_target_model("Kimi-K2.5", {"target_model_path": "/models/other"}) == "Kimi-K2.5"
    assert run_target_model(None, {"target_model_path": "/models/Kimi-K2.5"}) == "/models/Kimi-K2.5"
    assert run_target_model(None, {"target_model_path": 3}) is None
    assert run_target_model("", None) is None


@pytest.mark.parametrize(
    "deployment_model,served",
    [("/models/Kimi-K2.5/", True), ("moonshotai/kimi-k2.5", True), ("Kimi-K2", False), (None, False)],
)
def test_a_deployment_serves_the_model_of_the_same_name_wherever_it_was_loaded_from(deployment_model, served):
    assert serves(deployment_model, "/models/Kimi-K2.5") is served
