"""A deployment measured only with speculation, at several depths and loads (GuideLLM reports of
tests/fixtures/guidellm/depth_sweep/): predicted against estimated baselines, calibrated, and predicted
at loads it was never measured at by the round of batch and depth its calibrated set carries.

The fixture's ground truth (make_depth_sweep.py): round = 6 + 0.5 K + B (0.05 + 0.03 K) ms at the
report's mean concurrency B, tau chained from acceptance (0.8, 0.72, 0.66, 0.62, 0.58, 0.55):
tau(1) = 1.8, tau(3) = 1 + 0.8 + 0.576 + 0.38016 = 2.75616, tau(5) = 3.12938."""

import json

import pytest
from sqlalchemy import delete, select

from specdash.answers.advisories import refresh_advisories
from specdash.answers.calibrate import calibrate_all
from specdash.answers.deployment_load import deployment_load
from specdash.answers.edits import apply_calibration_and_refresh
from specdash.answers.schedule import checkpoint_schedule
from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.load_observations import fit_key
from specdash.costmodel.loadmodel import LoadObservation
from specdash.costmodel.priors import DeploymentFacts
from specdash.db.engine import reading, transaction
from specdash.db.live_models import Advisory
from specdash.db.load_fit_models import LoadFit
from specdash.db.models import Deployment, ParameterSet, Prediction
from specdash.ingest.describe import describe
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.conftest import FIXTURES
from tests.ingest_support import load

SWEEP = FIXTURES / "guidellm" / "depth_sweep"
DEPLOYMENT = "Llama-3.1-8B-Instruct, vllm"
RATES = (0.8, 0.72, 0.66, 0.62, 0.58, 0.55)
TAU = {1: 1.8, 3: 2.75616, 5: 3.129376}


def truth_tps(steps: int, batch: float) -> float:
    """Per-request tok/s of the fixture's ground truth, worked by hand from its stated round."""
    return 1000.0 * TAU[steps] / (6.0 + 0.5 * steps + batch * (0.05 + 0.03 * steps))


@pytest.fixture
def sweep(engine):
    for name in ("drafter.json", "eagle3_k1.json", "eagle3_k3.json", "eagle3_k5.json"):
        assert load(engine, SWEEP / name).status == "loaded"
    return engine


def test_a_sweep_without_a_baseline_is_predicted_against_an_estimate(sweep):
    with reading(sweep) as session:
        rows = session.scalars(select(Prediction).where(Prediction.source == "theory")).all()
    # every benchmark (3 depths x 3 loads) has its prediction, none had a baseline before
    assert len(rows) == 9
    assert all(p.baseline_estimated and p.baseline_tps for p in rows)
    # one estimated step per load, slower as the load grows
    by_load = {p.concurrency: p.baseline_tps for p in rows}
    assert by_load[1] > by_load[8] > by_load[31]


def test_calibrate_fits_a_sweep_without_a_baseline(sweep):
    with reading(sweep) as session:
        reports, skipped = calibrate_all(session)
    assert skipped == [] and len(reports) == 1
    report = reports[0]
    assert report.n_benchmarks == 9 and report.baseline_estimated
    assert report.load_params is not None and sorted(set(report.concurrencies)) == [1, 8, 31]


def test_calibrated_predictions_come_from_the_load_model(sweep):
    with transaction(sweep) as session:
        report = calibrate_all(session)[0][0]
        pset, _ = apply_calibration_and_refresh(session, report)
        fit = pset.fit
    assert fit["baseline_estimated"] and fit["load_levels"] == 3 and fit["load_model"]["step_ms"] > 0
    with reading(sweep) as session:
        rows = session.scalars(select(Prediction).where(Prediction.source == "calibrated")).all()
        deployment_id = session.scalars(select(Deployment.id)).one()
        load = deployment_load(session, deployment_id)
        active = session.scalars(select(ParameterSet).where(ParameterSet.source == "calibrated")).one()
    assert len(rows) == 9 and all(p.baseline_estimated for p in rows)
    # the fixture's mean concurrencies are 0.99, 7.8 and 30.6; stored at 1, 8 and 31
    means = {1: 0.99, 8: 7.8, 31: 30.6}
    for p in rows:
        assert p.predicted_tps == pytest.approx(truth_tps(p.num_steps, means[p.concurrency]), rel=0.03)
    # at loads never measured, continuous in B: within 6 % of the truth at 4 and 20 requests
    assert load is not None and load.source == "calibrated" and load.parameter_set_id == active.id
    assert load.baseline_estimated
    for batch in (4.0, 20.0):
        for steps in (1, 3, 5):
            tau = predict_accept_length(RATES, steps, 1, steps + 1, load.acc_to_acceptance).accept_length
            tps = load.params.tps(tau, batch, steps, drafter="1")
            assert tps == pytest.approx(truth_tps(steps, batch), rel=0.06)


