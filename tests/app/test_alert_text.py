"""The lead line of an alert, on diagnoses the cost model's own rules write (so the wording stays in step
with them): the story of DESIGN §1 (161 tok/s predicted, 82.3 measured, EAGLE served to an EAGLE3 drafter)."""

import pytest

from specdash.app.alert_text import GAP_CONVENTION, cause_phrase, gap_phrase, lead_line
from specdash.costmodel.diagnoses import (
    GapContext,
    acceptance_shortfall,
    algorithm_mismatch,
    beyond_trained_depth,
    hidden_size_mismatch,
    round_overhead,
)
from specdash.costmodel.gaps import GapDecomposition

# tau 2.1 at 161 tok/s predicted and 82.3 measured: rounds of 1000 * 2.1 / 161 = 13.04 ms and
# 1000 * 2.1 / 82.3 = 25.52 ms; gap 1 - 82.3 / 161 = 48.9 %
STORY = GapDecomposition(
    measured_tps=82.3,
    predicted_tps=161.0,
    gap=1 - 82.3 / 161.0,
    measured_round_ms=1000 * 2.1 / 82.3,
    predicted_round_ms=1000 * 2.1 / 161.0,
    acceptance_factor=1.0,
    round_factor=82.3 / 161.0,
    unexplained_ms=1000 * 2.1 / 82.3 - 1000 * 2.1 / 161.0,
    measured_accept_length=2.1,
    predicted_accept_length=2.1,
)


def alert(diagnosis, gap=STORY.gap, source="calibrated") -> dict:
    return {"gap": gap, "source": source, "code": diagnosis.code, "diagnoses": [diagnosis.as_dict()]}


def test_the_story_reads_as_said_aloud():
    found = algorithm_mismatch(GapContext(STORY, benchmark_algorithm="EAGLE", drafter_algorithm="EAGLE3"))
    assert lead_line(alert(found)) == (
        "Measured 49 % slower than the calibrated prediction; the run is invalid: the server used EAGLE, "
        "the drafter is EAGLE3."
    )


@pytest.mark.parametrize(
    "context,expected",
    [
        (
            GapContext(STORY, draft_hidden_size=7168, drafter_hidden_size=21504),
            "the run is invalid: the drafter got 7168-dim hidden states, it was trained on 21504",
        ),
        (
            GapContext(STORY, num_steps=7, num_draft_tokens=8, ttt_length=5),
            "it drafts 7 steps deep but was trained 5 deep",
        ),
        (GapContext(STORY, threshold=0.1), "each round takes 25.5 ms instead of 13.0 ms"),
    ],
)
def test_each_cause_in_a_clause(context, expected):
    found = next(
        d
        for rule in (hidden_size_mismatch, beyond_trained_depth, round_overhead)
        if (d := rule(context)) is not None
    )
    assert cause_phrase(found.code, found.message) == expected


def test_a_shortfall_names_both_accept_lengths():
    short = GapDecomposition(
        **{**vars_of(STORY), "measured_accept_length": 1.6, "acceptance_factor": 1.6 / 2.1}
    )
    found = acceptance_shortfall(GapContext(short))
    assert cause_phrase(found.code, found.message) == "it accepts fewer tokens than expected (τ 1.60 vs 2.10)"


def vars_of(decomposition: GapDecomposition) -> dict:
    return {name: getattr(decomposition, name) for name in decomposition.__dataclass_fields__}


@pytest.mark.parametrize(
    "gap,source,expected",
    [
        (0.48, "theory", "measured 48 % slower than the first-principles prediction"),
        (-0.12, "calibrated", "measured 12 % faster than the calibrated prediction"),
        (0.001, "calibrated", "measured within 0.5% of the calibrated prediction"),
        (0.3, "vendor-sim", "measured 30 % slower than the prediction “vendor-sim”"),
        (None, "theory", "not compared with a prediction yet"),
    ],
)
def test_the_gap_in_words_and_its_sign(gap, source, expected):
    assert gap_phrase(gap, source) == expected


def test_an_alert_no_rule_explains_says_only_how_far_off():
    assert lead_line({"gap": 0.2, "source": "theory", "code": None, "diagnoses": []}) == (
        "Measured 20 % slower than the first-principles prediction."
    )


def test_the_convention_is_spelled_out():
    assert "slower" in GAP_CONVENTION and "measured / predicted" in GAP_CONVENTION


@pytest.mark.parametrize(
    "source,expected",
    [
        ("theory", "the model is too pessimistic for this deployment: calibrate it"),
        ("calibrated", "it runs faster than predicted even after calibration"),
        ("vendor.json", "that prediction is too pessimistic here"),
    ],
)
def test_a_faster_benchmark_is_told_to_calibrate_only_against_theory(source, expected):
    from dataclasses import replace

    from specdash.costmodel.diagnoses import faster_than_predicted

    faster = replace(STORY, measured_tps=200.0, gap=1 - 200.0 / 161.0)
    found = faster_than_predicted(GapContext(faster, prediction_source=source))
    assert found is not None
    assert cause_phrase(found.code, found.message) == expected
