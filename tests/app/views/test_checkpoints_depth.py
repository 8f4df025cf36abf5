"""The Checkpoints page by draft depth: a published drafter with one checkpoint is drawn as the predicted curve
over every depth with its band and what was measured at each depth (not a single dot on a checkpoint axis),
and a per-position acceptance derived from its benchmarks that rises after falling says why."""

import json

import pytest

from tests.app_support import chain_accept_lengths, run_page, specbundle_rows

LLAMA = "lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"  # the drafter: one checkpoint
QWEN = "lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-Instruct-2507-SpecForge"
# the page starts across datasets (the Deploy view's basis); the per-depth measurements below are financeqa's


def depth_chart(at) -> list[dict]:
    [chart] = [c for c in at.get("plotly_chart") if c.proto.id.endswith("checkpoints_depth_chart")]
    return json.loads(chart.proto.spec)["data"]


def test_a_single_checkpoint_is_a_curve_over_depth_with_its_measurements(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": LLAMA, "dataset": "financeqa"})
    assert not at.exception
    setting = at.selectbox(key="checkpoints_setting").value
    assert (setting.concurrency, setting.topk, at.selectbox(key="checkpoints_dataset").value) == (
        1,
        1,
        "financeqa",
    )
    # the file's output_throughput at batch 1 (per request = aggregate), top-k 1, financeqa, per depth
    expected = {
        r["steps"]: r["output_throughput"]
        for r in specbundle_rows()
        if r["name"] == LLAMA and r["benchmark"] == "financeqa" and r["topk"] == 1 and not r["baseline"]
    }
    assert expected == pytest.approx({3: 258.64, 5: 254.49, 7: 240.60}, abs=0.01)
    data = depth_chart(at)
    [measured] = [t for t in data if t.get("name") == "measured at concurrency 1"]
    assert measured["x"] == [3, 5, 7] and measured["y"] == pytest.approx([expected[k] for k in (3, 5, 7)])
    [predicted] = [t for t in data if t.get("name") == "predicted tok/s"]
    assert predicted["x"][:8] == list(range(1, 9))  # every depth, beyond the deepest measured
    assert any(t.get("fill") == "toself" for t in data)  # the band
    caption = next(c.value for c in at.caption if c.value.startswith("Line: the predicted tok/s"))
    assert "K = 3, K = 5, K = 7" in caption


def test_another_setting_draws_the_measurements_at_its_load_and_top_k(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": LLAMA, "dataset": "financeqa"})
    tree = next(s for s in at.selectbox(key="checkpoints_setting").options if "5/3/6" in s)
    at.selectbox(key="checkpoints_setting").select(tree).run()
    assert not at.exception
    expected = {
        r["steps"]: r["output_throughput"]
        for r in specbundle_rows()
        if r["name"] == LLAMA and r["benchmark"] == "financeqa" and r["topk"] == 3
    }
    [measured] = [t for t in depth_chart(at) if t.get("name") == "measured at concurrency 1"]
    assert measured["x"] == sorted(expected) and measured["y"] == pytest.approx(
        [expected[k] for k in sorted(expected)]
    )


def segment_rate(gain: float, survival: float, positions: int) -> float:
    """The constant conditional rate p with survival * (p + p^2 + ... + p^positions) = gain (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(200):
        p = (low + high) / 2
        low, high = (p, high) if survival * sum(p**i for i in range(1, positions + 1)) < gain else (low, p)
    return (low + high) / 2


def test_a_derived_acceptance_that_rises_says_why(monkeypatch, real_url):
    # by hand from the file: one constant rate per stretch between the published depths 3, 5, 7
    taus = chain_accept_lengths(QWEN)
    rates, survival, depth, tau = [], 1.0, 0, 1.0
    for steps, measured in taus.items():
        p = segment_rate(measured - tau, survival, steps - depth)
        rates += [p] * (steps - depth)
        survival *= p ** (steps - depth)
        depth, tau = steps, measured
    rising = [i + 1 for i in range(1, len(rates)) if rates[i] > rates[i - 1] + 1e-9]
    assert rising == [6]  # the rate between K = 5 and K = 7 is above the one between 3 and 5

    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": QWEN})
    note = next(c.value for c in at.caption if c.value.startswith("Dotted:"))
    assert "It rises at position 6" in note and "true rates do not rise with depth" in note
    # a curve that does not rise says nothing more
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": LLAMA})
    assert "rises" not in next(c.value for c in at.caption if c.value.startswith("Dotted:"))


def test_several_checkpoints_pick_the_one_drawn_by_depth(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/checkpoints.py")
    ids = at.multiselect(key=next(k for k in at.session_state if str(k).startswith("checkpoints_ids_"))).value
    assert len(ids) > 1
    box = at.selectbox(key="checkpoints_depth_checkpoint")
    assert box.value == ids[-1]  # the latest
    box.select_index(0).run()
    assert not at.exception and at.selectbox(key="checkpoints_depth_checkpoint").value == ids[0]


def test_the_curve_passes_by_what_was_measured_once_calibrated(monkeypatch, calibrated_url):
    """The curve comes from the deployment's load model with the drafter's own draft cost (what its stored
    predictions use): after calibration it lies within 5 % of every published depth. The profile with its
    priors (the first try) drew 181 tok/s at K = 5 against 222 measured."""
    at = run_page(
        monkeypatch, calibrated_url, "views/checkpoints.py", query={"run": QWEN, "dataset": "financeqa"}
    )
    setting = at.selectbox(key="checkpoints_setting").value
    assert (setting.concurrency, setting.topk, at.selectbox(key="checkpoints_dataset").value) == (
        8,
        1,
        "financeqa",
    )
    measured = {  # per request: the file's output_throughput over its batch of 8
        r["steps"]: r["output_throughput"] / 8
        for r in specbundle_rows()
        if r["name"] == QWEN and r["benchmark"] == "financeqa" and r["topk"] == 1 and not r["baseline"]
    }
    [predicted] = [t for t in depth_chart(at) if t.get("name") == "predicted tok/s"]
    curve = dict(zip(predicted["x"], predicted["y"], strict=True))
    for steps, tps in measured.items():
        assert curve[steps] == pytest.approx(tps, rel=0.05), steps