def test_without_a_calibration_the_priors_scale_by_the_estimated_step(sweep):
    with reading(sweep) as session:
        deployment_id = session.scalars(select(Deployment.id)).one()
        load = deployment_load(session, deployment_id)
    assert load is not None and load.source == "theory" and load.baseline_estimated
    assert load.params.base_step_ms(1) > 0


def test_the_depth_advisor_uses_the_schedule_at_every_load_served(engine, tmp_path):
    """A run trained 2 deep, benchmarked in the sweep: at one request the truth's best depth is 4
    (365.9 tok/s against 334.2 at depth 2, +9.5 %), so the advisor asks for TTT >= 4 there, at the load the
    schedule finds it, not only at batch 1."""
    shallow = json.loads((SWEEP / "drafter.json").read_text())
    shallow["runs"][0]["ttt_length"] = 2
    (tmp_path / "drafter.json").write_text(json.dumps(shallow))
    for path in (tmp_path / "drafter.json", *(SWEEP / f"eagle3_k{k}.json" for k in (1, 3, 5))):
        assert load(engine, path).status == "loaded"
    with transaction(engine) as session:
        apply_calibration_and_refresh(session, calibrate_all(session)[0][0])
        refresh_advisories(session)
    with reading(engine) as session:
        made = checkpoint_schedule(session, DEPLOYMENT, "llama31-eagle3", "epoch_3", [1, 8, 31], 16)
        advised = {a.concurrency: a for a in session.scalars(select(Advisory)) if a.active}
    assert 1 in advised and advised[1].best_depth == 4 and advised[1].gain >= 0.05
    for entry in made.entries:
        if int(entry.concurrency) in advised:
            assert advised[int(entry.concurrency)].best_depth == entry.num_steps


def test_observations_take_tau_measured_else_from_the_training_rates(engine):
    """One drafter on one deployment: a benchmark with a measured accept length keeps it; one without
    takes tau chained from the checkpoint's training rates, 1 + 0.8 + 0.8 x 0.6 + 0.8 x 0.6 x 0.5 = 2.52 at
    K = 3; repeats of one setting and load become one observation at their median tok/s."""
    from specdash.db.loadmodels import speculative_observations
    from specdash.db.models import Benchmark, Checkpoint, PositionAcceptance, Run

    with transaction(engine) as session:
        deployment, run = Deployment(name="H100"), Run(name="eagle3-run", speculative_algorithm="EAGLE3")
        session.add_all([deployment, run])
        session.flush()
        checkpoint = Checkpoint(run_id=run.id, name="epoch_1")
        session.add(checkpoint)
        session.flush()
        session.add_all(
            [
                PositionAcceptance(checkpoint_id=checkpoint.id, position=i, rate=r)
                for i, r in enumerate((0.8, 0.6, 0.5))
            ]
        )
        settings = [(1, 3, 2.1, 150.0), (1, 3, 2.1, 170.0), (1, 3, 2.1, 190.0), (8, 3, None, 90.0)]
        session.add_all(
            Benchmark(
                record_key=f"k{i}",
                deployment_id=deployment.id,
                checkpoint_id=checkpoint.id,
                speculative_algorithm="EAGLE3",
                num_steps=steps,
                topk=1,
                num_draft_tokens=steps + 1,
                concurrency=concurrency,
                accept_length=tau,
                decode_tps=tps,
            )
            for i, (concurrency, steps, tau, tps) in enumerate(settings)
        )
        deployment_id, drafter = deployment.id, str(run.id)
    with reading(engine) as session:
        observations, families = speculative_observations(session, [deployment_id])
    by_load = {o.concurrency: o for o in observations[deployment_id]}
    assert families == {deployment_id: {drafter: "eagle3"}}
    assert (by_load[1.0].measured_tps, by_load[1.0].accept_length) == (170.0, 2.1)
    assert by_load[8.0].accept_length == pytest.approx(2.52)
    assert (by_load[8.0].steps, by_load[8.0].draft_tokens, by_load[8.0].drafter) == (3, 4, drafter)


