"""refresh(): predictions and gaps recomputed in bulk, alert status kept, baselines matched by dataset."""

import json

import pytest
from sqlalchemy import select, text

from specdash.answers.refresh import refresh
from specdash.costmodel.uncertainty import prior_error_band
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert, Benchmark, Deployment, Gap, Prediction
from specdash.db.schema import upgrade
from specdash.demo import DEMO_FILE_NAME, demo_bytes
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import PathSource, UploadSource
from tests.app_support import SPECBUNDLE

PCIE = "8x RTX PRO 6000, TP8, PCIe"


def story_gap(session) -> Gap:
    return session.scalars(
        select(Gap).join(Prediction).where(Gap.measured_tps == 82.3, Prediction.source == "theory")
    ).one()


def test_a_second_refresh_changes_nothing(demo_url):
    engine = make_engine(demo_url)
    with reading(engine) as session:
        before = {p.id: (p.created_at, p.predicted_tps) for p in session.scalars(select(Prediction))}
    with transaction(engine) as session:
        summary = refresh(session)
    assert (summary.benchmarks, summary.predictions, summary.gaps, summary.new_alerts) == (
        13,
        12,
        16,
        0,
    )  # 16 gaps: 13 theory + 3 external
    with reading(engine) as session:
        after = {p.id: (p.created_at, p.predicted_tps) for p in session.scalars(select(Prediction))}
    assert after == before  # unchanged numbers are not rewritten, so their created_at stays


def test_a_changed_profile_updates_gaps_and_keeps_status_and_note(demo_url):
    engine = make_engine(demo_url)
    with transaction(engine) as session:
        alert = session.get(Alert, story_gap(session).benchmark_id)
        alert.status, alert.note = "investigating", "server flags being checked"
        session.scalars(select(Deployment).where(Deployment.name == PCIE)).one().round_overhead_ms = 12.5
    with transaction(engine) as session:
        gap = story_gap(session)  # loaded before the bulk update, it must show the new numbers after it
        assert gap.predicted_tps == pytest.approx(161.0, abs=0.1)
        summary = refresh(session)
        assert gap.predicted_tps == pytest.approx(1000 * 2.1 / (13.04 + 12.5), abs=0.5)
        alert = session.get(Alert, gap.benchmark_id)
        assert (alert.status, alert.note) == ("investigating", "server flags being checked")
        assert "round_overhead" not in {d["code"] for d in gap.diagnoses}  # the profile now explains it
    # 8 PCIe theory gaps now beat the slower prediction by > 10 %; of their benchmarks, the 7-step ones
    # were alerts already (beyond their trained depth) and two are judged by their external prediction
    assert summary.new_alerts == 5


def test_a_gap_that_grows_past_the_threshold_is_a_new_alert(demo_url):
    engine = make_engine(demo_url)
    with reading(engine) as session:
        before = dict(
            session.execute(
                select(Gap.benchmark_id, Gap.gap).join(Prediction).where(Prediction.source == "theory")
            ).all()
        )
    assert abs(before[4]) < 0.05 and abs(before[5]) < 0.05  # two clean PCIe benchmarks, theory within 5 %
    with transaction(engine) as session:
        # benchmark 4 measured at 55 % of its throughput, benchmark 5 at 85 %
        session.get(Benchmark, 4).decode_tps *= 0.55
        session.get(Benchmark, 5).decode_tps *= 0.85
        summary = refresh(session, [4, 5])
    with reading(engine) as session:
        judged = {
            row.benchmark_id: row
            for row in session.execute(
                select(Alert.benchmark_id, Alert.is_alert, Alert.reason, Gap.gap, Prediction.error_band)
                .join(Gap, Alert.gap_id == Gap.id)
                .join(Prediction)
                .where(Alert.benchmark_id.in_([4, 5]))
            )
        }
    # the gap is the share of the predicted tok/s not measured, 1 - measured / predicted: about 46 % and 17 %
    assert judged[4].gap == pytest.approx(1 - (1 - before[4]) * 0.55, rel=1e-6)
    assert judged[5].gap == pytest.approx(1 - (1 - before[5]) * 0.85, rel=1e-6)
    # both past the 10 % threshold; only the one beyond theory's own error band (the priors' spread, tau from
    # training acc_i) is a new alert
    band = prior_error_band("training")
    assert judged[4].error_band == judged[5].error_band == band
    assert judged[5].gap < band < judged[4].gap
    assert (judged[4].is_alert, judged[5].is_alert) == (True, False)
    assert summary.new_alerts == 1


