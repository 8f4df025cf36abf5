"""Rollups of training metrics (db/rollups.py): kept where the points are dense, always equal to the points
they sum whatever was written (a resumed log, steps out of order, points the store already had), and
the curves read from them equal the curves read from the points on the same grid.

The expected numbers are worked out from the logs' own values: loss = step % 100 and acc_0 = 1 at even
steps, 0 at odd ones."""

import math
from collections import defaultdict

import pytest
from sqlalchemy import insert, select

from specdash.app.frames import frame as as_frame
from specdash.db import curves
from specdash.db.engine import reading, transaction
from specdash.db.models import MetricKey, MetricPoint, MetricRollup, Run
from specdash.db.runs import delete_runs
from specdash.ingest.metric_points import MetricPointWriter
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import PathSource


def specforge_log(path, steps) -> None:
    """SpecForge's console lines (`... - specforge - INFO - step N: {...}`), one per logged step."""
    with path.open("w") as out:
        for step in steps:
            values = {"train/loss": float(step % 100), "train/acc_0": 1.0 if step % 2 == 0 else 0.0}
            out.write(f"2025-08-21 10:31:02,114 - specforge - INFO - step {step}: {values!r}\n")


def stored_rollups(session) -> dict[tuple, tuple]:
    rows = session.execute(select(MetricRollup)).scalars()
    return {
        (r.run_id, r.key_id, r.width, r.bucket): (r.n, r.sum_step, r.sum_value, r.min_value, r.max_value)
        for r in rows
    }


