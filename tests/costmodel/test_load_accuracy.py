"""The load model's figures on published sweeps (bench/load_accuracy.py) and the honest held-out figures of
the priors (bench/heldout.py). The whole corpus's figures are the benchmark's (`python -m bench.load_accuracy`,
docs/cost-model.md); the tests hold the same thresholds on a fixed sample of it, chosen once and kept: every
multi-load sweep (the load and cross-load splits need them) and every fourth single-load sweep from the
fourth. Where the sample's figure differs from the corpus's, each docstring gives both."""

import json

import pytest

from bench import heldout, load_accuracy
from bench.costmodel_accuracy import CORPUS

pytestmark = pytest.mark.slow

ROWS = json.loads(CORPUS.read_text())["rows"]


def sample_sweeps() -> list:
    sweeps = load_accuracy.all_sweeps()
    multi = [s for s in sweeps if len({o.concurrency for o in s.observations}) > 1]
    single = [s for s in sweeps if len({o.concurrency for o in s.observations}) == 1]
    assert (len(multi), len(single)) == (9, 113)  # the corpus changed: choose the sample again
    return multi + single[3::4]


@pytest.fixture(scope="module")
def figures():
    return load_accuracy.report(sample_sweeps())


def test_held_out_cells_beat_the_linear_round_model(figures):
    """Each (load, setting) of a sweep predicted by a fit to the rest: on the sample 4.7 % against the
    linear round model's 7.2 % on the same splits (the corpus's 122 sweeps: 4.7 % against 6.8 %; goal:
    <= 5 % and no worse than the linear model)."""
    cells = figures["cell_split"]
    assert cells["load_model"]["n"] == cells["linear"]["n"] >= 190
    assert cells["load_model"]["median"] <= 0.05  # measured 4.7 %: a 0.3-point margin
    assert cells["load_model"]["median"] < 0.8 * cells["linear"]["median"]


def test_held_out_loads(figures):
    """A whole load (its no-speculation run too) predicted from the other loads: 6.0 % against 13.1 % (5.6 %
    without the per-request floor: the pooled median of 49 rows sits in a gap between 5.6 % and 6.1 %, and
    rows just under it moved up while SGLang's rows went from 16.0 % to 13.2 %). Every multi-load sweep is
    in the sample: the corpus's figure."""
    loads = figures["load_split"]
    assert loads["load_model"]["n"] == 49
    assert loads["load_model"]["median"] <= 0.07  # measured 6.0 %
    assert loads["load_model"]["median"] < 0.6 * loads["linear"]["median"]


def test_cross_load_pairs(figures):
    """Fit at the lowest load, predict the others (each load's own no-speculation run known, as in
    bench.costmodel_accuracy load_transfer, today 19.2 %): 9.9 %, the 10 % goal met by 0.1 point (10.8 %
    before the per-request floor, which lets the other loads' plain steps grow without every verify paying
    that growth N-fold); 15.3 % when the other loads' no-speculation runs are unknown too. The corpus's
    figures: every multi-load sweep is in the sample."""
    assert figures["cross_load"]["load_model"]["median"] <= 0.10
    assert figures["cross_load"]["load_model"]["median"] < 0.6 * 0.195
    assert figures["cross_load_no_other_baselines"]["load_model"]["median"] <= 0.17


def test_the_schedule_picks(figures):
    """At the sample's 65 measured loads with two or more candidates, the depth the schedule picks (from
    predictions that did not see it) reaches >= 97 % of the best measured at 55 (the corpus: 121 of 150;
    goal: all). Of the 10 misses, 2 are SpecBundle's Llama-4-Scout at batch 8 whose no-speculation runs are
    slower than a speculative round allows, 4 pick or miss no speculation predicted from the speculative
    runs alone (MoE targets), and 4 rank two speculative settings the wrong way."""
    sched = figures["schedule"]
    assert sched["loads"] >= 65 and sched["meeting_goal"] >= 0.8 * sched["loads"]
    assert sched["median"] >= 0.99
    causes = sched["misses_by_cause"]
    assert sum(causes.values()) == sched["loads"] - sched["meeting_goal"]
    assert causes["implausible"] >= 1 and set(causes) <= {"implausible", "no_speculation", "depths"}


