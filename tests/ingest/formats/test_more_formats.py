"""What people actually run beside SpecForge and the engines' clients: speculators' trainer, SpecForge's
bench_model_speedup, SGLang's offline bench_one_batch, and MTP/NEXTN heads. Numbers worked out here."""

import pytest
from sqlalchemy import select

from specdash.db.engine import reading
from specdash.db.models import Checkpoint, Run
from specdash.ingest.formats import detect_format
from specdash.ingest.links import LinkOptions
from specdash.ingest.policy import IngestPolicy
from tests.conftest import FIXTURES
from tests.ingest_support import SGLANG, SPECFORGE, benchmarks, load, points

SPECULATORS = FIXTURES / "speculators"
H100 = LinkOptions(deployment="1x H100, TP1")


def test_speculators_rich_console_blocks(engine):
    result = load(engine, SPECULATORS / "train_console.log")
    assert result.format == "speculators-log"
    with reading(engine) as session:
        (run,) = session.scalars(select(Run))
        # named by the folder holding its numbered checkpoints, not "0" or the log file's name
        assert (run.name, run.framework) == ("llama3-8b-eagle3", "speculators")
        saved = {
            c.name: (c.epoch, c.step, c.path, [p.rate for p in c.position_acceptance])
            for c in session.scalars(select(Checkpoint))
        }
    # the last logged train/cond_acc_i before each save: global step 3, then 7
    assert saved == {
        "0": (0, 3, "/data/speculators/llama3-8b-eagle3/0", [0.702, 0.511, 0.356]),
        "1": (1, 7, "/data/speculators/llama3-8b-eagle3/1", [0.752, 0.561, 0.406]),
    }
    got = points(engine, "llama3-8b-eagle3")
    # a block wrapped over six lines: every pair read, train/acc_i = train/cond_acc_i
    assert got[("train/full_acc_1", 0)] == 0.228 and got[("train/cond_acc_2", 0)] == 0.262
    assert got[("train/acc_2", 0)] == 0.262 and got[("train/loss_2", 1)] == 3.0
    assert got[("train/lr", 1)] == pytest.approx(9.0e-05)
    # validation at the last global step
    assert got[("val/cond_acc_0_epoch", 3)] == 0.66 and got[("val/loss_epoch", 7)] == 1.8
    # 8 steps x (9 pairs + 3 train/acc_i + train/lr) + 2 validations x 7
    assert result.store.metric_points == 8 * 13 + 2 * 7


def test_specforge_bench_model_speedup(engine):
    result = load(engine, SPECFORGE / "bench_model_speedup_results.jsonl", IngestPolicy(link=H100))
    assert result.format == "specforge-model-speedup"
    rows = benchmarks(engine)
    assert len(rows) == 7
    base, chain, tree, base8, chain8, gsm_base, gsm_chain = rows
    # steps 0: the target alone
    assert (base.speculative_algorithm, base.accept_length, base.concurrency) == (None, None, 1)
    assert base.decode_tps == 158.22 and base.dataset == "mtbench"
    assert (chain.speculative_algorithm, chain.num_steps, chain.topk, chain.num_draft_tokens) == (
        "EAGLE3",
        3,
        1,
        4,
    )
    assert (chain.accept_length, chain.decode_tps) == (2.71, 360.87)
    assert (tree.num_steps, tree.topk, tree.num_draft_tokens, tree.accept_length) == (5, 8, 16, 3.52)
    # batch 8: throughput is the aggregate of the 8 in flight
    assert (base8.concurrency, base8.concurrency_source) == (8, "file")
    assert base8.decode_tps == pytest.approx(666.39 / 8) and base8.output_throughput == 666.39
    assert chain8.decode_tps == pytest.approx(1152.33 / 8)
    assert (gsm_base.dataset, gsm_chain.accept_length) == ("gsm8k", 2.98)


def test_sglang_bench_one_batch_offline(engine):
    load(engine, SGLANG / "bench_one_batch.jsonl", IngestPolicy(link=H100))
    one, sixteen = benchmarks(engine)
    assert one.source_format == "sglang-one-batch-offline" and one.speculative_algorithm is None
    # each decode step runs the whole batch: per request = 1 / median step latency
    assert one.decode_tps == pytest.approx(1 / 0.011042)
    assert sixteen.decode_tps == pytest.approx(1 / 0.012715)
    assert sixteen.output_throughput == pytest.approx(16 / 0.012715) and sixteen.concurrency == 16
    assert sixteen.dataset == "random 1024/256"


def test_nextn_is_the_targets_own_head(engine):
    result = load(engine, SGLANG / "server_nextn.log")
    (bench,) = benchmarks(engine)
    assert (bench.speculative_algorithm, bench.num_steps, bench.num_draft_tokens) == ("NEXTN", 3, 4)
    assert bench.drafter_path is None and bench.checkpoint is None
    assert bench.deployment.name == "DeepSeek-V3-0324, TP8, sglang"
    with reading(engine) as session:  # no drafter run named after the target
        assert list(session.scalars(select(Run.name))) == []
    assert [link.how for link in result.store.links] == ["target's own head"]
    # the first interval follows the prefill; four prefill-free remain: 71.30, 70.85, 72.02, 69.90
    assert bench.decode_tps == pytest.approx((70.85 + 71.30) / 2)
    assert bench.accept_length == pytest.approx((2.58 + 2.61) / 2)


@pytest.mark.parametrize(
    "path,expected",
    [
        (SPECULATORS / "train_console.log", "speculators-log"),
        (SPECFORGE / "bench_model_speedup_results.jsonl", "specforge-model-speedup"),
        (SGLANG / "bench_one_batch.jsonl", "sglang-one-batch-offline"),
        (SGLANG / "server_nextn.log", "sglang-log"),
    ],
)
def test_detected_without_being_told(path, expected):
    head = path.read_bytes()[:65536].decode()
    assert detect_format(head, path.name).name == expected
