"""The plausibility and consistency rules (ingest/rules/) hold in every format: logs, engine files and
native records alike are refused with file, line, field, the value and the bound or contradicting field,
and nothing is stored."""

import re

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnInvalid
from specdash.ingest.sources import UploadSource
from tests.ingest_support import SGLANG, SPECFORGE, VLLM, content, load, native

SPEC = {
    "kind": "benchmark",
    "deployment": "1x H100",
    "decode_tps": 100.0,
    "speculative_algorithm": "EAGLE3",
    "num_steps": 3,
    "topk": 1,
    "num_draft_tokens": 4,
}


@pytest.fixture
def used(engine):
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    return engine


def _sub(path, pattern: str, new: str, count: int = 0) -> bytes:
    text = path.read_text()
    changed, n = re.subn(pattern, new, text, count=count)
    assert n, pattern
    return changed.encode()


def _refused(engine, name: str, data: bytes, expected: str) -> None:
    before = content(engine)
    result = ingest(
        engine, UploadSource(name, data), IngestPolicy(link=LinkOptions(deployment="1x H100, TP1"))
    )
    assert result.status == "failed"
    assert expected in [str(p) for p in result.problems], [str(p) for p in result.problems]
    assert content(engine) == before


@pytest.mark.parametrize(
    "path,pattern,new,count,expected",
    [
        # SGLang 0.5.9 log, EAGLE3 5/1/6: every interval says 0.5 tokens a round (the median is 0.5)
        (
            SGLANG / "server_0.5.9.log",
            r"accept len: [0-9.]+",
            "accept len: 0.50",
            0,
            ":3: accept_length: Input should be greater than or equal to 1 (got 0.5)",
        ),
        # one interval (line 3, the first Decode batch) states 9.5 tokens a round: 5/1/6 emits at most 6
        (
            SGLANG / "server_0.5.9.log",
            r"accept len: [0-9.]+",
            "accept len: 9.50",
            1,
            ":3: accept_length: 9.5 stated by the log is more than a round of 5/1/6 can emit (at most 6)",
        ),
        # negative draft steps in the server's arguments
        (
            SGLANG / "server_0.5.9.log",
            r"speculative_num_steps=5",
            "speculative_num_steps=-2",
            0,
            ":3: num_steps: Input should be greater than or equal to 1 (got -2)",
        ),
        # vLLM V1 log: one SpecDecoding line (line 5) states a mean of 0.6, another 7.6 at 3 tokens (K + 1 = 4)
        (
            VLLM / "server_v1.log",
            r"Mean acceptance length: [0-9.]+",
            "Mean acceptance length: 0.60",
            1,
            ":5: accept_length: 0.6 stated by the log is below 1 (a round emits at least its bonus token)",
        ),
        (
            VLLM / "server_v1.log",
            r"Mean acceptance length: [0-9.]+",
            "Mean acceptance length: 7.60",
            1,
            ":5: accept_length: 7.6 stated by the log is more than a round of 3/1/4 can emit (at most 4)",
        ),
        # vLLM: a speculative config of 0 tokens while 5 SpecDecoding lines are printed
        (
            VLLM / "server_v1.log",
            r"num_spec_tokens=3",
            "num_spec_tokens=0",
            0,
            ":4: num_speculative_tokens: 0 in the speculative config (server start at line 1), yet the log "
            "prints 5 speculative-metrics line(s): a server that drafts nothing cannot accept drafts",
        ),
        # SGLang bench_one_batch_server: a batch of 8 at 0.5 tokens a round
        (
            SGLANG / "bench_one_batch_server.jsonl",
            r'"acc_length": 2.87',
            '"acc_length": 0.5',
            0,
            ":2: acc_length: 0.5 is below 1 (it counts the bonus token)",
        ),
        # the file states no setting: no round emits more than 64 draft steps and the bonus token
        (
            SGLANG / "bench_one_batch_server.jsonl",
            r'"acc_length": 2.87',
            '"acc_length": 99',
            0,
            ":2: accept_length: Input should be less than or equal to 65 (got 99.0)",
        ),
        # bench_one_batch runs the model runner alone, without speculation: an accept length of 50 is refused
        (
            SGLANG / "bench_one_batch.jsonl",
            r'"median_decode_throughput": 90.56330374932078',
            '"median_decode_throughput": 90.56330374932078, "acc_length": 50',
            0,
            ":1: acc_length: 50, yet bench_one_batch runs the model without speculation: each decode step "
            "emits exactly 1 token a request",
        ),
        # bench_one_batch_server states no setting, but a round cannot emit more than the request's output_len
        (
            SGLANG / "bench_one_batch_server.jsonl",
            r'"output_len": 512, "latency": 8.1021',
            '"output_len": 2, "latency": 8.1021',
            0,
            ":2: acc_length: 2.87 tokens a round is more than the 2 a request emits in all (output_len)",
        ),
        # vLLM bench serve at concurrency 1: 1000 / 6.37 ms = 157 tok/s per request; 20480 tokens over 80
        # requests = 256 a request, so at most 156.986 x 1 x 2 x 256/255 = 315.2 tok/s in aggregate
        (
            VLLM / "bench_serve_0.10.json",
            r'"output_throughput": 157.06',
            '"output_throughput": 400',
            0,
            ":1: output_throughput: 400 tok/s is more than 1 request(s) in flight at 156.986 tok/s each can "
            "emit (at most 315.2: per-request decode x concurrency x 2 for the spread of request rates x "
            "1.004 for the first token prefill emits (256 output tokens a request))",
        ),
        # vLLM bench serve: per-position survival 0.8123, 0.6301, 0.4595 implies 2.902 tokens a round
        (
            VLLM / "bench_serve_0.10.json",
            r'"spec_decode_acceptance_length": 2.902',
            '"spec_decode_acceptance_length": 1.2',
            0,
            ":1: accept_length: 1.2 contradicts position_survival, which implies 2.902 (1 + sum of survival, "
            "from the same counters; allowed 0.0065 for the printed digits)",
        ),
    ],
)
def test_engine_files_and_logs_keep_the_rules(used, path, pattern, new, count, expected):
    _refused(used, path.name, _sub(path, pattern, new, count), f"{path.name}{expected}")


