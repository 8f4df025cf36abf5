"""`specdash schedule` on a GuideLLM depth sweep with no run without speculation
(tests/fixtures/guidellm/depth_sweep/), run in-process.

Hand-worked from the fixture's stated ground truth (make_depth_sweep.py): round = 6 + 0.5 K + B (0.05 +
0.03 K) ms, tau chained from (0.8, 0.72, 0.66, 0.62, 0.58, 0.55). Per-request tok/s = 1000 tau / round:
at B = 1 the best is K = 4 (tau 2.98966, round 8.17 ms: 365.9 tok/s; K = 3 gives 360.8, K = 5 359.6);
at B = 32, K = 3 (tau 2.75616, round 11.98 ms: 230.1 tok/s; K = 2 gives 225.9, K = 4 222.6)."""

import json

import pytest

from tests.conftest import FIXTURES

SWEEP = FIXTURES / "guidellm" / "depth_sweep"
DEPLOYMENT = "Llama-3.1-8B-Instruct, vllm"
TARGET = ["--deployment", DEPLOYMENT, "--run", "llama31-eagle3", "--checkpoint", "epoch_3"]


@pytest.fixture
def sweep_url(db_url, invoke):
    files = [
        str(SWEEP / name) for name in ("drafter.json", "eagle3_k1.json", "eagle3_k3.json", "eagle3_k5.json")
    ]
    assert invoke(db_url, "ingest", *files).exit_code == 0
    return db_url


def schedule_json(invoke, url, *args):
    result = invoke(url, "schedule", *TARGET, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_calibrate_then_schedule_picks_the_measured_best_depths(sweep_url, invoke):
    calibrated = invoke(sweep_url, "calibrate", "--apply")
    assert calibrated.exit_code == 0 and "baselines estimated from the depth sweep" in calibrated.output
    rows = schedule_json(invoke, sweep_url, "--concurrency", "1,32")
    assert [set(r) >= {"concurrency", "num_steps", "tok_s", "aggregate_tok_s", "speedup"} for r in rows] == [
        True
    ] * 2
    assert [(r["concurrency"], r["num_steps"]) for r in rows] == [(1, 4), (32, 3)]
    assert rows[0]["tok_s"] == pytest.approx(365.9, rel=0.02)
    assert rows[1]["tok_s"] == pytest.approx(230.1, rel=0.02)
    for row in rows:
        assert row["aggregate_tok_s"] == pytest.approx(row["tok_s"] * row["concurrency"], rel=1e-5)
        assert row["baseline_estimated"] is True and row["speedup"] > 1


def test_a_load_never_measured_is_scheduled_too(sweep_url, invoke):
    assert invoke(sweep_url, "calibrate", "--apply").exit_code == 0
    (row,) = schedule_json(invoke, sweep_url, "--concurrency", "20")
    # truth at B = 20: K = 3 (2.75616 / (7.5 + 20 x 0.14) ms = 267.6 tok/s), K = 4 at 266.3
    assert row["concurrency"] == 20 and row["num_steps"] in (3, 4)
    assert row["tok_s"] == pytest.approx(267.6, rel=0.03)


def test_the_engines_config_syntax(sweep_url, invoke):
    assert invoke(sweep_url, "calibrate", "--apply").exit_code == 0
    vllm = invoke(sweep_url, "schedule", *TARGET, "--concurrency", "1,32", "--format", "vllm").output
    config = json.loads(vllm.strip().removeprefix("--speculative-config '").removesuffix("'"))
    # K 4 up to floor(sqrt(1 x 32)) = 5, then K 3 to vLLM's last batch size
    assert config == {
        "method": "eagle3",
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": [[1, 5, 4], [6, 4096, 3]],
    }
    trtllm = invoke(sweep_url, "schedule", *TARGET, "--concurrency", "1,32", "--format", "trtllm").output
    assert trtllm.splitlines() == [
        "speculative_config:",
        "  decoding_type: Eagle3",
        "  max_draft_len: 4",
        "  draft_len_schedule:",
        "    1: 4",
        "    6: 3",
    ]


def test_uncalibrated_the_priors_schedule_and_the_table_says_estimated(sweep_url, invoke):
    result = invoke(sweep_url, "schedule", *TARGET)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "from the priors (uncalibrated" in lines[0]
    assert lines[1].startswith("no benchmark without speculation: the baseline is estimated")
    assert lines[2].split() == ["concurrency", "num_steps", "tau", "tok/s", "aggregate", "tok/s", "speedup"]
    # the deployment's benchmarked loads: 1, 8 and 31 requests, each speedup marked estimated
    assert [line.split()[0] for line in lines[3:]] == ["1", "8", "31"]
    assert all(line.endswith("(estimated)") for line in lines[3:])


@pytest.mark.parametrize(
    "args,code,message",
    [
        (
            ["--deployment", "nope", "--run", "llama31-eagle3", "--checkpoint", "epoch_3"],
            1,
            "Error: no deployment 'nope': `specdash ls deployments` lists them",
        ),
        (
            [*TARGET[:4], "--checkpoint", "epoch_9"],
            1,
            "Error: run 'llama31-eagle3' has no checkpoint 'epoch_9': "
            "`specdash ls checkpoints --run llama31-eagle3` lists them",
        ),
        ([*TARGET, "--concurrency", "0,8"], 2, "'0,8': every batch size must be >= 1"),
        ([*TARGET, "--concurrency", "a"], 2, "give batch sizes separated by commas"),
    ],
)
def test_what_cannot_be_scheduled_says_why(sweep_url, invoke, args, code, message):
    result = invoke(sweep_url, "schedule", *args)
    assert result.exit_code == code and message in result.output
