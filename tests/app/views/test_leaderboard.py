"""The Leaderboard on the demo and the real SpecBundle results: checkpoints ranked by speedup over no
speculation per deployment, load and dataset, each at its best setting; every expected figure is worked out
from the published file in the test."""

from collections import defaultdict
from statistics import fmean

import pytest
from sqlalchemy import select

from specdash.app.board_frames import board_frame
from specdash.app.leaderboard_charts import entry_labels, leaderboard_figure
from specdash.app.text import abbreviate
from specdash.db.engine import make_engine, reading
from specdash.db.leaderboard import LeaderboardFilter, leaderboard
from specdash.db.models import Deployment
from tests.app_support import run_page, specbundle_rows, table_with

LLAMA8B = "Llama-3.1-8B-Instruct"
LLAMA8B_DEPLOYMENT = "SpecBundle: Llama-3.1-8B-Instruct"


def published_speedups(model: str) -> dict[tuple[str, tuple, str], float]:
    """(drafter, (steps, topk, draft tokens), benchmark) -> output_throughput / the same benchmark's
    no-speculation output_throughput (the batch size cancels: both are per-request tok/s x batch)."""
    rows = [r for r in specbundle_rows() if r["model"] == model]
    baseline = {r["benchmark"]: r["output_throughput"] for r in rows if r["baseline"]}
    return {
        (r["name"], (r["steps"], r["topk"], r["num_draft_tokens"]), r["benchmark"]): r["output_throughput"]
        / baseline[r["benchmark"]]
        for r in rows
        if not r["baseline"]
    }


def deployment_id(url: str, name: str) -> int:
    with reading(make_engine(url)) as session:
        return session.scalar(select(Deployment.id).where(Deployment.name == name))


def board(url: str, **kwargs):
    with reading(make_engine(url)) as session:
        return board_frame(leaderboard(session, LeaderboardFilter(**kwargs)))


def test_one_dataset_ranks_drafters_by_their_best_measured_speedup(real_url):
    speedups = published_speedups(LLAMA8B)
    best = defaultdict(lambda: (0.0, None))
    for (drafter, setting, benchmark), value in speedups.items():
        if benchmark == "gsm8k" and value > best[drafter][0]:
            best[drafter] = (value, setting)
    expected = sorted(best.items(), key=lambda item: -item[1][0])
    table = board(real_url, deployment_id=deployment_id(real_url, LLAMA8B_DEPLOYMENT), dataset="gsm8k")
    assert table["run"].tolist() == [drafter for drafter, _ in expected]
    assert table["rank"].tolist() == list(range(1, len(expected) + 1))
    for (_, (value, setting)), row in zip(expected, table.to_dict("records"), strict=True):
        assert row["measured_speedup"] == pytest.approx(value)
        assert (row["num_steps"], row["topk"], row["num_draft_tokens"]) == setting
        assert row["datasets"] == 1 and row["concurrency"] == 1
        assert row["gap"] == pytest.approx(1 - row["measured_speedup"] / row["predicted_speedup"])


def test_across_datasets_ranks_by_the_mean_speedup_not_raw_tok_s(real_url):
    speedups = published_speedups(LLAMA8B)
    by_setting = defaultdict(list)
    for (drafter, setting, _), value in speedups.items():
        by_setting[(drafter, setting)].append(value)
    best = {}
    for (drafter, setting), values in by_setting.items():
        if fmean(values) > best.get(drafter, (0.0,))[0]:
            best[drafter] = (fmean(values), setting, len(values))
    table = board(real_url, deployment_id=deployment_id(real_url, LLAMA8B_DEPLOYMENT))
    assert table["run"].tolist() == sorted(best, key=lambda d: -best[d][0])
    for row in table.to_dict("records"):
        value, setting, datasets = best[row["run"]]
        assert row["measured_speedup"] == pytest.approx(value)
        assert (row["num_steps"], row["topk"], row["num_draft_tokens"]) == setting
        assert row["datasets"] == datasets == 7


def test_every_deployment_and_ranking_by_prediction(real_url):
    table = board(real_url)
    # one entry per checkpoint, deployment and load: 15 SpecBundle drafters and 6 demo checkpoint entries
    # (epoch_5 of the TTT-5 run is benchmarked on both demo deployments)
    assert len(table) == 15 + 6 + 1
    assert table["measured_speedup"].is_monotonic_decreasing
    by_prediction = board(real_url, rank_by="predicted")
    assert by_prediction["predicted_speedup"].is_monotonic_decreasing
    assert set(by_prediction["run"]) == set(table["run"])


