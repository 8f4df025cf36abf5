"""The What-if page: the cost model's depth sweep for a checkpoint's acceptance curve on two deployment
profiles, driven by the sliders."""

import json
from collections import defaultdict

import pytest
from sqlalchemy import select

from specdash.app.frames import frame as as_frame
from specdash.app.text import unmd
from specdash.app.whatif_charts import depth_figure, depth_table
from specdash.costmodel import CostParams, depth_sweep, optimal_depth, tau_chain
from specdash.costmodel.measured import conditional_from_accept_lengths, conditional_from_measured
from specdash.costmodel.priors import DeploymentFacts, architecture_for, resolve_costs
from specdash.db import acceptance, checkpoints
from specdash.db.engine import make_engine, reading
from specdash.db.models import Checkpoint, Run
from tests.app_support import chain_accept_lengths, run_page, specbundle_rows

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


def wcag_contrast(colour: tuple[float, float, float], background: tuple[float, float, float]) -> float:
    def luminance(rgb):
        linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(colour), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("background", [(255, 255, 255), (14, 17, 23)], ids=["light", "dark"])
def test_the_error_band_stands_out_in_both_themes(background):
    """The band's fill blended over Streamlit's light and dark backgrounds (0.15 alpha of the curve's blue
    gave 1.15 on dark: invisible)."""
    from specdash.app.depth_overlay import BAND_COLOUR

    *rgb, alpha = (float(part) for part in BAND_COLOUR[BAND_COLOUR.index("(") + 1 : -1].split(","))
    blended = tuple(alpha * c + (1 - alpha) * b for c, b in zip(rgb, background, strict=True))
    assert wcag_contrast(blended, background) >= 1.3


@pytest.mark.parametrize("best_at", [1, 4, 8])
def test_the_optimums_label_leans_into_the_plot_below_its_top(best_at):
    from dataclasses import replace

    from specdash.app.whatif_charts import HEADROOM

    params = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=0.643)
    points = depth_sweep(params, EPOCH_5, 8)
    best = replace(optimal_depth(points), steps=best_at)  # the label of a best at either end or between
    figure = depth_figure(points, best, 90.0, "PCIe")
    [label] = [a for a in figure.layout.annotations if a.text.startswith(f"K={best_at}:")]
    # anchored at the star and growing away from the nearer end of the depth axis (cut at K=4 before)
    assert (label.x, label.y) == (best_at, best.tps)
    assert label.xanchor == ("left" if best_at < 5 else "right") and (label.ax > 0) == (best_at < 5)
    assert figure.layout.yaxis.range[1] == pytest.approx(max(p.tps for p in points) * HEADROOM)
    assert not [t for t in figure.data if t.text]  # no text trace left to be clipped


def test_whatif_compares_pcie_and_nvlink_on_the_latest_checkpoint(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/whatif.py")
    assert not at.exception
    assert at.selectbox(key="whatif_run").value == "k25-eagle3-100k-ttt5"
    assert [at.selectbox(key=f"whatif_profile_{side}").value for side in ("left", "right")] == [PCIE, NVLINK]
    # PCIe states all its costs (the story's profile); NVLink states f and drafting, the priors fill the rest:
    # a Kimi-K2-class MoE (384 experts, 8 per token) verifying 4 tokens at batch 1
    nvlink_prior = resolve_costs(
        {"comm_fraction": 0.12, "draft_step_ms": 0.45},
        DeploymentFacts("H200", 8, "nvlink", architecture_for("Kimi-K2.5")),
        125.0,
    )
    expected = [
        CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=0.643),
        CostParams(
            baseline_tps=125.0,
            comm_fraction=0.12,
            draft_step_ms=0.45,
            round_overhead_ms=nvlink_prior.round_overhead_ms,
            verify_growth_compute=min(0.2, nvlink_prior.verify_growth_compute),
        ),
    ]
    bests = []
    for verdict, params in zip(verdicts(at), expected, strict=True):
        best = optimal_depth(depth_sweep(params, EPOCH_5, 16))
        bests.append(best.steps)
        assert verdict.startswith(
            f"Best at K = {best.steps} ({best.draft_tokens} draft tokens): {best.tps:.0f} tok/s"
        )
    assert bests[0] > bests[1]  # the PCIe box wants the deeper draft
    assert [c.value for c in at.caption if c.value.startswith("Starting from")] == [
        "Starting from: profile, at concurrency 1.",
        "Starting from: profile + published priors, at concurrency 1.",
    ]
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


