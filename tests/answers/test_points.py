"""The prediction of a point (answers/points.py): a benchmarked point reads as its stored prediction, a
point past the measured loads is extrapolated with a widened band and no more speedup than at the nearest
measured load, and asking writes nothing."""

import pytest
from sqlalchemy import func, select

from specdash.answers.depth import depth_curve
from specdash.answers.points import point_model
from specdash.costmodel.domain import PredictionSource, TauSource
from specdash.costmodel.uncertainty import extrapolated_band
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Checkpoint, Deployment, ParameterSet, Prediction, Run

LLAMA = "lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"
PCIE = "8x RTX PRO 6000, TP8, PCIe"


def ids(session, run: str, deployment: str, checkpoint: str | None = None) -> tuple[int, int]:
    query = select(Checkpoint.id).join(Run).where(Run.name == run)
    if checkpoint:
        query = query.where(Checkpoint.name == checkpoint)
    deployment_id = session.scalars(select(Deployment.id).where(Deployment.name == deployment)).one()
    return session.scalars(query).one(), deployment_id


def test_a_benchmarked_point_reads_as_its_stored_prediction(real_url):
    with reading(make_engine(real_url)) as session:
        checkpoint_id, deployment_id = ids(session, LLAMA, "SpecBundle: Llama-3.1-8B-Instruct")
        stored = session.execute(
            select(
                Prediction.num_steps, Prediction.concurrency, Prediction.predicted_tps, Prediction.error_band
            )
            .where(
                Prediction.checkpoint_id == checkpoint_id,
                Prediction.deployment_id == deployment_id,
                Prediction.source == PredictionSource.THEORY,
                Prediction.topk == 1,
                Prediction.dataset == "financeqa",
            )
            .order_by(Prediction.num_steps)
        ).all()
        model = point_model(session, checkpoint_id, deployment_id, "financeqa")
        assert model is not None and model.source == PredictionSource.THEORY
        assert model.tau_source == TauSource.MEASURED
        assert [k for k, *_ in stored] == [3, 5, 7]  # the published chain depths, at batch 1
        for steps, concurrency, tps, band in stored:
            answer = model.predict(steps, 1, concurrency)
            assert answer is not None and not answer.extrapolated
            assert answer.tps == pytest.approx(tps, rel=1e-9) and answer.band == pytest.approx(band)


def test_past_the_measured_loads_the_band_widens_and_the_speedup_holds(real_url):
    with reading(make_engine(real_url)) as session:
        checkpoint_id, deployment_id = ids(session, "k25-eagle3-100k-ttt5", PCIE, "epoch_5")
        measured = depth_curve(session, checkpoint_id, deployment_id, 1)
        beyond = depth_curve(session, checkpoint_id, deployment_id, 64)
    assert measured is not None and beyond is not None
    assert not measured.extrapolated_load and beyond.extrapolated_load
    assert beyond.band == pytest.approx(extrapolated_band(measured.band))
    for at_one, at_64 in zip(measured.answers, beyond.answers, strict=True):
        assert at_64.speedup <= at_one.speedup + 1e-9
        # the uncalibrated priors would have each depth gain more at 64 than at 1: held at batch 1's
        assert at_64.speedup_held and at_64.speedup == pytest.approx(at_one.speedup)
        assert at_64.baseline_tps < at_one.baseline_tps  # the step without speculation still slows


def test_asking_writes_nothing(real_url):
    engine = make_engine(real_url)
    with transaction(engine) as session:  # a profile changed without a refresh: its theory set is stale
        session.scalars(select(Deployment).where(Deployment.name == PCIE)).one().comm_fraction = 0.3
    with reading(engine) as session:
        before = session.scalar(select(func.count()).select_from(ParameterSet))
        checkpoint_id, deployment_id = ids(session, "k25-eagle3-100k-ttt5", PCIE, "epoch_5")
        assert depth_curve(session, checkpoint_id, deployment_id, 1) is not None
        assert not session.new and not session.dirty
        assert session.scalar(select(func.count()).select_from(ParameterSet)) == before
