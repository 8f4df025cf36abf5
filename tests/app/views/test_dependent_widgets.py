"""Menus and charts agree after a change of a parent choice: the bug was a Checkpoints view that, after the
run was replaced, plotted the previous run's setting and dataset (5/1/6 mtbench) under menus reading the new
run's first choices (3/1/4 financeqa); reloading the URL fixed it."""

import base64
import json

import numpy as np
import pytest

from tests.app_support import run_page, specbundle_rows

LLAMA_DRAFTER = "lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"
# tests/fixtures/real/specbundle-data.json, "Llama-3.1-8B-Instruct" / "financeqa", the result with
# batch_size 1, steps 3, topk 1, num_draft_tokens 4, the metric named LLAMA_DRAFTER:
FINANCEQA_314_TPS = 258.6437346257605  # output_throughput
FINANCEQA_314_TAU = 1.9050339301460721  # accept_length


def mean_over_datasets(field: str) -> float:
    """The 3/1/4 result at batch 1 of LLAMA_DRAFTER, averaged over the file's datasets (the menu's default)."""
    values = [
        r[field]
        for r in specbundle_rows()
        if r["name"] == LLAMA_DRAFTER and r["batch_size"] == 1 and (r["steps"], r["topk"]) == (3, 1)
    ]
    assert len(values) == 7
    return sum(values) / len(values)


def plotted(at, key: str, trace: str) -> list[float]:
    """The y values of one trace of the Plotly chart with `key`, as the browser receives them."""
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(key))
    data = next(t for t in json.loads(chart.proto.spec)["data"] if t.get("name") == trace)
    y = data["y"]
    if isinstance(y, dict):  # plotly's typed-array encoding
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]).tolist()
    return list(y)


def shown(at, key: str) -> str:
    """What the menu displays: the value the script pushed to it, else the option at its default index (a
    menu the user has not touched shows that, whatever the server kept in its session)."""
    box = at.selectbox(key=key)
    if box.proto.set_value:
        return box.proto.raw_value
    return box.proto.options[box.proto.default]


def test_replacing_the_run_recomputes_setting_and_dataset_and_the_chart_follows(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/checkpoints.py")
    assert not at.exception
    at.multiselect(key="checkpoints_runs").set_value([LLAMA_DRAFTER]).run()
    assert not at.exception

    setting, dataset = at.selectbox(key="checkpoints_setting"), at.selectbox(key="checkpoints_dataset")
    # the new run's first choices, as a fresh load of ?run=<it> shows them
    assert setting.value.label == "EAGLE3 3/1/4, concurrency 1" == shown(at, "checkpoints_setting")
    # across datasets, the Deploy view's basis
    assert dataset.value == "all datasets" == shown(at, "checkpoints_dataset")
    assert plotted(at, "checkpoints_tps", "measured") == [
        pytest.approx(mean_over_datasets("output_throughput"))
    ]
    assert plotted(at, "checkpoints_tau", "measured") == [pytest.approx(mean_over_datasets("accept_length"))]
    caption = next(c.value for c in at.caption if c.value.startswith("Measured on"))
    assert "3\\/1\\/4" in caption and "5\\/1\\/6" not in caption

    fresh = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": LLAMA_DRAFTER})
    assert fresh.selectbox(key="checkpoints_setting").value == setting.value
    assert fresh.selectbox(key="checkpoints_dataset").value == dataset.value
    at.selectbox(key="checkpoints_dataset").select("financeqa").run()
    assert plotted(at, "checkpoints_tps", "measured") == [pytest.approx(FINANCEQA_314_TPS)]
    assert plotted(at, "checkpoints_tau", "measured") == [pytest.approx(FINANCEQA_314_TAU)]


def test_a_changed_setting_keeps_a_dataset_it_has_and_the_menu_says_so(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": LLAMA_DRAFTER})
    at.selectbox(key="checkpoints_dataset").select("mtbench").run()
    seven = next(s for s in at.selectbox(key="checkpoints_setting").options if s.startswith("EAGLE3 7/1/8"))
    at.selectbox(key="checkpoints_setting").select_index(
        at.selectbox(key="checkpoints_setting").options.index(seven)
    ).run()
    assert not at.exception
    assert shown(at, "checkpoints_dataset") == at.selectbox(key="checkpoints_dataset").value == "mtbench"
    # mtbench, steps 7, topk 1, num_draft_tokens 8: output_throughput and accept_length of LLAMA_DRAFTER
    assert plotted(at, "checkpoints_tps", "measured") == [pytest.approx(450.03198538047087)]
    assert plotted(at, "checkpoints_tau", "measured") == [pytest.approx(3.855839765261211)]