def test_baselines_are_matched_by_dataset(engine):
    document = {
        "specdash": 1,
        "deployments": [{"name": "lab", "comm_fraction": 0.5}],
        "runs": [{"name": "r", "speculative_algorithm": "EAGLE3", "ttt_length": 3}],
        "checkpoints": [{"run": "r", "name": "c", "acceptance": [0.8, 0.7, 0.6]}],
        "benchmarks": [
            {"deployment": "lab", "decode_tps": 100.0, "dataset": "gsm8k"},
            {"deployment": "lab", "decode_tps": 50.0, "dataset": "mtbench"},
            *(
                {
                    "deployment": "lab",
                    "run": "r",
                    "checkpoint": "c",
                    "speculative_algorithm": "EAGLE3",
                    "num_steps": 3,
                    "topk": 1,
                    "num_draft_tokens": 4,
                    "decode_tps": tps,
                    "accept_length": 2.9,
                    "dataset": dataset,
                }
                for dataset, tps in [("gsm8k", 250.0), ("mtbench", 120.0), ("other", 180.0)]
            ),
        ],
    }
    assert ingest(engine, UploadSource("lab.json", json.dumps(document).encode())).ok
    with reading(engine) as session:
        baseline = {p.dataset: p.baseline_tps for p in session.scalars(select(Prediction))}
    # its own dataset's baseline, else the median over the deployment and concurrency
    assert baseline == {"gsm8k": 100.0, "mtbench": 50.0, "other": 75.0}


def test_refreshing_a_new_baseline_reaches_every_benchmark_it_affects(demo_url):
    engine = make_engine(demo_url)
    with transaction(engine) as session:
        pcie = session.scalar(select(Deployment.id).where(Deployment.name == PCIE))
        baseline = Benchmark(
            record_key="b" * 64, deployment_id=pcie, concurrency=1, dataset="mtbench", decode_tps=80.0
        )
        session.add(baseline)
        session.flush()
        summary = refresh(session, [baseline.id])
    assert summary.benchmarks == 10  # every speculative PCIe benchmark at concurrency 1
    with reading(engine) as session:
        stored = session.scalars(
            select(Prediction.baseline_tps).where(
                Prediction.deployment_id == pcie, Prediction.source == "theory"
            )
        ).all()
    assert set(stored) == {85.0}  # the median of the old 90 and the new 80


def test_a_files_new_ids_are_in_scope_with_every_stored_benchmark_its_baseline_reaches(demo_url):
    """A file's benchmarks have consecutive ids, a baseline among them: its speculative benchmarks are in
    scope as given, and its baseline reaches the stored ones at that load (those of the file read once)."""
    from specdash.db.refresh_scope import refresh_scope

    engine = make_engine(demo_url)
    with transaction(engine) as session:
        pcie = session.scalar(select(Deployment.id).where(Deployment.name == PCIE))
        at_load_1 = select(Benchmark.id).where(
            Benchmark.deployment_id == pcie,
            Benchmark.concurrency == 1,
            Benchmark.checkpoint_id.is_not(None),
            Benchmark.speculative_algorithm.is_not(None),
        )
        stored = set(session.scalars(at_load_1))
        checkpoint_id = session.get(Benchmark, min(stored)).checkpoint_id
        baseline = Benchmark(
            record_key="b" * 64, deployment_id=pcie, concurrency=1, dataset="mtbench", decode_tps=80.0
        )
        new = Benchmark(
            record_key="c" * 64,
            deployment_id=pcie,
            checkpoint_id=checkpoint_id,
            speculative_algorithm="EAGLE3",
            num_steps=3,
            topk=1,
            num_draft_tokens=4,
            concurrency=1,
            dataset="mtbench",
            decode_tps=150.0,
            accept_length=2.2,
        )
        session.add_all([baseline, new])
        session.flush()
        assert new.id == baseline.id + 1  # one run of ids, as a file's are
        scope, deployments, given = refresh_scope(session, [baseline.id, new.id])
    assert len(stored) == 10  # the speculative PCIe benchmarks at concurrency 1 (the test above)
    assert {i for ids in scope.values() for i in ids} == stored | {new.id}
    assert (deployments, given) == ({pcie}, {checkpoint_id: 1})


