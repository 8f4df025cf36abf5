"""The refresh's judging without a database: typed rows and a hand-built context in, numbers out
(answers/judging.judge_batch), and how a verdict moves a stored alert (answers/verdicts.settle_alert)."""

import json
from dataclasses import replace
from datetime import datetime

import pytest

from specdash.answers.gaps import diagnoses_json
from specdash.answers.judging import judge_batch
from specdash.answers.verdicts import BenchmarkVerdict, settle_alert
from specdash.costmodel.calibrated import CostSet
from specdash.costmodel.collapse import COLLAPSE_CODE, COLLAPSE_SEVERITY
from specdash.costmodel.diagnoses import Diagnosis
from specdash.costmodel.domain import GapStatus, PredictionSource, TauSource
from specdash.costmodel.priors import DeploymentFacts
from specdash.rows import (
    AlertValues,
    Baselines,
    BenchmarkRow,
    DeploymentRow,
    Drafter,
    PredictionKey,
    PredictionValues,
    RefreshContext,
    SetPlan,
    prediction_key,
)

# The story (docs: DESIGN 3): TP8 over PCIe at 90 tok/s without speculation, half of each step in
# all-reduce, 1.93 ms of drafting over K = 3 steps, no growth of verify cost, no round overhead.
STORY_SET = SetPlan(
    7,
    PredictionSource.THEORY,
    CostSet(
        comm_fraction=0.5,
        draft_step_ms=1.93 / 3,
        round_overhead_ms=0.0,
        verify_growth_compute=0.0,
        verify_growth_comm=0.0,
    ),
    None,
)
# the server started with EAGLE instead of EAGLE3: one layer's hidden states (7168) instead of three (21504)
STORY_BENCHMARK = BenchmarkRow(11, 1, 1, "EAGLE", 3, 1, 4, 1, None, 82.3, 2.1, 7168)
KEY = PredictionKey(1, 1, 3, 1, 4, 1, "")


def story_context(**changes) -> RefreshContext:
    context = RefreshContext(
        deployments={1: DeploymentRow("pcie-tp8", 90.0, None)},
        facts={1: DeploymentFacts()},
        # no training metrics: the benchmark's own accept length stands in for the prediction's
        drafters={1: Drafter("EAGLE3", 21504, 7, 1, ())},
        plans={1: [STORY_SET]},
        versions={7: 1},
        baselines=Baselines({(1, 1, ""): 90.0}, {(1, 1): 90.0}),
        global_threshold=0.10,
        now=datetime(2026, 12, 5),
    )
    return replace(context, **changes)


def external(predicted_tps: float) -> PredictionValues:
    """An imported prediction stating its tok/s only."""
    return PredictionValues(None, predicted_tps, *[None] * 12)


def test_the_story_is_predicted_at_161_tps_and_judged_a_49_percent_gap():
    assert prediction_key(STORY_BENCHMARK, 3) == KEY
    judgement = judge_batch({KEY: [STORY_BENCHMARK]}, story_context())

    prediction = judgement.predictions[(KEY, PredictionSource.THEORY)]
    # T_base = 1000 / 90 = 11.11 ms; round = 11.11 + 1.93 = 13.04 ms; tok/s = 1000 * 2.1 / 13.04 = 161.03
    assert prediction.round_ms == pytest.approx(1000 / 90 + 1.93)
    assert prediction.compute_ms == prediction.comm_ms == pytest.approx(1000 / 90 / 2)
    assert prediction.predicted_tps == pytest.approx(161.03, abs=0.01)
    assert prediction.accept_length == 2.1 and prediction.accept_length_source == TauSource.MEASURED
    assert (prediction.parameter_set_id, prediction.baseline_tps, prediction.baseline_estimated) == (
        7,
        90.0,
        False,
    )

    gap = judgement.gaps[(11, KEY, PredictionSource.THEORY)]
    # gap = 1 - 82.3 / 161.03 = 48.9 %; measured round = 1000 * 2.1 / 82.3 = 25.5 ms, all of it the round's
    assert gap.gap == pytest.approx(1 - 82.3 / 161.029, abs=1e-4)
    assert gap.measured_round_ms == pytest.approx(25.52, abs=0.01)
    assert gap.acceptance_factor == 1.0
    assert gap.round_factor == pytest.approx(13.041 / 25.516, abs=1e-4)
    assert gap.severity == "critical"
    assert (
        '"code": "algorithm_mismatch"' in gap.diagnoses and '"code": "hidden_size_mismatch"' in gap.diagnoses
    )

    verdict = judgement.verdicts[11]
    assert (verdict.key, verdict.source, verdict.is_alert) == (KEY, PredictionSource.THEORY, True)
    assert (verdict.severity, verdict.code) == ("critical", "algorithm_mismatch")
    assert verdict.reason.startswith("against the theory prediction: algorithm_mismatch")
    assert (judgement.made, judgement.skipped) == (1, 0)


