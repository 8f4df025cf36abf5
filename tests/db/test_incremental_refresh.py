"""An ingest refreshes only what its file touched (answers/refresh.py with benchmark ids); what it leaves in the
store must be exactly what a full refresh of every benchmark computes: the same predictions, gaps,
verdicts and alerts, row for row."""

import json

import pytest
from sqlalchemy import select

from specdash.answers.refresh import refresh
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.leaderboard_models import LeaderboardEntry
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run
from specdash.db.schema import upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource

H100, L40S = "1x H100, TP1", "4x L40S, TP4, PCIe"


def lines(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def baseline(deployment: str, concurrency: int, tps: float, dataset: str = "mtbench") -> dict:
    return dict(
        kind="benchmark", deployment=deployment, concurrency=concurrency, dataset=dataset, decode_tps=tps
    )


def eagle(run: str, checkpoint: str, deployment: str, concurrency: int, tps: float, tau: float, **extra):
    return dict(
        kind="benchmark",
        deployment=deployment,
        run=run,
        checkpoint=checkpoint,
        speculative_algorithm="EAGLE3",
        num_steps=3,
        topk=1,
        num_draft_tokens=4,
        concurrency=concurrency,
        dataset="mtbench",
        decode_tps=tps,
        accept_length=tau,
        **extra,
    )


# First file: baselines at loads 1 and 8 on two deployments; a trained drafter (per-position acceptance)
# and an untrained one (judged by its own earlier benchmarks, dated).
FIRST = lines(
    dict(kind="checkpoint", run="trained", name="epoch_2", acceptance=[0.8, 0.6, 0.5]),
    baseline(H100, 1, 120.0),
    baseline(H100, 8, 80.0),
    baseline(L40S, 1, 60.0),
    eagle("trained", "epoch_2", H100, 1, 230.0, 2.4),
    eagle("trained", "epoch_2", H100, 8, 90.0, 2.3),  # well under its prediction: an alert
    eagle("trained", "epoch_2", H100, 2, 190.0, 2.4),  # no baseline at 2: interpolated from 1 and 8
    eagle("trained", "epoch_2", L40S, 1, 110.0, 2.2),
    eagle("untrained", "epoch_1", H100, 1, 200.0, 2.0, measured_at="2026-11-10T10:00:00"),
    eagle("untrained", "epoch_1", H100, 1, 150.0, 1.5, measured_at="2026-11-12T10:00:00"),
    eagle("untrained", "epoch_1", L40S, 1, 95.0, 2.1, measured_at="2026-11-13T10:00:00"),
)
# Second file: a second baseline at load 8 (the median moves: every benchmark there is judged again), a
# first one at load 4 (load 2 is now interpolated from 1 and 4), a new benchmark at load 4, and on the
# untrained drafter a backfill measured before its stored ones (their references change).
SECOND = lines(
    baseline(H100, 8, 100.0),
    baseline(H100, 4, 95.0),
    eagle("trained", "epoch_2", H100, 4, 160.0, 2.4),
    eagle("untrained", "epoch_1", H100, 1, 260.0, 2.6, measured_at="2026-11-01T10:00:00"),
    eagle("untrained", "epoch_1", H100, 8, 70.0, 1.9, measured_at="2026-11-14T10:00:00"),
)


def snapshot(engine) -> dict[str, list[tuple]]:
    """Every prediction, gap and verdict by natural key (benchmarks by record key), numbers and texts
    only: ids and timestamps differ between two stores that hold the same thing."""
    with reading(engine) as session:
        keys = dict(session.execute(select(Benchmark.id, Benchmark.record_key)).all())
        names = dict(session.execute(select(Deployment.id, Deployment.name)).all())
        checkpoints = {
            c: f"{r}/{n}"
            for c, r, n in session.execute(select(Checkpoint.id, Run.name, Checkpoint.name).join(Run)).all()
        }
        skip = {"id", "created_at", "updated_at", "parameter_set_id"}
        predictions, prediction_key = [], {}
        for p in session.scalars(select(Prediction)):
            values = {k: v for k, v in vars(p).items() if not k.startswith("_") and k not in skip}
            values["checkpoint_id"] = checkpoints[p.checkpoint_id]
            values["deployment_id"] = names[p.deployment_id]
            key = tuple(sorted(values.items(), key=lambda kv: kv[0]))
            prediction_key[p.id] = (values["checkpoint_id"], values["deployment_id"], p.concurrency, p.source)
            predictions.append(key)
        gaps, gap_key = [], {}
        for g in session.scalars(select(Gap)):
            values = {k: v for k, v in vars(g).items() if not k.startswith("_") and k not in skip}
            values["benchmark_id"] = keys[g.benchmark_id]
            values["prediction_id"] = prediction_key[g.prediction_id]
            values["diagnoses"] = json.dumps(g.diagnoses, sort_keys=True)
            gap_key[g.id] = (values["benchmark_id"], values["prediction_id"])
            gaps.append(tuple(sorted(values.items())))
        alerts = []
        for a in session.scalars(select(Alert)):
            values = {k: v for k, v in vars(a).items() if not k.startswith("_") and k not in skip}
            values["benchmark_id"] = keys[a.benchmark_id]
            values["gap_id"] = gap_key.get(a.gap_id)
            alerts.append(tuple(sorted(values.items(), key=lambda kv: kv[0])))
    return {"predictions": sorted(predictions), "gaps": sorted(gaps), "alerts": sorted(alerts)}


def store(tmp_path, name: str):
    engine = make_engine(f"sqlite:///{tmp_path / name}")
    upgrade(engine)
    return engine


def test_ingest_refreshes_what_it_touched_to_what_a_full_refresh_computes(tmp_path):
    engine = store(tmp_path, "incremental.db")
    for name, data in (("first.jsonl", FIRST), ("second.jsonl", SECOND)):
        result = ingest(engine, UploadSource(name, data))
        assert result.status == "loaded", result.problems
    second_refresh = result.refresh
    assert second_refresh is not None
    # the second file's 3 speculative benchmarks, and the stored ones its baselines move: the trained
    # drafter's at load 8 and at load 2 (interpolated); the untrained drafter's others are judged again
    # too (counted as backfilled, not here); the L40S and H100 load-1 trained ones are not touched
    assert second_refresh.benchmarks == 5
    incremental = snapshot(engine)
    # one theory prediction per (checkpoint, deployment, load): 5 trained, 3 untrained; a verdict each
    assert len(incremental["predictions"]) == 8 and len(incremental["alerts"]) == 10

    with transaction(engine) as session:
        full = refresh(session)
    assert full.benchmarks == 10 and full.new_alerts == 0
    assert snapshot(engine) == incremental

    # the two files as one hold two baselines of one deployment, load and dataset at different speeds: a
    # repeat group, both stored and named; the predictions are those of the two files one after the other
    together = store(tmp_path, "together.db")
    both = ingest(together, UploadSource("both.jsonl", FIRST + SECOND))
    assert both.status == "loaded", both.problems
    assert "80 and 100 tok/s (lines 3, 12)" in (both.message or "")
    assert len(snapshot(together)["predictions"]) == 8


@pytest.mark.parametrize("concurrency", [1, 8])
def test_a_new_baseline_refreshes_only_its_deployment_and_load(tmp_path, concurrency):
    engine = store(tmp_path, "baseline.db")
    assert ingest(engine, UploadSource("first.jsonl", FIRST)).status == "loaded"
    result = ingest(engine, UploadSource("more.jsonl", lines(baseline(H100, concurrency, 110.0))))
    assert result.refresh is not None
    # on the H100, the trained drafter's one at load 2 (interpolated) and, at load 1, the trained
    # drafter's one and the untrained's two, or at load 8 the trained drafter's one
    assert result.refresh.benchmarks == (4 if concurrency == 1 else 2)
    before = snapshot(engine)
    with transaction(engine) as session:
        refresh(session)
    assert snapshot(engine) == before


# A store of many benchmarks: two deployments with baselines at some loads (loads 1, 2, 4 and 16; datasets
# of their own at some), one measured only with speculation; untrained drafters over datasets and loads 1-24.
DATASETS = ["mtbench", "gsm8k", "humaneval", "alpaca"]
A100 = "4x A100, TP4, NVLink"


def bigger_store() -> bytes:
    records = []
    for deployment, base in ((H100, 120.0), (L40S, 60.0)):
        for n, load in enumerate((1, 2, 4, 16)):
            for dataset in DATASETS[: 1 + n % 3]:
                records.append(baseline(deployment, load, base / load**0.3 + len(dataset), dataset))
    for n in range(240):
        deployment = (H100, L40S, A100)[n % 3]
        load = (1, 2, 3, 4, 8, 12, 16, 24)[n // 3 % 8]
        dataset = DATASETS[n // 21 % 4]
        tau = 1.8 + 0.1 * (n % 5)
        tps = 200.0 / load**0.4 * tau / 2 * (1 + (n % 11 - 5) / 100)
        run, checkpoint = f"drafter-{n % 4}", f"epoch_{n // 4 % 3}"
        hours = n  # dated: a later file's earlier benchmark is a backfill
        records.append(
            eagle(
                run,
                checkpoint,
                deployment,
                load,
                tps,
                tau,
                measured_at=f"2026-11-{10 + hours // 24}T{hours % 24:02}:00:00",
            )
            | {"dataset": dataset}
        )
    return lines(*records)


SMALL_FILES = {
    # at a measured load, on a new dataset: the load's median moves
    "baseline at a measured load": lines(baseline(H100, 1, 131.0, dataset="new")),
    # at a new load between two: the loads between its neighbours are interpolated from it
    "baseline at a new load": lines(baseline(H100, 8, 70.0, dataset="gsm8k")),
    # past the last measured load: carried from it
    "baseline past the last load": lines(baseline(L40S, 32, 30.0)),
    # of a dataset with its own loads
    "baseline of a dataset": lines(baseline(L40S, 2, 44.0, dataset="humaneval")),
    # repeats of one measurement far apart, at one load: the deployment's noise widens every band on it
    "repeated baselines": lines(
        *(baseline(L40S, 4, tps, dataset=f"noise-{n}") for n in range(4) for tps in (5.0, 100.0))
    ),
    # the first of its deployment: no more estimated baselines there
    "first baseline of a deployment": lines(baseline(A100, 4, 90.0)),
    # a drafter's earlier benchmark: its later ones are judged again by it
    "backfilled benchmark": lines(
        eagle("drafter-1", "epoch_0", H100, 3, 150.0, 2.2, measured_at="2026-11-01T10:00:00")
    ),
    # a drafter's latest benchmark (a scraped window): only it is judged
    "appended benchmark": lines(
        eagle("drafter-1", "epoch_0", H100, 3, 150.0, 2.2, measured_at="2026-12-01T10:00:00")
    ),
}
# gaps the small file's refresh writes: one per benchmark judged (one source, theory)
JUDGED = {"backfilled benchmark": 21, "appended benchmark": 1}


@pytest.mark.parametrize("name", list(SMALL_FILES))
def test_a_small_file_into_a_bigger_store_leaves_what_a_full_refresh_computes(tmp_path, name):
    engine = store(tmp_path, "bigger.db")
    assert ingest(engine, UploadSource("store.jsonl", bigger_store())).status == "loaded"
    result = ingest(engine, UploadSource("small.jsonl", SMALL_FILES[name]))
    assert result.status == "loaded", result.problems
    assert result.refresh is not None
    assert name not in JUDGED or result.refresh.gaps == JUDGED[name]
    incremental = snapshot(engine) | {"entries": entries(engine)}
    with transaction(engine) as session:
        refresh(session)
    assert snapshot(engine) | {"entries": entries(engine)} == incremental
    # and the same as a store that took both files from nothing
    scratch = store(tmp_path, "scratch.db")
    for file, data in (("store.jsonl", bigger_store()), ("small.jsonl", SMALL_FILES[name])):
        assert ingest(scratch, UploadSource(file, data)).status == "loaded"
    assert snapshot(scratch)["predictions"] == incremental["predictions"]


def entries(engine) -> list[tuple]:
    """The Leaderboard's stored entries, by names (ids differ between stores)."""
    with reading(engine) as session:
        rows = session.execute(select(LeaderboardEntry.__table__)).mappings().all()
    return sorted(tuple(sorted((k, v) for k, v in row.items())) for row in rows)


LARGER_FILES = {
    # more of a drafter's benchmarks than a batch, measured before its stored ones: its others are judged
    # again, each with its group's part
    "backfilled benchmarks": lines(
        *(
            eagle(
                "drafter-1", "epoch_0", deployment, load, 150.0 - load, 2.2, measured_at="2026-11-01T10:00:00"
            )
            | {"dataset": dataset}
            for deployment in (H100, L40S)
            for load in (1, 3, 8)
            for dataset in DATASETS[:2]
        )
    ),
    "baseline at a new load": SMALL_FILES["baseline at a new load"],
}


@pytest.mark.parametrize("name", list(LARGER_FILES))
def test_a_checkpoint_larger_than_a_batch_is_refreshed_to_what_one_batch_stores(tmp_path, monkeypatch, name):
    """A drafter with more benchmarks than a batch is refreshed over several parts, each of whole
    prediction groups (its backfilled benchmarks with their groups' part): the split must not show, in
    an ingest's refresh or a full one."""
    from specdash.answers import refresh as refresh_module

    read = refresh_module.benchmark_rows
    parts: list[int] = []  # the benchmarks of each part read

    def benchmark_rows(session, ids):
        parts.append(len(ids))
        return read(session, ids)

    monkeypatch.setattr(refresh_module, "benchmark_rows", benchmark_rows)
    results = []
    for batch in (refresh_module.BATCH, 3):
        monkeypatch.setattr(refresh_module, "BATCH", batch)
        engine = store(tmp_path, f"batch-{batch}.db")
        parts.clear()
        for file, data in (("store.jsonl", bigger_store()), ("larger.jsonl", LARGER_FILES[name])):
            assert ingest(engine, UploadSource(file, data)).status == "loaded"
        incremental = snapshot(engine) | {"entries": entries(engine)}
        with transaction(engine) as session:
            full = refresh(session)
        assert snapshot(engine) | {"entries": entries(engine)} == incremental
        results.append((incremental, full))
        assert batch > 3 or max(parts) < 20  # a drafter's benchmarks over several parts
        engine.dispose()
    (one, one_full), (split, split_full) = results
    assert split == one and split_full == one_full
    assert len(one["gaps"]) >= 240  # 20 benchmarks on each of 12 drafters (and the small file's)


# An untrained drafter's series dated out of id order: at load 1 measured at 12, 10 and 11 o'clock, at load 2
# at 11:30, its reference the load-1 ones before it (with a measured baseline: no load model is fitted
# again).
OUT_OF_ORDER = lines(
    baseline(H100, 1, 120.0),
    eagle("untrained", "epoch_1", H100, 1, 200.0, 2.0, measured_at="2026-11-10T12:00:00"),
    eagle("untrained", "epoch_1", H100, 1, 150.0, 1.5, measured_at="2026-11-10T10:00:00"),
    eagle("untrained", "epoch_1", H100, 1, 240.0, 2.4, measured_at="2026-11-10T11:00:00"),
    eagle("untrained", "epoch_1", H100, 2, 170.0, 2.1, measured_at="2026-11-10T11:30:00"),
)


def later(load: int, measured_at: str | None) -> bytes:
    extra = {} if measured_at is None else {"measured_at": f"2026-11-10T{measured_at}:00"}
    return lines(eagle("untrained", "epoch_1", H100, load, 180.0, 1.8, **extra))


# a later file's one benchmark, and how many benchmarks its refresh judges
LATER_FILES = {
    # dated after the others, at a load of its own: only it is judged
    "dated later": (later(4, "13:00"), 1),
    # at the same time as the latest: after it by id
    "dated with the latest": (later(4, "12:00"), 1),
    # after the others at load 1: its group's prediction follows it, so the members judged at the
    # group's accept length are judged again (the 10 o'clock one, first of the series, without a
    # reference of its own) with the group's first by id (its algorithm names the family)
    "dated later, in a group": (later(1, "13:00"), 3),
    # dated between two: the later ones' references change (the load-2 one's), every one is judged again
    "dated between": (later(4, "10:30"), 5),
    # undated: the series is walked in id order from now on, so every reference changes
    "undated": (later(4, None), 5),
}


@pytest.mark.parametrize("name", list(LATER_FILES))
def test_a_drafters_new_benchmark_rejudges_its_others_only_when_it_changes_their_order(tmp_path, name):
    data, judged = LATER_FILES[name]
    engine = store(tmp_path, "series.db")
    assert ingest(engine, UploadSource("first.jsonl", OUT_OF_ORDER)).ok
    result = ingest(engine, UploadSource("later.jsonl", data))
    assert result.ok and result.refresh is not None and result.refresh.gaps == judged
    incremental = snapshot(engine)
    with transaction(engine) as session:
        refresh(session)
    assert snapshot(engine) == incremental


def test_a_replaced_file_rejudges_the_benchmarks_it_came_before(tmp_path):
    """A file ingested again with --replace loses its benchmarks and stores them anew, after those of a
    later file: the later file's benchmarks (another group: another load) lose their earlier ones,
    undated as they are."""
    from specdash.ingest.policy import IngestPolicy, OnConflict

    first = lines(*(eagle("untrained", "epoch_1", H100, 1, 200.0 + n, 2.0 + n / 10) for n in range(3)))
    later = lines(*(eagle("untrained", "epoch_1", H100, 2, 150.0 + n, 1.5 + n / 10) for n in range(2)))
    engine = store(tmp_path, "replaced.db")
    for name, data in (("first.jsonl", first), ("later.jsonl", later)):
        assert ingest(engine, UploadSource(name, data)).ok
    again = ingest(engine, UploadSource("first.jsonl", first), IngestPolicy(on_conflict=OnConflict.REPLACE))
    assert again.ok and "replaced the earlier ingest" in (again.message or "")
    incremental = snapshot(engine)
    with transaction(engine) as session:
        refresh(session)
    assert snapshot(engine) == incremental


def test_a_refitted_load_model_rejudges_every_benchmark_on_its_deployment(tmp_path):
    """A deployment measured only with speculation: a drafter's benchmark at a new load fits its load model
    again, which moves the estimated baseline of another drafter's benchmarks there too."""
    first = lines(
        *(
            eagle("one", "epoch_1", A100, load, 200.0 / load**0.3, 2.0) | {"dataset": f"d{load}"}
            for load in (1, 2, 4)
        ),
        *(eagle("two", "epoch_1", A100, load, 190.0 / load**0.3, 1.9) for load in (1, 2, 4)),
    )
    engine = store(tmp_path, "refit.db")
    assert ingest(engine, UploadSource("first.jsonl", first)).ok
    result = ingest(engine, UploadSource("later.jsonl", lines(eagle("one", "epoch_1", A100, 16, 90.0, 2.0))))
    assert result.ok and result.refresh is not None and result.refresh.refitted == [A100]
    assert result.refresh.gaps == 7  # the new one and the six before it
    incremental = snapshot(engine) | {"entries": entries(engine)}
    with transaction(engine) as session:
        assert refresh(session).refitted == []
    assert snapshot(engine) | {"entries": entries(engine)} == incremental


def test_a_live_windows_refresh_judges_only_the_members_its_group_passes_on_to(tmp_path):
    """A drafter scraped at one load, a window a file as `specdash scrape` stores them, all in one
    prediction group: the second window judges the first again (the group's accept length was the first's
    own), each later one only the group's first (without a reference of its own); after every window the
    store holds what a full refresh computes."""
    engine = store(tmp_path, "live.db")
    assert ingest(
        engine, UploadSource("baseline.jsonl", lines(baseline(H100, 8, 80.0) | {"dataset": None}))
    ).ok
    judged = []
    for n in range(8):
        window = eagle(
            "live",
            "epoch_1",
            H100,
            8,
            100.0 + 3 * n,
            1.8 + n % 3 / 10,
            measured_at=f"2026-11-10T10:{n:02}:00",
        )
        result = ingest(engine, UploadSource(f"window-{n}.jsonl", lines(window | {"dataset": None})))
        assert result.ok and result.refresh is not None
        judged.append(result.refresh.gaps)
        incremental = snapshot(engine) | {"entries": entries(engine)}
        with transaction(engine) as session:
            refresh(session)
        assert snapshot(engine) | {"entries": entries(engine)} == incremental, f"after window {n}"
    assert judged == [1, 2, 2, 2, 2, 2, 2, 2]
