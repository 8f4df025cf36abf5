"""The read queries behind the dashboard pages, on the demo data and on purpose-built databases."""

import statistics

import pandas as pd
import pytest
from sqlalchemy import func, insert, select

from specdash.app.comparison_table import comparison_table
from specdash.app.frames import frame as as_frame
from specdash.db import alerts, parity, queries
from specdash.db import checkpoints as cq
from specdash.db import curves as curves_db
from specdash.db.curves import CurvePoint
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert, Benchmark, Checkpoint, MetricKey, MetricPoint, Run
from specdash.db.outcomes import BenchmarkOutcome, benchmark_outcomes
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource

PCIE = "8x RTX PRO 6000, TP8, PCIe"
TTT5 = "k25-eagle3-100k-ttt5"


@pytest.fixture
def demo(demo_url):
    engine = make_engine(demo_url)
    yield engine
    engine.dispose()


def ids(session, model, **where):
    return list(session.scalars(select(model.id).filter_by(**where)))


def test_open_alert_counts_are_one_per_benchmark(demo):
    with reading(demo) as session:
        # the EAGLE-flag benchmark (critical), the 16-token one (22 % past its trained depth) and the two
        # 7-step ones (trained 5 deep): a depth beyond training alerts whatever the gap
        assert queries.open_alert_counts(session) == {"critical": 1, "warning": 3}
    with transaction(demo) as session:
        session.get(Alert, 3).status = "investigating"
    with reading(demo) as session:
        assert queries.open_alert_counts(session) == {"warning": 3}


def test_open_alert_counts_leave_out_what_a_mute_hides_on_its_deployment_only(demo):
    with transaction(demo) as session:
        mute = alerts.mute_diagnosis(session, PCIE, "beyond_trained_depth", "known: TTT 5 drafter", "ana")
    with reading(demo) as session:
        # #11 and #12 are PCIe's beyond-trained-depth warnings; #15, the same diagnosis on NVLink, stays
        assert queries.open_alert_counts(session) == {"critical": 1, "warning": 1}
    with transaction(demo) as session:
        alerts.mute_diagnosis(session, PCIE, "algorithm_mismatch", "the EAGLE flag, known", "ana")
    with reading(demo) as session:
        assert queries.open_alert_counts(session) == {"warning": 1}
    with transaction(demo) as session:
        alerts.lift_mute(session, mute.id, "ben")
    with reading(demo) as session:
        assert queries.open_alert_counts(session) == {"warning": 3}


def test_prediction_sources_put_theory_first(demo):
    with reading(demo) as session:
        assert queries.prediction_sources(session) == ["theory", "roofline-sim"]


def test_parity_thinning_keeps_the_largest_gaps(demo):
    with reading(demo) as session:
        full = as_frame(parity.parity_rows(session, "theory"), parity.ParityPoint)
        every = parity.parity_points(session, "theory", 13)
        thin = parity.parity_points(session, "theory", 8)
        total = parity.parity_total(session, "theory")
    assert len(full) == total == 13
    assert every.total == 13 and as_frame(every.rows, parity.ParityPoint).equals(full)
    # the 2 largest gaps, then every 3rd benchmark id of the rest (ids 3..15 with gaps: 13 / 6 -> stride 3)
    thin_frame = as_frame(thin.rows, parity.ParityPoint)
    assert thin_frame["benchmark_id"].tolist() == [3, 6, 9, 12, 15]
    assert thin_frame["benchmark_id"].is_unique
    # counted, not estimated from the 5 sampled ids that have a gap (3 ids each: 15)
    assert thin.total == 13


def test_superseded_benchmarks_leave_the_parity_plot(demo):
    with transaction(demo) as session:
        session.get(Benchmark, 3).superseded_by_id = 4
    with reading(demo) as session:
        assert 3 not in {row.benchmark_id for row in parity.parity_rows(session)}
        assert parity.parity_total(session) == 12


def test_latest_checkpoint_per_run_with_its_best_speedup(demo):
    with reading(demo) as session:
        latest = as_frame(queries.latest_checkpoints(session), queries.LatestCheckpoint).set_index("run")
    ttt5 = latest.loc[TTT5]
    assert ttt5["latest_checkpoint"] == "epoch_5" and ttt5["checkpoints"] == 5
    # best of epoch_5: 5 steps on PCIe, 208.9 tok/s over the measured 90 tok/s baseline
    assert ttt5["best_speedup"] == pytest.approx(208.9 / 90.0)
    assert ttt5["deployment"] == PCIE and ttt5["num_steps"] == 5
    # the EAGLE-flag benchmark is slower; the rerun is the best of k25-eagle3-10k
    assert latest.loc["k25-eagle3-10k", "measured_tps"] == pytest.approx(157.2)
    assert latest.loc["k25-eagle3-ttt3-smoke", "checkpoints"] == 0
    assert latest["latest_checkpoint"].isna().sum() == 1


