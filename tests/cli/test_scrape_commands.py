"""`specdash scrape`: `--once A B` stores the window between two saved scrapes through the one load path;
bad input names its line and stores nothing; the live loop ends on a signal with its summary."""

import re
import signal
import threading

import pytest
from sqlalchemy import func, select

from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark
from tests.live_support import wait_for
from tests.scrape_support import LIVE, MetricsServer, scenario

ONCE = ["--once", str(LIVE / "llamacpp_a.prom"), str(LIVE / "llamacpp_b.prom"), "--seconds", "30"]


def benchmarks(url):
    with reading(make_engine(url)) as session:
        return list(session.scalars(select(Benchmark)))


def test_once_stores_the_window_and_storing_it_again_changes_nothing(invoke, db_url):
    result = invoke(db_url, "scrape", *ONCE, "--deployment", "box", "--run", "r1", "--checkpoint", "epoch_2")
    assert result.exit_code == 0, result.output
    # drafts 1500 -> 2100, accepted 3450 -> 4848: 1 + 1398/600; per position +540, +420, +288, +150
    assert "accept length 3.33, survival 0.90/0.70/0.48/0.25" in result.output
    # tokens predicted +2000 over generation seconds +40
    assert "50.0 tok/s per request" in result.output and "-> benchmark #1" in result.output
    (bench,) = benchmarks(db_url)
    assert (bench.source_format, bench.engine, bench.accept_length) == (
        "live",
        "llama.cpp",
        pytest.approx(1 + 1398 / 600),
    )
    assert bench.speculative_algorithm == "unknown" and bench.raw["setting_from"] == "unknown"
    again = invoke(db_url, "scrape", *ONCE, "--deployment", "box", "--run", "r1", "--checkpoint", "epoch_2")
    assert again.exit_code == 0 and "already stored" in again.output
    assert len(benchmarks(db_url)) == 1


def test_once_takes_the_setting_from_the_flag(invoke, db_url):
    result = invoke(db_url, "scrape", *ONCE, "--deployment", "box", "--setting", "EAGLE3/4/1/5")
    assert result.exit_code == 0, result.output
    (bench,) = benchmarks(db_url)
    assert (bench.speculative_algorithm, bench.num_steps, bench.num_draft_tokens) == ("EAGLE3", 4, 5)
    assert bench.raw["setting_from"] == "--setting"


def test_malformed_text_names_its_line_and_stores_nothing(invoke, db_url):
    args = ["--once", str(LIVE / "vllm_malformed.prom"), str(LIVE / "vllm_steady.prom"), "--seconds", "15"]
    result = invoke(db_url, "scrape", *args, "--deployment", "box")
    assert result.exit_code == 1
    assert (
        "vllm_malformed.prom:131: vllm:spec_decode_num_accepted_tokens_total: not Prometheus text"
        in result.output
    )
    assert "nothing stored" in result.output
    assert benchmarks(db_url) == []


@pytest.mark.parametrize(
    "args,message",
    [
        (["--deployment", "box"], "give a URL to scrape, or --once A B"),
        (["http://127.0.0.1:1/metrics", *ONCE, "--deployment", "box"], "give a URL to scrape, or --once A B"),
        (["ftp://box/metrics", "--deployment", "box"], "must start with http:// or https://"),
        ([*ONCE, "--deployment", "box", "--checkpoint", "e2"], "needs --run"),
        (
            [*ONCE, "--deployment", "box", "--setting", "EAGLE3/x"],
            "Invalid value for --setting: setting 'EAGLE3/x': steps must be a whole number",
        ),
    ],
)
def test_bad_usage_exits_2(invoke, db_url, args, message):
    result = invoke(db_url, "scrape", *args)
    assert result.exit_code == 2 and message in result.output


def test_the_loop_scrapes_until_a_signal_and_sums_up(invoke, db_url):
    """In-process: SIGINT is raised once the endpoint answered five scrapes (the three recorded, then the
    last again twice; windows of 0.1 s at one scrape every 0.4 s, so each scrape closes one); the
    command's handler stops the loop."""
    with MetricsServer("vllm_steady.prom") as server:

        def interrupt() -> None:
            wait_for(lambda: len(server.served) >= 5, timeout=60)
            signal.raise_signal(signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        result = invoke(
            db_url, "scrape", server.url, "--deployment", "box", "--every", "0.4", "--window", "0.1"
        )
    assert result.exit_code == 0, result.output
    # wall-clock windows: the three recorded scrapes make two windows, then the last one repeats (no decode)
    assert result.output.count("-> benchmark #") == 2
    assert "skipped (too little decode)" in result.output
    assert "stopped: " in result.output and "2 window(s) stored" in result.output
    with reading(make_engine(db_url)) as session:
        assert session.scalar(select(func.count()).select_from(Benchmark)) == 2
    assert server.served[:3] == [
        "vllm_steady.prom#0",
        "vllm_steady.prom#1",
        "vllm_steady.prom#2",
    ]


@pytest.mark.parametrize(
    "edit,detail",
    [
        (
            lambda t: t.replace("vllm:spec_decode_num_drafts_total{", "vllm:spec_decode_num_draftz_total{"),
            "vllm:spec_decode_num_drafts_total{engine=0,model_name=Qwen/Qwen3-8B} was in the scrape before",
        ),
        (
            lambda t: re.sub(
                r"^(vllm:spec_decode_num_drafts_total\{[^}]*\}) \S+$", r"\1 -3000", t, flags=re.M
            ),
            "vllm:spec_decode_num_drafts_total is -3000",
        ),
    ],
    ids=["series gone", "negative counter"],
)
def test_once_skips_an_inconsistent_pair_and_stores_nothing(invoke, db_url, tmp_path, edit, detail):
    first, second = scenario("vllm_steady.prom")[:2]
    a, b = tmp_path / "a.prom", tmp_path / "b.prom"
    a.write_text(first.text)
    b.write_text(edit(second.text))
    result = invoke(db_url, "scrape", "--once", str(a), str(b), "--seconds", "15", "--deployment", "box")
    assert result.exit_code == 0, result.output
    assert "skipped (inconsistent scrape): " in result.output and detail in result.output
    assert "1 skipped: inconsistent scrape" in result.output
    assert benchmarks(db_url) == []
