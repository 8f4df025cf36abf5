"""Each engine's metrics read into one Reading: DP engines summed, TP ranks that repeat one another kept
once, the latency histogram found under its new or old name, the setting where the metrics tell it."""

from specdash.ingest.live.engines import LLAMA_CPP, SGLANG, VLLM, position_quantity, read_engine
from specdash.ingest.live.exposition import parse_scrape
from tests.scrape_support import EPOCH, LIVE, scenario


def reading(name: str, index: int = 0):
    return read_engine(parse_scrape(scenario(name)[index].text, name, EPOCH))


def total(r, quantity: str) -> float:
    return sum(r.counters[quantity].values())


def test_vllm_one_engine():
    r = reading("vllm_steady.prom")
    assert r.engine == VLLM
    assert (total(r, "drafts"), total(r, "draft_tokens"), total(r, "accepted")) == (2000, 6000, 2800)
    assert [total(r, position_quantity(k)) for k in range(3)] == [1500, 900, 400]
    assert (total(r, "generation_tokens"), total(r, "first_tokens")) == (4820, 20)
    assert (total(r, "latency_sum"), total(r, "latency_count")) == (50.0, 2000)
    assert r.latency == "vllm:inter_token_latency_seconds"
    assert (r.running, r.positions, r.steps, r.speculative) == (8, 3, 3, True)
    # the request-success counter's three finished_reason series (stop 12, length 0, abort 0)
    assert total(r, "finished_requests") == 12
    assert r.info["model_name"] == "Qwen/Qwen3-8B"
    assert r.info["vllm:cache_config_info.block_size"] == "16"
    assert "version" not in r.info  # vLLM's /metrics does not say its version


def test_vllm_two_dp_engines_are_kept_apart_and_sum_to_the_server():
    r = reading("vllm_dp.prom")
    assert sorted(r.counters["drafts"].values()) == [800, 1000]
    assert total(r, "drafts") == 1800 and total(r, "accepted") == 2400
    assert r.running == 4 + 4
    assert r.info["engines"] == "engine=0, engine=1"
    # 0.11 wrote the per-step latency under both names with the same values: read once, under the new one
    assert r.latency == "vllm:inter_token_latency_seconds"
    assert total(r, "latency_sum") == 25.0 + 20.0


def test_vllm_before_011_times_decode_under_the_old_name_and_without_speculation():
    r = reading("vllm_baseline_v010.prom")
    assert r.latency == "vllm:time_per_output_token_seconds"
    assert (total(r, "latency_sum"), total(r, "latency_count")) == (450.0, 30000)
    assert (r.speculative, r.positions, r.steps) == (False, 0, None)
    assert "drafts" not in r.counters


def test_sglang_tp_ranks_reporting_the_same_batch_count_once():
    r = reading("sglang_steady.prom")
    assert r.engine == SGLANG
    # both TP ranks report 6 running requests (--enable-metrics-for-all-schedulers): one batch of 6
    assert r.running == 6
    assert r.accept_length == 2.9
    assert (r.steps, r.draft_tokens, r.speculative) == (3, 4, True)
    assert (total(r, "verify_calls"), total(r, "generation_tokens")) == (1300, 3800)
    assert (total(r, "latency_sum"), total(r, "latency_count")) == (50.0, 4000)
    assert r.positions == 0  # SGLang publishes no per-position acceptance


SGLANG_DP = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 2.0
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 6.0
# HELP sglang:spec_accept_length Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{dp_rank="0",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 2.0
sglang:spec_accept_length{dp_rank="1",engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 3.0
"""


def test_sglang_dp_groups_sum_and_their_accept_lengths_weigh_by_running_requests():
    r = read_engine(parse_scrape(SGLANG_DP, "dp.txt", EPOCH))
    assert r.running == 8
    # (2 x 2.0 + 6 x 3.0) / 8 = 22 / 8
    assert r.accept_length == 2.75
    assert r.info["engines"] == "dp_rank=0, dp_rank=1"


def test_sglang_without_speculation_reports_accept_length_zero():
    lines = SGLANG_DP.splitlines()
    off = [
        line.rsplit(" ", 1)[0] + " 0.0" if line.startswith("sglang:spec_accept_length") else line
        for line in lines
    ]
    r = read_engine(parse_scrape("\n".join(off) + "\n", "off.txt", EPOCH))
    assert (r.accept_length, r.speculative, r.running) == (None, False, 8)


def test_llama_server_counters_without_labels():
    r = read_engine(parse_scrape((LIVE / "llamacpp_a.prom").read_text(), "a.prom", EPOCH))
    assert r.engine == LLAMA_CPP
    assert (total(r, "drafts"), total(r, "accepted"), total(r, "generation_tokens")) == (1500, 3450, 5000)
    assert total(r, "decode_seconds") == 100.0
    assert [total(r, position_quantity(k)) for k in range(4)] == [1200, 1000, 750, 500]
    assert (r.running, r.positions, r.speculative) == (1, 4, True)
    assert r.steps is None  # llama-server's per-position counters grow with the longest draft, not a setting


def test_a_version_label_on_an_info_metric_is_the_engine_version():
    # no engine labels its version on /metrics today; a deployment that adds an info metric with one is read
    text = scenario("vllm_steady.prom")[0].text + 'vllm:build_info{version="0.33.0"} 1.0\n'
    assert read_engine(parse_scrape(text, "v.prom", EPOCH)).info["version"] == "0.33.0"
