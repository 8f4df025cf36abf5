"""The deploy answer on the published SpecBundle results: per deployment and load the checkpoint with the
highest measured speedup (mean over datasets of tok/s over that dataset's no-speculation run), worked out
from tests/fixtures/real/specbundle-data.json by hand."""

from collections import defaultdict

import pytest

from specdash.app.board_frames import choices_frame
from specdash.app.deploy_panel import deploy_frame, deployment_label, drafter_label, verdict_text
from specdash.db.deploy import deploy_table
from specdash.db.engine import make_engine, reading
from specdash.db.leaderboard import LeaderboardFilter
from tests.app_support import run_page, specbundle_rows

TARGET = "Llama-3.1-8B-Instruct"
SPECFORGE = "lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"
OLDER = "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"


def mean_speedups(drafter: str) -> dict[tuple, float]:
    """Per setting (steps, topk, draft tokens): the mean over datasets of output_throughput over the
    dataset's 'Wihtout EAGLE3' output_throughput (batch_size 1 for this model)."""
    rows = [r for r in specbundle_rows() if r["model"] == TARGET]
    baseline = {r["benchmark"]: r["output_throughput"] for r in rows if r["baseline"]}
    ratios = defaultdict(list)
    for r in rows:
        if r["name"] == drafter:
            key = (r["steps"], r["topk"], r["num_draft_tokens"])
            ratios[key].append(r["output_throughput"] / baseline[r["benchmark"]])
    return {k: sum(v) / len(v) for k, v in ratios.items()}


def test_the_winner_its_setting_and_the_runner_up(real_url):
    with reading(make_engine(real_url)) as session:
        table = choices_frame(deploy_table(session, LeaderboardFilter(source="theory")))
    [row] = table[table["deployment"] == f"SpecBundle: {TARGET}"].to_dict("records")
    specforge, older = mean_speedups(SPECFORGE), mean_speedups(OLDER)
    best = max(specforge, key=specforge.get)
    assert best == (7, 1, 8)
    assert (row["run"], row["concurrency"], row["target_model"]) == (SPECFORGE, 1, TARGET)
    assert (row["num_steps"], row["topk"], row["num_draft_tokens"]) == best
    assert row["measured_speedup"] == pytest.approx(specforge[best])
    assert row["runner_up_speedup"] == pytest.approx(max(older.values()))
    assert row["candidates"] == 2
    # one row per deployment and load: the demo's two deployments and the ten SpecBundle targets
    assert len(table) == len(table.drop_duplicates(["deployment_id", "concurrency"])) == 12


def test_short_names_drop_the_target_and_stay_unique(real_url):
    assert drafter_label(SPECFORGE, TARGET) == "SGLang-EAGLE3-…-SpecForge"
    assert drafter_label("AQ-MedAI/Kimi-K2-Instruct-eagle3", "Kimi-K2-Instruct") == "AQ-MedAI/…-eagle3"
    assert deployment_label(f"SpecBundle: {TARGET}", TARGET) == "SpecBundle"
    assert drafter_label("k25-eagle3-100k-ttt5", "Kimi-K2.5 (demo)") == "k25-eagle3-100k-ttt5"
    with reading(make_engine(real_url)) as session:
        shown = deploy_frame(choices_frame(deploy_table(session, LeaderboardFilter(source="theory"))))
    # with its target (its own column) a short name stands for one drafter
    pairs = shown.groupby(["target", "deploy"])["drafter (full name)"].nunique()
    assert (pairs == 1).all()
    assert not shown.apply(lambda r: r["target"] in r["deploy"], axis=1).any()  # the target said once
    assert SPECFORGE + " / published" in shown["drafter (full name)"].tolist()
    assert "None" not in shown.astype(str).to_numpy().ravel().tolist()


def test_the_overview_opens_on_the_deploy_view(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url)
    assert not at.exception
    assert at.subheader[0].value.startswith("Deploy")
    shown = next(d.value for d in at.dataframe if "deploy" in d.value.columns)
    assert len(shown) == 12 and "SGLang-EAGLE3-…-SpecForge" in shown["deploy"].tolist()


def test_no_prediction_only_when_none_exists(monkeypatch, calibrated_url):
    """The calibration skipped the demo's H200 (too few benchmarks): its winner is compared with its theory
    prediction, named, instead of reading "no prediction"."""
    with reading(make_engine(calibrated_url)) as session:
        theory = choices_frame(deploy_table(session, LeaderboardFilter(source="theory")))
    at = run_page(monkeypatch, calibrated_url)
    assert not at.exception
    shown = next(d.value for d in at.dataframe if "deploy" in d.value.columns)
    assert "no prediction" not in shown["verdict"].tolist()
    [h200] = shown[shown["deployment"] == "8x H200, TP8, NVLink"].to_dict("records")
    [expected] = theory[theory["deployment"] == "8x H200, TP8, NVLink"].to_dict("records")
    assert h200["predicted"] == f"{expected['predicted_speedup']:.2f}× ± {expected['error_band'] * 100:.0f} %"
    assert h200["verdict"] == "as predicted*"
    assert (shown["verdict"] == "as predicted").sum() == len(shown) - 1  # the others: the calibrated sets
    deploy_caption = next(c.value for c in at.caption if c.value.startswith("Speedup ="))
    assert deploy_caption.endswith(
        "\\* Compared with the theory prediction: the calibrated set does not cover that deployment."
    )


@pytest.mark.parametrize(
    "within,measured,source,expected",
    [
        (True, 2.0, "calibrated", "as predicted"),
        (False, 2.5, "calibrated", "faster"),
        (False, 1.5, "calibrated", "slower"),
        (True, 2.0, "theory", "as predicted*"),
        (False, 1.5, "theory", "slower*"),
    ],
)
def test_a_verdict_is_a_word_or_two_that_fits_its_column(within, measured, source, expected):
    """At 1400 px the verdict column has 125 px: "as predicted (theory)" was cut (the browser test measures
    the drawn text); the words stay short and the theory fallback is a mark the caption explains."""
    row = {
        "within_band": within,
        "predicted_speedup": 2.0,
        "measured_speedup": measured,
        "prediction_source": source,
    }
    assert verdict_text(row, "calibrated") == expected
    assert len(expected) <= 13  # "no prediction", the longest


def test_long_names_keep_their_distinguishing_tail_and_fit_their_columns(real_url):
    from specdash.app.deploy_panel import NAME_WIDTH, keep_tail

    assert keep_tail("8x RTX PRO 6000, TP8, PCIe", 20) == "8x RTX…00, TP8, PCIe"
    assert keep_tail("epoch_3", 20) == "epoch_3"
    with reading(make_engine(real_url)) as session:
        table = choices_frame(deploy_table(session, LeaderboardFilter(source="theory")))
    shown = deploy_frame(table)
    drafters = shown["deploy"].str.split(" / ").str[0]  # a checkpoint other than `published` follows
    for column, names in (
        ("target", shown["target"]),
        ("deployment", shown["deployment"]),
        ("deploy", drafters),
    ):
        assert names.str.len().max() <= NAME_WIDTH[column], column
    # every target reads apart from the others, and one cut is in full in the last column
    assert shown["target"].nunique() == table["target_model"].nunique()
    [coder] = shown[shown["target"].str.contains("480B")].to_dict("records")
    assert coder["target"] == "Qwen3-Coder-480B-A35B"  # "Instruct", which most targets repeat, left out
    assert coder["drafter (full name)"].endswith(", for Qwen3-Coder-480B-A35B-Instruct")
    assert "Llama-3.1-8B-Instruct" in shown["target"].tolist()  # a name that fits stays whole
