"""The Leaderboard ranked in SQL gives what the pandas ranking gave, entry for entry and number for number,
on a store built to vary everything it depends on: several datasets and loads, repeats, settings that tie,
benchmarks without a prediction (or with two of one source), baselines measured per dataset, per load only,
from the prediction and from the profile, superseded benchmarks, an archived run, alerts open or not."""

import itertools
import random
from datetime import datetime

import pandas as pd
import pytest

from specdash.app.board_frames import board_frame, choices_frame
from specdash.db.deploy import DEPLOY_COLUMNS, deploy_table
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.leaderboard import LeaderboardFilter, leaderboard
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run
from tests.db.leaderboard_reference import pandas_deploy_table, pandas_leaderboard

pytestmark = pytest.mark.slow

DATASETS = ["gsm8k", "mtbench", None, ""]
LOADS = [1, 4, 8]
SETTINGS = [("EAGLE3", 3, 1, 4), ("EAGLE3", 5, 1, 6), ("EAGLE3", 7, 4, 16), ("EAGLE", 3, 1, None)]
SOURCES = ["theory", "calibrated", "roofline-sim"]


def _deployments(session) -> list[Deployment]:
    # the profile's baseline: stated, missing (the prediction's or nothing), stated again
    deployments = [
        Deployment(name="pcie", target_model="Kimi-K2.5", baseline_tps=90.0),
        Deployment(name="nvlink", target_model="Kimi-K2.5", baseline_tps=None),
        Deployment(name="small", target_model="Llama-3.1-8B", baseline_tps=210.0),
    ]
    session.add_all(deployments)
    session.flush()
    return deployments


def _baselines(session, deployments: list[Deployment], rng: random.Random) -> None:
    pcie, _, small = deployments
    measured = [
        # per dataset, repeated (the median), and a dataset measured at one load only
        *((pcie, 1, "gsm8k"),) * 3,
        *((pcie, 1, "mtbench"),) * 2,
        (pcie, 4, None),  # a load measured without a dataset: every dataset's baseline there
        (small, 1, "gsm8k"),
        (small, 8, ""),
    ]
    for deployment, load, dataset in measured:
        session.add(
            _benchmark(deployment, None, load, dataset, (None, None, None, None), rng.uniform(60, 220))
        )
    # superseded and speculative-free: not a baseline
    late = _benchmark(pcie, None, 8, "gsm8k", (None, None, None, None), 1.0)
    session.add(late)
    session.flush()
    late.superseded_by_id = late.id


def _benchmark(deployment, checkpoint, load, dataset, setting, tps) -> Benchmark:
    algorithm, steps, topk, tokens = setting
    return Benchmark(
        record_key=f"{random.getrandbits(128):032x}",
        checkpoint_id=checkpoint.id if checkpoint is not None else None,
        deployment_id=deployment.id,
        speculative_algorithm=algorithm,
        num_steps=steps,
        topk=topk,
        num_draft_tokens=tokens,
        concurrency=load,
        dataset=dataset,
        decode_tps=tps,
    )


def _prediction(benchmark: Benchmark, source: str, dataset: str, rng: random.Random) -> Prediction:
    return Prediction(
        checkpoint_id=benchmark.checkpoint_id,
        deployment_id=benchmark.deployment_id,
        num_steps=benchmark.num_steps or 0,
        topk=benchmark.topk or 1,
        num_draft_tokens=benchmark.num_draft_tokens or 0,
        concurrency=benchmark.concurrency,
        dataset=dataset,
        source=source,
        predicted_tps=rng.uniform(50, 400),
        baseline_tps=rng.choice([None, rng.uniform(70, 200)]),
        error_band=rng.choice([None, rng.uniform(0.05, 0.3)]),
    )


def _judge(session, benchmark: Benchmark, rng: random.Random, predictions: dict) -> None:
    """Gaps against predictions of some sources (one source twice: its dataset's and the general one),
    and the benchmark's verdict, raised or not, open or not."""
    gaps = []
    for source in rng.sample(SOURCES, rng.randint(0, 3)):
        for dataset in {benchmark.dataset or "", *([""] if rng.random() < 0.2 else [])}:
            key = (benchmark.checkpoint_id, benchmark.deployment_id, *_setting(benchmark), dataset, source)
            if key not in predictions:
                predictions[key] = _prediction(benchmark, source, dataset, rng)
                session.add(predictions[key])
                session.flush()
            prediction = predictions[key]
            gap = Gap(
                benchmark_id=benchmark.id,
                prediction_id=prediction.id,
                gap=1 - benchmark.decode_tps / prediction.predicted_tps,
                measured_tps=benchmark.decode_tps,
                predicted_tps=prediction.predicted_tps,
            )
            session.add(gap)
            gaps.append(gap)
    session.flush()
    if gaps or rng.random() < 0.5:
        session.add(
            Alert(
                benchmark_id=benchmark.id,
                gap_id=gaps[0].id if gaps else None,
                is_alert=rng.random() < 0.6,
                status=rng.choice(["open", "open", "investigating", "explained"]),
                severity="warning",
            )
        )


def _setting(benchmark: Benchmark) -> tuple:
    return (
        benchmark.num_steps or 0,
        benchmark.topk or 1,
        benchmark.num_draft_tokens or 0,
        benchmark.concurrency,
    )


