"""A deployment's calibration decided without a database: its benchmarks as typed rows in, the observations
fitted to (scaled to the reference load) and the others counted by why they were left out."""

import pytest

from specdash.answers.calibration import CalibrationInputs, calibration_report, screen
from specdash.costmodel.calibrated import CostSet
from specdash.costmodel.calibration_report import CalibrationBenchmark, SkippedDeployment
from specdash.costmodel.priors import DeploymentFacts

FACTS = DeploymentFacts(gpu="H100", tp_size=1)


def _bench(id: int = 1, **changes) -> CalibrationBenchmark:
    row = CalibrationBenchmark(
        id=id,
        checkpoint_id=None,
        speculative_algorithm="EAGLE3",
        num_steps=3,
        topk=1,
        num_draft_tokens=4,
        concurrency=1,
        dataset="mtbench",
        decode_tps=200.0,
        accept_length=2.5,
        draft_hidden_size=None,
        superseded_by_id=None,
        drafter_algorithm="EAGLE3",
        drafter_hidden_size=None,
        run_id=7,
        run_name="k25-ttt3",
    )
    return row._replace(**changes)


def _inputs(benchmarks, baselines=None, rates=None) -> CalibrationInputs:
    levels = baselines if baselines is not None else {1: 100.0, 8: 400.0}
    return CalibrationInputs(
        deployment_id=3,
        deployment_name="1x H100, TP1",
        facts=FACTS,
        costs=CostSet(),
        theory_set_id=None,
        profile_baseline_tps=None,
        benchmarks=benchmarks,
        rates=rates or {},
        measured_baseline=lambda concurrency, dataset: levels.get(concurrency),
        reference_baseline=lambda concurrency, dataset: levels.get(concurrency),
        measured_loads=levels,
    )


def test_a_trusted_benchmark_is_one_observation_of_its_drafter():
    screened = screen(_inputs([_bench(5)]))
    (observation,) = screened.observations
    assert (observation.steps, observation.topk, observation.draft_tokens) == (3, 1, 4)
    assert (observation.measured_tps, observation.baseline_tps, observation.measured_accept_length) == (
        200.0,
        100.0,
        2.5,
    )
    assert (
        observation.label == "benchmark 5" and observation.drafter == "7" and observation.dataset == "mtbench"
    )
    assert screened.benchmark_ids == [5] and screened.names == {"7": "k25-ttt3"}
    assert screened.families == {"7": "eagle3"} and not screened.exclusions


@pytest.mark.parametrize(
    "changes,why",
    [
        ({"superseded_by_id": 9}, "superseded"),
        ({"num_steps": None, "topk": 4, "num_draft_tokens": None}, "no speculation setting"),
        ({"concurrency": 4}, "no baseline"),  # no baseline measured at 4 in this deployment
        ({"accept_length": None}, "no accept length"),
    ],
)
def test_a_benchmark_left_out_is_counted_by_why(changes, why):
    screened = screen(_inputs([_bench(**changes)]))
    assert not screened.observations and dict(screened.exclusions) == {why: 1}


def test_training_rates_stand_in_for_an_accept_length_unless_the_setting_drafts_past_them():
    rates = {21: (0.8, 0.6, 0.4)}
    trained = screen(_inputs([_bench(accept_length=None, checkpoint_id=21)], rates=rates))
    assert trained.observations[0].training_rates == (0.8, 0.6, 0.4)
    past = screen(
        _inputs([_bench(accept_length=None, checkpoint_id=21, num_steps=5, num_draft_tokens=6)], rates=rates)
    )
    assert dict(past.exclusions) == {"no accept length": 1}


def test_observations_at_higher_loads_are_scaled_to_the_lowest_load():
    screened = screen(_inputs([_bench(1), _bench(2, concurrency=8, decode_tps=600.0)]))
    assert screened.reference_concurrency == 1
    at_1, at_8 = screened.observations
    assert at_1.load_scale == 1.0
    assert at_8.load_scale == pytest.approx(100.0 / 400.0)  # T_base(1) / T_base(8)


def test_a_deployment_with_nothing_trusted_is_skipped_with_its_exclusions():
    skipped = calibration_report(_inputs([_bench(superseded_by_id=9)]))
    assert isinstance(skipped, SkippedDeployment)
    assert (skipped.deployment_id, skipped.deployment_name) == (3, "1x H100, TP1")
    assert skipped.exclusions == {"superseded": 1}