def test_held_out_by_source_rules():
    kept, repeats = heldout.held_out_rows(ROWS)
    excluded = heldout.prior_sources(ROWS)
    assert {"spec-bench", "vllm-20780", "eagle2-paper", "specbundle"} <= excluded
    assert not any(r["source"] in excluded or r["steps"] is None for r in kept)
    # the EAGLE-3 paper's EAGLE-2 cell printed twice (LLaMA-3.1-8B MT-bench and DeepSeek-R1-Distill GSM8K)
    assert [(r["source"], r["accept_length"], r["speedup"]) for r in repeats] == [
        ("eagle3-paper", 4.05, 3.16)
    ]
    assert len(kept) == 150


def test_honest_uncalibrated_figures():
    """Measured 12.0 % over 150 rows from 18 sources, but the by-source interval runs to 25.5 % (30.2 %
    while vLLM's n-gram rows counted tokens per draft, not per round): the goal (upper end under 15 %) is
    missed; vLLM (31 rows) sits at 20.0 % (21.3 %), over its 15 % goal."""
    kept, _ = heldout.held_out_rows(ROWS)
    u = heldout.uncalibrated(kept)
    assert u["n"] == 150 and u["sources"] == 18
    assert u["median"] == pytest.approx(0.120, abs=0.005)
    low, high = u["interval"]
    assert low <= u["median"] <= high and high > 0.15
    engines = {e: f for e, f in u["per_engine"].items() if f["n"] >= heldout.MIN_ENGINE_ROWS}
    assert set(engines) == {"pytorch", "sglang", "vllm"}
    assert engines["sglang"]["median"] <= 0.15 and engines["pytorch"]["median"] <= 0.15
    assert engines["vllm"]["median"] == pytest.approx(0.200, abs=0.005)


def test_the_bootstrap_resamples_sources_not_rows():
    """Two sources, one all at 10 % and one all at 30 %: a resample holds one, the other or both, so the
    interval spans 10-30 % however many rows each source has."""
    errors = [0.1] * 50 + [0.3] * 5
    sources = ["a"] * 50 + ["b"] * 5
    low, high = heldout.bootstrap_median(errors, sources, samples=400)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.3)


@pytest.mark.parametrize(
    "here,picked,best,cause",
    [
        # SpecBundle's Llama-4-Scout on financeqa at batch 8: 1189.6 / 8 = 148.7 tok/s per request at tau 2.22
        # against a plain step of 288.9 / 8 = 36.1, over 2.22 x 36.1 = 80.2: a round shorter than a step
        (
            {(8, 0, 1, None): (151.1, 36.1, 1.0), (8, 3, 1, 4): (98.5, 148.7, 2.22)},
            (8, 0, 1, None),
            (8, 3, 1, 4),
            "implausible",
        ),
        # no speculation predicted fastest (from the speculative runs alone), measured slower: 100.4 < 3.42 x
        # 100.4, nothing implausible
        (
            {(8, 0, 1, None): (159.5, 100.4, 1.0), (8, 7, 1, 8): (138.7, 149.9, 3.42)},
            (8, 0, 1, None),
            (8, 7, 1, 8),
            "no_speculation",
        ),
        (
            {
                (1, 0, 1, None): (100.0, 100.0, 1.0),
                (1, 3, 1, 4): (200.0, 190.0, 2.5),
                (1, 5, 1, 6): (210.0, 180.0, 2.9),
            },
            (1, 5, 1, 6),
            (1, 3, 1, 4),
            "depths",
        ),
    ],
)
def test_each_schedule_miss_gets_its_cause(here, picked, best, cause):
    assert load_accuracy.miss_cause(here, picked, best) == cause
