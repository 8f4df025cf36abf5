"""A file that disagrees with itself (ingest/rules/within_file.py): a conflict naming both lines, nothing
stored; a training log that re-logs steps after a resume keeps the later values and says so."""

import json

import pytest

from specdash.ingest.describe import describe
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.ingest_support import SGLANG, SPECFORGE, benchmarks, content, load, native, points


@pytest.fixture
def used(engine):
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    return engine


def _conflict(engine, name: str, data: bytes, expected: str) -> None:
    before = content(engine)
    result = ingest(engine, UploadSource(name, data))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [expected]
    assert content(engine) == before


def test_one_checkpoint_twice_with_different_acceptance(used):
    data = native(
        {"kind": "run", "name": "r7"},
        {"kind": "checkpoint", "run": "r7", "name": "epoch_2", "acceptance": [0.74, 0.6]},
        {"kind": "checkpoint", "run": "r7", "name": "epoch_2", "acceptance": [0.74, 0.6]},  # the same: fine
        {"kind": "checkpoint", "run": "r7", "name": "epoch_2", "acceptance": [0.8, 0.6]},
    )
    _conflict(
        used,
        "ckpt.jsonl",
        data,
        "ckpt.jsonl:4: acceptance: checkpoint 'r7/epoch_2' is given twice with different acceptance: line 2 "
        "says [0.74, 0.6], line 4 says [0.8, 0.6]",
    )


def test_one_metric_key_and_step_twice_with_different_values(used):
    data = native(
        {"kind": "metrics", "run": "r7", "step": 50, "values": {"train/acc_0": 0.7, "train/loss": 2.0}},
        {"kind": "metrics", "run": "r7", "step": 60, "values": {"train/acc_0": 0.72}},
        {"kind": "metrics", "run": "r7", "step": 50, "values": {"train/acc_0": 0.71}},
    )
    _conflict(
        used,
        "metrics.jsonl",
        data,
        "metrics.jsonl:3: values.train/acc_0: run 'r7' step 50 is given twice with different values: line 1 "
        "says 0.7, line 3 says 0.71",
    )


def _specbundle(baselines: list[float]) -> bytes:
    """SpecBundle's shape (tests/fixtures/real/specbundle-data.json): one target, gsm8k, batch size 8, a
    no-speculation row per setting."""
    results = [
        {
            "batch_size": 8,
            "steps": steps,
            "topk": 1,
            "num_draft_tokens": steps + 1,
            "metrics": [
                {"Name": "Wihtout EAGLE3", "output_throughput": speed, "accept_length": 1.0},
                {"Name": "lmsys/SGLang-EAGLE3-X", "output_throughput": 1488.36, "accept_length": 2.64},
            ],
        }
        for steps, speed in zip((3, 5), baselines, strict=True)
    ]
    doc = {"Qwen3-30B-A3B-Instruct-2507": {"gsm8k": {"benchmark_name": "gsm8k", "results": results}}}
    return json.dumps(doc, indent=4).encode()


def test_two_baselines_of_one_target_and_setting_with_different_speeds_are_a_repeat(used):
    # the real file repeats the baseline row per setting with the very same speed: that loads, no repeat
    same = ingest(used, UploadSource("same.json", _specbundle([1071.294, 1071.294])))
    assert same.status == "loaded" and "repeat" not in describe(same)
    data = _specbundle([1071.294, 980.5])
    result = ingest(used, UploadSource("data.json", data))
    assert result.status == "loaded", [str(p) for p in result.problems]
    # a row's line is its object's opening brace, the line above its "Name"; per request = aggregate / 8
    line_of = [n - 1 for n, text in enumerate(data.decode().splitlines(), 1) if '"Name": "Wihtout' in text]
    assert (
        "1 repeat group(s) kept, each measurement stored: 'SpecBundle: Qwen3-30B-A3B-Instruct-2507' no "
        f"speculation at concurrency 8 on gsm8k: 133.912 and 122.562 tok/s (lines {line_of[0]}, {line_of[1]})"
    ) in describe(result)
    speeds = sorted(b.decode_tps for b in benchmarks(used, speculative_algorithm=None, concurrency=8))
    assert 980.5 / 8 in speeds and 1071.294 / 8 in speeds


NO_SPEC = {"kind": "benchmark", "deployment": "1x H100", "concurrency": 1, "dataset": "mtbench"}


def test_two_no_speculation_runs_of_one_load_are_both_stored_as_a_repeat(used):
    data = native({**NO_SPEC, "decode_tps": 64.5}, {**NO_SPEC, "decode_tps": 63.7})
    result = ingest(used, UploadSource("runs.jsonl", data))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert "'1x H100' no speculation at concurrency 1 on mtbench: 64.5 and 63.7 tok/s (lines 1, 2)" in (
        describe(result)
    )
    assert sorted(b.decode_tps for b in benchmarks(used, deployment_id=_deployment_id(used))) == [63.7, 64.5]