def test_latest_checkpoints_of_the_newest_runs_only(demo):
    """Bounded by the runs asked for: the run whose checkpoint was stored last first, runs without a
    checkpoint after every run with one, each row as the unbounded table has it."""
    with reading(demo) as session:
        everyone = as_frame(queries.latest_checkpoints(session), queries.LatestCheckpoint).set_index("run")
        newest_checkpoint = session.scalar(select(Checkpoint).order_by(Checkpoint.id.desc()).limit(1))
        newest_run = session.get(Run, newest_checkpoint.run_id).name
        one = as_frame(queries.latest_checkpoints(session, 1), queries.LatestCheckpoint)
        runs = session.scalar(select(func.count()).select_from(Run))
        last = queries.newest_runs(session, runs)
        without = ids(session, Run, name="k25-eagle3-ttt3-smoke")
    assert one["run"].tolist() == [newest_run]
    pd.testing.assert_series_equal(one.set_index("run").iloc[0], everyone.loc[newest_run], check_names=False)
    assert len(last) == runs == len(everyone) and last[-1:] == without


def test_benchmark_outcomes_mark_alerts(demo):
    with reading(demo) as session:
        outcomes = as_frame(benchmark_outcomes(session, [1, 3]), BenchmarkOutcome)
    baseline = outcomes[outcomes["benchmark_id"] == 1].iloc[0]
    assert pd.isna(baseline["source"]) and not baseline["is_alert"]
    story = outcomes[outcomes["benchmark_id"] == 3].iloc[0]
    assert (
        story["is_alert"]
        and story["severity"] == "critical"
        and story["gap"] == pytest.approx(0.489, abs=1e-3)
    )


def test_checkpoint_comparison_of_one_setting(demo):
    with reading(demo) as session:
        run_id = ids(session, Run, name=TTT5)[0]
        checkpoints = as_frame(cq.checkpoint_summaries(session, [run_id]), cq.CheckpointSummary)
        checkpoint_ids = checkpoints["id"].tolist()
        deployments = as_frame(cq.benchmarked_deployments(session, checkpoint_ids), cq.BenchmarkedDeployment)
        pcie = int(deployments.iloc[0]["id"])
        settings = cq.speculation_settings(session, checkpoint_ids, pcie)
        frame = as_frame(
            cq.checkpoint_comparison(session, checkpoint_ids, pcie, settings[0]), cq.CheckpointComparison
        )
    assert checkpoints["name"].tolist() == [f"epoch_{e}" for e in range(1, 6)]
    assert deployments.iloc[0]["name"] == PCIE and deployments.iloc[0]["benchmarks"] == 8
    # every epoch was measured at 5 steps; the other depths only at epoch 5
    assert settings[0].label == "EAGLE3 5/1/6, concurrency 1"
    assert [s.num_steps for s in settings] == [5, 3, 7, 15]
    theory = frame[frame["source"] == "theory"]
    assert theory["checkpoint"].tolist() == [f"epoch_{e}" for e in range(1, 6)]
    assert theory["measured_tps"].tolist() == pytest.approx([181.9, 197.5, 191.1, 203.1, 208.9])
    assert (theory["n"] == 1).all() and theory["measured_tps_std"].isna().all()
    assert set(frame[frame["checkpoint"] == "epoch_5"]["source"]) == {"theory", "roofline-sim"}
    table = comparison_table(frame)
    assert len(table) == 5
    assert table["predicted_tps_roofline-sim"].notna().tolist() == [False] * 4 + [True]


def test_repeated_benchmarks_give_a_mean_and_a_standard_deviation(demo):
    repeats = (
        b'{"specdash": 1, "benchmarks": ['
        + b",".join(
            b'{"deployment": "%s", "drafter_path": "/ckpt/k25-eagle3-100k-ttt5/epoch_1", "speculative_algorithm": '
            b'"EAGLE3", "num_steps": 5, "topk": 1, "num_draft_tokens": 6, "decode_tps": %s, "accept_length": 2.6, '
            b'"dataset": "gsm8k"}' % (PCIE.encode(), tps)
            for tps in (b"170.0", b"180.0")
        )
        + b"]}"
    )
    assert ingest(demo, UploadSource("repeats.json", repeats)).ok
    with reading(demo) as session:
        checkpoint_id = ids(session, Checkpoint, name="epoch_1")[0]
        setting = cq.speculation_settings(session, [checkpoint_id], 1)[0]
        frame = as_frame(
            cq.checkpoint_comparison(session, [checkpoint_id], 1, setting), cq.CheckpointComparison
        )
        only_gsm8k = as_frame(
            cq.checkpoint_comparison(session, [checkpoint_id], 1, setting, dataset="gsm8k"),
            cq.CheckpointComparison,
        )
        datasets = cq.benchmark_datasets(session, [checkpoint_id], 1)
    row = frame[frame["source"] == "theory"].iloc[0]
    assert row["n"] == 3
    assert row["measured_tps"] == pytest.approx((181.9 + 170.0 + 180.0) / 3)
    assert row["measured_tps_std"] == pytest.approx(statistics.stdev([181.9, 170.0, 180.0]))
    assert only_gsm8k.iloc[0]["n"] == 2 and only_gsm8k.iloc[0]["measured_tps"] == pytest.approx(175.0)
    assert datasets == ["gsm8k", "mtbench"]