def test_a_chain_of_three_steps_cannot_verify_a_thousand_draft_tokens(used):
    data = native({**SPEC, "num_draft_tokens": 1000})
    _refused(
        used,
        "chain.jsonl",
        data,
        "chain.jsonl:1: num_draft_tokens: 1000 draft tokens for a chain of 3 steps: it verifies at most 4 "
        "(1 + top-k + (steps - 1) x top-k^2, the root included)",
    )
    # a top-4 tree of 3 steps holds 1 + 4 + 2 x 16 = 37 candidates: 37 loads, 38 does not
    assert ingest(used, UploadSource("tree.jsonl", native({**SPEC, "topk": 4, "num_draft_tokens": 37}))).ok
    _refused(
        used,
        "tree2.jsonl",
        native({**SPEC, "topk": 4, "num_draft_tokens": 38}),
        "tree2.jsonl:1: num_draft_tokens: 38 draft tokens for a top-4 tree of 3 steps: it verifies at most 37 "
        "(1 + top-k + (steps - 1) x top-k^2, the root included)",
    )


def test_a_block_drafter_is_bounded_by_its_family_not_a_chain(used):
    block = {**SPEC, "speculative_algorithm": "DFLASH", "num_steps": 1, "num_draft_tokens": 16}
    assert ingest(used, UploadSource("dflash.jsonl", native({**block, "accept_length": 6.2}))).ok


@pytest.mark.parametrize(
    "path",
    [SGLANG / "server_0.5.9.log", SGLANG / "server_0.5.2.log"],
)
def test_a_server_log_whose_decode_lines_all_report_nothing_running_is_no_benchmark(used, path):
    data = _sub(path, r"#running-req: \d+", "#running-req: 0")
    lines = data.decode().splitlines()
    first = next(n for n, text in enumerate(lines, 1) if "Decode batch" in text)
    count = sum("gen throughput" in text for text in lines)  # a cut-off last line states none
    _refused(
        used,
        path.name,
        data,
        f"{path.name}:{first}: running_requests: #running-req: 0 on every 'Decode batch' line ({count}, the "
        "first here): nothing was decoding, so the log measures no speed",
    )