def sums_of_points(session, widths) -> dict[tuple, tuple]:
    """The rollups of every stored point, computed here in Python: the reference they must equal."""
    groups = defaultdict(list)
    for run_id, key_id, step, value in session.execute(
        select(MetricPoint.run_id, MetricPoint.key_id, MetricPoint.step, MetricPoint.value)
    ):
        for width in widths.get((run_id, key_id), ()):
            groups[(run_id, key_id, width, step // width)].append((step, value))
    return {
        key: (
            len(ps),
            sum(s for s, _ in ps),
            math.fsum(v for _, v in ps),
            min(v for _, v in ps),
            max(v for _, v in ps),
        )
        for key, ps in groups.items()
    }


def assert_rollups_match_points(session, widths) -> None:
    stored, reference = stored_rollups(session), sums_of_points(session, widths)
    assert stored.keys() == reference.keys()
    for key, (n, step_sum, value_sum, low, high) in reference.items():
        assert stored[key][:2] == (n, step_sum)
        assert stored[key][2] == pytest.approx(value_sum, rel=1e-12)
        assert stored[key][3:] == (low, high)


def key_ids(session) -> dict[str, int]:
    return dict(session.execute(select(MetricKey.name, MetricKey.id)).all())


def test_a_dense_log_keeps_both_rollups_and_its_curves_are_read_from_them(engine, tmp_path):
    """25,600 steps logged at every step: 64 points a 64-step bucket, 4,096 a 4,096-step one, both kept.
    At 100 points a line a bucket is 256 steps: four 64-step rollup buckets each."""
    path = tmp_path / "dense-run.log"
    specforge_log(path, range(25_600))
    assert ingest(engine, PathSource(path)).status == "loaded"
    with reading(engine) as session:
        keys, run_id = key_ids(session), session.scalar(select(Run.id))
        loss = keys["train/loss"]
        assert_rollups_match_points(session, {(run_id, k): (64, 4096) for k in keys.values()})
        stored = stored_rollups(session)
        assert sum(1 for k in stored if k[1] == loss and k[2] == 64) == 400  # 25,600 / 64
        assert sum(1 for k in stored if k[1] == loss and k[2] == 4096) == 7  # ceil(25,600 / 4,096)
        frame = as_frame(
            curves.training_curves(session, [run_id], ["train/loss", "train/acc_0"], max_points=100),
            curves.CurvePoint,
        )
        raw = curves._buckets(session, run_id, loss, 0, 25_599, 256)
        # 60 points a line: 427 steps a bucket, rollup buckets of 64 go by where they start
        uneven = as_frame(
            curves.training_curves(session, [run_id], ["train/loss"], max_points=60), curves.CurvePoint
        )
    line = frame[frame["key"] == "train/loss"]
    assert set(frame["bucket_steps"]) == {256} and len(line) == 100
    # steps 0-255: values 0-99 twice (4,950 each) and 0-55 (1,540): 11,440 / 256
    first = line.iloc[0]
    assert (first["step"], first["value"], first["min"], first["max"]) == (127.5, 44.6875, 0.0, 99.0)
    # steps 25,344-25,599: values 44-99 (4,004), then 0-99 twice: 13,904 / 256
    last = line.iloc[-1]
    assert (last["step"], last["value"], last["min"], last["max"]) == (25_471.5, 54.3125, 0.0, 99.0)
    acc = frame[frame["key"] == "train/acc_0"]
    assert set(acc["value"]) == {0.5} and set(acc["min"]) == {0.0} and set(acc["max"]) == {1.0}
    # the same buckets read from the points
    assert line[["step", "value", "min", "max"]].to_numpy().ravel().tolist() == pytest.approx(
        [v for row in raw for v in row]
    )
    # the first bucket takes the rollup buckets starting at 0, 64, ..., 384: steps 0-447, values 0-99
    # four times (19,800) and 0-47 (1,128)
    assert len(uneven) == 60 and tuple(uneven.iloc[0][["step", "value"]]) == (223.5, 20_928 / 448)


def test_a_sparse_log_keeps_only_the_wide_rollup(engine, tmp_path):
    """A step logged every 50: at most two points a 64-step bucket (no rollup), 82 a 4,096-step one."""
    path = tmp_path / "sparse-run.log"
    specforge_log(path, range(0, 100_000, 50))
    assert ingest(engine, PathSource(path)).status == "loaded"
    with reading(engine) as session:
        run_id = session.scalar(select(Run.id))
        assert {k[2] for k in stored_rollups(session)} == {4096}
        assert_rollups_match_points(session, {(run_id, k): (4096,) for k in key_ids(session).values()})
        # 99,951 steps in 400 buckets: 250 steps, under two rollup buckets: read from the points
        frame = as_frame(curves.training_curves(session, [run_id], ["train/loss"]), curves.CurvePoint)
        # at 12 points a line, 8,330 steps a bucket: rollup buckets 0-2 (steps 0-12,287) start in the first
        coarse = as_frame(
            curves.training_curves(session, [run_id], ["train/loss"], max_points=12), curves.CurvePoint
        )
    assert set(frame["bucket_steps"]) == {250} and len(frame) == 400
    assert set(coarse["bucket_steps"]) == {8330} and len(coarse) == 12
    # steps 0, 50, ..., 12,250 (246 points); loss = step % 100, 0 and 50 alternating
    assert tuple(coarse.iloc[0][["step", "value", "min", "max"]]) == (6125.0, 25.0, 0.0, 50.0)


def offer(session, run_id: int, steps, value_of, key: str = "loss") -> MetricPointWriter:
    writer = MetricPointWriter(session)
    writer.add(run_id, [(s, (key,), [value_of(s)]) for s in steps])
    writer.flush()
    return writer


def new_run(session) -> int:
    run = Run(name="writer-run")
    session.add(run)
    session.flush()
    return run.id


def test_points_the_store_already_holds_are_not_counted_twice(engine):
    """A resumed log offers steps 5,000-14,999 (loss 2.0) after 0-9,999 (loss 1.0) were stored: the first
    stored wins, so bucket 2 of 4,096 steps (8,192-12,287) holds 1,808 points of 1.0 and 2,288 of 2.0."""
    with transaction(engine) as session:
        run_id = new_run(session)
        offer(session, run_id, range(10_000), lambda s: 1.0)
    with transaction(engine) as session:
        writer = offer(session, run_id, range(5_000, 15_000), lambda s: 2.0)
        assert (writer.offered, writer.written) == (10_000, 5_000)
    with reading(engine) as session:
        key = key_ids(session)["loss"]
        assert_rollups_match_points(session, {(run_id, key): (64, 4096)})
        assert stored_rollups(session)[(run_id, key, 4096, 2)] == (
            4096,
            sum(range(8192, 12288)),
            6384.0,
            1.0,
            2.0,
        )


def test_steps_out_of_order_and_a_negative_step(engine):
    """Steps offered backwards still sum by bucket; a negative step stops the rollups of that key."""
    with transaction(engine) as session:
        run_id = new_run(session)
        offer(session, run_id, range(9_999, -1, -1), lambda s: float(s % 7))
        key = key_ids(session)["loss"]
        assert_rollups_match_points(session, {(run_id, key): (64, 4096)})
        offer(session, run_id, [-3], lambda s: 0.5)
        assert stored_rollups(session) == {}
        offer(session, run_id, range(10_000, 20_000), lambda s: 0.5)  # points, no rollup again
        assert stored_rollups(session) == {}
        frame = as_frame(
            curves.training_curves(session, [run_id], ["loss"], max_points=100), curves.CurvePoint
        )
    assert set(frame["bucket_steps"]) == {201}  # ceil(20,003 / 100)
    assert frame["step"].iloc[0] == pytest.approx((-3 + sum(range(198))) / 199)  # steps -3 and 0-197


def test_a_key_without_rollups_is_decided_while_it_has_few_points(engine):
    """Points stored without rollups (before revision 0014, or a followed log's first lines, too few to
    decide on): while a key has at most 4,096 points its rollups start once its points pay for them, built
    from all of them; a key with more stays without (a rollup of only its later points would be wrong)."""
    with transaction(engine) as session:
        run_id = new_run(session)
        session.add_all([MetricKey(name="few"), MetricKey(name="many")])
        session.flush()
        keys = key_ids(session)
        session.execute(
            insert(MetricPoint),
            [{"run_id": run_id, "key_id": keys["few"], "step": s, "value": 1.0} for s in range(100)]
            + [
                {"run_id": run_id, "key_id": keys["many"], "step": s, "value": 1.0}
                for s in range(0, 500_000, 100)
            ],
        )
        offer(session, run_id, range(100, 10_000), lambda s: 2.0, key="few")
        offer(session, run_id, range(500_000, 600_000), lambda s: 2.0, key="many")
        assert_rollups_match_points(session, {(run_id, keys["few"]): (64, 4096)})
        # bucket 1 of 64 steps: steps 64-99 stored at 1.0, 100-127 offered at 2.0
        assert stored_rollups(session)[(run_id, keys["few"], 64, 1)] == (
            64,
            sum(range(64, 128)),
            92.0,
            1.0,
            2.0,
        )


def test_a_followed_log_gets_its_rollups_once_enough_of_it_is_stored(engine):
    """A log followed a line at a time: each write holds one step, too few to decide on alone. At 16
    points in one bucket both rollups start, from all of them; each later line merges into them."""
    with transaction(engine) as session:
        run_id = new_run(session)
        for step in range(15):
            offer(session, run_id, [step], float)
        assert stored_rollups(session) == {}
        offer(session, run_id, [15], float)
        key = key_ids(session)["loss"]
        widths = {(run_id, key): (64, 4096)}
        assert stored_rollups(session)[(run_id, key, 64, 0)] == (16, 120, 120.0, 0.0, 15.0)
        for step in range(16, 200):
            offer(session, run_id, [step], float)
        assert_rollups_match_points(session, widths)
        expected = (64, sum(range(64, 128)), float(sum(range(64, 128))), 64.0, 127.0)
        assert stored_rollups(session)[(run_id, key, 64, 1)] == expected


def test_deleting_a_run_deletes_its_rollups(engine, tmp_path):
    path = tmp_path / "dense-run.log"
    specforge_log(path, range(5_000))
    assert ingest(engine, PathSource(path)).status == "loaded"
    with transaction(engine) as session:
        assert stored_rollups(session)
        delete_runs(session, [session.scalar(select(Run.id))])
    with reading(engine) as session:
        assert stored_rollups(session) == {}


def test_a_new_key_is_decided_from_its_first_write_as_from_the_store(engine):
    """A key with no point stored before a write is decided from the steps written, when every one was
    stored: the same widths and sums as read back from the store. A step offered twice in that write (the
    first offered stored) and a negative step are decided from the store as before."""
    with transaction(engine) as session:
        run_id = new_run(session)
        offer(session, run_id, range(5_000), lambda s: float(s % 13), key="dense")
        offer(session, run_id, range(0, 5_000, 100), lambda s: 1.0, key="sparse")
        offer(session, run_id, [*range(3_000), 7, *range(3_000, 6_000)], lambda s: 2.0, key="twice")
        offer(session, run_id, [-5, *range(5_000)], lambda s: 3.0, key="negative")
        offer(session, run_id, range(5_000, 6_000), lambda s: 4.0, key="negative")
        keys = key_ids(session)
        assert_rollups_match_points(
            session,
            {
                (run_id, keys["dense"]): (64, 4096),
                (run_id, keys["sparse"]): (4096,),  # 50 points over 2 buckets of 4,096 steps
                (run_id, keys["twice"]): (64, 4096),
            },
        )
        assert {k[1:3] for k in stored_rollups(session)} == {
            (keys["dense"], 64),
            (keys["dense"], 4096),
            (keys["sparse"], 4096),
            (keys["twice"], 64),
            (keys["twice"], 4096),
        }
        assert stored_rollups(session)[(run_id, keys["twice"], 64, 0)] == (
            64,
            sum(range(64)),
            128.0,
            2.0,
            2.0,
        )
