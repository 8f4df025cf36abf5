"""Repeat groups in the store (db/repeats.py): their spread is each deployment's measurement noise, and no
prediction on the deployment claims a band narrower than it."""

import pytest
from sqlalchemy import select

from specdash.costmodel.uncertainty import MIN_BAND, PRIOR_PSEUDO_COUNT, PRIOR_ROUND_BAND
from specdash.db.engine import reading
from specdash.db.models import Deployment, Prediction
from specdash.db.repeats import noise_by_deployment
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.ingest_support import native

BASE = {"kind": "benchmark", "deployment": "noisy box", "concurrency": 1, "dataset": "chat"}
SPEC = {
    **BASE,
    "run": "r1",
    "checkpoint": "epoch_1",
    "speculative_algorithm": "EAGLE3",
    "num_steps": 3,
    "topk": 1,
    "num_draft_tokens": 4,
    "decode_tps": 150.0,
    "accept_length": 2.0,
}


def test_repeats_set_the_noise_and_no_band_is_narrower(engine):
    # two no-speculation runs at 100 and 300 tok/s on each of ten datasets: each run 50 % off its group's
    # mean of 200 (identical records would be one record stored once, so each pair has its dataset)
    repeats = [{**BASE, "dataset": f"set{i}", "decode_tps": tps} for i in range(10) for tps in (100.0, 300.0)]
    data = native(
        {"kind": "run", "name": "r1"}, {"kind": "checkpoint", "run": "r1", "name": "epoch_1"}, *repeats, SPEC
    )
    result = ingest(engine, UploadSource("noisy.jsonl", data))
    assert result.status == "loaded", [str(p) for p in result.problems]
    noise = (20 * 0.5 + PRIOR_PSEUDO_COUNT * MIN_BAND) / (20 + PRIOR_PSEUDO_COUNT)
    assert noise > PRIOR_ROUND_BAND  # wider than the prior's band: it decides
    with reading(engine) as session:
        deployment = session.scalar(select(Deployment.id).where(Deployment.name == "noisy box"))
        found = noise_by_deployment(session)
        assert list(found) == [deployment] and found[deployment] == pytest.approx(noise)
        bands = list(
            session.scalars(select(Prediction.error_band).where(Prediction.deployment_id == deployment))
        )
    assert bands and bands == pytest.approx([noise] * len(bands))


def test_a_deployment_without_repeats_has_no_noise_of_its_own(engine):
    data = native({**BASE, "decode_tps": 100.0}, {**BASE, "concurrency": 8, "decode_tps": 80.0})
    assert ingest(engine, UploadSource("two.jsonl", data)).ok
    with reading(engine) as session:
        assert noise_by_deployment(session) == {}
