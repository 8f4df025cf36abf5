"""Depth advisories: the advisor's numbers worked out by hand, advisories as records with status and history,
refreshed as metrics arrive, the demo's story, the CLI, and the migration that adds them."""

import json

import pytest
from sqlalchemy import func, select, text

from specdash.answers.advisories import refresh_advisories
from specdash.app.frames import frame
from specdash.costmodel import CostParams
from specdash.costmodel.advisor import CURVE_MIN_STEPS, EAGLE3_PRIOR, advise_depth, choose_curve
from specdash.db.advisories import (
    AdvisoryChangeError,
    advisory_history,
    advisory_rows,
    change_advisory_status,
)
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.investigation import StatusChange
from specdash.db.live_models import Advisory
from specdash.db.models import Run
from specdash.db.schema import current_revision, head_revision, upgrade
from specdash.demo import PCIE, RUN_10K, RUN_KILLED, RUN_TTT5
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.live_support import DEPLOYMENT

# The story's PCIe box: 90 tok/s (11.11 ms a step), half of it all-reduce, 1.93 ms to draft 3 steps.
PCIE_PARAMS = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=1.93 / 3)


def chain_tps(rates: list[float], steps: int) -> float:
    """By hand: tau = 1 + sum of survivals; past the given rates each position keeps 0.9 of the last."""
    survival, tau, rate = 1.0, 1.0, None
    for k in range(steps):
        rate = rates[k] if k < len(rates) else rate * 0.9
        survival *= rate
        tau += survival
    round_ms = 1000 / 90 + steps * 1.93 / 3
    return 1000 * tau / round_ms


def test_prior_curve_on_pcie_wants_depth_7_for_a_ttt3_run():
    # flat 0.78 for 7 positions: tau(3) = 2.8630 on a 13.04 ms round = 219.5 tok/s; tau(7) = 3.9227 on
    # 15.61 ms = 251.2 tok/s; depth 8 adds 0.1757 * 0.702 = 0.123 tokens for 0.64 ms: 248.9 tok/s
    tps = {k: chain_tps([0.78] * 7, k) for k in range(1, 17)}
    assert tps[3] == pytest.approx(219.5, abs=0.1) and tps[7] == pytest.approx(251.2, abs=0.1)
    assert max(tps, key=tps.get) == 7
    advice = advise_depth(PCIE_PARAMS, EAGLE3_PRIOR.rates, trained_depth=3)
    assert advice.best.steps == 7
    assert advice.gain == pytest.approx(tps[7] / tps[3] - 1, rel=1e-9)
    assert advice.time_factor == pytest.approx(7 / 3)
    assert advice.advise
    assert advice.message("8x RTX PRO 6000 PCIe") == (
        "trained 3 deep; on 8x RTX PRO 6000 PCIe the best depth for this curve is 7, worth ~14% more tok/s "
        "than depth 3; consider TTT >= 7 (about 2.3x the training time)"
    )


def test_trained_deep_enough_is_quiet():
    # A TTT-5 curve falling to ~0.6: depth 4 gives 205.8 tok/s, depth 5 204.3: nothing worth advising.
    rates = [0.8, 0.656, 0.632, 0.608, 0.589]
    tps = {k: chain_tps(rates, k) for k in range(1, 17)}
    assert max(tps, key=tps.get) <= 5
    assert not advise_depth(PCIE_PARAMS, rates, trained_depth=5).advise


def test_small_gain_is_quiet():
    # The DESIGN curve trained 3 deep: depth 4 is best, by under 1 %
    rates = [0.742, 0.60, 0.58, 0.56, 0.55]
    assert chain_tps(rates, 4) / chain_tps(rates, 3) - 1 == pytest.approx(0.0097, abs=0.0005)
    advice = advise_depth(PCIE_PARAMS, rates, trained_depth=3)
    assert advice.best.steps == 4 and not advice.advise


@pytest.mark.parametrize(
    "rates,steps,expected",
    [
        ([], None, "prior"),
        ([0.3, 0.2, 0.1], 200, "prior"),  # four minutes in: far below where the run ends
        ([0.6, 0.5, 0.4], CURVE_MIN_STEPS, "training"),
    ],
)
def test_choose_curve(rates, steps, expected):
    curve, source = choose_curve(rates, steps, "EAGLE3")
    assert source == expected
    assert curve == (tuple(rates) if expected == "training" else EAGLE3_PRIOR.rates)


# --- the store -----------------------------------------------------------------------------------------


def _doc(**parts) -> bytes:
    return json.dumps({"specdash": 1, **parts}).encode()