def test_long_training_curves_are_bucketed_in_sql(engine):
    steps = 20_000
    with transaction(engine) as session:
        session.add_all([Run(name="long"), MetricKey(name="train/loss"), MetricKey(name="train/acc_0")])
        session.flush()
        run_id, loss_id, acc_id = ids(session, Run)[0], *ids(session, MetricKey)
        session.execute(
            insert(MetricPoint),
            [
                {"run_id": run_id, "key_id": key_id, "step": step, "value": float(step % 100)}
                for step in range(steps)
                for key_id in (loss_id, acc_id)
            ],
        )
    with reading(engine) as session:
        assert cq.metric_keys(session, [run_id]) == ["train/acc_0", "train/loss"]
        curves = as_frame(
            curves_db.training_curves(session, [run_id], ["train/loss"], max_points=400), CurvePoint
        )
        short = as_frame(
            curves_db.training_curves(session, [run_id], ["train/loss"], max_points=50_000), CurvePoint
        )
    assert len(curves) == 400 and (curves["key"] == "train/loss").all()
    assert curves["bucket_steps"].iloc[0] == 50
    first = curves.iloc[0]
    assert (first["step"], first["value"], first["min"], first["max"]) == (24.5, 24.5, 0.0, 49.0)
    assert len(short) == steps and short["bucket_steps"].iloc[0] == 1


def test_curve_buckets_span_every_key_and_skip_empty_ones(engine):
    """Buckets start at the run's first logged step over the keys asked for: key a logs steps 0-999 but
    300-449, key b steps 500-1499, both value = 2 x step; 10 points at most: ceil(1500 / 10) = 150 steps."""
    with transaction(engine) as session:
        session.add_all([Run(name="spans"), MetricKey(name="a"), MetricKey(name="b")])
        session.flush()
        run_id, a_id, b_id = ids(session, Run)[0], *ids(session, MetricKey)
        a = [s for s in range(1000) if not 300 <= s < 450]
        points = [(a_id, s) for s in a] + [(b_id, s) for s in range(500, 1500)]
        session.execute(
            insert(MetricPoint),
            [{"run_id": run_id, "key_id": k, "step": s, "value": 2.0 * s} for k, s in points],
        )
    with reading(engine) as session:
        curves = as_frame(curves_db.training_curves(session, [run_id], ["b", "a"], max_points=10), CurvePoint)
    assert set(curves["bucket_steps"]) == {150}
    key_a, key_b = curves[curves["key"] == "a"], curves[curves["key"] == "b"]
    # a: buckets from 0, 150, 300 (empty: left out), 450, 600, 750, 900 (900-999)
    assert key_a["step"].tolist() == [74.5, 224.5, 524.5, 674.5, 824.5, 949.5]
    # b: its first bucket is 450-599, where it logged 500-599
    first = key_b.iloc[0]
    assert (first["step"], first["value"], first["min"], first["max"]) == (549.5, 1099.0, 1000.0, 1198.0)
    assert len(key_b) == 7 and key_b["max"].iloc[-1] == 2998.0
    assert curves["key"].tolist() == ["a"] * 6 + ["b"] * 7


def test_position_acceptance_in_training_order(demo):
    with reading(demo) as session:
        checkpoint_ids = ids(session, Checkpoint)
        frame = as_frame(cq.position_acceptance(session, checkpoint_ids), cq.PositionAcceptance)
    epoch_1 = frame[(frame["run"] == TTT5) & (frame["checkpoint"] == "epoch_1")]
    assert epoch_1["rate"].tolist() == [0.742, 0.60, 0.58, 0.56, 0.55]
    assert epoch_1["position"].tolist() == [0, 1, 2, 3, 4]


def test_empty_selections_give_empty_frames(engine):
    with reading(engine) as session:
        assert as_frame(cq.checkpoint_summaries(session, []), cq.CheckpointSummary).empty
        assert cq.speculation_settings(session, [], 1) == []
        assert as_frame(cq.checkpoint_comparison(session, [], 1, None), cq.CheckpointComparison).empty
        assert as_frame(curves_db.training_curves(session, [], ["x"]), CurvePoint).empty
        assert cq.metric_keys(session, []) == []
        assert as_frame(benchmark_outcomes(session, []), BenchmarkOutcome).empty
        assert as_frame(queries.latest_checkpoints(session), queries.LatestCheckpoint).empty
