"""GuideLLM's printed tables: the 0.2-0.3 Benchmarks Stats of real captures (tests/fixtures/real/README.md
says where each comes from) and the 0.4+ Request Latency / Server Throughput tables of a real harness log;
the inline tables are in the exact layout GuideLLM 0.2's `print_benchmarks_stats` prints, their rows
from a real paste (sgl-project/SpecForge#164) where the paste holds them."""

import io

import pytest

from specdash.ingest.formats import BY_NAME, detect_format
from specdash.ingest.formats.base import Located
from specdash.ingest.formats.guidellm_console import parse
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.problems import SKIPPED, Problem
from specdash.ingest.sources import PathSource
from tests.conftest import REAL_FIXTURES
from tests.ingest_support import benchmarks, load

ONE_GPU = REAL_FIXTURES / "guidellm_console_granite_1gpu_sweep_techxchange.txt"
ARMS_LOG = REAL_FIXTURES / "vllm_log_guidellm_arms_xpu.log"

# SpecForge#164 ("Without Speculative"), as pasted: the thread's excerpt ends inside the throughput row.
CUT_PASTE = """Benchmarks Stats:
==============================================================================================================================================================
Metadata      | Request Stats         || Out Tok/sec| Tot Tok/sec| Req Latency (ms)  ||| TTFT (ms)              ||| ITL (ms)          ||| TPOT (ms)         ||
     Benchmark| Per Second| Concurrency|        mean|        mean|  mean| median|   p99|    mean|  median|     p99|  mean| median|   p99|  mean| median|   p99
--------------|-----------|------------|------------|------------|------|-------|------|--------|--------|--------|------|-------|------|------|-------|------
   synchronous|       0.63|        1.00|        80.5|       401.8|  1.59|   1.58|  1.92|   102.6|    94.0|   428.3|  11.7|   11.7|  11.7|  11.6|   11.6|  11.6
    throughput|      19.50|      462.85|      2495.4|     12459.6| 23.74|  24.27| 39.28| 16309.2| 16898.6| 23631.8|  5
"""

# The same table closed, its throughput row's ITL and TPOT columns (past the paste's cut) written in:
# 462.85 in flight at 1000 / 45.0 = 22.2 tok/s each would be 10286 tok/s; 2495.4 measured (a saturated
# server: most requests wait in the queue).
SATURATED = CUT_PASTE.replace("|  5\n", "|  50.2|   45.1|  60.3|  50.0|   45.0|  60.2\n" + "=" * 158 + "\n")


def records(text: str, link: LinkOptions | None = None) -> list:
    return list(parse(io.StringIO(text), "paste.txt", link))


def test_a_real_capture_is_detected_by_its_tables_among_other_text():
    """The capture holds the backend line, a progress box and three tables: one format, this one."""
    assert detect_format(ONE_GPU.read_text()[:65536], ONE_GPU.name) is BY_NAME["guidellm-console"]


def test_a_capture_holding_the_servers_own_log_stays_that_log():
    """guidellm-bench's log holds vLLM's server lines and GuideLLM 0.5's tables: read as the vLLM log (its
    lines state the engine's speculation), as before this format existed."""
    assert detect_format(ARMS_LOG.read_text()[:65536], ARMS_LOG.name) is BY_NAME["vllm-log"]


def test_prose_quoting_a_table_is_not_one():
    assert detect_format(SATURATED, "notes.md") is None


def test_the_table_names_no_model_so_the_deployment_is_asked_for():
    (problem, *_) = records(CUT_PASTE)
    assert isinstance(problem, Problem) and problem.field == "deployment" and problem.line == 6


def test_a_row_cut_short_is_refused_on_its_line_and_the_rest_read():
    """The synchronous row: 1.00 in flight, 1000 / 11.6 ms (TPOT median) per request, 80.5 out tok/s;
    the throughput row has 12 of the 17 columns."""
    read = records(CUT_PASTE, LinkOptions(deployment="H100, sglang"))
    (located,) = [r for r in read if isinstance(r, Located)]
    (problem,) = [r for r in read if isinstance(r, Problem)]
    bench = located.record
    assert (bench.concurrency, bench.concurrency_source) == (1, "measured mean")
    assert bench.decode_tps == pytest.approx(1000 / 11.6) and bench.output_throughput == 80.5
    assert (bench.median_ttft_ms, bench.p99_ttft_ms, bench.median_itl_ms) == (94.0, 428.3, 11.7)
    assert bench.label == "synchronous" and bench.request_rate is None
    # the printed table says nothing of speculation, as a report does not: stated, else unknown
    assert bench.speculative_algorithm == "unknown"
    assert (problem.line, problem.message) == (7, "a row of 12 of the table's 17 columns")


def test_a_saturated_row_loads(engine, tmp_path):
    """Aggregate far below per-request x concurrency is a queue, not a contradiction: both rows stored."""
    path = tmp_path / "paste_saturated.txt"
    path.write_text(SATURATED)
    load(engine, path, IngestPolicy(link=LinkOptions(deployment="H100, sglang")))
    sync, saturated = benchmarks(engine)
    assert (sync.concurrency, saturated.concurrency) == (1, 463)
    assert saturated.decode_tps == pytest.approx(1000 / 45.0) and saturated.output_throughput == 2495.4
    assert saturated.raw["concurrency_mean"] == 462.85


