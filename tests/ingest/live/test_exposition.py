"""Reading one scrape: the engines' exposition text through prometheus_client's parser, malformed text
reported on its line, and the HTTP read of a local endpoint."""

import pytest

from specdash.ingest.live.engines import read_engine
from specdash.ingest.live.exposition import ExpositionError, parse_scrape
from specdash.ingest.live.sources import ScrapeFailed, fetch_scrape, read_saved
from tests.scrape_support import EPOCH, LIVE, MetricsServer, scenario


def steady_first() -> str:
    return scenario("vllm_steady.prom")[0].text


def test_a_vllm_scrape_reads_every_series_and_leaves_created_out():
    scrape = parse_scrape(steady_first(), "vllm_steady.prom", EPOCH)
    (drafts,) = scrape.series("vllm:spec_decode_num_drafts_total")
    assert drafts.value == 2000.0
    assert dict(drafts.labels) == {"engine": "0", "model_name": "Qwen/Qwen3-8B"}
    positions = {
        s.label("position"): s.value
        for s in scrape.series("vllm:spec_decode_num_accepted_tokens_per_pos_total")
    }
    assert positions == {"0": 1500.0, "1": 900.0, "2": 400.0}
    # prometheus_client writes a `_created` gauge beside every counter and histogram: not a value to sum
    assert "vllm:spec_decode_num_drafts_created" in scrape.text
    assert not [name for name in scrape.samples if name.endswith("_created")]
    assert scrape.series("vllm:inter_token_latency_seconds_sum")[0].value == 50.0


def test_a_malformed_line_is_reported_on_its_line_and_nothing_is_read():
    text = (LIVE / "vllm_malformed.prom").read_text()
    with pytest.raises(ExpositionError) as caught:
        parse_scrape(text, "vllm_malformed.prom", EPOCH)
    (problem,) = caught.value.problems
    # line 131 of the file: `vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="Qwen/Qwen3-8B" 2800.0`
    assert (problem.path, problem.line, problem.field) == (
        "vllm_malformed.prom",
        131,
        "vllm:spec_decode_num_accepted_tokens_total",
    )
    assert str(problem).startswith("vllm_malformed.prom:131: vllm:spec_decode_num_accepted_tokens_total: ")
    assert "not Prometheus text" in problem.message and 'Qwen3-8B" 2800.0' in problem.message


@pytest.mark.parametrize(
    "text,line,message",
    [
        (
            'vllm:num_requests_running{engine="0"} 8.0\nvllm:num_requests_running{engine=0} 1\n',
            2,
            "Invalid labels",
        ),
        ("vllm:num_requests_running 8.0\nvllm:num_requests_running eight\n", 2, "could not convert"),
        ('# HELP x y\n# TYPE x gauge\n{engine="0"} 1\n', 3, "not Prometheus text"),
    ],
)
def test_malformed_lines_are_found_whatever_the_parser_says(text, line, message):
    with pytest.raises(ExpositionError) as caught:
        parse_scrape(text, "scrape.txt", EPOCH)
    (problem,) = caught.value.problems
    assert problem.line == line and message in problem.message


def test_the_same_series_twice_is_an_error_on_its_second_line():
    text = 'vllm:generation_tokens_total{engine="0"} 5.0\n# a comment\nvllm:generation_tokens_total{engine="0"} 7.0\n'
    with pytest.raises(ExpositionError) as caught:
        parse_scrape(text, "scrape.txt", EPOCH)
    assert (
        str(caught.value)
        == "scrape.txt:3: vllm:generation_tokens_total: the same series twice (first on line 1)"
    )


def test_no_samples_and_foreign_metrics_are_refused():
    with pytest.raises(ExpositionError, match="no samples"):
        parse_scrape("# HELP nothing here\n\n", "empty.txt", EPOCH)
    with pytest.raises(ExpositionError, match="no vllm:, sglang: or llamacpp: metrics"):
        read_engine(parse_scrape("node_cpu_seconds_total 12.5\n", "node.txt", EPOCH))


def test_a_nan_in_a_used_metric_is_an_error_naming_its_line():
    text = steady_first().replace(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen3-8B"} 2000.0',
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen3-8B"} NaN',
    )
    line = (
        text.splitlines().index(
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen3-8B"} NaN'
        )
        + 1
    )
    with pytest.raises(ExpositionError) as caught:
        read_engine(parse_scrape(text, "nan.prom", EPOCH))
    assert (
        str(caught.value) == f"nan.prom:{line}: vllm:spec_decode_num_drafts_total: nan is not a finite number"
    )


def test_saved_text_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "a.prom"
    path.write_bytes(b'vllm:num_requests_running 1.0\nvllm:x{a="\xff"} 1\n')
    with pytest.raises(ExpositionError) as caught:
        read_saved(path)
    assert caught.value.problems[0].line == 2 and "not utf-8 text" in caught.value.problems[0].message


def test_the_fixture_server_serves_each_recorded_scrape_in_turn(metrics_server, recorded_clock):
    first = fetch_scrape(metrics_server.url, now=recorded_clock)
    second = fetch_scrape(metrics_server.url, now=recorded_clock)
    assert (first.at - EPOCH).total_seconds() == 0 and (second.at - EPOCH).total_seconds() == 15
    assert first.series("vllm:spec_decode_num_drafts_total")[0].value == 2000.0
    assert second.series("vllm:spec_decode_num_drafts_total")[0].value == 6800.0
    assert metrics_server.served == ["vllm_steady.prom#0", "vllm_steady.prom#1"]
    metrics_server.switch("vllm_malformed.prom")
    with pytest.raises(ExpositionError, match=":131: "):
        fetch_scrape(metrics_server.url, now=recorded_clock)


def test_an_endpoint_that_does_not_answer_with_metrics_is_a_lost_scrape():
    with MetricsServer("vllm_steady.prom", status=503) as server:
        with pytest.raises(ScrapeFailed, match="HTTP 503"):
            fetch_scrape(server.url)
        with pytest.raises(ScrapeFailed, match="HTTP 404"):
            fetch_scrape(server.url.replace("/metrics", "/nothing"))
        url = server.url
    with pytest.raises(ScrapeFailed, match=url):
        fetch_scrape(url, timeout=2.0)  # the server is gone: refused