def test_labels_abbreviate_long_names_and_keep_them_apart(real_url):
    table = board(real_url)
    labels = entry_labels(table)
    assert len(set(labels)) == len(labels)  # distinct
    assert max(map(len, labels)) <= 30 + 3 + 16 + 3 + 24
    # one SpecBundle deployment per target: "SpecBundle: Qwen3-Coder-480B-A35B-Instruct", common words dropped;
    # the run's own name says the target, so the deployment is not repeated after it
    assert "Qwen3-Coder-480B-A35B-EigenAI" in labels
    assert not any(label.split(" · ")[0] == label.split(" · ")[-1] for label in labels if " · " in label)
    # `lmsys/Qwen3-235B-A22B-EAGLE3` does not name the 2507 release its deployment serves: that stays
    assert "lmsys/Qwen3-235B-A22B-EAGLE3 · Qwen3-235B-A22B-2507" in labels
    # the demo's run names no deployment: it keeps its GPU
    assert "k25-eagle3-100k-ttt5 / epoch_5 · 8x H200, TP8, NVLink" in labels
    figure = leaderboard_figure(table, "theory")
    assert len(figure.data[0].y) == len(table)
    # the full name is in the hover
    assert any(
        "lmsys/SGLang-EAGLE3-Qwen3-Coder-480B-A35B-Instruct-SpecForge-EigenAI" in c[0]
        for c in figure.data[1].customdata
    )


def page_links(at) -> dict[str, tuple[str, dict]]:
    from urllib.parse import parse_qs

    return {
        link.proto.label: (link.proto.page, {k: v[0] for k, v in parse_qs(link.proto.query_string).items()})
        for link in at.get("page_link")
    }