def test_external_tree_prediction_without_draft_tokens_is_compared(engine):
    """topk > 1 and no num_draft_tokens: the stored prediction and the benchmark it covers agree on N
    (K * topk + 1 = 5 * 3 + 1 = 16), so the external gap exists."""
    document = {
        "specdash": 1,
        "deployments": [{"name": "1x H100", "baseline_tps": 100.0}],
        "runs": [{"name": "tree-run", "speculative_algorithm": "EAGLE3", "ttt_length": 7}],
        "checkpoints": [{"run": "tree-run", "name": "epoch_1", "acceptance": [0.8, 0.7, 0.6, 0.5, 0.4]}],
        "benchmarks": [
            {
                "deployment": "1x H100",
                "run": "tree-run",
                "checkpoint": "epoch_1",
                "speculative_algorithm": "EAGLE3",
                "num_steps": 5,
                "topk": 3,
                "dataset": "mtbench",
                "decode_tps": 180.0,
                "accept_length": 3.4,
            }
        ],
        "predictions": [
            {
                "source": "my-sim",
                "run": "tree-run",
                "checkpoint": "epoch_1",
                "deployment": "1x H100",
                "speculative_algorithm": "EAGLE3",
                "num_steps": 5,
                "topk": 3,
                "dataset": "mtbench",
                "predicted_tps": 200.0,
                "accept_length": 3.6,
            }
        ],
    }
    result = ingest(engine, UploadSource("tree.json", json.dumps(document).encode()))
    assert result.ok, result.problems
    with reading(engine) as session:
        (prediction,) = session.scalars(select(Prediction).where(Prediction.source == "my-sim")).all()
        assert prediction.num_draft_tokens == 16
        (gap,) = session.scalars(select(Gap).join(Prediction).where(Prediction.source == "my-sim")).all()
    assert gap.predicted_tps == 200.0 and gap.gap == pytest.approx(1 - 180.0 / 200.0)


def _verdicts(engine) -> dict[str, list[tuple]]:
    """Predictions, gaps and alerts by their natural keys (ids and timestamps depend on write order)."""
    key = "p.source, p.checkpoint_id, p.deployment_id, p.num_steps, p.topk, p.num_draft_tokens, p.concurrency, p.dataset"
    queries = {
        "prediction": f"SELECT {key}, p.predicted_tps, p.accept_length, p.accept_length_source, p.round_ms, "
        "p.baseline_tps, p.error_band FROM prediction p",
        "gap": f"SELECT g.benchmark_id, {key}, g.gap, g.measured_tps, g.predicted_tps, g.diagnoses, g.severity "
        "FROM gap g JOIN prediction p ON p.id = g.prediction_id",
        "alert": "SELECT a.benchmark_id, a.is_alert, a.severity, a.code, a.reason, a.status, p.source "
        "FROM alert a JOIN gap g ON g.id = a.gap_id JOIN prediction p ON p.id = g.prediction_id",
    }
    with reading(engine) as session:
        return {name: sorted(map(tuple, session.execute(text(sql)))) for name, sql in queries.items()}


def test_a_refresh_in_small_batches_stores_what_one_batch_does(tmp_path, monkeypatch):
    """Refresh works a few checkpoints and groups at a time (bounded memory); the split must not show."""
    from specdash.answers import refresh as refresh_module

    results = []
    for batch in (refresh_module.BATCH, 7):
        monkeypatch.setattr(refresh_module, "BATCH", batch)
        engine = make_engine(f"sqlite:///{tmp_path / f'batch-{batch}.db'}")
        upgrade(engine)
        assert ingest(engine, UploadSource(DEMO_FILE_NAME, demo_bytes())).ok
        assert ingest(engine, PathSource(SPECBUNDLE)).ok
        with transaction(engine) as session:
            again = refresh(session)  # everything, in batches too: nothing changes
        results.append(_verdicts(engine))
        engine.dispose()
    one, small = results
    assert len(one["gap"]) > 400 and sum(row[1] for row in one["alert"]) > 0  # a real workload
    assert small == one
    assert again.benchmarks == len({row[0] for row in one["gap"]})