# --- checkpoints without training metrics -------------------------------------------------------------
SB_DRAFTER = "lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-Instruct-2507-SpecForge"


def test_rates_from_accept_lengths_reproduce_each_measured_depth():
    # a = 0.5 for positions 1-3: tau(3) = 1 + .5 + .25 + .125 = 1.875; then a = 0.4 for positions 4-5:
    # tau(5) = 1.875 + .125 * (.4 + .16) = 1.945
    rates = conditional_from_accept_lengths({3: 1.875, 5: 1.945})
    assert rates == pytest.approx([0.5, 0.5, 0.5, 0.4, 0.4], abs=1e-9)
    assert tau_chain(rates[:3]) == pytest.approx(1.875) and tau_chain(rates) == pytest.approx(1.945)
    # tau(2) = 2: a + a^2 = 1, a = (sqrt 5 - 1) / 2; a deeper depth measured lower adds nothing
    golden = (5**0.5 - 1) / 2
    assert conditional_from_accept_lengths({2: 2.0, 4: 1.9}) == pytest.approx([golden, golden, 0, 0])
    # more than a depth allows (tau(1) = 2.5 > 2) saturates at 1
    assert conditional_from_accept_lengths({1: 1.6, 2: 9.0}) == pytest.approx([0.6, 1.0])
    assert conditional_from_measured([0.8, 0.6, 0.3], {3: 9.9}) == (
        pytest.approx([0.8, 0.75, 0.5]),
        "survival",
    )


def test_measured_acceptance_of_a_specbundle_drafter(real_url):
    with reading(make_engine(real_url)) as session:
        checkpoint = session.scalars(select(Checkpoint.id).join(Run).where(Run.name == SB_DRAFTER)).one()
        measured = acceptance.measured_acceptance(session, checkpoint)
    published = chain_accept_lengths(SB_DRAFTER)
    assert list(published) == [3, 5, 7]
    assert measured.source == "accept_length" and measured.accept_lengths == pytest.approx(published)
    for steps, tau in published.items():  # the curve gives back every published accept length
        assert tau_chain(measured.rates[:steps]) == pytest.approx(tau, abs=1e-6)


def test_whatif_on_a_drafter_without_training_metrics(monkeypatch, real_url):
    """The bug: KeyError 'rate' for every checkpoint without training metrics (all 15 SpecBundle drafters)."""
    at = run_page(monkeypatch, real_url, "views/whatif.py")
    at.selectbox(key="whatif_run").select(SB_DRAFTER).run()
    assert not at.exception
    notes = [unmd(i.value).replace("**", "") for i in at.info]
    assert any(n.startswith("Measured-derived acceptance") and "τ" in n for n in notes), notes
    assert len(verdicts(at)) == 1  # both profiles on its one deployment: one chart
    assert any("deepest measured 7" in str(c.proto.spec) for c in at.get("plotly_chart"))


