"""One question, one answer: the best draft depth of one drafter on one deployment at one batch, asked of
every surface that answers it (the What-if chart, the What-if depth-by-load table, `specdash schedule
--format json`, the Checkpoints page's by-depth chart), on the real SpecBundle store and on a GuideLLM depth
sweep, before and after `specdash calibrate --apply`; and a schedule beyond the loads a deployment was
measured at says so."""

import json
import re

import pytest

from specdash.app.text import unmd
from tests.app_support import run_page
from tests.conftest import FIXTURES

pytestmark = pytest.mark.slow

LLAMA = "lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"
LLAMA_DEPLOYMENT = "SpecBundle: Llama-3.1-8B-Instruct"
QWEN = "lmsys/SGLang-EAGLE3-Qwen3-235B-A22B-Instruct-2507-SpecForge"
QWEN_DEPLOYMENT = "SpecBundle: Qwen3-235B-A22B-Instruct-2507"
SWEEP_RUN = "llama31-eagle3"  # tests/fixtures/guidellm/depth_sweep/: depths 1, 3, 5 at 1, 8 and 31 streams
SWEEP_DEPLOYMENT = "Llama-3.1-8B-Instruct, vllm"
SWEEP_FILES = ("drafter.json", "eagle3_k1.json", "eagle3_k3.json", "eagle3_k5.json")
PCIE = "8x RTX PRO 6000, TP8, PCIe"  # the demo's, measured at batch 1 only
ALL_DATASETS = "all datasets"


def star(at, key: str) -> tuple[int, float]:
    """(K, tok/s) of the optimum a depth chart marks."""
    [chart] = [c for c in at.get("plotly_chart") if c.proto.id.endswith(key)]
    [best] = [t for t in json.loads(chart.proto.spec)["data"] if str(t.get("name", "")).startswith("optimum")]
    return int(best["x"][0]), float(best["y"][0])


def whatif_answers(monkeypatch, url: str, run: str, deployment: str, load: int) -> dict[str, tuple]:
    at = run_page(
        monkeypatch, url, "views/whatif.py", query={"run": run, "left": deployment, "load": str(load)}
    )
    assert not at.exception
    assert at.selectbox(key="whatif_load").value == load
    assert at.selectbox(key="whatif_profile_left").value == deployment
    at.selectbox(key="whatif_schedule_deployment").set_value(deployment).run()
    at.text_input(key="whatif_schedule_loads").set_value(str(load)).run()
    assert not at.exception
    [table] = [d.value for d in at.dataframe if "tok/s per request" in d.value.columns]
    [row] = table[table["concurrency"] == load].to_dict("records")
    return {
        "What-if chart": star(at, "whatif_chart_left"),
        "depth-by-load table": (row["K"], row["tok/s per request"]),
    }


