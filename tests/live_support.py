"""What the live-training tests share: the PCIe story's deployment record, a SpecForge training log's
args block and step lines, one poll of a follower, and a bounded wait for a condition."""

import time

from specdash.ingest.follow import Follower

DEPLOYMENT = {
    "name": "8x RTX PRO 6000, TP8, PCIe",
    "target_model": "Kimi-K2.5",
    "interconnect": "pcie",
    "baseline_tps": 90.0,
    "comm_fraction": 0.5,
    "draft_step_ms": 1.93 / 3,
    # the story's profile states no overhead and no verify growth (else the published priors would apply)
    "round_overhead_ms": 0.0,
    "verify_growth_compute": 0.0,
    "verify_growth_comm": 0.0,
}


ARGS = """\
 -----------\u3010args\u3011-----------
target_model_path  \u00b7\u00b7\u00b7 /models/Kimi-K2.5
output_dir         \u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7 /ckpt/k25-ttt3
ttt_length         \u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7\u00b7 3
"""
KEYS = 4  # train/acc_0..2 and train/lr on every step line


def step_line(step: int) -> str:
    acc = [round(0.2 + step / 10_000, 4), round(0.15 + step / 12_000, 4), round(0.1 + step / 15_000, 4)]
    return (
        f"2026-12-01 09:00:00,000 - specforge - INFO - step {step}: {{'train/lr': 9e-05, "
        f"'train/acc_0': {acc[0]}, 'train/acc_1': {acc[1]}, 'train/acc_2': {acc[2]}}}\n"
    )


def poll_once(engine, paths, **options) -> list:
    """One poll of a follower that is closed afterwards (as a restarted process would be)."""
    with Follower(engine, paths, **options) as follower:
        return follower.poll()


def wait_for(condition, timeout: float = 60.0, poll: float = 0.05) -> bool:
    """Whether `condition()` came true within `timeout` seconds, looked at every `poll` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return condition()
