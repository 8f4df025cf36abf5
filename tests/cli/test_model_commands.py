"""`specdash model` (the calculator) and `specdash calibrate`, run in-process."""

import json

import pytest
from sqlalchemy import func, select

from specdash.db.engine import make_engine, reading
from specdash.db.models import ParameterSet, Prediction

STORY = ["--baseline-tps", "90", "--comm-fraction", "0.5"]


def model_json(invoke, *args: str) -> dict:
    result = invoke(None, "model", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_story_in_one_command(invoke):
    out = model_json(invoke, *STORY, "--accept-length", "2.1", "--draft-ms", "1.93", "--measured-tps", "82.3")
    assert out["tps"] == pytest.approx(161.0, abs=0.1)
    assert out["round_ms"] == pytest.approx(13.04, abs=0.01)
    assert out["speedup"] == pytest.approx(1.789, abs=0.001)
    assert out["break_even_accept_length"] == pytest.approx(1.17, abs=0.005)
    assert out["measured_round_ms"] == pytest.approx(25.5, abs=0.05)
    assert out["gap"] == pytest.approx(0.489, abs=0.001)
    assert out["acceptance_factor"] == pytest.approx(1.0)
    assert out["round_factor"] == pytest.approx(0.511, abs=0.001)
    assert out["unexplained_ms"] == pytest.approx(12.5, abs=0.05)
    assert "optimal_steps" not in out  # a single tau is no acceptance curve


def test_table_output_names_every_figure(invoke):
    result = invoke(
        None, "model", *STORY, "--accept-length", "2.1", "--draft-ms", "1.93", "--measured-tps", "82.3"
    )
    assert result.exit_code == 0
    lines = dict(line.split(None, 1) for line in result.output.splitlines())
    assert lines["tps"] == "161.03" and lines["gap"] == "+48.9%" and lines["measured_round_ms"] == "25.52"
    assert "approximation" not in lines  # None is left out


@pytest.mark.parametrize(
    "args,expected",
    [
        (
            ["--acceptance-rates", "0.742,0.60,0.58,0.56,0.55", "--draft-step-ms", "0.643"],
            dict(
                steps=5,
                draft_tokens=6,
                accept_length=2.67,
                extrapolated=False,
                accept_length_from="conditional_rates",
            ),
        ),
        (
            ["--acceptance-rates", "0.742,0.60,0.58,0.56,0.55", "--steps", "8"],
            dict(steps=8, draft_tokens=9, extrapolated=True),
        ),
        (["--survival-rates", "0.8,0.5,0.3"], dict(steps=3, accept_length=2.6)),
        (["--rate", "0.8", "--steps", "5"], dict(steps=5, accept_length=3.689)),
        (["--simulated-acc-len", "1.67"], dict(steps=3, accept_length=2.67)),
        (
            ["--accept-length", "3", "--draft-step-ms", "0.5", "--steps", "4"],
            dict(draft_ms=2.0, draft_tokens=5),
        ),
        (
            ["--accept-length", "3", "--steps", "7", "--topk", "4", "--draft-tokens", "8"],
            dict(topk=4, draft_tokens=8),
        ),
        (["--accept-length", "3", "--draft-ms", "3", "--steps", "6"], dict(draft_ms=3.0)),
        (
            ["--accept-length", "2", "--overhead-ms", "2", "--verify-growth-compute", "0.1", "--steps", "3"],
            dict(overhead_ms=2.0, compute_ms=5.556 * 1.3, comm_ms=5.556),
        ),
    ],
)
def test_model_options(invoke, args, expected):
    out = model_json(invoke, *STORY, *args)
    for key, value in expected.items():
        assert out[key] == (pytest.approx(value, abs=0.005) if isinstance(value, float) else value), key


def test_a_tree_is_marked_as_an_approximation(invoke):
    out = model_json(
        invoke, *STORY, "--acceptance-rates", "0.7,0.6,0.5", "--topk", "4", "--draft-tokens", "13"
    )
    assert out["approximation"].startswith("tree 3/4/13")
    chain = model_json(invoke, *STORY, "--acceptance-rates", "0.7,0.6,0.5")
    assert out["accept_length"] > chain["accept_length"] and chain["approximation"] is None


def test_the_optimal_depth_of_an_acceptance_curve(invoke):
    out = model_json(
        invoke, *STORY, "--draft-step-ms", "0.643", "--acceptance-rates", "0.742,0.60,0.58,0.56,0.55"
    )
    assert out["optimal_steps"] == 4 and out["optimal_tps"] >= out["tps"]
    deep = model_json(invoke, "--baseline-tps", "100", "--rate", "0.9", "--max-steps", "30")
    assert deep["optimal_steps"] == 30  # free drafting: deeper is always faster


def test_base_step_ms_stands_in_for_baseline_tps(invoke):
    by_step = model_json(invoke, "--base-step-ms", "11.111111", "--accept-length", "2.1")
    by_tps = model_json(invoke, "--baseline-tps", "90", "--accept-length", "2.1")
    assert by_step["tps"] == pytest.approx(by_tps["tps"])


@pytest.mark.parametrize(
    "args,message",
    [
        (["--accept-length", "2"], "give one of --baseline-tps or --base-step-ms"),
        (["--baseline-tps", "90"], "give exactly one of --accept-length, --acceptance-rates"),
        (["--baseline-tps", "90", "--accept-length", "2", "--rate", "0.5"], "give exactly one of"),
        (
            ["--baseline-tps", "90", "--accept-length", "2", "--draft-ms", "1", "--draft-step-ms", "1"],
            "give --draft-ms or --draft-step-ms, not both",
        ),
        (["--baseline-tps", "90", "--acceptance-rates", "0.5,x"], "expected comma-separated numbers"),
        (
            ["--baseline-tps", "90", "--acceptance-rates", "0.5,1.5"],
            "expected one or more rates between 0 and 1",
        ),
        (["--baseline-tps", "0", "--accept-length", "2"], "--baseline-tps"),
    ],
)
def test_bad_usage_exits_2_and_says_why(invoke, args, message):
    result = invoke(None, "model", *args)
    assert result.exit_code == 2
    assert message in result.output


def test_calibrate_shows_the_fit_without_saving(invoke, demo_url):
    result = invoke(demo_url, "calibrate")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == (
        "8x RTX PRO 6000, TP8, PCIe: 9 benchmark(s) fitted, 1 excluded (critical diagnosis: 1); "
        "costs in ms at concurrency 1"
    )
    assert lines[2].startswith("  draft_step_ms by drafter: k25-eagle3-100k-ttt5 0.6")
    assert lines[3].startswith("  free: draft_step_ms[k25-eagle3-10k], draft_step_ms[k25-eagle3-100k-ttt5]")
    assert "leave-one-out: median" in lines[4] and "error band" in lines[4]
    assert "8x H200, TP8, NVLink: skipped: 3 benchmark(s) for 4 free parameter(s); need at least 5" in lines
    assert lines[-1] == "(not saved: pass --apply to store these as calibrated parameter sets)"
    with reading(make_engine(demo_url)) as session:
        assert not session.scalar(select(func.count()).where(ParameterSet.source == "calibrated"))


def test_calibrate_apply_saves_and_refreshes(invoke, demo_url):
    result = invoke(demo_url, "calibrate", "--deployment", "8x RTX PRO 6000, TP8, PCIe", "--apply")
    assert result.exit_code == 0
    assert "  saved as parameter set v3 (calibrated, active)" in result.output
    assert "21 prediction(s) refreshed" in result.output
    gaps = json.loads(invoke(demo_url, "gaps", "--source", "calibrated", "--format", "json").output)
    story = [g for g in gaps if g["run"] == "k25-eagle3-10k"]
    assert len(story) == 1 and story[0]["diagnoses"][0]["code"] == "algorithm_mismatch"
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(func.count()).where(Prediction.source == "calibrated")) == 9


