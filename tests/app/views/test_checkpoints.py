"""The Checkpoints page on the demo and the real SpecBundle results: what the URL says is what is shown, the
defaults pick comparable data, runs without checkpoints are there, and the overlay tells sources apart."""

import json

import pandas as pd
import pytest

from specdash.app import charts
from specdash.db.engine import make_engine
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.app_support import run_page, table_with
from tests.conftest import FIXTURES

TTT5 = "k25-eagle3-100k-ttt5"
SB_DRAFTER = "lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-Instruct-2507-SpecForge"


def test_a_second_run_keeps_every_accuracy_position_of_the_first(monkeypatch, demo_url):
    """The bug: the picker preselected the first 8 keys in name order, so adding a run whose keys sort first
    dropped acc_3 and acc_4 of the TTT-5 run."""
    at = run_page(monkeypatch, demo_url, "views/checkpoints.py")
    at.multiselect(key="checkpoints_runs").select("k25-eagle3-10k").run()
    assert not at.exception
    picker = next(m for m in at.multiselect if m.key.startswith("checkpoints_acc_"))
    assert picker.value == [f"train/acc_{i}" for i in range(5)]
    assert set(picker.options) >= set(picker.value)


def test_the_accuracy_picker_offers_only_the_chosen_runs_keys(monkeypatch, demo_url):
    assert ingest(
        make_engine(demo_url),
        UploadSource("wandb_export.csv", (FIXTURES / "specforge" / "wandb_export.csv").read_bytes()),
    ).ok
    at = run_page(monkeypatch, demo_url, "views/checkpoints.py", query={"run": "llama-eagle3-b"})
    assert not at.exception
    assert at.multiselect(key="checkpoints_runs").value == ["llama-eagle3-b"]
    picker = next(m for m in at.multiselect if m.key.startswith("checkpoints_acc_"))
    # the export has acc_0 and acc_1 of one run; the demo's runs log acc_0..acc_4
    assert picker.options == ["train/acc_0", "train/acc_1"] and picker.value == ["train/acc_0", "train/acc_1"]
    # a W&B run without checkpoints is listed, and says why it has no overlay
    assert any("no checkpoints, only training metrics" in i.value for i in at.info)


def test_the_default_dataset_is_the_deploy_views_and_one_dataset_is_one_choice_away(monkeypatch, real_url):
    """The Deploy view, `specdash schedule` and the What-if answer across datasets; the menu defaulted to the
    alphabetically first dataset (financeqa), so the best depth here differed from theirs. Across datasets the
    table says how many benchmarks each mean holds; one dataset is one choice away, one benchmark each."""
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": SB_DRAFTER})
    assert not at.exception
    dataset = at.selectbox(key="checkpoints_dataset")
    assert dataset.value == "all datasets" and len(dataset.options) > 2
    assert table_with(at, "measured_tps")["n"].tolist() == [len(dataset.options) - 1]
    assert at.query_params["dataset"] == "all datasets"
    one = next(o for o in dataset.options if o != "all datasets")
    at.selectbox(key="checkpoints_dataset").select(one).run()
    assert table_with(at, "measured_tps")["n"].tolist() == [
        1
    ]  # one benchmark: no spread from mixing datasets
    assert at.query_params["dataset"] == one


