"""GuideLLM reports in the three shapes of its 2025-2026 releases (tests/fixtures/guidellm/README.md), stored
through the one ingest path (the setting syntax is tests/ingest/test_setting.py). Expected numbers are read off the fixtures."""

import pytest

from specdash.ingest.formats import BY_NAME, detect_format
from specdash.ingest.formats.guidellm import parse
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import PathSource
from tests.conftest import FIXTURES
from tests.ingest_support import benchmarks, content, load

GUIDELLM = FIXTURES / "guidellm"


@pytest.mark.parametrize(
    "name", ["benchmarks_stripped_v0.3.1.json", "sweep_v0.5.4.yaml", "concurrent_eagle3_v0.7.json"]
)
def test_every_shape_is_detected(name):
    path = GUIDELLM / name
    assert detect_format(path.read_text()[:65536], name) is BY_NAME["guidellm"]


def test_the_real_v0_3_report(engine):
    """guidellm's own test asset (v0.3.1): one synchronous benchmark of `example_model`. TPOT median
    4.885653 ms -> 204.68 tok/s per request; request_concurrency.successful.mean 0.99776 -> 1; output
    tok/s mean 198.133; TTFT median 16.3805 ms; 46 successful requests."""
    load(
        engine,
        GUIDELLM / "benchmarks_stripped_v0.3.1.json",
        IngestPolicy(link=LinkOptions(deployment="test box")),
    )
    (bench,) = benchmarks(engine)
    assert bench.source_format == "guidellm" and bench.deployment.name == "test box"
    assert bench.decode_tps == pytest.approx(1000 / 4.885653033852577)
    assert bench.concurrency == 1 and bench.concurrency_source == "measured mean"
    assert bench.raw["concurrency_mean"] == pytest.approx(0.9977627456483604)
    assert bench.raw["concurrency_field"] == "metrics.request_concurrency.successful.mean"
    assert bench.output_throughput == pytest.approx(198.13346751788123)
    assert bench.median_ttft_ms == pytest.approx(16.38054847717285)
    assert bench.p99_ttft_ms == pytest.approx(21.281957626342773)
    assert bench.median_itl_ms == pytest.approx(4.9241227427805505)
    assert bench.num_prompts == 46 and bench.label == "synchronous"
    assert bench.raw["model"] == "example_model"
    # a report does not say how the server speculated
    assert bench.speculative_algorithm == "unknown" and bench.num_steps is None


def test_a_v0_7_concurrency_sweep_with_its_setting_label(engine):
    """0.7 report, `--label setting=EAGLE3/3/1/4 --label drafter=... --label engine=vllm`, streams 1/8/32:
    TPOT medians 4, 5 and 8 ms -> 250, 200, 125 tok/s per request; mean concurrency 0.99, 7.8, 30.6."""
    load(engine, GUIDELLM / "concurrent_eagle3_v0.7.json")
    rows = benchmarks(engine)
    assert [b.concurrency for b in rows] == [1, 8, 31]
    assert [b.raw["concurrency_mean"] for b in rows] == [0.99, 7.8, 30.6]
    assert [b.decode_tps for b in rows] == pytest.approx([250.0, 200.0, 125.0])
    assert [b.output_throughput for b in rows] == [245.0, 1560.0, 3825.0]
    assert {(b.speculative_algorithm, b.num_steps, b.topk, b.num_draft_tokens) for b in rows} == {
        ("EAGLE3", 3, 1, 4)
    }
    assert {b.deployment.name for b in rows} == {"Llama-3.1-8B-Instruct, vllm"}
    assert rows[2].label == "concurrent streams=32" and rows[2].p99_itl_ms == 14.0
    assert rows[1].raw["metrics"]["time_to_first_token_ms"]["p90"] == pytest.approx(67.5)


def test_a_v0_5_yaml_sweep(engine):
    """0.5 YAML (keys sorted, as yaml.dump writes them): synchronous, throughput and a constant rate of 5/s
    -> concurrency 1, 118 (118.4), 13 (12.6); 160, 40, 125 tok/s per request; model from the report."""
    load(engine, GUIDELLM / "sweep_v0.5.4.yaml")
    rows = benchmarks(engine)
    assert [(b.concurrency, round(b.decode_tps, 6)) for b in rows] == [(1, 160.0), (118, 40.0), (13, 125.0)]
    assert rows[2].request_rate == 5.0 and rows[2].label == "constant rate=5"
    assert {b.deployment.name for b in rows} == {"Qwen3-8B, guidellm"}
    assert rows[0].raw["guidellm_version"] == "0.5.4"


def test_a_level_where_no_request_completed_is_skipped_not_refused(tmp_path, engine):
    """The tool wrote a level with nothing to measure (its successful TPOT median 0, as when every request
    of a rate past the server's limit failed): the file loads without it and says which line was skipped."""
    text = (GUIDELLM / "sweep_v0.5.4.yaml").read_text()
    failed = tmp_path / "failed_level.yaml"
    failed.write_text(text.replace("median: 25.0", "median: 0.0", 1))
    result = load(engine, failed)
    assert [b.concurrency for b in benchmarks(engine)] == [1, 13]
    assert "skipped, no successful requests to measure: line(s) " in result.message


def test_reingesting_changes_nothing(engine):
    load(engine, GUIDELLM / "concurrent_eagle3_v0.7.json")
    before = content(engine)
    ingest(engine, PathSource(GUIDELLM / "concurrent_eagle3_v0.7.json"))
    assert content(engine) == before


def test_bad_reports_name_file_line_and_field(tmp_path, engine):
    text = (GUIDELLM / "sweep_v0.5.4.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    # the second benchmark's TPOT median made negative
    bad.write_text(text.replace("median: 25.0", "median: -25.0", 1))
    before = content(engine)
    result = ingest(engine, PathSource(bad), IngestPolicy(format_name="guidellm"))
    assert result.status != "loaded" and content(engine) == before
    messages = [str(p) for p in result.problems]
    assert any("benchmarks[1].metrics.time_per_output_token_ms.successful.median" in m for m in messages)
    line = next(p.line for p in result.problems if "time_per_output_token_ms" in (p.field or ""))
    assert "median: -25.0" in text.replace("median: 25.0", "median: -25.0", 1).splitlines()[line - 1]


def test_a_broken_yaml_says_where():
    problems = list(parse(iter_text("benchmarks:\n- metrics: {a: 1\n"), "x.yaml"))
    assert len(problems) == 1 and problems[0].line == 3 and "invalid YAML" in problems[0].message


def iter_text(text):
    import io

    return io.StringIO(text)


def test_a_sweep_into_saturation_is_stored_whole(engine):
    """GuideLLM at 1, 32 and 128 streams of Qwen3-32B: at 128 streams 103 requests are in flight on average,
    most of them queued, so the aggregate (441 tok/s) is a sixteenth of 71.5 tok/s x 103. Every load is
    stored (and the deployment created), none refused; the numbers are the report's own."""
    load(
        engine,
        GUIDELLM / "saturated_qwen3_32b_v0.7.json",
        IngestPolicy(link=LinkOptions(deployment="vLLM Qwen3-32B")),
    )
    found = benchmarks(engine)
    assert [b.concurrency for b in found] == [1, 30, 103]  # round(0.99), round(30.5) (half to even), 103
    assert [b.decode_tps for b in found] == pytest.approx([1000 / 9.5, 1000 / 11.8, 71.5])
    assert [b.output_throughput for b in found] == pytest.approx([104.0, 2390.0, 441.0])
    assert {(b.speculative_algorithm, b.num_steps, b.num_draft_tokens) for b in found} == {("EAGLE3", 3, 4)}