def test_a_real_sweep_keeps_its_rates_tokens_and_model(engine):
    """granite on one L40S: constant@0.50 is the third row, 30 requests of 512.3 prompt and 256.0 output
    tokens (Benchmarks Info); the deployment is named after the model GuideLLM printed and serves it."""
    load(engine, ONE_GPU)
    stored = benchmarks(engine)
    assert [b.label for b in stored[:3]] == ["synchronous", "throughput", "constant rate=0.5"]
    constant = stored[2]
    assert constant.request_rate == 0.5 and constant.num_prompts == 30
    assert (constant.input_tokens, constant.output_tokens) == (512.3, 256.0)
    assert constant.deployment.name == "granite-3.3-8b-instruct, guidellm"
    assert constant.deployment.target_model.endswith("ibm-granite/granite-3.3-8b-instruct")
    assert constant.raw["printed"]["Req Latency (ms) / mean"] == 7.0  # seconds, whatever 0.2's header says


def test_the_0_5_tables_read_as_the_report_of_the_same_run_says():
    """guidellm-bench's log forced through this reader: four runs of 0.5's tables, each a synchronous
    benchmark of the model GuideLLM validated. The Qwen3-4B TP2 arm prints TPOT Mdn 19.6 ms and 50.9
    output tok/s; its JSON report (real/guidellm_0.5_sync_qwen3_4b_xpu.json) says 19.648 and 50.866."""
    with ARMS_LOG.open() as stream:
        read = [r.record for r in parse(stream, str(ARMS_LOG), None) if isinstance(r, Located)]
    benches = [r for r in read if r.kind == "benchmark"]
    assert [b.deployment for b in benches] == [
        "gpt-oss-20b, guidellm",
        "Qwen3-30B-A3B, guidellm",
        "Qwen3-4B-Thinking-2507, guidellm",
        "Qwen3-4B-Thinking-2507, guidellm",
    ]
    tp2 = benches[2]
    assert tp2.concurrency == 1 and tp2.label == "synchronous"
    assert tp2.decode_tps == pytest.approx(1000 / 19.6) and tp2.output_throughput == 50.9
    assert tp2.decode_tps == pytest.approx(1000 / 19.64803342707455, rel=0.005)


ZEROS = (
    "  constant@5.60|       0.00|        0.00|         0.0|         0.0|  0.00|   0.00|  0.00|    0.0|"
    + ("    0.0|    0.0|   0.0|    0.0|   0.0|   0.0|    0.0|   0.0\n")
)


def test_a_row_where_nothing_completed_is_skipped_on_its_line():
    """0.2-0.3 print a level whose requests all failed as zeros (a constant rate past the server's limit):
    no per-request speed to measure, skipped on its line as a report's benchmark without successful
    requests is."""
    closing = "=" * 158 + "\n"
    text = SATURATED.removesuffix(closing) + ZEROS + closing
    read = records(text, LinkOptions(deployment="H100, sglang"))
    assert [r.line for r in read if isinstance(r, Located)] == [6, 7]
    (problem,) = [r for r in read if isinstance(r, Problem)]
    assert (problem.line, problem.message) == (8, "no successful requests to measure")
    assert problem.kind == SKIPPED


def test_a_sweep_with_a_failed_level_is_stored_without_it_and_says_so(tmp_path, engine):
    """The tool wrote the failed level: the file is never refused for it. Its two measured rows are stored,
    the summary says which line was skipped and why; a table of failed levels only has nothing to store and
    is refused on that line."""
    closing = "=" * 158 + "\n"
    path = tmp_path / "sweep.txt"
    path.write_text(SATURATED.removesuffix(closing) + ZEROS + closing)
    result = load(engine, path, IngestPolicy(link=LinkOptions(deployment="H100, sglang")))
    assert result.message.endswith("skipped, no successful requests to measure: line(s) 8")
    assert [b.concurrency for b in benchmarks(engine)] == [1, 463]
    header, rows = SATURATED.split("   synchronous")[0], ZEROS + closing
    failed = tmp_path / "failed.txt"
    failed.write_text(header + rows)
    refused = ingest(engine, PathSource(failed), IngestPolicy(link=LinkOptions(deployment="H100, sglang")))
    assert refused.status == "failed"
    assert [str(p) for p in refused.problems] == [f"{failed}:6: no successful requests to measure"]


def test_a_setting_in_the_printed_extras_is_stated():
    """`--output-extras '{"setting": "EAGLE3/3/1/4"}'`: 0.2-0.3 print `Extras:setting=EAGLE3/3/1/4` in
    Benchmarks Metadata, above the tables."""
    text = "Benchmarks Metadata:\n    Extras:setting=EAGLE3/3/1/4\n" + SATURATED
    read = records(text, LinkOptions(deployment="H100, sglang"))
    settings = {(r.record.speculative_algorithm, r.record.num_steps) for r in read if isinstance(r, Located)}
    assert settings == {("EAGLE3", 3)}