def _metrics(run: str, steps: range, rates: list[float]) -> list[dict]:
    return [
        {"run": run, "step": s, "values": {f"train/acc_{i}": r for i, r in enumerate(rates)}} for s in steps
    ]


@pytest.fixture
def ttt3(engine):
    run = {
        "name": "k25-ttt3",
        "target_model": "/models/Kimi-K2.5",
        "speculative_algorithm": "EAGLE3",
        "ttt_length": 3,
        "status": "running",
    }
    assert ingest(engine, UploadSource("d.json", _doc(deployments=[DEPLOYMENT], runs=[run]))).ok
    return engine


def test_advisory_for_a_new_run_uses_the_prior_then_resolves_when_its_curve_settles(ttt3):
    with reading(ttt3) as session:
        rows = advisory_rows(session)
    assert len(rows) == 1
    assert rows[0]["curve_source"] == "prior" and rows[0]["best_depth"] == 7 and rows[0]["status"] == "open"
    # trained well past the first minutes, to a curve that falls fast: depth 3 is right for it
    steps = range(0, CURVE_MIN_STEPS + 1, 500)
    assert ingest(
        ttt3, UploadSource("m.json", _doc(metrics=_metrics("k25-ttt3", steps, [0.5, 0.35, 0.25])))
    ).ok
    with reading(ttt3) as session:
        row = advisory_rows(session)[0]
        history = frame(advisory_history(session, row["id"]), StatusChange)
    assert not row["active"] and row["status"] == "resolved"
    assert list(history["to_status"]) == ["open", "resolved"]
    assert list(history["who"]) == ["specdash", "specdash"]
    assert history["note"].iloc[1].startswith("configuration fine now")


def test_quiet_when_the_run_is_deep_enough(engine):
    run = {"name": "deep", "target_model": "Kimi-K2.5", "speculative_algorithm": "EAGLE3", "ttt_length": 8}
    assert ingest(engine, UploadSource("d.json", _doc(deployments=[DEPLOYMENT], runs=[run]))).ok
    with reading(engine) as session:
        assert advisory_rows(session) == []


def test_target_from_the_trainer_config(engine):
    run = {
        "name": "cfg",
        "ttt_length": 3,
        "config": {"target_model_path": "/models/Kimi-K2.5", "ttt_length": 3},
    }
    assert ingest(engine, UploadSource("d.json", _doc(deployments=[DEPLOYMENT], runs=[run]))).ok
    with reading(engine) as session:
        assert [(r["run"], r["best_depth"]) for r in advisory_rows(session)] == [("cfg", 7)]


def test_runs_for_another_target_get_no_advice(engine):
    run = {"name": "llama", "target_model": "Llama-3.1-8B-Instruct", "ttt_length": 3}
    assert ingest(engine, UploadSource("d.json", _doc(deployments=[DEPLOYMENT], runs=[run]))).ok
    with reading(engine) as session:
        assert advisory_rows(session) == []


def test_status_change_is_recorded_and_survives_a_refresh(ttt3):
    with transaction(ttt3) as session:
        advisory_id = advisory_rows(session)[0]["id"]
        with pytest.raises(AdvisoryChangeError, match="say who you are"):
            change_advisory_status(session, advisory_id, "dismissed", "")
        with pytest.raises(AdvisoryChangeError, match="status must be one of"):
            change_advisory_status(session, advisory_id, "closed", "ana")
        change_advisory_status(session, advisory_id, "dismissed", "ana", "the TTT 3 run is a smoke test")
    with transaction(ttt3) as session:
        refresh_advisories(session)
        row = advisory_rows(session)[0]
        history = frame(advisory_history(session, advisory_id), StatusChange)
    assert row["status"] == "dismissed" and row["note"] == "the TTT 3 run is a smoke test"
    assert list(history["who"]) == ["specdash", "ana"]


def test_target_deployment_named_at_ingest(engine, invoke, tmp_path):
    other = dict(DEPLOYMENT, name="spare box", target_model=None)
    assert ingest(engine, UploadSource("d.json", _doc(deployments=[other]))).ok
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"specdash": 1, "runs": [{"name": "r", "ttt_length": 3}]}))
    bad = invoke(str(engine.url), "ingest", "--target-deployment", "nowhere", str(path))
    assert bad.exit_code == 2 and "no deployment named 'nowhere'" in bad.output
    result = invoke(
        str(engine.url), "ingest", "--target", "Kimi-K2.5", "--target-deployment", "spare box", str(path)
    )
    assert result.exit_code == 0, result.output
    assert "1 new advisory(ies)" in result.output
    with reading(engine) as session:
        assert session.scalar(select(Run.target_model).where(Run.name == "r")) == "Kimi-K2.5"
        assert [r["deployment"] for r in advisory_rows(session)] == ["spare box"]