def build_store(engine, seed: int = 25, runs_made: int = 5) -> None:
    rng = random.Random(seed)
    random.seed(seed)
    with transaction(engine) as session:
        deployments = _deployments(session)
        _baselines(session, deployments, rng)
        runs = [Run(name=f"run-{i}", target_model=rng.choice(["Kimi-K2.5", None])) for i in range(runs_made)]
        runs[4].archived_at = datetime(2026, 1, 1)
        session.add_all(runs)
        session.flush()
        checkpoints = [Checkpoint(run_id=run.id, name=f"epoch_{e}") for run in runs for e in (1, 2, 3)]
        session.add_all(checkpoints)
        session.flush()
        predictions: dict = {}
        for checkpoint in checkpoints:
            for deployment, load in rng.sample(list(itertools.product(deployments, LOADS)), 4):
                tied = rng.uniform(100, 300)  # two settings measured alike: their speedups tie
                for setting in rng.sample(SETTINGS, rng.randint(1, 4)):
                    for dataset in rng.sample(DATASETS, rng.randint(1, 3)):
                        for _ in range(rng.randint(1, 3)):
                            tps = (
                                tied if setting[1] in (3, 5) and rng.random() < 0.3 else rng.uniform(40, 400)
                            )
                            benchmark = _benchmark(deployment, checkpoint, load, dataset, setting, tps)
                            session.add(benchmark)
                            session.flush()
                            if rng.random() < 0.05:
                                benchmark.superseded_by_id = benchmark.id
                            _judge(session, benchmark, rng, predictions)
        _ties(session, deployments, runs)


def _ties(session, deployments: list[Deployment], runs: list[Run]) -> None:
    """Entries whose speedups are equal: one checkpoint on two deployments (2x their profiles' baselines,
    where nothing was measured), another checkpoint of the same speedup, and two settings that tie."""
    pcie, _, small = deployments
    first, second = Checkpoint(run_id=runs[0].id, name="tie"), Checkpoint(run_id=runs[1].id, name="tie")
    session.add_all([first, second])
    session.flush()
    session.add_all(
        [
            _benchmark(pcie, first, 8, "gsm8k", SETTINGS[1], 180.0),
            _benchmark(pcie, first, 8, "gsm8k", SETTINGS[0], 180.0),
            _benchmark(small, first, 4, "gsm8k", SETTINGS[2], 420.0),
            _benchmark(small, second, 4, "gsm8k", SETTINGS[0], 420.0),
        ]
    )


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    from specdash.db.schema import upgrade

    url = f"sqlite:///{tmp_path_factory.mktemp('leaderboard') / 'varied.db'}"
    engine = make_engine(url)
    upgrade(engine)
    build_store(engine)
    yield engine
    engine.dispose()


def filters(engine) -> list[LeaderboardFilter]:
    with reading(engine) as session:
        ids = {d.name: d.id for d in session.query(Deployment)}
    places = [(None, None), (ids["pcie"], None), (None, 8), (ids["small"], 1)]
    return [
        LeaderboardFilter(deployment, load, dataset, source, rank_by)
        for (deployment, load), dataset, source, rank_by in itertools.product(
            places, [None, "gsm8k", ""], ["theory", "roofline-sim", "nothing"], ["measured", "predicted"]
        )
    ]


def assert_same(new: pd.DataFrame, old: pd.DataFrame) -> None:
    new = new[[name for name in new.columns if name in old.columns or name != "target_model"]]
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    for name in new.columns:
        if pd.api.types.is_float_dtype(new[name]):
            # (the pandas path left a column of no predictions at all untyped, its values NaN)
            expected = old[name].astype("float64").to_numpy()
            assert new[name].to_numpy() == pytest.approx(expected, rel=1e-12, nan_ok=True), name
        else:
            assert _values(new[name]) == _values(old[name]), name


def _values(column: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in column.tolist()]


def test_the_sql_ranking_is_the_pandas_ranking(varied):
    compared = 0
    with reading(varied) as session:
        for flt in filters(varied):
            old = pandas_leaderboard(session, flt)
            new = board_frame(leaderboard(session, flt))
            assert_same(new, old)
            compared += len(old)
    assert compared > 1000  # the store leaves every filter something to rank on most


def test_the_deploy_answer_is_the_pandas_one(varied):
    with reading(varied) as session:
        for flt in filters(varied):
            if flt.rank_by == "measured":
                assert_same(
                    choices_frame(deploy_table(session, flt))[DEPLOY_COLUMNS],
                    pandas_deploy_table(session, flt),
                )


def test_the_store_varies_what_the_ranking_depends_on(varied):
    """The fixture is worth comparing on: ties, missing predictions, every kind of baseline."""
    with reading(varied) as session:
        board = pandas_leaderboard(session, LeaderboardFilter(source="theory"))
        every = pandas_leaderboard(session, LeaderboardFilter(source="nothing"))
    assert board["predicted_speedup"].isna().any() and board["predicted_speedup"].notna().any()
    assert every["predicted_speedup"].isna().all() and len(every) > len(board) / 2
    assert (board["datasets"] > 1).any() and (board["benchmarks"] > board["datasets"]).any()
    assert board["measured_speedup"].duplicated().any()  # ties between entries
    assert (board["open_alerts"] > 0).any() and (board["open_alerts"] == 0).any()
    assert "run-4" not in set(board["run"])  # archived