def test_drafter_families_are_those_of_the_observations_kept(engine):
    """The families a prior on a measured step is read with come from the benchmarks that make load
    observations: drafter A (EAGLE-3) has one with a measured accept length; B (MTP run) has one whose tau
    is chained from its training rates; C's benchmarks make none (tau 0.5 measured, tok/s 0, no depth), so
    it has no family; D's one benchmark without tau has no training rates either."""
    from specdash.db.loadmodels import drafter_families, speculative_observations
    from specdash.db.models import Benchmark, Checkpoint, PositionAcceptance, Run

    with transaction(engine) as session:
        deployment = Deployment(name="H100")
        runs = {
            name: Run(name=name, speculative_algorithm=algo)
            for name, algo in (("A", "EAGLE3"), ("B", "MTP"), ("C", "EAGLE3"), ("D", "EAGLE"))
        }
        session.add_all([deployment, *runs.values()])
        session.flush()
        checkpoints = {name: Checkpoint(run_id=run.id, name="final") for name, run in runs.items()}
        session.add_all(checkpoints.values())
        session.flush()
        session.add_all(
            PositionAcceptance(checkpoint_id=checkpoints["B"].id, position=i, rate=r)
            for i, r in enumerate((0.7, 0.5))
        )
        rows = [
            ("A", 3, 2.4, 150.0),
            ("B", 2, None, 120.0),
            ("C", 3, 0.5, 140.0),
            ("C", 3, 2.0, 0.0),
            ("C", None, 2.0, 130.0),
            ("D", 2, None, 110.0),
        ]
        session.add_all(
            Benchmark(
                record_key=f"k{i}",
                deployment_id=deployment.id,
                checkpoint_id=checkpoints[name].id,
                speculative_algorithm="EAGLE3",
                num_steps=steps,
                topk=1,
                num_draft_tokens=steps + 1 if steps else None,
                concurrency=1,
                accept_length=tau,
                decode_tps=tps,
            )
            for i, (name, steps, tau, tps) in enumerate(rows)
        )
        deployment_id = deployment.id
        ids = {name: str(run.id) for name, run in runs.items()}
    with reading(engine) as session:
        families = drafter_families(session, deployment_id)
        observed = speculative_observations(session, [deployment_id])[1][deployment_id]
    assert families == observed
    assert set(families) == {ids["A"], ids["B"]}
    assert families[ids["B"]] != families[ids["A"]] == "eagle3"


def _sweep_lines(loads, datasets, start: int = 0, depths=(1, 3, 5)) -> bytes:
    """Native benchmark records of one drafter on a deployment never run without speculation: each of
    `depths` at each load and dataset, tok/s from the fixture's ground truth."""
    lines = []
    for load_level in loads:
        for steps in depths:
            for d in datasets:
                record = {
                    "kind": "benchmark",
                    "deployment": "1x H100, TP1",
                    "concurrency": load_level,
                    "dataset": f"set-{d + start}",
                    "speculative_algorithm": "EAGLE3",
                    "num_steps": steps,
                    "topk": 1,
                    "num_draft_tokens": steps + 1,
                    "accept_length": TAU[steps],
                    "decode_tps": round(truth_tps(steps, load_level) * (1 + 0.003 * (d % 5)), 3),
                    "run": "cached",
                    "checkpoint": "epoch_1",
                }
                lines.append(json.dumps(record))
    return ("\n".join(lines) + "\n").encode()


def _stored_fit(engine) -> tuple[int, str, dict]:
    with reading(engine) as session:
        fit = session.scalars(select(LoadFit)).one()
        return fit.benchmarks, fit.data_key, fit.estimate


def test_a_load_fit_is_kept_and_refitted_only_when_its_data_changes_materially(engine):
    """Fitted on the first file and stored; a file adding 5 % to the benchmarks at known loads, settings
    and drafters reuses it (predictions against the same estimate); a new load, or more than REFIT_SHARE
    of new benchmarks in all, fits it again, and the ingest summary says so."""
    first = ingest(engine, UploadSource("a.jsonl", _sweep_lines((1, 8), range(4))))  # 24 benchmarks
    assert first.refresh.refitted == ["1x H100, TP1"]
    assert "load model refitted for 1x H100, TP1" in describe(first)
    count, key, estimate = _stored_fit(engine)
    assert count == 24

    small = ingest(engine, UploadSource("b.jsonl", _sweep_lines((8,), range(1), start=100, depths=(3,))))
    assert small.ok and small.refresh.refitted == []
    assert "refitted" not in describe(small)
    assert _stored_fit(engine) == (count, key, estimate)
    with reading(engine) as session:
        new = session.scalars(select(Prediction).order_by(Prediction.id.desc())).first()
        # the new benchmark is predicted against the stored fit's estimate at its load
        level = dict((c, tps) for c, tps, _ in estimate["levels"])[8.0]
        assert new.baseline_estimated and new.baseline_tps == pytest.approx(level)

    more = ingest(
        engine, UploadSource("c.jsonl", _sweep_lines((1,), range(1), start=200))
    )  # 3 more: 4 of 24 new
    assert more.refresh.refitted == ["1x H100, TP1"]
    assert _stored_fit(engine)[0] == 28

    other_load = ingest(engine, UploadSource("d.jsonl", _sweep_lines((4,), range(1), start=300, depths=(3,))))
    assert other_load.ok and other_load.refresh.refitted == ["1x H100, TP1"]


