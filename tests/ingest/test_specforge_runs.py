"""Done when: a run trained with the current SpecForge and `--report-to tensorboard` (and one with `mlflow`)
is loaded by pointing `specdash ingest` at its output folder; its acc_i curves are stored and its depth
advisory is raised. The folders are written in the test by the trackers' own writers (tests/tracker_support.py
specforge_output); every expected number is worked out below by hand.

The deployment is the story's PCIe box serving the run's target (Qwen/Qwen3-8B): no-speculation 90 tok/s
(11.111 ms a step), 1.93 / 3 ms a draft step, no round overhead, no verify growth. The run logged 500 steps,
fewer than the 1,000 the advisor waits for, so it advises on EAGLE-3's prior curve, a flat 0.78:
- depth 3: tau = 1 + 0.78 + 0.78^2 + 0.78^3 = 2.862952; round = 11.111 + 3 x 0.6433 = 13.0411 ms;
  219.53 tok/s;
- depth 7: tau = (1 - 0.78^8) / 0.22 = 3.922681; round = 11.111 + 7 x 0.6433 = 15.6144 ms; 251.22 tok/s;
so the best depth is 7, worth 251.22 / 219.53 - 1 = +14.4 % over the trained 3, at 7 / 3 of the
training time."""

import json
import os

import pytest

from specdash.db.engine import make_engine, reading
from specdash.db.models import Checkpoint, Run
from specdash.ingest.trackers.specforge_output import READER as specforge_output_reader
from tests.conftest import FIXTURES
from tests.ingest_support import points
from tests.live_support import DEPLOYMENT as STORY_DEPLOYMENT
from tests.tracker_support import SPECFORGE_RUN, collect, specforge_output

PCIE = "8x RTX PRO 6000, TP8, PCIe"
# the story's PCIe deployment (tests/live_support.py), serving the run's target
DEPLOYMENT = {
    "specdash": 1,
    "deployments": [{**STORY_DEPLOYMENT, "name": PCIE, "target_model": "Qwen/Qwen3-8B"}],
}


@pytest.mark.parametrize("report_to", ["tensorboard", "mlflow"])
def test_a_specforge_output_folder_gives_its_curves_and_depth_advice(report_to, invoke, db_url, tmp_path):
    pytest.importorskip("tensorboardX" if report_to == "tensorboard" else "mlflow")
    out = specforge_output(tmp_path / "outputs", report_to)
    deployment = tmp_path / "deployment.json"
    deployment.write_text(json.dumps(DEPLOYMENT))
    assert invoke(db_url, "init").exit_code == 0
    assert invoke(db_url, "ingest", str(deployment)).exit_code == 0
    loaded = invoke(db_url, "ingest", str(out))
    assert loaded.exit_code == 0, loaded.output
    # 10 log steps x 10 keys; the config's run, its two complete checkpoints; one advisory
    assert (
        f"{out}: " in loaded.output
        and "as specforge-output; created 2 checkpoint(s), 1 run(s)" in loaded.output
    )
    assert "100 metric point(s)" in loaded.output and "1 new advisory(ies)" in loaded.output

    engine = make_engine(db_url)
    got = points(engine, SPECFORGE_RUN)
    # the acc_i curves: acc_0 = 0.5 + k/64 at step 50k, each position 0.125 below the one before
    assert [got[("train/acc_0", 50 * k)] for k in (1, 5, 10)] == [0.515625, 0.578125, 0.65625]
    assert [got[(f"train/acc_{i}", 500)] for i in range(3)] == [0.65625, 0.53125, 0.40625]
    assert got[("train/perf/optimizer_step_time_s", 250)] == 0.5
    with reading(engine) as session:
        run = session.query(Run).filter_by(name=SPECFORGE_RUN).one()
        assert (run.ttt_length, run.target_model, run.speculative_algorithm) == (3, "Qwen3-8B", "EAGLE3")
        checkpoints = session.query(Checkpoint).order_by(Checkpoint.step).all()
        assert [(c.name, c.step) for c in checkpoints] == [
            (f"{SPECFORGE_RUN}-step250", 250),
            (f"{SPECFORGE_RUN}-step500", 500),
        ]
        # k = 5 and k = 10: the accuracies logged at each checkpoint's step
        assert [p.rate for p in checkpoints[0].position_acceptance] == [0.578125, 0.453125, 0.328125]
        assert [p.rate for p in checkpoints[1].position_acceptance] == [0.65625, 0.53125, 0.40625]

    shown = json.loads(invoke(db_url, "advisories", "--format", "json").output)
    assert len(shown) == 1
    advice = shown[0]
    assert (advice["run"], advice["deployment"], advice["concurrency"]) == (SPECFORGE_RUN, PCIE, 1)
    assert (advice["trained_depth"], advice["best_depth"], advice["suggested_ttt"]) == (3, 7, 7)
    assert advice["trained_tps"] == pytest.approx(219.53, abs=0.01)
    assert advice["best_tps"] == pytest.approx(251.22, abs=0.01)
    assert advice["gain"] == pytest.approx(0.1443, abs=0.0001)
    assert advice["time_factor"] == pytest.approx(7 / 3) and advice["curve_source"] == "prior"

    again = invoke(db_url, "ingest", str(out))
    assert "skipped, already ingested" in again.output
    assert len(json.loads(invoke(db_url, "advisories", "--format", "json").output)) == 1


def test_the_docs_folder_is_what_the_writer_writes(tmp_path):
    """tests/fixtures/specforge/output/ (the manual's sessions read it) holds what specforge_output writes
    now: the same config, checkpoints and scalars (an event file's name and wall times differ per write)."""
    pytest.importorskip("tensorboardX")
    committed = FIXTURES / "specforge" / "output" / SPECFORGE_RUN
    fresh = specforge_output(tmp_path, "tensorboard")
    name = f"{SPECFORGE_RUN}.yaml"
    assert (committed / name).read_text() == (fresh / name).read_text()
    listing = [
        sorted(p.relative_to(f).as_posix() for p in f.rglob("*") if "runs" not in p.parts)
        for f in (committed, fresh)
    ]
    assert listing[0] == listing[1]
    assert os.readlink(committed / f"{SPECFORGE_RUN}-latest") == f"{SPECFORGE_RUN}-step500"
    runs, got, problems = collect(specforge_output_reader.read(str(committed)))
    assert not problems and collect(specforge_output_reader.read(str(fresh)))[1] == got
    # the config's run, its checkpoints, then the tracker's run state
    names = [SPECFORGE_RUN, f"{SPECFORGE_RUN}-step250", f"{SPECFORGE_RUN}-step500", SPECFORGE_RUN]
    assert len(got) == 100 and [r.name for r in runs] == names
