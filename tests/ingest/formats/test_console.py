"""The result block sglang.bench_serving and vllm bench serve print, read from a console capture or a
paste: every figure on its line, the preamble vLLM prints above the block, and refusals on the line."""

import pytest

from specdash.ingest.formats import detect_format
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.conftest import FIXTURES
from tests.ingest_support import benchmarks, content

REAL = FIXTURES / "real"
REAL_LINK = LinkOptions(deployment="real")


def block(*figures: str, header: str = "============ Serving Benchmark Result ============") -> str:
    """A printed block in the tools' own layout: a label padded to 40 columns, then its value."""
    lines = [f"{label:<40} {value:<10}" for label, value in (f.split("|") for f in figures)]
    return "\n".join([header, *lines, "=" * 50]) + "\n"


VLLM_BLOCK = block(
    "Successful requests:|100",
    "Failed requests:|0",
    "Benchmark duration (s):|50.00",
    "Output token throughput (tok/s):|400.00",
    "Median TPOT (ms):|10.00",
    "P99 TPOT (ms):|12.00",
)


def test_the_tools_blocks_are_detected_and_documents_quoting_them_are_not():
    text = (REAL / "sglang_console_glm51_c100_cookbook.txt").read_text()
    assert detect_format(text, "bench.txt").name == "serving-console"
    assert detect_format(text, "bench.log").name == "serving-console"
    assert detect_format(text, "notes.md") is None  # a document about a run, not its output
    assert detect_format(text.replace("Successful requests:", "Requests:"), "bench.txt") is None
    assert detect_format("============ Serving Benchmark Result ============\n", "bench.txt") is None


def test_vllm_speculative_section_in_percent_becomes_fractions(engine):
    result = ingest(
        engine,
        UploadSource(
            "speculators613.txt", (REAL / "vllm_bench_console_dflash_speculators613.txt").read_bytes()
        ),
        IngestPolicy(link=REAL_LINK),
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    assert bench.source_format == "serving-console" and bench.engine == "vllm"
    # eight "Position i:" lines: eight draft steps of a chain whose algorithm the block does not name
    assert (bench.speculative_algorithm, bench.num_steps, bench.topk, bench.num_draft_tokens) == (
        "unknown",
        8,
        1,
        9,
    )
    assert bench.position_survival == pytest.approx(
        [0.8227, 0.6616, 0.5424, 0.4565, 0.3899, 0.3389, 0.2975, 0.2634]
    )
    assert (bench.median_ttft_ms, bench.p99_ttft_ms, bench.p99_tpot_ms, bench.median_itl_ms) == (
        242.52,
        3881.40,
        14.44,
        47.40,
    )
    assert bench.num_prompts == 640 and bench.raw["printed"]["Drafts"] == "446819"


def test_sglang_block_names_its_backend_and_mean_in_flight(engine):
    data = (REAL / "sglang_console_step3_vl_c100_cookbook.txt").read_bytes()
    assert ingest(engine, UploadSource("step3.txt", data), IngestPolicy(link=REAL_LINK)).status == "loaded"
    (bench,) = benchmarks(engine)
    assert bench.engine == "sglang" and bench.speculative_algorithm is None
    assert bench.concurrency == 100 and bench.concurrency_source == "file"  # the cap, not the 99.81 mean
    assert bench.raw["printed"]["Concurrency"] == "99.81"


def test_vllm_preamble_above_the_block_gives_rate_and_cap(engine):
    # vLLM prints these two lines before its progress bar; versions before ~0.10 repeat neither in the block
    text = "Traffic request rate: inf\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: 4\n"
    result = ingest(
        engine, UploadSource("run.txt", (text + VLLM_BLOCK).encode()), IngestPolicy(link=REAL_LINK)
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    assert (bench.concurrency, bench.concurrency_source) == (4, "file")
    assert bench.decode_tps == pytest.approx(100.0) and bench.output_throughput == 400.0


def test_every_block_of_a_capture_is_a_benchmark_and_the_arguments_name_the_model(engine):
    arguments = "benchmark_args=Namespace(backend='sglang', dataset_name='random', model='org/Tiny-8B')\n"
    two = arguments + (REAL / "sglang_console_qwen35_nextn_c1_cookbook.txt").read_text()
    two += "Results saved\n" + (REAL / "sglang_console_qwen35_nextn_c100_cookbook.txt").read_text()
    result = ingest(engine, UploadSource("sweep.log", two.encode()))
    assert result.status == "loaded", [str(p) for p in result.problems]
    low, high = benchmarks(engine)
    assert (low.concurrency, high.concurrency) == (1, 100)
    assert low.deployment.name == high.deployment.name == "Tiny-8B, sglang"
    assert low.dataset == "random" and (low.accept_length, high.accept_length) == (3.12, 3.31)


def test_a_block_quoted_with_a_prefix_is_read_without_it(engine):
    quoted = "".join(f"> {line}\n" for line in VLLM_BLOCK.splitlines())
    result = ingest(engine, UploadSource("reply.txt", quoted.encode()), IngestPolicy(link=REAL_LINK))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert benchmarks(engine)[0].decode_tps == pytest.approx(100.0)


@pytest.mark.parametrize(
    "figures,expected",
    [
        (
            ("Successful requests:|10", "Output token throughput (tok/s):|400.00", "Median TPOT (ms):|abc"),
            "run.txt:4: median_tpot_ms: Input should be a valid number, unable to parse string as a number",
        ),
        (
            (
                "Successful requests:|10",
                "Maximum request concurrency:|0",
                "Output token throughput (tok/s):|400",
            ),
            "run.txt:3: max_concurrency: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            ("Successful requests:|10", "Median TPOT (ms):|10"),
            "run.txt:1: output_throughput: no 'Output token throughput (tok/s):' line",
        ),
        (
            ("Successful requests:|10", "Output token throughput (tok/s):|400.00"),
            "run.txt:1: decode_tps: per-request decode cannot be told: no median TPOT or ITL, and no "
            "concurrency to divide the aggregate output_throughput by",
        ),
    ],
    ids=["not a number", "below its bound", "no aggregate", "no per-request figure"],
)
def test_bad_input_is_refused_on_its_line_and_writes_nothing(engine, figures, expected):
    before = content(engine)
    result = ingest(engine, UploadSource("run.txt", block(*figures).encode()), IngestPolicy(link=REAL_LINK))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [expected]
    assert content(engine) == before


def test_a_block_naming_no_model_asks_for_the_deployment(engine):
    result = ingest(engine, UploadSource("run.txt", VLLM_BLOCK.encode()))
    assert [str(p) for p in result.problems] == [
        "run.txt:1: deployment: the file does not say which deployment it measured; pass --deployment NAME"
    ]


def test_the_arguments_line_gives_the_load_a_block_does_not_print(engine):
    # older SGLang versions printed no cap in the block; the arguments line above it has the one it ran with
    arguments = (
        "benchmark_args=Namespace(backend='sglang', dataset_name='random', model='org/Tiny-8B', "
        "request_rate=inf, max_concurrency=16, output_file=None)\n"
    )
    old = block(
        "Backend:|sglang",
        "Traffic request rate:|inf",
        "Successful requests:|80",
        "Output token throughput (tok/s):|640.00",
        "Median TPOT (ms):|20.00",
    )
    result = ingest(engine, UploadSource("old.log", (arguments + old).encode()))
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    assert (bench.concurrency, bench.concurrency_source) == (16, "file")
    assert bench.deployment.name == "Tiny-8B, sglang" and bench.raw["printed"]["max_concurrency="] == "16"
