"""Each diagnosis rule fires when its cause is present, stays silent otherwise, and names the numbers."""

from dataclasses import replace

import pytest

from specdash.costmodel import (
    RULES,
    CostParams,
    Diagnosis,
    GapContext,
    decompose,
    diagnose,
    has_critical,
    throughput,
)
from specdash.costmodel.diagnoses import DIAGNOSIS_CODES, judge, worst_severity

STORY = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=1.93 / 3)


def context(
    measured_tps: float = 157.0, measured_tau: float | None = 2.1, predicted_tau: float = 2.1, **fields
) -> GapContext:
    """A benchmark of the story's drafter (EAGLE3, 21504-dim, TTT 3) served right, at 3 steps."""
    predicted = throughput(STORY, predicted_tau, steps=3)
    defaults = dict(
        decomposition=decompose(predicted, measured_tps, measured_tau),
        benchmark_algorithm="EAGLE3",
        drafter_algorithm="EAGLE3",
        draft_hidden_size=21504,
        drafter_hidden_size=21504,
        num_steps=3,
        num_draft_tokens=4,
        ttt_length=3,
        baseline_tps=90.0,
        baseline_measured=True,
        deployment="8x RTX PRO 6000, TP8, PCIe",
    )
    return GapContext(**(defaults | fields))


def codes(ctx: GapContext) -> set[str]:
    return {d.code for d in diagnose(ctx)}


def test_a_benchmark_that_follows_the_model_has_no_diagnosis():
    assert diagnose(context()) == []


RULE_CASES = [
    ("algorithm_mismatch", dict(benchmark_algorithm="EAGLE"), dict(benchmark_algorithm="eagle3")),
    (
        "algorithm_mismatch",
        dict(benchmark_algorithm="NEXTN", drafter_algorithm="EAGLE3"),
        dict(benchmark_algorithm="NEXTN", drafter_algorithm="EAGLE"),
    ),
    ("hidden_size_mismatch", dict(draft_hidden_size=7168), dict(draft_hidden_size=None)),
    ("beyond_trained_depth", dict(num_steps=15, num_draft_tokens=16), dict(num_steps=3, ttt_length=5)),
    (
        "beyond_trained_depth",
        dict(num_steps=7, num_draft_tokens=None),
        dict(num_steps=7, num_draft_tokens=4),
    ),  # a tree of 4 tokens reaches 3 deep
    ("slower_than_baseline", dict(measured_tps=82.3), dict(measured_tps=91.0)),
    ("round_overhead", dict(measured_tps=82.3), dict(measured_tps=82.3, measured_tau=1.1)),
    ("acceptance_shortfall", dict(measured_tps=120.0, measured_tau=1.6), dict(measured_tau=2.05)),
    (
        "acceptance_unknown",
        dict(measured_tps=82.3, accept_length_source="measured"),
        dict(measured_tps=82.3, accept_length_source="history"),
    ),
    (
        "round_overhead",
        dict(measured_tps=82.3, accept_length_source="history"),
        dict(measured_tps=82.3, accept_length_source="measured"),
    ),  # nothing predicts tau: not the round
    (
        "context_mix",
        dict(measured_tps=82.3, context_tokens=16512, reference_context=8832),
        dict(measured_tps=82.3, context_tokens=9000, reference_context=8832),
    ),  # a longer context, slower than predicted; within 25 % of the median it is no cause
    ("faster_than_predicted", dict(measured_tps=200.0), dict(measured_tps=170.0)),
    ("no_baseline", dict(baseline_measured=False), dict(baseline_measured=True)),
]


@pytest.mark.parametrize("code,fires,silent", RULE_CASES)
def test_rule_fires_and_stays_silent(code, fires, silent):
    assert code in codes(context(**fires))
    assert code not in codes(context(**silent))
    (rule,) = [rule for rule in RULES if rule.__name__ == code]
    assert rule(context(**fires)).code == code  # the rule's name is its code (DIAGNOSIS_CODES is built on it)