def test_the_depth_charts_caption_says_which_dataset_and_load_it_answers_for(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": SB_DRAFTER})
    load = at.selectbox(key="checkpoints_setting").value.concurrency
    caption = next(c.value for c in at.caption if c.value.startswith("Line: the predicted tok/s"))
    assert caption.startswith(
        f"Line: the predicted tok/s at every draft depth at concurrency {load} across all datasets, as the "
        "Deploy view and `specdash schedule` answer"
    ), caption
    at.selectbox(key="checkpoints_dataset").select("humaneval").run()
    caption = next(c.value for c in at.caption if c.value.startswith("Line: the predicted tok/s"))
    assert caption.startswith(
        f"Line: the predicted tok/s at every draft depth at concurrency {load} on dataset humaneval only (the "
        "Deploy view and `specdash schedule` answer across all datasets)"
    ), caption


def test_url_state_survives_a_new_session(monkeypatch, real_url):
    first = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": SB_DRAFTER})
    first.selectbox(key="checkpoints_dataset").select("humaneval").run()
    params = {k: first.query_params[k] for k in first.query_params}
    again = run_page(monkeypatch, real_url, "views/checkpoints.py", query=params)
    assert again.selectbox(key="checkpoints_dataset").value == "humaneval"
    assert (
        again.selectbox(key="checkpoints_deployment").value
        == first.selectbox(key="checkpoints_deployment").value
    )
    assert (
        again.selectbox(key="checkpoints_setting").value == first.selectbox(key="checkpoints_setting").value
    )
    assert table_with(again, "measured_tps").equals(table_with(first, "measured_tps"))


def test_training_view_in_the_url(monkeypatch, demo_url):
    first = run_page(monkeypatch, demo_url, "views/checkpoints.py")
    first.selectbox(key="checkpoints_smoothing").select(0.9).run()
    first.toggle(key="checkpoints_log").set_value(True).run()
    assert first.query_params["smooth"] == "0.9" and first.query_params["log"] == "1"
    again = run_page(monkeypatch, demo_url, "views/checkpoints.py", query={"smooth": "0.9", "log": "1"})
    assert (
        again.selectbox(key="checkpoints_smoothing").value == 0.9
        and again.toggle(key="checkpoints_log").value
    )


def comparison(sources: dict[str, list[float]], bands: dict[str, float | None]) -> pd.DataFrame:
    rows = []
    for source, values in sources.items():
        for i, value in enumerate(values):
            rows.append(
                {
                    "checkpoint_id": i,
                    "run": "r",
                    "checkpoint": f"epoch_{i}",
                    "step": i,
                    "n": 1,
                    "measured_tps": 100.0 + i,
                    "measured_tps_std": None,
                    "measured_accept_length": 2.0,
                    "measured_accept_length_std": None,
                    "source": source,
                    "predicted_tps": value,
                    "predicted_accept_length": 2.1,
                    "error_band": bands[source],
                    "extrapolated": False,
                }
            )
    return pd.DataFrame(rows)


def test_overlay_tells_sources_apart_by_marker_colour_and_dash_and_draws_bands():
    frame = comparison(
        {"theory": [110.0, 112.0], "calibrated": [101.0, 103.0]}, {"theory": 0.2, "calibrated": None}
    )
    figure = charts.overlay_figure(frame, "tps")
    lines = {t.name: t for t in figure.data if t.name and t.name.startswith("predicted")}
    theory, calibrated = lines["predicted: theory"], lines["predicted: calibrated"]
    assert theory.marker.symbol[0] != calibrated.marker.symbol[0]
    assert theory.line.color != calibrated.line.color and theory.line.dash != calibrated.line.dash
    bands = [t for t in figure.data if t.fill == "toself"]
    assert len(bands) == 1  # theory has an error band (20 %), calibrated none
    assert max(bands[0].y) == pytest.approx(112.0 * 1.2) and min(bands[0].y) == pytest.approx(110.0 * 0.8)
    measured = next(t for t in figure.data if t.name == "measured")
    assert measured.marker.color not in ("#111", "#000", "black")  # it vanished on a dark background


def test_a_single_point_is_drawn_from_zero():
    """The bug: one checkpoint's y range hugged its points, so 1 % looked like a chasm."""
    figure = charts.overlay_figure(comparison({"theory": [101.0]}, {"theory": None}), "tps")
    assert figure.layout.yaxis.range[0] == 0
    assert figure.layout.yaxis.range[1] == pytest.approx(101.0 * 1.12)


def test_long_checkpoint_names_are_abbreviated_with_the_full_name_on_hover():
    long_run = "lmsys/SGLang-EAGLE3-Qwen3-Coder-480B-A35B-Instruct-SpecForge-EigenAI"
    frame = comparison({"theory": [110.0, 120.0]}, {"theory": None}).assign(run=[long_run, "other-run"])
    figure = charts.overlay_figure(frame, "tps")
    measured = next(t for t in figure.data if t.name == "measured")
    assert all(len(label) <= 24 + 3 + 18 for label in measured.x)
    assert any(long_run in c[0] for c in measured.customdata)


def test_training_curves_smooth_and_log_scale():
    curves = pd.DataFrame(
        {
            "run": "r",
            "key": "train/loss",
            "step": [0, 1, 2],
            "value": [4.0, 2.0, 1.0],
            "min": 0,
            "max": 0,
            "bucket_steps": 1,
        }
    )
    figure = charts.training_figure(curves, "loss", smoothing=0.5, log_y=True)
    assert figure.layout.yaxis.type == "log"
    line = figure.data[-1]
    # debiased EMA with weight 0.5: 4; (2 + .5*4)/(1.5) = 2.667; (1 + .5*2 + .25*4)/1.75 = 1.714
    assert list(line.y) == pytest.approx([4.0, 8 / 3, 3 / 1.75])
    assert list(figure.data[-2].y) == [4.0, 2.0, 1.0]  # the raw line stays, faint


def test_band_edges_are_not_drawn_like_data():
    """A band's outline had Plotly's default markers (under 20 points): dots that looked like measurements."""
    from specdash.app.depth_overlay import add_band
    from specdash.app.whatif_charts import depth_figure
    from specdash.costmodel import CostParams, depth_sweep, optimal_depth

    frame = comparison({"theory": [110.0, 112.0]}, {"theory": 0.2})
    points = depth_sweep(CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=0.643), [0.8] * 5, 8)
    depth = depth_figure(points, optimal_depth(points), 90.0, "PCIe")
    add_band(depth, points, 0.1)
    bands = [t for f in (charts.overlay_figure(frame, "tps"), depth) for t in f.data if t.fill == "toself"]
    assert len(bands) == 2 and all(band.mode == "lines" for band in bands)


def test_the_top_charts_and_the_depth_chart_say_what_they_answer_for(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/checkpoints.py", query={"run": SB_DRAFTER})
    assert not at.exception
    # one under the other at the page's width: side by side each plot had ~300 px at 1400 px
    charts_drawn = [c.proto.id for c in at.get("plotly_chart")]
    assert any(i.endswith("checkpoints_tps") for i in charts_drawn)
    assert not [
        c for column in at.columns for c in column.get("plotly_chart") if "checkpoints_t" in c.proto.id
    ]
    dataset = at.selectbox(key="checkpoints_dataset").value
    load = at.selectbox(key="checkpoints_setting").value.concurrency
    depth = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("checkpoints_depth_chart"))
    title = json.loads(depth.proto.spec)["layout"]["title"]["text"]
    # across datasets by default, as the Deploy view answers
    assert dataset == "all datasets" and title.endswith(f"<br>concurrency {load}, mean over datasets")
    at.selectbox(key="checkpoints_dataset").select("humaneval").run()
    depth = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("checkpoints_depth_chart"))
    title = json.loads(depth.proto.spec)["layout"]["title"]["text"]
    assert title.endswith(f"<br>concurrency {load}, dataset humaneval")  # its own line: never cut