def test_leaderboard_page_links_a_row_to_its_overlay_and_alerts(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/leaderboard.py", query={"deployment": LLAMA8B_DEPLOYMENT})
    assert not at.exception
    assert at.selectbox(key="leaderboard_deployment").value == LLAMA8B_DEPLOYMENT
    at.selectbox(key="leaderboard_dataset").select("gsm8k").run()
    assert at.query_params["dataset"] == "gsm8k" and at.query_params["deployment"] == LLAMA8B_DEPLOYMENT
    top = board(real_url, deployment_id=deployment_id(real_url, LLAMA8B_DEPLOYMENT), dataset="gsm8k").iloc[0]
    links = page_links(at)
    page, params = next(v for k, v in links.items() if k.startswith("Overlay"))
    assert page.endswith("checkpoints") or "checkpoints" in page
    setting = f"EAGLE3:{top['num_steps']}:{top['topk']}:{top['num_draft_tokens']}:1"
    assert params == {
        "run": top["run"],
        "ckpt": str(top["checkpoint_id"]),
        "deployment": LLAMA8B_DEPLOYMENT,
        "setting": setting,
        "dataset": "gsm8k",
    }
    page, params = next(v for k, v in links.items() if k.startswith("Its alerts"))
    assert "alerts" in page and params == {"run": top["run"], "deployment": LLAMA8B_DEPLOYMENT}
    # following the overlay link opens exactly that view
    overlay = run_page(
        monkeypatch,
        real_url,
        "views/checkpoints.py",
        query=page_links(at)[next(k for k in links if k.startswith("Overlay"))][1],
    )
    assert not overlay.exception
    assert overlay.multiselect(key="checkpoints_runs").value == [top["run"]]
    assert overlay.selectbox(key="checkpoints_deployment").value == LLAMA8B_DEPLOYMENT
    assert overlay.selectbox(key="checkpoints_dataset").value == "gsm8k"
    assert overlay.selectbox(key="checkpoints_setting").value.num_steps == top["num_steps"]
    table = table_with(overlay, "measured_tps")
    baseline = next(
        r for r in specbundle_rows() if r["model"] == LLAMA8B and r["benchmark"] == "gsm8k" and r["baseline"]
    )
    assert table["measured_tps"].iloc[0] / baseline["output_throughput"] == pytest.approx(
        top["measured_speedup"]
    )


def test_leaderboard_empty_state_names_the_next_step(monkeypatch, db_url):
    at = run_page(monkeypatch, db_url, "views/leaderboard.py")
    assert not at.exception
    assert "Upload" in at.info[0].value


def test_two_drafters_for_one_target_lose_the_words_they_share():
    labels = abbreviate(
        ["lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge", "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"],
        30,
    )
    assert list(labels.values()) == ["Llama-3.1-8B-SpecForge", "LLaMA3.1-8B"]
    assert abbreviate(
        ["SpecBundle: Kimi-K2-Instruct, bs 8", "SpecBundle: Llama-3.1-8B-Instruct, bs 1"], 24
    ) == {
        "SpecBundle: Kimi-K2-Instruct, bs 8": "Kimi-K2, bs 8",
        "SpecBundle: Llama-3.1-8B-Instruct, bs 1": "Llama-3.1-8B, bs 1",
    }


def test_drafters_that_would_read_alike_keep_the_word_that_tells_them_apart():
    """Among the published drafters, where `SpecForge` is a word most names repeat, two Llama drafters
    read `LLaMA3.1-8B` and `Llama-3.1-8B` once it is dropped: two drafters with no hint. The one trained by
    SpecForge keeps the word."""
    llama = "lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"
    older = "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"
    others = [
        "lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-Instruct-2507-SpecForge",
        "lmsys/SGLang-EAGLE3-Qwen3-Next-80B-A3B-Instruct-FP8-SpecForge",
        "lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-Specforge",
    ]
    labels = abbreviate([llama, older, *others], 24)
    assert (labels[llama], labels[older]) == ("Llama-3.1-8B-SpecForge", "LLaMA3.1-8B")
    assert "SpecForge" not in labels[others[1]]  # no look-alike: the word still goes


def test_one_targets_drafters_lose_the_shared_start_not_a_piece_of_the_target():
    """The bug: the two Llama-4-Scout drafters of the published file read `4-SpecForge` and `4-v1` (the
    prefix `lmsys/SGLang-` vs `lmsys/sglang-` differs only by case, so the words step cut `Llama-4` apart)."""
    scout = [
        "lmsys/SGLang-EAGLE3-Llama-4-Scout-17B-16E-Instruct-SpecForge",
        "lmsys/sglang-EAGLE3-Llama-4-Scout-17B-16E-Instruct-v1",
    ]
    assert abbreviate(scout, 30) == {scout[0]: "SpecForge", scout[1]: "v1"}
    # the published file spells one Llama-3.3-70B row's drafter `...-Spec for ge`: shown as spelled, apart
    llama33 = [
        "lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B",
        "lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-Specforge",
        "lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-Spec for ge",
    ]
    labels = abbreviate(llama33, 30)
    assert labels[llama33[1]] == "Specforge" and labels[llama33[2]] == "Spec for ge"
    assert len(set(labels.values())) == 3


def test_names_that_fit_are_left_alone():
    """The bug: checkpoints `epoch_1`..`epoch_5` lost their shared prefix and read `1`..`5` on the axis."""
    assert abbreviate([f"epoch_{i}" for i in range(1, 6)], 18) == {
        f"epoch_{i}": f"epoch_{i}" for i in range(1, 6)
    }


def test_the_table_shows_a_page_of_the_ranking_at_a_time(monkeypatch, db_url):
    from tests.db.test_leaderboard_ranking import build_store

    engine = make_engine(db_url)
    build_store(engine, runs_made=12)
    engine.dispose()
    whole = board(db_url, source="calibrated")  # the page's default: a calibrated prediction is there
    assert len(whole) > 100  # three pages of 50
    at = run_page(monkeypatch, db_url, "views/leaderboard.py")
    assert not at.exception
    pages = at.number_input(key="leaderboard_page")
    assert pages.label == f"Page (of {-(-len(whole) // 50)})"
    ranks = table_with(at, "rank")["rank"].tolist()
    assert ranks == list(range(1, 51))
    pages.set_value(2).run()
    assert not at.exception
    shown = table_with(at, "rank")
    assert shown["rank"].tolist() == list(range(51, 101))
    assert shown["run"].tolist() == whole["run"].iloc[50:100].tolist()
    assert any(f"Entries 51-100 of {len(whole):,}" in c.value for c in at.caption)