def _deployment_id(engine) -> int:
    from sqlalchemy import select

    from specdash.db.engine import reading
    from specdash.db.models import Deployment

    with reading(engine) as session:
        return session.scalar(select(Deployment.id).where(Deployment.name == "1x H100"))


def test_the_same_timestamped_run_with_another_speed_is_a_contradiction(used):
    at = "2026-11-02T09:00:00"
    data = native(
        {**NO_SPEC, "decode_tps": 64.5, "measured_at": at},
        {**NO_SPEC, "decode_tps": 64.5, "measured_at": "2026-11-02T10:00:00"},
        {**NO_SPEC, "decode_tps": 63.7, "measured_at": at},
    )
    _conflict(
        used,
        "runs.jsonl",
        data,
        "runs.jsonl:3: decode_tps: the run of '1x H100' measured at 2026-11-02T09:00:00 (no speculation at "
        "concurrency 1) is given twice with different speeds: line 1 says 64.5 tok/s, line 3 says 63.7",
    )


def test_a_resumed_training_log_keeps_the_later_values_and_says_so(used):
    # steps 10 and 20 logged, the run resumed from its step-10 checkpoint and logged 10 and 20 again
    first = (SPECFORGE / "train_console_2026.log").read_text().splitlines()[:2]
    again = [
        line.replace("'acc_0': 0.6125", "'acc_0': 0.625").replace("'acc_0': 0.6875", "'acc_0': 0.7")
        for line in first
    ]
    data = ("\n".join(first + again) + "\n").encode()
    result = ingest(
        used,
        UploadSource("train.log", data),
        IngestPolicy(format_name="specforge-log", link=LinkOptions(run="r7")),
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    keys = first[0].count(": ") - 1  # the step dict's keys: "step 10: {'acc_0': ..., ...}"
    assert "resumed at step 10, " + f"{2 * keys} points replaced by the later values" in describe(result)
    stored = points(used, "r7")
    assert stored[("train/acc_0", 10)] == 0.625 and stored[("train/acc_0", 20)] == 0.7


def test_a_sweep_of_two_prompt_lengths_is_two_points_not_a_repeat(used):
    """One setting, load and dataset at 1024 and at 8192 prompt tokens: other points, so no repeat group;
    the same prompt length twice is still one."""
    short, long = {**NO_SPEC, "input_tokens": 1024, "output_tokens": 512}, {**NO_SPEC, "input_tokens": 8192}
    data = native(
        {**short, "decode_tps": 64.5},
        {**long, "output_tokens": 512, "decode_tps": 41.2},
        {**short, "decode_tps": 63.7},
    )
    result = ingest(used, UploadSource("sweep.jsonl", data))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert "1 repeat group(s) kept" in describe(result)
    assert (
        "'1x H100' no speculation at concurrency 1 on mtbench with 1024 in / 512 out tokens: 64.5 and 63.7 "
        "tok/s (lines 1, 3)"
    ) in describe(result)
    stored = benchmarks(used, deployment_id=_deployment_id(used))
    assert sorted((b.input_tokens, b.decode_tps) for b in stored) == [
        (1024, 63.7),
        (1024, 64.5),
        (8192, 41.2),
    ]


def test_one_timestamped_run_at_two_prompt_lengths_is_no_contradiction(used):
    """vLLM's `date` is to the second: a sweep's two lengths started together are two runs, not one run
    given twice with different speeds."""
    at = "2026-11-02T09:00:00"
    data = native(
        {**NO_SPEC, "decode_tps": 64.5, "measured_at": at, "input_tokens": 1024, "output_tokens": 256},
        {**NO_SPEC, "decode_tps": 41.2, "measured_at": at, "input_tokens": 8192, "output_tokens": 256},
    )
    result = ingest(used, UploadSource("sweep.jsonl", data))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert "repeat group" not in describe(result)
    assert len(benchmarks(used, deployment_id=_deployment_id(used))) == 2


def test_an_engine_sweep_over_prompt_lengths_keeps_both_points(engine, tmp_path):
    """An SGLang `bench_serving` sweep as the engine writes it: one setting and load, random 1024/512 then
    8192/512 (the totals over 3 requests each), different speeds: two points, no repeat group."""
    first = json.loads((SGLANG / "bench_serving_sweep.jsonl").read_text().splitlines()[0])
    slower = {"median_tpot_ms": 9.1, "p99_tpot_ms": 10.2, "output_throughput": 105.0, "tag": "sweep-c1-8k"}
    second = {**first, "random_input_len": 8192, "total_input_tokens": 24576, **slower}
    path = tmp_path / "two_lengths.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    result = load(engine, path, IngestPolicy(link=LinkOptions(deployment="1x H100")))
    assert "repeat group" not in describe(result)
    assert sorted((b.input_tokens, b.output_tokens) for b in benchmarks(engine)) == [(1024, 512), (8192, 512)]


def test_two_sharegpt_runs_whose_sampled_outputs_differ_a_little_are_still_a_repeat(used):
    """The same prompts twice: outputs are sampled anew (1,153 and 1,144.5 tokens a request, both class 18
    of 64 tokens), so the runs are repeats; outputs of 256 and 1,024 tokens are two points."""
    run = {**NO_SPEC, "dataset": "sharegpt", "input_tokens": 402}
    data = native(
        {**run, "output_tokens": 1153, "decode_tps": 64.5},
        {**run, "output_tokens": 1144.5, "decode_tps": 63.7},
        {**run, "output_tokens": 256, "decode_tps": 70.1},
        {**run, "output_tokens": 1024, "decode_tps": 65.2},
    )
    result = ingest(used, UploadSource("sharegpt.jsonl", data))
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert "1 repeat group(s) kept" in describe(result)
    assert "64.5 and 63.7 tok/s (lines 1, 2)" in describe(result)


def test_a_benchmark_is_remembered_by_a_digest_of_its_repeat_key():
    """The ledger holds every benchmark of a file: 16 bytes of key each, the same for one setting, load,
    dataset and context, another when any of them differs (None is not the text 'None')."""
    from specdash.ingest.records import BenchmarkRecord
    from specdash.ingest.rules.within_file import Ledger, repeat_digest

    fields = dict(kind="benchmark", deployment="8x H100", concurrency=4, dataset="mt-bench", decode_tps=60.0)
    one = BenchmarkRecord(**fields)
    assert repeat_digest(one) == repeat_digest(BenchmarkRecord(**{**fields, "decode_tps": 61.0}))
    others = [
        BenchmarkRecord(**{**fields, "concurrency": 8}),
        BenchmarkRecord(**{**fields, "dataset": None}),
        BenchmarkRecord(**{**fields, "dataset": "None"}),
        BenchmarkRecord(**{**fields, "input_tokens": 1024}),
    ]
    assert len({repeat_digest(one), *map(repeat_digest, others)}) == 1 + len(others)
    ledger = Ledger(is_log=False)
    for line, record in enumerate([one, BenchmarkRecord(**{**fields, "decode_tps": 61.0}), *others]):
        assert ledger.conflict(record, line) is None
    assert [len(key) for key in ledger.measured] == [16] * 5
    assert list(ledger.repeats) == [repeat_digest(one)] and "1 repeat group(s)" in (ledger.note() or "")


def test_a_file_read_whole_remembers_only_the_points_it_may_give_twice():
    """The ledger of a spooled file keeps the points whose step comes again at or below its run's highest
    (here step 50 of r7, on lines 1 and 3); the others, given once, are not remembered, so memory follows
    the repeats, not the file (every point remembered took 7.7 GB for a 1 GB file). The conflict found is
    the one found remembering every point."""
    from specdash.ingest.formats.base import Located
    from specdash.ingest.read import Spool
    from specdash.ingest.records import MetricsRecord
    from specdash.ingest.rules.within_file import Ledger

    records = [
        (1, "r7", 50, {"train/acc_0": 0.7, "train/loss": 2.0}),
        (2, "r7", 60, {"train/acc_0": 0.72}),
        (3, "r7", 50, {"train/acc_0": 0.71}),
        (4, "r8", 50, {"train/acc_0": 0.5}),
        (5, "r8", 70, {"train/acc_0": 0.6}),
    ]
    spool = Spool()
    for line, run, step, values in records:
        spool.add(Located(line, MetricsRecord(run=run, step=step, values=values)))
    assert spool.repeated.points == {("r7", "train/acc_0", 50)}
    whole, every = Ledger(False), Ledger(False)
    whole.repeated = spool.repeated
    found = [[ledger.conflict(item.record, item.line) for item in spool] for ledger in (whole, every)]
    spool.close()
    assert found[0] == found[1] == [None, None, found[0][2], None, None]
    assert found[0][2][0] == "values.train/acc_0" and "line 1 says 0.7, line 3 says 0.71" in found[0][2][1]
    assert list(whole.points) == [("r7", "train/acc_0", 50)] and len(every.points) == 5