def test_benchmark_rows_name_the_columns_refresh_selects():
    from specdash.db.refresh_scope import BENCHMARK_COLUMNS
    from specdash.rows import BenchmarkRow

    assert BenchmarkRow._fields == tuple(column.key for column in BENCHMARK_COLUMNS)


def test_benchmarks_of_one_group_are_diagnosed_each_on_its_own(tmp_path):
    """A group's benchmarks share what the diagnoses are given of the group and prediction; what is the
    benchmark's own (served algorithm, hidden size fed) must not carry over from one to the next."""
    from specdash.costmodel import GapContext, decompose, diagnose
    from specdash.costmodel.throughput import RoundTime, Throughput

    def bench(tps: float, **extra) -> dict:
        return dict(
            dict(
                kind="benchmark",
                deployment="1x H100, TP1",
                run="r",
                checkpoint="epoch_1",
                speculative_algorithm="EAGLE3",
                num_steps=3,
                topk=1,
                num_draft_tokens=4,
                concurrency=1,
                dataset="mtbench",
                decode_tps=tps,
                accept_length=2.4,
            ),
            **extra,
        )

    records = [
        dict(kind="run", name="r", speculative_algorithm="EAGLE3", hidden_size=12288, ttt_length=3),
        dict(kind="checkpoint", run="r", name="epoch_1", acceptance=[0.8, 0.6, 0.5]),
        dict(kind="benchmark", deployment="1x H100, TP1", concurrency=1, dataset="mtbench", decode_tps=100.0),
        bench(150.0, speculative_algorithm="EAGLE", draft_hidden_size=4096),
        bench(180.0),
        bench(120.0, draft_hidden_size=4096),
    ]
    engine = make_engine(f"sqlite:///{tmp_path / 'group.db'}")
    upgrade(engine)
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    assert ingest(engine, UploadSource("group.jsonl", data)).ok
    with reading(engine) as session:
        rows = session.execute(
            select(Benchmark.decode_tps, Benchmark.speculative_algorithm, Benchmark.draft_hidden_size, Gap)
            .join(Gap, Gap.benchmark_id == Benchmark.id)
            .order_by(Benchmark.id)
        ).all()
        label = {150.0: "bad", 180.0: "good", 120.0: "fed-wrong"}
        assert [label[r.decode_tps] for r in rows] == ["bad", "good", "fed-wrong"]
        assert len({r.Gap.prediction_id for r in rows}) == 1  # one group, one prediction
        codes = {label[r.decode_tps]: [d["code"] for d in r.Gap.diagnoses] for r in rows}
        assert {"algorithm_mismatch", "hidden_size_mismatch"} <= set(codes["bad"])
        assert not {"algorithm_mismatch", "hidden_size_mismatch"} & set(codes["good"])
        assert "hidden_size_mismatch" in codes["fed-wrong"] and "algorithm_mismatch" not in codes["fed-wrong"]
        # each as a context of its own would diagnose it
        prediction = session.get(Prediction, rows[0].Gap.prediction_id)
        predicted = Throughput(
            prediction.accept_length,
            RoundTime(prediction.round_ms, 0.0, 0.0, 0.0),
            prediction.predicted_tps,
            float("nan"),
            float("nan"),
        )
        for r in rows:
            alone = diagnose(
                GapContext(
                    decomposition=decompose(predicted, r.Gap.measured_tps, 2.4),
                    benchmark_algorithm=r.speculative_algorithm,
                    drafter_algorithm="EAGLE3",
                    draft_hidden_size=r.draft_hidden_size,
                    drafter_hidden_size=12288,
                )
            )
            configuration = {"algorithm_mismatch", "hidden_size_mismatch"}
            assert [d.code for d in alone if d.code in configuration] == [
                code for code in codes[label[r.decode_tps]] if code in configuration
            ]
