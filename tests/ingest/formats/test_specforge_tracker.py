"""Tracker exports holding several runs: one run per column prefix, every point under its own run."""

from sqlalchemy import func, select

from specdash.db.engine import reading
from specdash.db.models import MetricPoint, Run
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import PathSource
from tests.ingest_support import SPECFORGE, content, load, points

EXPORT = SPECFORGE / "wandb_export_three_runs.csv"


def test_each_column_prefix_is_a_run_of_its_own(engine):
    result = load(engine, EXPORT)
    with reading(engine) as session:
        assert set(session.scalars(select(Run.name))) == {
            "qwen3-8b-eagle3-ttt7",
            "qwen3-8b-eagle3-ttt3",
            "eagle3 - lr 3e-4",
        }
        assert session.scalar(select(func.count()).select_from(MetricPoint)) == 24
    # ttt7 logged all 5 steps, ttt3 missed step 2000, "eagle3 - lr 3e-4" stopped after 1500 (2 keys each)
    assert result.store.metric_points == 10 + 8 + 6
    ttt7 = points(engine, "qwen3-8b-eagle3-ttt7")
    assert len(ttt7) == 10 and ttt7[("train/acc_0", 2500)] == 0.72 and ttt7[("train/ploss_0", 500)] == 1.9
    ttt3 = points(engine, "qwen3-8b-eagle3-ttt3")
    assert ttt3[("train/acc_0", 500)] == 0.48 and ("train/acc_0", 2000) not in ttt3
    assert ttt3[("train/ploss_0", 2500)] == 1.34
    # a run name holding " - " keeps it: the key is what follows the last one
    lr = points(engine, "eagle3 - lr 3e-4")
    assert lr == {
        ("train/acc_0", 500): 0.55,
        ("train/ploss_0", 500): 1.87,
        ("train/acc_0", 1000): 0.6,
        ("train/ploss_0", 1000): 1.72,
        ("train/acc_0", 1500): 0.65,
        ("train/ploss_0", 1500): 1.57,
    }


def test_one_run_name_for_several_runs_is_refused(engine):
    before = content(engine)
    result = ingest(engine, PathSource(EXPORT), IngestPolicy(link=LinkOptions(run="mine")))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        f"{EXPORT}:2: run: the export holds several runs (qwen3-8b-eagle3-ttt7, qwen3-8b-eagle3-ttt3, "
        "eagle3 - lr 3e-4); --run would put all their points under one run: leave it out"
    ]
    assert content(engine) == before