def test_whatif_state_is_in_the_url(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/whatif.py")
    at.selectbox(key="whatif_run").select(SB_DRAFTER).run()
    at.slider(key="whatif_max_steps").set_value(10).run()
    params = {k: at.query_params[k] for k in at.query_params}
    # a new run starts on its own deployment (the demo's PCIe box was kept before: a stale menu)
    assert params["run"] == SB_DRAFTER and params["depth"] == "10"
    assert params["left"] == "SpecBundle: Qwen3-30B-A3B-Instruct-2507"
    again = run_page(monkeypatch, real_url, "views/whatif.py", query=params)
    assert again.selectbox(key="whatif_run").value == SB_DRAFTER
    assert again.slider(key="whatif_max_steps").value == 10
    assert verdicts(again) == verdicts(at)


def test_a_drafter_known_from_benchmarks_starts_on_its_own_deployment(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/whatif.py", query={"run": SB_DRAFTER})
    assert not at.exception
    assert at.selectbox(key="whatif_profile_left").value == "SpecBundle: Qwen3-30B-A3B-Instruct-2507"
    # measured on that deployment only, and no other serves its target: both sides start there (not on
    # the demo's Kimi H200), one to edit against the other
    assert at.selectbox(key="whatif_profile_right").value == "SpecBundle: Qwen3-30B-A3B-Instruct-2507"


def test_a_deployment_measured_at_batch_8_only_starts_from_its_own_baseline(real_url):
    """SpecBundle measures its no-speculation baseline at batch 8 only: the What-if's batch-1 baseline is
    carried from it by the load model, not the 100 tok/s placeholder."""
    from specdash.answers.whatif import effective_profile
    from specdash.db.models import Deployment

    with reading(make_engine(real_url)) as session:
        llama70 = session.scalars(
            select(Deployment.id).where(Deployment.name == "SpecBundle: Llama-3.3-70B-Instruct")
        ).one()
        profile = effective_profile(session, llama70)
    # the file's 'Wihtout EAGLE3' output_throughput / 8 over its 7 datasets: 56.65, 70.92, 67.56, 70.12,
    # 70.11, 64.07, 71.96 tok/s per request, median 70.11; a dense 70B at batch 8 is far below the compute
    # knee, so batch 1 is hardly faster
    assert 70.11 <= profile["baseline_tps"] <= 70.11 * 1.02


def test_checkpoints_page_shows_the_acceptance_a_drafter_without_training_metrics_implies(real_url):
    """The SpecBundle drafters have no training accuracies: their per-position curve comes from their
    benchmarks (the What-if's), drawn dotted and labelled, not an empty chart."""
    from specdash.app.charts import acceptance_figure

    with reading(make_engine(real_url)) as session:
        checkpoint = session.scalars(select(Checkpoint.id).join(Run).where(Run.name == SB_DRAFTER)).one()
        measured = acceptance.measured_acceptance(session, checkpoint)
        assert not checkpoints.position_acceptance(session, [checkpoint])  # no training rates
        rows = checkpoints.position_acceptance(session, [checkpoint], from_benchmarks=True)
        frame = as_frame(rows, checkpoints.PositionAcceptance)
    assert frame["rate"].tolist() == pytest.approx(list(measured.rates))
    assert frame["position"].tolist() == list(range(len(measured.rates))) and len(measured.rates) == 7
    assert set(frame["source"]) == {"benchmarks: accept_length"}
    [trace] = acceptance_figure(frame).data
    assert trace.line.dash == "dot" and trace.name.endswith("(from benchmarks)")


def test_switching_to_a_published_drafter_starts_on_its_deployment_and_load_with_its_benchmarks_drawn(
    monkeypatch, real_url
):
    at = run_page(monkeypatch, real_url, "views/whatif.py")
    at.selectbox(key="whatif_run").select(SB_DRAFTER).run()
    assert not at.exception
    assert at.selectbox(key="whatif_profile_left").value == "SpecBundle: Qwen3-30B-A3B-Instruct-2507"
    assert at.selectbox(key="whatif_load").value == 8  # SpecBundle's batch_size for this model
    # the file's output_throughput of the drafter at batch 8, top-k 1, per request (/ 8), mean over datasets
    expected = defaultdict(list)
    for row in specbundle_rows():
        if row["name"] == SB_DRAFTER and row["topk"] == 1:
            expected[row["steps"]].append(row["output_throughput"] / 8)
    chart = next(c for c in at.get("plotly_chart") if c.proto.id.endswith("whatif_chart_left"))
    [measured] = [
        t for t in json.loads(chart.proto.spec)["data"] if t.get("name") == "measured at concurrency 8"
    ]
    assert measured["x"] == [3, 5, 7]
    assert measured["y"] == pytest.approx([sum(v) / len(v) for _, v in sorted(expected.items())])
    assert any(t.get("fill") == "toself" for t in json.loads(chart.proto.spec)["data"])  # the band


def test_a_rising_derived_curve_says_why():
    from specdash.app.depth_overlay import rise_note, rises

    rates = [0.74, 0.74, 0.74, 0.52, 0.52, 0.80, 0.80]
    assert rises(rates) == [6]
    assert "rises at position 6" in rise_note(rates, {3: 2.9, 5: 3.3, 7: 4.0})
    assert rise_note([0.8, 0.7, 0.7], {3: 2.9}) == ""


def test_untouched_the_chart_is_the_prediction_moved_a_what_if(monkeypatch, demo_url):
    from specdash.answers.depth import depth_curve
    from specdash.db.models import Deployment

    at = run_page(monkeypatch, demo_url, "views/whatif.py")
    with reading(make_engine(demo_url)) as session:
        checkpoint = session.scalars(
            select(Checkpoint.id)
            .join(Run)
            .where(Run.name == "k25-eagle3-100k-ttt5", Checkpoint.name == "epoch_5")
        ).one()
        pcie = session.scalars(select(Deployment.id).where(Deployment.name == PCIE)).one()
        curve = depth_curve(session, checkpoint, pcie, 1, 1, at.slider(key="whatif_max_steps").value)
    assert curve is not None
    best = curve.best
    assert verdicts(at)[0].startswith(
        f"Best at K = {best.steps} ({best.draft_tokens} draft tokens): {best.tps:.0f}"
    )
    assert not any(c.value.startswith("Edited profile") for c in at.caption)
    at.slider(key=f"whatif_comm_left_{PCIE}").set_value(0.8).run()
    assert any(c.value.startswith("Edited profile") for c in at.caption)


def test_menus_that_depend_on_the_drafter_follow_a_run_change(monkeypatch, real_url):
    """Changed by hand from the demo's TTT-5 run to a SpecBundle drafter: the depth x load table's
    deployment, the deepest draft and the right-hand profile follow it (they stayed on the demo's before)."""
    at = run_page(monkeypatch, real_url, "views/whatif.py")
    assert at.selectbox(key="whatif_run").value == "k25-eagle3-100k-ttt5"
    at.slider(key="whatif_max_steps").set_value(16).run()
    at.selectbox(key="whatif_run").select(SB_DRAFTER).run()
    assert not at.exception
    own = "SpecBundle: Qwen3-30B-A3B-Instruct-2507"
    assert at.selectbox(key="whatif_schedule_deployment").value == own
    assert not any("no accept length to schedule with" in i.value for i in at.info)
    assert any(d for d in at.dataframe if "tok/s per request" in d.value.columns)
    # measured up to K = 7: the deepest draft goes back to its default (answers.depth.default_max_steps)
    assert at.slider(key="whatif_max_steps").value == 8
    assert [at.selectbox(key=f"whatif_profile_{side}").value for side in ("left", "right")] == [own, own]


def test_the_two_depth_charts_get_the_pages_width(monkeypatch, demo_url):
    """Side by side in two columns, each chart had ~120 px of plot at 1400 px: they are stacked."""
    at = run_page(monkeypatch, demo_url, "views/whatif.py")
    charts = [c for c in at.get("plotly_chart") if "whatif_chart_" in c.proto.id]
    assert len(charts) == 2
    assert not any(c for column in at.columns for c in column.get("plotly_chart"))


def test_a_drafter_measured_on_one_deployment_gets_one_chart_until_the_sides_differ(monkeypatch, real_url):
    """Both profiles start on the drafter's only deployment: two identical charts and verdicts were drawn one
    under the other. One is drawn, and the right-hand side's settings stay to make it a comparison."""
    own = "SpecBundle: Qwen3-30B-A3B-Instruct-2507"
    at = run_page(monkeypatch, real_url, "views/whatif.py", query={"run": SB_DRAFTER})
    assert not at.exception
    assert [at.selectbox(key=f"whatif_profile_{side}").value for side in ("left", "right")] == [own, own]
    charts = [c.proto.id for c in at.get("plotly_chart") if "whatif_chart_" in c.proto.id]
    assert len(charts) == 1 and charts[0].endswith("whatif_chart_left") and len(verdicts(at)) == 1
    assert any(c.value.startswith("Both profiles are the same deployment") for c in at.caption)
    # an edit on the right is a what-if of its own: two charts to compare
    at.slider(key=f"whatif_comm_right_{own}_at8").set_value(0.5).run()
    assert len([c for c in at.get("plotly_chart") if "whatif_chart_" in c.proto.id]) == 2
    assert len(verdicts(at)) == 2
    # another deployment on the right: two charts
    at = run_page(monkeypatch, real_url, "views/whatif.py", query={"run": SB_DRAFTER, "right": NVLINK})
    assert len([c for c in at.get("plotly_chart") if "whatif_chart_" in c.proto.id]) == 2