def test_a_vllm_log_with_nothing_running_is_no_benchmark(used):
    data = _sub(VLLM / "server_v1.log", r"Running: \d+ reqs", "Running: 0 reqs")
    lines = data.decode().splitlines()
    first = next(n for n, text in enumerate(lines, 1) if "Avg generation throughput" in text)
    count = sum("Avg generation throughput" in text for text in lines)
    _refused(
        used,
        "server_v1.log",
        data,
        f"server_v1.log:{first}: running_requests: Running: 0 reqs on every 'Avg generation throughput' line "
        f"({count}, the first here): nothing was decoding, so the log measures no speed",
    )


def test_negative_training_steps_in_a_console_log_are_refused(used):
    data = _sub(SPECFORGE / "train_console_2026.log", r"\bstep (\d+): \{", r"step -\1: {", count=1)
    line = next(n for n, text in enumerate(data.decode().splitlines(), 1) if "step -" in text)
    _refused(used, "train.log", data, f"train.log:{line}: step: -{_first_step()} is outside 0..2147483647")


def _first_step() -> str:
    match = re.search(r"\bstep (\d+): \{", (SPECFORGE / "train_console_2026.log").read_text())
    assert match is not None
    return match[1]


def test_skip_invalid_leaves_out_only_the_records_a_rule_refuses(used):
    """A rule refuses one record like a bound does: --skip-invalid stores the others."""
    data = native({**SPEC, "accept_length": 2.5}, {**SPEC, "accept_length": 2.5, "output_throughput": 1000})
    result = ingest(used, UploadSource("two.jsonl", data), IngestPolicy(on_invalid=OnInvalid.SKIP))
    assert result.status == "loaded" and result.store is not None and result.store.records == 1
    assert [p.line for p in result.problems] == [2]


@pytest.mark.parametrize(
    "keys,values,expected",
    [
        (("train/loss", "train/lr"), [0.5, 3], None),
        (("train/loss", "train/lr"), [0.5, True], ("train/lr", "True must be a finite number")),
        (("train/loss", "train/lr"), [float("inf"), 1.0], ("train/loss", "inf must be a finite number")),
        (("train/loss", "train/lr"), [1.0, float("nan")], ("train/lr", "nan must be a finite number")),
        (("train/loss",), [10**400], ("train/loss", f"{10**400!r} must be a finite number")),
        (("train/loss", "train/lr"), [1e308, 1e308], None),  # finite each, though their sum is not
        (("x" * 201,), [1.0], ("x" * 40 + "...", "metric name over 200 characters")),
    ],
)
def test_metric_rows_are_refused_for_the_value_or_name_that_breaks_a_bound(keys, values, expected):
    # the common step is checked in one pass; anything it does not clear gets the value-by-value check
    from specdash.ingest.records import MetricRows
    from specdash.ingest.rules.bounds import metric_rows_refusal

    fine = (0, ("train/loss", "train/lr"), [0.1, 0.2])
    assert metric_rows_refusal(MetricRows("r", [fine, (50, keys, values), fine])) == expected


def test_a_benchmark_dated_before_the_unix_epoch_is_refused_and_export_keeps_working(used, invoke, db_url):
    """Year 0001 is no clock's reading (and SQLite stores it unreadably): refused on its line; 1970 loads."""
    _refused(
        used,
        "old.jsonl",
        native({**SPEC, "measured_at": "0001-01-01T00:00:00"}),
        "old.jsonl:1: measured_at: 0001-01-01T00:00:00 is before 1970: no clock of a run or server wrote it",
    )
    assert ingest(
        used, UploadSource("epoch.jsonl", native({**SPEC, "measured_at": "1970-01-01T00:00:00"}))
    ).ok
    result = invoke(db_url, "export", "benchmarks")
    assert result.exit_code == 0 and "1970-01-01" in result.output