def schedule_answer(invoke, url: str, run: str, deployment: str, load: int) -> tuple[int, float]:
    checkpoint = "epoch_3" if run == SWEEP_RUN else "published"
    result = invoke(
        url, "schedule", "--deployment", deployment, "--run", run, "--checkpoint", checkpoint,
        "--concurrency", str(load), "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [entry] = json.loads(result.output)
    return entry["num_steps"], entry["tok_s"]


def checkpoints_answer(monkeypatch, url: str, run: str, deployment: str, load: int) -> tuple[int, float]:
    at = run_page(monkeypatch, url, "views/checkpoints.py", query={"run": run, "deployment": deployment})
    setting = at.selectbox(key="checkpoints_setting")
    # a chain setting at this load (the chart is per load and top-k): `EAGLE3 3/1/4, concurrency 8`
    chosen = next(o for o in setting.options if re.search(rf" \d+/1/\d+, concurrency {load}$", o))
    setting.select(chosen).run()
    at.selectbox(key="checkpoints_dataset").set_value(ALL_DATASETS).run()
    assert not at.exception
    return star(at, "checkpoints_depth_chart")


def answers(monkeypatch, invoke, url: str, run: str, deployment: str, load: int) -> dict[str, tuple]:
    found = whatif_answers(monkeypatch, url, run, deployment, load)
    found["specdash schedule"] = schedule_answer(invoke, url, run, deployment, load)
    found["Checkpoints by depth"] = checkpoints_answer(monkeypatch, url, run, deployment, load)
    return found


def assert_one_answer(found: dict[str, tuple]) -> None:
    depths = {surface: k for surface, (k, _) in found.items()}
    assert len(set(depths.values())) == 1, f"best depths disagree: {found}"
    speeds = [tps for _, tps in found.values()]
    # one number: `schedule --format json` rounds it to 3 decimals
    assert max(speeds) - min(speeds) <= 0.001, f"tok/s disagree: {found}"


@pytest.mark.parametrize(
    "run,deployment,load",
    [(LLAMA, LLAMA_DEPLOYMENT, 1), (QWEN, QWEN_DEPLOYMENT, 8)],
    ids=["llama-b1", "qwen235b-b8"],
)
@pytest.mark.parametrize("calibrated", [False, True], ids=["priors", "calibrated"])
def test_every_surface_gives_one_best_depth(monkeypatch, invoke, real_url, run, deployment, load, calibrated):
    if calibrated:
        result = invoke(real_url, "calibrate", "--deployment", deployment, "--apply")
        assert result.exit_code == 0 and "saved as parameter set" in result.output, result.output
    assert_one_answer(answers(monkeypatch, invoke, real_url, run, deployment, load))


@pytest.mark.parametrize("load", [1, 8])
@pytest.mark.parametrize("calibrated", [False, True], ids=["priors", "calibrated"])
def test_every_surface_gives_one_best_depth_on_a_guidellm_sweep(
    monkeypatch, invoke, db_url, load, calibrated
):
    """A drafter with training rates, on a deployment measured at several loads and never without
    speculation (its baseline estimated); calibrated, its predictions come from the load model's fit."""
    result = invoke(db_url, "ingest", *(str(FIXTURES / "guidellm" / "depth_sweep" / n) for n in SWEEP_FILES))
    assert result.exit_code == 0, result.output
    if calibrated:
        result = invoke(db_url, "calibrate", "--deployment", SWEEP_DEPLOYMENT, "--apply")
        assert result.exit_code == 0 and "saved as parameter set" in result.output, result.output
    assert_one_answer(answers(monkeypatch, invoke, db_url, SWEEP_RUN, SWEEP_DEPLOYMENT, load))


def test_a_schedule_past_the_measured_loads_is_marked_extrapolated(invoke, real_url):
    """The demo's PCIe deployment was measured at batch 1 only: the schedule at 8 to 128 rests on no
    measurement of how its round grows with the batch, says so, and claims no more speedup there than
    where it was measured."""
    args = ("schedule", "--deployment", PCIE, "--run", "k25-eagle3-100k-ttt5", "--checkpoint", "epoch_5")
    result = invoke(real_url, *args, "--concurrency", "1,8,32,128", "--format", "json")
    assert result.exit_code == 0, result.output
    entries = json.loads(result.output)
    assert [(e["concurrency"], e["extrapolated"]) for e in entries] == [
        (1, False),
        (8, True),
        (32, True),
        (128, True),
    ]
    speedups = [e["speedup"] for e in entries]
    assert all(later <= earlier + 1e-9 for earlier, later in zip(speedups, speedups[1:], strict=False)), (
        speedups
    )
    table = invoke(real_url, *args, "--concurrency", "1,8,32,128")
    assert table.exit_code == 0
    [line] = [line for line in table.output.splitlines() if "extrapolated" in line and "measured" in line]
    assert "8, 32, 128" in line and "1" in line


def test_the_whatif_says_when_its_load_was_never_measured(monkeypatch, real_url):
    """SpecBundle measured Qwen3-235B at batch 8 only; the What-if also offers batch 1."""
    at = run_page(
        monkeypatch, real_url, "views/whatif.py", query={"run": QWEN, "left": QWEN_DEPLOYMENT, "load": "1"}
    )
    assert not at.exception and at.selectbox(key="whatif_load").value == 1
    # the drafter was measured on this deployment alone: both profiles start on it, and each says so
    said = [unmd(w.value) for w in at.warning if "Best at" in w.value and QWEN_DEPLOYMENT in unmd(w.value)]
    assert said and all(
        f"extrapolated: {QWEN_DEPLOYMENT} was never measured at concurrency 1" in s for s in said
    )
    at.selectbox(key="whatif_load").set_value(8).run()
    assert not any(f"{QWEN_DEPLOYMENT} was never measured" in unmd(w.value) for w in at.warning)
