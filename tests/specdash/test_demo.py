"""The PCIe story (docs/cost-model.md), as the demo data tells it."""

import json

import pytest


@pytest.fixture
def open_gaps(invoke, demo_url):
    result = invoke(demo_url, "gaps", "--status", "open", "--format", "json")
    assert result.exit_code == 0
    return json.loads(result.output)


def test_eagle_flag_benchmark_is_an_open_gap_of_about_49_percent(open_gaps):
    story = [g for g in open_gaps if g["run"] == "k25-eagle3-10k"]
    assert len(story) == 1
    gap = story[0]
    assert gap["checkpoint"] == "epoch_3"
    assert gap["deployment"] == "8x RTX PRO 6000, TP8, PCIe"
    assert gap["measured_tps"] == pytest.approx(82.3)
    assert gap["predicted_tps"] == pytest.approx(161.0, abs=0.5)
    assert gap["gap"] == pytest.approx(0.489, abs=0.005)
    assert gap["status"] == "open"
    assert gap["measured_round_ms"] == pytest.approx(25.5, abs=0.05)
    assert gap["predicted_round_ms"] == pytest.approx(13.0, abs=0.05)
    assert gap["acceptance_factor"] == pytest.approx(1.0, abs=0.01)


def test_eagle_flag_gap_is_diagnosed(open_gaps):
    gap = next(g for g in open_gaps if g["run"] == "k25-eagle3-10k")
    codes = {d["code"]: d for d in gap["diagnoses"]}
    assert codes["algorithm_mismatch"]["severity"] == "critical"
    assert "ran EAGLE but the drafter is EAGLE3" in codes["algorithm_mismatch"]["message"]
    assert "7168-dim" in codes["hidden_size_mismatch"]["message"]
    assert "12.5 ms per round unexplained" in codes["round_overhead"]["message"]
    assert "slower_than_baseline" in codes
    assert gap["diagnoses"][0]["severity"] == "critical"


def test_deep_speculation_beyond_trained_depth_is_flagged(open_gaps):
    deep = [g for g in open_gaps if g["num_draft_tokens"] == 16]
    assert len(deep) == 1
    assert {d["code"] for d in deep[0]["diagnoses"]} >= {"beyond_trained_depth", "acceptance_shortfall"}


def test_check_exits_1_on_the_demo(invoke, demo_url):
    result = invoke(demo_url, "check")
    assert result.exit_code == 1
    assert "k25-eagle3-10k" in result.output


def test_no_alert_for_benchmarks_that_follow_the_model(invoke, demo_url):
    rows = json.loads(invoke(demo_url, "gaps", "--status", "all", "--format", "json").output)
    assert {(r["run"], r["num_draft_tokens"]) for r in rows} == {
        ("k25-eagle3-10k", 4),
        ("k25-eagle3-100k-ttt5", 16),
    }