def test_every_rule_has_a_case():
    assert {code for code, _, _ in RULE_CASES} == set(DIAGNOSIS_CODES)


def test_the_story_is_diagnosed_with_its_numbers():
    found = {
        d.code: d
        for d in diagnose(context(measured_tps=82.3, benchmark_algorithm="EAGLE", draft_hidden_size=7168))
    }
    assert list(found) == [
        "algorithm_mismatch",
        "hidden_size_mismatch",
        "slower_than_baseline",
        "round_overhead",
    ]
    assert found["algorithm_mismatch"].severity == "critical"
    assert (
        "ran EAGLE but the drafter is EAGLE3: benchmark likely invalid" in found["algorithm_mismatch"].message
    )
    assert "fed 7168-dim hidden states but was trained on 21504" in found["hidden_size_mismatch"].message
    assert "82.3 tok/s is slower than no speculation (90.0 tok/s, measured baseline)" in (
        found["slower_than_baseline"].message
    )
    assert found["round_overhead"].message.startswith(
        "the round takes 25.5 ms instead of 13.0 ms: 12.5 ms per round unexplained by the cost model; "
        "acceptance is as predicted (2.10 vs 2.10)"
    )


@pytest.mark.parametrize(
    "fields,fragment",
    [
        (
            dict(num_steps=15, num_draft_tokens=16),
            "15 draft steps but the drafter was trained 3 deep (TTT): positions 4..15 are extrapolated",
        ),
        (dict(measured_tps=120.0, measured_tau=1.6), "accept length 1.60 measured vs 2.10 predicted (0.76x)"),
        (dict(measured_tps=200.0), "200.0 tok/s is 24% above the predicted 161.0"),
        (
            dict(baseline_measured=False, concurrency=8),
            "no no-speculation benchmark on 8x RTX PRO 6000, TP8, "
            "PCIe at concurrency 8; the prediction uses the "
            "profile's 90.0 tok/s",
        ),
    ],
)
def test_messages_name_the_numbers(fields, fragment):
    assert any(fragment in d.message for d in diagnose(context(**fields)))


def test_round_overhead_says_how_acceptance_differs_when_it_does():
    msg = next(
        d.message
        for d in diagnose(context(measured_tps=100.0, measured_tau=1.9))
        if d.code == "round_overhead"
    )
    assert "acceptance is 0.90x predicted (1.90 vs 2.10)" in msg


def test_round_overhead_needs_the_gap_to_pass_the_threshold():
    assert "round_overhead" not in codes(context(measured_tps=82.3, threshold=0.6))


def test_without_a_measured_tau_the_gap_cannot_be_split():
    found = codes(context(measured_tps=82.3, measured_tau=None))
    assert "round_overhead" not in found and "acceptance_shortfall" not in found
    assert "slower_than_baseline" in found


def test_setting_rules_work_without_a_prediction():
    # calibration screens benchmarks before any prediction exists
    ctx = replace(context(benchmark_algorithm="EAGLE"), decomposition=None)
    found = diagnose(ctx)
    assert [d.code for d in found] == ["algorithm_mismatch"] and has_critical(found)
    assert not has_critical(diagnose(replace(context(), decomposition=None)))


def test_diagnoses_come_most_severe_first_and_rules_are_pluggable():
    ctx = context(measured_tps=82.3, benchmark_algorithm="EAGLE", baseline_measured=False)
    found = diagnose(ctx)
    severities = [d.severity for d in found]
    assert severities == sorted(severities, key=["critical", "warning", "info"].index)
    assert worst_severity(found) == "critical" and worst_severity([]) is None

    def always(_ctx):
        return Diagnosis("custom", "info", "a rule added by a user")

    assert [d.code for d in diagnose(context(), rules=[*RULES, always])] == ["custom"]


