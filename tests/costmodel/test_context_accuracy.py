"""bench/context_accuracy.py on a small piece of one published sweep: the runs without speculation and at
K = 3 of Gemma-4-31B on an H100 NVL at batch 11, one measured run each at 4,096 and 32,768 prompt tokens.
The whole sweeps' figures are the benchmark's (`python -m bench.context_accuracy`, docs/cost-model.md)."""

import math

import pytest

from bench import context_accuracy

SWEEP = next(s for s in context_accuracy.sweeps() if s.name == "gemma4_h100nvl_b11")
FILES = [
    SWEEP.folder / arm / f"ctx_{context}" / "measure_1.json"
    for arm in ("no_spec", "k3")
    for context in (4096, 32768)
]


@pytest.fixture(scope="module")
def figures():
    return context_accuracy.sweep_report(SWEEP, FILES)


def test_every_point_is_predicted_from_the_other_context(figures):
    # the mean decode context: the prompt (prefix, suffix and template) and half the 256 tokens out
    assert figures["contexts"] == [4320.0, 32992.0] and figures["loads"] == [11.0]
    for key in context_accuracy.SETS:
        held_out = figures[key]
        assert held_out["all"]["n"] == 4 and held_out["speculative"]["n"] == held_out["plain"]["n"] == 2
        assert all(q["n"] == 2 for q in held_out["per_context"].values())
        assert all(math.isfinite(e) for e in held_out["errors"])


def test_the_schedule_picks_a_measured_depth_at_both_contexts(figures):
    for key in ("schedule_held_out", "schedule_all_contexts"):
        shares = figures["uncalibrated"][key]
        assert set(shares) == {"B=11 ctx=4,320", "B=11 ctx=32,992"}
        for cell in shares.values():
            assert cell["picked"] in (0, 3) and cell["best"] == 3  # K=3 ran 1.9x and 2.1x faster
            assert 0 < cell["share"] <= 1