# --- the demo and the CLI --------------------------------------------------------------------------------


def test_demo_advises_the_killed_ttt3_run_and_not_the_ttt5_run(demo_url):
    with reading(make_engine(demo_url)) as session:
        rows = advisory_rows(session, statuses=("open",), active_only=True)
    assert {r["run"] for r in rows} == {RUN_KILLED}
    assert RUN_TTT5 not in {r["run"] for r in rows} and RUN_10K not in {r["run"] for r in rows}
    pcie = next(r for r in rows if r["deployment"] == PCIE)
    assert pcie["trained_depth"] == 3 and pcie["best_depth"] == 7 and pcie["curve_source"] == "prior"
    assert pcie["message"].startswith(
        f"trained 3 deep; on {PCIE} the best depth for this curve is 7, worth ~14%"
    )


def test_cli_lists_and_changes_advisories(invoke, demo_url):
    listed = invoke(demo_url, "advisories", "--format", "json")
    assert listed.exit_code == 0
    rows = json.loads(listed.output)
    # on PCIe only: the NVLink profile leaves verify growth to the priors, and a Kimi-class MoE verifying
    # more tokens reads many more experts, so deeper drafts do not pay there
    assert {r["run"] for r in rows} == {RUN_KILLED} and [r["deployment"] for r in rows] == [PCIE]
    changed = invoke(
        demo_url,
        "advisories",
        "--set",
        str(rows[0]["id"]),
        "explained",
        "--who",
        "ana",
        "--note",
        "restarted with TTT 5",
    )
    assert changed.exit_code == 0 and f"advisory {rows[0]['id']} is now explained" in changed.output
    table = invoke(demo_url, "advisories", "--status", "explained")
    assert f"#{rows[0]['id']} [explained] {RUN_KILLED}: trained 3 deep" in table.output
    assert "note: restarted with TTT 5" in table.output
    refused = invoke(demo_url, "advisories", "--set", "999", "resolved", "--who", "ana")
    assert refused.exit_code == 1 and "no advisory with id 999" in refused.output


def test_check_stays_about_alerts(invoke, demo_url, db_url):
    assert invoke(demo_url, "check").exit_code == 1  # the demo's alerts, as before
    empty = invoke(db_url, "check")
    assert empty.exit_code == 0


# --- the migration ---------------------------------------------------------------------------------------


def test_upgrade_from_the_previous_revision_keeps_data_and_adds_advisories(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    upgrade(engine, "0004")  # the revision before live training's
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO run (id, name, ttt_length, status, is_demo, created_at) "
                "VALUES (1, 'old-run', 3, 'running', 0, '2026-11-30 10:00:00')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO deployment (id, name, target_model, baseline_tps, comm_fraction, draft_step_ms, "
                "round_overhead_ms, verify_growth_compute, verify_growth_comm, is_demo, created_at) VALUES "
                "(1, 'old box', 'm', 90, 0.5, 0.643, 0, 0, 0, 0, '2026-11-30 10:00:00')"
            )
        )
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with transaction(engine) as session:
        assert session.scalar(select(Run.name).where(Run.id == 1)) == "old-run"
        session.get(Run, 1).target_model = "m"
        summary = refresh_advisories(session)
        assert summary.advised == 1
        assert session.scalar(select(func.count()).select_from(Advisory)) == 1


def test_dashboard_sees_what_another_writer_stored(monkeypatch, ttt3, tmp_path):
    from specdash.app.text import unmd
    from tests.app_support import run_page
    from tests.live_support import ARGS, poll_once, step_line

    url = str(ttt3.url)
    at = run_page(monkeypatch, url, "views/checkpoints.py")
    assert any(
        unmd(w.value).startswith("**Advisory #1** (open), run **k25-ttt3**: trained 3 deep")
        for w in at.warning
    )
    assert not any("Following live logs" in c.value for c in at.caption)
    # a follower (another process, as far as the page's caches know) reads a log of the run's that settles
    # its curve past the first minutes: the advice no longer holds
    log = tmp_path / "train.log"
    log.write_text(ARGS + step_line(CURVE_MIN_STEPS) + step_line(CURVE_MIN_STEPS + 50))
    poll_once(ttt3, [str(log)])
    at.run()
    assert not at.exception
    assert any(unmd(i.value).startswith("**Advisory #1** (resolved, no longer holds)") for i in at.info)
    assert not at.warning
    assert any("Following live logs" in c.value for c in at.caption)