def test_an_external_prediction_is_judged_and_outranks_theory():
    """A stored, imported prediction of the benchmark's key: its round is the one its tok/s imply at the
    benchmark's accept length (1000 * 2.1 / 100 = 21 ms), and it judges the benchmark before theory."""
    judgement = judge_batch(
        {KEY: [STORY_BENCHMARK]}, story_context(), {KEY: {"vendor-sheet": external(100.0)}}
    )

    gap = judgement.gaps[(11, KEY, "vendor-sheet")]
    assert gap.gap == pytest.approx(1 - 82.3 / 100)
    assert gap.predicted_round_ms == pytest.approx(21.0)
    assert gap.acceptance_factor is None  # it states no accept length to split the gap by
    assert (11, KEY, PredictionSource.THEORY) in judgement.gaps  # theory stays as analysis
    assert (KEY, "vendor-sheet") not in judgement.predictions  # compared with, never recomputed
    verdict = judgement.verdicts[11]
    assert verdict.source == "vendor-sheet"
    assert verdict.reason.startswith("against the vendor-sheet prediction:")
    assert judgement.made == 1


def test_a_deployment_threshold_and_a_calibrated_set_decide_the_verdict():
    calibrated = STORY_SET._replace(id=8, source=PredictionSource.CALIBRATED, band=0.05)
    context = story_context(
        plans={1: [STORY_SET, calibrated]},
        versions={7: 1, 8: 2},
        deployments={1: DeploymentRow("pcie-tp8", 90.0, 0.6)},  # its own threshold: 60 %
    )
    honest = STORY_BENCHMARK._replace(speculative_algorithm="EAGLE3", draft_hidden_size=21504)
    verdict = judge_batch({KEY: [honest]}, context).verdicts[11]
    assert verdict.source == PredictionSource.CALIBRATED
    assert verdict.reason.startswith("against the calibrated (parameter set v2) prediction:")
    assert not verdict.is_alert  # 48.9 % is under the deployment's 60 %


def test_a_group_without_a_set_to_predict_with_is_skipped():
    judgement = judge_batch({KEY: [STORY_BENCHMARK]}, story_context(plans={}))
    assert (judgement.made, judgement.skipped) == (0, 1)
    assert not judgement.predictions and not judgement.gaps and not judgement.verdicts


def verdict(is_alert: bool, source: str = PredictionSource.THEORY) -> BenchmarkVerdict:
    severity, code = ("warning", "slow_round") if is_alert else (None, None)
    return BenchmarkVerdict(KEY, source, is_alert, severity, code, f"against the {source} prediction: why")


def alert(is_alert: bool, status: str, gap_id: int = 5, code: str | None = "slow_round") -> AlertValues:
    return AlertValues(gap_id, is_alert, "warning" if is_alert else None, code, "before", status, "a note")


def test_a_first_verdict_opens_its_alert():
    change = settle_alert(None, verdict(True), 5, lambda gap_id: None, superseded=False)
    assert change.values == AlertValues(5, True, "warning", "slow_round", verdict(True).reason, "open", None)
    assert change.raised and change.event is None


def test_an_unchanged_verdict_keeps_the_alert_as_stored():
    stored = AlertValues(5, True, "warning", "slow_round", verdict(True).reason, "investigating", "a note")
    change = settle_alert(stored, verdict(True), 5, lambda gap_id: None, superseded=False)
    assert change == (stored, None, False)


def test_an_alert_that_no_longer_holds_is_resolved_saying_which_prediction_superseded_it():
    sources = {5: PredictionSource.THEORY}.get
    change = settle_alert(
        alert(True, "investigating"),
        verdict(False, PredictionSource.CALIBRATED),
        6,
        sources,
        superseded=False,
    )
    why = "no longer an alert: the calibrated prediction supersedes the theory one; against the calibrated"
    assert change.values.status == GapStatus.RESOLVED and change.values.note.startswith(why)
    assert change.values[:2] == (6, False)
    assert change.event == ("investigating", "resolved", change.values.note)
    assert not change.raised


def test_an_alert_raised_again_after_it_was_resolved_opens_unless_its_benchmark_is_superseded():
    change = settle_alert(alert(False, "resolved"), verdict(True), 5, lambda gap_id: None, superseded=False)
    assert change.values.status == GapStatus.OPEN and change.values.note.startswith("raised again: against")
    assert change.event == ("resolved", "open", change.values.note) and change.raised
    kept = settle_alert(alert(False, "resolved"), verdict(True), 5, lambda gap_id: None, superseded=True)
    assert (kept.values.status, kept.values.note, kept.event, kept.raised) == (
        "resolved",
        "a note",
        None,
        True,
    )


def test_a_live_windows_acceptance_collapse_outranks_the_gap():
    stored = AlertValues(5, True, COLLAPSE_SEVERITY, COLLAPSE_CODE, "acceptance collapsed", "open", None)
    change = settle_alert(stored, verdict(False), 6, lambda gap_id: None, superseded=False)
    assert change.values[:5] == (6, True, COLLAPSE_SEVERITY, COLLAPSE_CODE, "acceptance collapsed")


def test_a_gaps_diagnoses_are_stored_as_json_dumps_writes_them():
    # stored text is compared as text by every later refresh: the hand-written encoding must be json.dumps's
    diagnoses = [
        Diagnosis("acceptance_shortfall", "warning", 'accept length 2.10 vs 3.00 ("history") ± 5 % \\ é 𝄞\n'),
        Diagnosis("no_baseline", "info", "plain"),
    ]
    expected = json.dumps([diagnosis.as_dict() for diagnosis in diagnoses])
    assert diagnoses_json(diagnoses) == expected
    assert json.loads(diagnoses_json(diagnoses))[0]["message"].endswith("é 𝄞\n")
    assert diagnoses_json([]) == "[]"