def test_calibrate_json(invoke, demo_url):
    out = json.loads(invoke(demo_url, "calibrate", "--format", "json").output)
    (fitted,) = out["calibrated"]
    assert fitted["deployment"] == "8x RTX PRO 6000, TP8, PCIe" and fitted["n_benchmarks"] == 9
    assert set(fitted["params"]) == {
        "draft_step_ms",
        "draft_branch_ms",
        "round_overhead_ms",
        "verify_growth",
        "acc_to_acceptance",
        "draft_step_ms_by_drafter",
        "round_scale_by_dataset",
    }
    # each drafter benchmarked on the deployment has its own draft cost, named by its run
    assert set(fitted["params"]["draft_step_ms_by_drafter"]) == {"k25-eagle3-10k", "k25-eagle3-100k-ttt5"}
    assert fitted["error_band"] >= 0.02
    assert 0 < fitted["loo_median_abs_rel_error"] < 0.04
    assert [s["deployment"] for s in out["skipped"]] == ["8x H200, TP8, NVLink"]


def test_calibrate_unknown_deployment(invoke, demo_url):
    result = invoke(demo_url, "calibrate", "--deployment", "nope")
    assert result.exit_code == 1
    assert (
        "no deployment named 'nope'; known: 8x H200, TP8, NVLink, 8x RTX PRO 6000, TP8, PCIe" in result.output
    )


def test_an_alert_judged_by_the_calibration_is_not_told_to_calibrate(invoke, calibrated_url):
    gaps = json.loads(
        invoke(calibrated_url, "gaps", "--status", "all", "--threshold", "0", "--format", "json").output
    )
    faster = [
        (g["source"], d["message"])
        for g in gaps
        for d in g["diagnoses"]
        if d["code"] == "faster_than_predicted"
    ]
    assert {source for source, _ in faster} == {"theory", "calibrated"}
    for source, message in faster:
        assert ("calibrate it" in message) == (source == "theory"), message
