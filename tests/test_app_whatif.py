"""The What-if page: the cost model's depth sweep for a checkpoint's acceptance curve on two deployment
profiles, driven by the sliders."""

import pytest

from specdash.app.text import unmd
from specdash.app.whatif_charts import depth_figure, depth_table
from specdash.costmodel import CostParams, depth_sweep, optimal_depth
from tests.test_app import run_page

PCIE = "8x RTX PRO 6000, TP8, PCIe"
NVLINK = "8x H200, TP8, NVLink"
EPOCH_5 = [0.7939, 0.6467, 0.6215, 0.5963, 0.5811]  # the demo's TTT-5 run, last epoch


def verdicts(at) -> list[str]:
    return [unmd(box.value).replace("**", "") for box in [*at.success, *at.warning] if "Best at" in box.value]


def test_depth_table_and_figure_from_a_sweep():
    params = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=0.643)
    points = depth_sweep(params, EPOCH_5, 8)
    best = optimal_depth(points)
    table = depth_table(points)
    assert table["K"].tolist() == list(range(1, 9))
    assert table["extrapolated"].tolist() == [False] * 5 + [True] * 3
    assert table["tok/s"].max() == pytest.approx(best.tps)
    figure = depth_figure(points, best, 90.0, "<b>PCIe</b>", trained_depth=5)
    names = [trace.name for trace in figure.data]
    assert names[0].startswith("break-even: no speculation, 90 tok/s") and f"optimum: K={best.steps}" in names
    assert figure.layout.title.text == "&lt;b&gt;PCIe&lt;/b&gt;"  # a name from a file is text, not markup


def test_whatif_compares_pcie_and_nvlink_on_the_latest_checkpoint(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/whatif.py")
    assert not at.exception
    assert at.selectbox(key="whatif_run").value == "k25-eagle3-100k-ttt5"
    assert [at.selectbox(key=f"whatif_profile_{side}").value for side in ("left", "right")] == [PCIE, NVLINK]
    for verdict, baseline, draft_ms in zip(verdicts(at), (90.0, 125.0), (0.643, 0.45), strict=True):
        params = CostParams(
            baseline_tps=baseline, comm_fraction=0.5 if baseline == 90.0 else 0.12, draft_step_ms=draft_ms
        )
        best = optimal_depth(depth_sweep(params, EPOCH_5, 16))
        assert verdict.startswith(
            f"Best at K = {best.steps} ({best.draft_tokens} draft tokens): {best.tps:.0f} tok/s"
        )
    assert len([d for d in at.dataframe if "break-even τ" in d.value.columns]) == 2


def test_sliders_move_the_optimum(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/whatif.py")
    scope = f"left_{PCIE}"
    # compute that grows with every verified token makes deep drafts dear unless all-reduce dominates the step
    at.slider(key=f"whatif_growth_{scope}").set_value(0.1).run()
    at.slider(key=f"whatif_comm_{scope}").set_value(0.12).run()
    shallow = verdicts(at)[0]
    at.slider(key=f"whatif_comm_{scope}").set_value(0.8).run()
    deep = verdicts(at)[0]
    assert shallow.startswith("Best at K = 3") and deep.startswith("Best at K = 4")
    at.slider(key="whatif_max_steps").set_value(6).run()
    assert not at.exception
    assert all(len(d.value) == 6 for d in at.dataframe if "break-even τ" in d.value.columns)