@pytest.mark.parametrize(
    "source,says",
    [
        ("theory", "the model is too pessimistic for this deployment; calibrate it"),
        ("calibrated", "above the calibrated prediction 161.0: the calibration under-predicts this setting"),
        ("vendor.json", "above the prediction 161.0 of vendor.json: it is too pessimistic here"),
    ],
)
def test_faster_than_predicted_never_asks_to_calibrate_a_calibrated_prediction(source, says):
    (found,) = [
        d
        for d in diagnose(context(measured_tps=200.0, prediction_source=source))
        if d.code == "faster_than_predicted"
    ]
    assert says in found.message
    assert ("calibrate it" in found.message) == (source == "theory")


def test_every_rule_has_a_stable_code_named_after_it():
    assert [rule.__name__ for rule in RULES] == [
        "algorithm_mismatch",
        "hidden_size_mismatch",
        "beyond_trained_depth",
        "slower_than_baseline",
        "round_overhead",
        "acceptance_shortfall",
        "acceptance_unknown",
        "context_mix",
        "faster_than_predicted",
        "no_baseline",
    ]


# --- the verdict: is a benchmark an alert, how severe, and why ------------------------------------------
def verdict(gap, threshold=0.10, band=None, codes_=(), factor=None, source=None):
    diagnoses = [
        Diagnosis(code, "critical" if code.endswith("mismatch") else "warning", "") for code in codes_
    ]
    return judge(gap, threshold, band, diagnoses, factor, source)


@pytest.mark.parametrize(
    "gap,band,raised,severity",
    [
        (0.09, None, False, None),  # under the threshold
        (0.10, None, True, "info"),  # at the threshold, no band: 1.0x
        (0.15, 0.22, False, None),  # past the threshold, inside the model's own band
        (0.30, 0.22, True, "info"),  # 0.30 / 0.22 = 1.36x
        (0.40, 0.22, True, "warning"),  # 1.8x
        (0.70, 0.22, True, "critical"),  # 3.2x
        (-0.70, 0.22, True, "info"),  # faster than predicted stays info
    ],
)
def test_a_gap_must_beat_threshold_and_band(gap, band, raised, severity):
    v = verdict(gap, band=band)
    assert (v.is_alert, v.severity) == (raised, severity)


def test_the_verdict_says_why():
    assert verdict(0.15, band=0.22).reason == (
        "gap +15.0% is past the threshold 10% but within the prediction's error band ±22%"
    )
    assert verdict(0.40, band=0.22).reason == (
        "gap +40.0% exceeds the threshold 10% and the prediction's error band ±22% (1.8x)"
    )


def test_configuration_diagnoses_alert_whatever_the_gap():
    v = verdict(0.02, band=0.22, codes_=("algorithm_mismatch", "round_overhead"))
    assert (v.is_alert, v.severity, v.code) == (True, "critical", "algorithm_mismatch")
    v = verdict(0.0, codes_=("beyond_trained_depth",))
    assert (v.is_alert, v.severity) == (True, "warning")


def test_acceptance_below_the_drafters_history_alerts_within_the_band():
    # 10 % below its own earlier benchmarks: gap 10 % is inside the 22 % band, the shortfall is not
    v = verdict(0.10, band=0.22, codes_=("acceptance_shortfall",), factor=0.90, source="history")
    assert (v.is_alert, v.severity, v.code) == (True, "warning", "acceptance_shortfall")
    # a training-based tau is too rough to alert on by itself
    assert not verdict(
        0.10, band=0.22, codes_=("acceptance_shortfall",), factor=0.90, source="training"
    ).is_alert
    # 4 % below history is noise
    assert not verdict(0.04, band=0.22, factor=0.96, source="history").is_alert


def test_a_cause_leads_before_a_symptom():
    assert verdict(0.6, codes_=("slower_than_baseline", "round_overhead")).code == "round_overhead"