def test_calibrate_says_which_load_models_it_refitted(engine, invoke, tmp_path):
    assert ingest(engine, UploadSource("a.jsonl", _sweep_lines((1, 8), range(2)))).ok
    url = engine.url.render_as_string(hide_password=False)
    assert "load model refitted" not in invoke(url, "calibrate").output  # the ingest's fit still holds
    with transaction(engine) as session:
        session.execute(delete(LoadFit))
    result = invoke(url, "calibrate")
    assert result.exit_code == 0, result.output
    assert "1x H100, TP1: load model refitted" in result.output
    assert "load model refitted" not in invoke(url, "calibrate").output


def test_the_fit_key_changes_with_a_load_a_depth_a_drafter_or_the_deployment_not_with_counts():
    def obs(load=1.0, steps=3, drafter="7", tps=100.0):
        return LoadObservation(load, steps, tps, 2.0, 1, steps + 1, drafter)

    facts, families = DeploymentFacts(gpu="H100", tp_size=1), {"7": "eagle3"}
    base = fit_key([obs(), obs(load=8.0)], facts, families)
    # more benchmarks of the same shape, other medians: the same key (REFIT_SHARE decides)
    assert fit_key([obs(tps=90.0), obs(load=8.0), obs(load=8.0, tps=80.0)], facts, families) == base
    for changed in (
        fit_key([obs(), obs(load=4.0)], facts, families),
        fit_key([obs(), obs(load=8.0, steps=5)], facts, families),
        fit_key([obs(), obs(load=8.0, drafter="8")], facts, {**families, "8": "eagle3"}),
        fit_key([obs(), obs(load=8.0)], DeploymentFacts(gpu="A100", tp_size=1), families),
    ):
        assert changed != base


def _drafter_lines(run: str, *args, **kwargs) -> bytes:
    """_sweep_lines of another drafter (run)."""
    return _sweep_lines(*args, **kwargs).replace(b'"run": "cached"', f'"run": "{run}"'.encode())


def test_a_stored_fit_is_checked_against_the_benchmarks_stored_since(engine, monkeypatch):
    """The ingest that fits a deployment's load model keeps the shape of its data and the store's largest
    benchmark id; a later file's refresh reads the shape of the benchmarks stored since only (a scraped
    window reads one, not the deployment's 100,000), and the shape it keeps is the one read whole."""
    from specdash.costmodel.load_observations import LoadShape
    from specdash.db import loadmodels

    assert ingest(engine, UploadSource("a.jsonl", _sweep_lines((1, 8), range(4)))).ok  # 24 benchmarks
    with reading(engine) as session:
        fit = session.scalars(select(LoadFit)).one()
        assert (fit.checked_through, fit.checked_benchmarks) == (24, 24)
    read_after = []
    whole = loadmodels.load_shapes

    def spy(session, deployment_ids, after=None):
        read_after.append(after)
        return whole(session, deployment_ids, after)

    monkeypatch.setattr(loadmodels, "load_shapes", spy)
    small = ingest(engine, UploadSource("b.jsonl", _sweep_lines((8,), range(1), start=100, depths=(3,))))
    assert small.ok and small.refresh.refitted == []
    assert read_after == [24]
    with reading(engine) as session:
        fit = session.scalars(select(LoadFit)).one()
        assert (fit.benchmarks, fit.checked_through, fit.checked_benchmarks) == (24, 25, 25)
        assert LoadShape.from_json(fit.shape) == whole(session, [fit.deployment_id])[fit.deployment_id]


def test_a_deleted_drafter_has_the_fit_checked_whole_and_made_again(engine):
    """Two drafters' benchmarks fitted together; one drafter's run deleted: the next refresh reads the
    deployment's data whole, finds a drafter and half the benchmarks gone, and fits again. Read from the
    last check on only, the deleted benchmarks would still count and the fit would be kept."""
    from specdash.answers.refresh import refresh
    from specdash.db.models import Run
    from specdash.db.runs import delete_runs

    assert ingest(engine, UploadSource("a.jsonl", _sweep_lines((1, 8), range(4)))).ok
    other = ingest(engine, UploadSource("b.jsonl", _drafter_lines("other", (1, 8), range(4), start=100)))
    assert other.refresh.refitted == ["1x H100, TP1"] and _stored_fit(engine)[0] == 48
    with transaction(engine) as session:
        delete_runs(session, [session.scalar(select(Run.id).where(Run.name == "other"))])
        assert refresh(session).refitted == ["1x H100, TP1"]
    assert _stored_fit(engine)[0] == 24
