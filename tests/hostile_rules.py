"""The hostile generator's categories for plausible-looking nonsense (ingest/rules/): values that break a
rule in engine files and logs, names that only look like a stored one, files that disagree with
themselves, training logs that resume, and integers past Python's int-string limit."""

import random
import re
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BIG = "7" * 5000


@dataclass(frozen=True)
class Mutation:
    source: str
    pattern: str
    replacement: str
    count: int = 1  # 0: every match
    what: str = ""


# A value each rule refuses, in the format that carries it (one mutation per case).
RULE_BREAKS = [
    Mutation("sglang/server_0.5.9.log", r"accept len: [0-9.]+", "accept len: 0.50", 0, "accept len < 1"),
    Mutation("sglang/server_0.5.2.log", r"accept len: [0-9.]+", "accept len: 9.50", 1, "accept len > K + 1"),
    Mutation(
        "sglang/server_0.5.9.log", r"speculative_num_steps=5", "speculative_num_steps=-2", 1, "steps < 0"
    ),
    Mutation("sglang/server_0.5.9.log", r"#running-req: \d+", "#running-req: 0", 0, "nothing running"),
    Mutation(
        "vllm/server_v1.log",
        r"Mean acceptance length: [0-9.]+",
        "Mean acceptance length: 0.60",
        1,
        "mean < 1",
    ),
    Mutation(
        "vllm/server_v1.log",
        r"Mean acceptance length: [0-9.]+",
        "Mean acceptance length: 7.60",
        1,
        "mean > K+1",
    ),
    Mutation("vllm/server_v1.log", r"num_spec_tokens=3", "num_spec_tokens=0", 1, "0 speculative tokens"),
    Mutation(
        "vllm/bench_serve_0.10.json",
        r'"output_throughput": 157.06',
        '"output_throughput": 1570.6',
        1,
        "aggregate",
    ),
    Mutation(
        "vllm/bench_serve_0.10.json",
        r'"spec_decode_acceptance_length": 2.902',
        '"spec_decode_acceptance_length": 1.2',
        1,
        "survival vs accept length",
    ),
    Mutation(
        "sglang/bench_serving_0.5.9.jsonl", r'"accept_length": 2.1\d*', '"accept_length": 9.0', 1, "setting"
    ),
    Mutation("sglang/bench_one_batch_server.jsonl", r'"acc_length": 2.87', '"acc_length": 0.5', 1, "acc < 1"),
    Mutation(
        "native/records.jsonl", r'"num_draft_tokens": \d+', '"num_draft_tokens": 1000', 1, "1000 for a chain"
    ),
    Mutation("specforge/train_console_2026.log", r"\bstep (\d+): \{", r"step -\1: {", 1, "negative step"),
]
# Formats that name no deployment of their own get the generator's one (tests/hostile.py DEPLOYMENT).
BENCHMARK_SOURCES = [
    "native/records.jsonl",
    "native/bench_doc.json",
    "sglang/bench_serving_0.5.2.jsonl",
    "sglang/bench_serving_0.5.23.jsonl",
    "sglang/bench_one_batch_server.jsonl",
    "sglang/server_0.5.9.log",
    "vllm/bench_serve_0.10.json",
    "vllm/server_v1.log",
    "specforge/bench_eagle3_results_20250821_120000.jsonl",
    "guidellm/sweep_v0.5.4.yaml",
]
LOOKALIKE_EDITS = [("H100", "H1OO"), ("TP1", "TPl"), ("hostile", "HOSTILE"), (", TP1", ",  TP1")]
TRAINING_LOGS = ["specforge/train_console_2026.log", "specforge/train_console.log"]


def rule_break(rng: random.Random) -> tuple[str, bytes, str]:
    mutation = rng.choice(RULE_BREAKS)
    text = (FIXTURES / mutation.source).read_text()
    changed, n = re.subn(mutation.pattern, mutation.replacement, text, count=mutation.count)
    assert n, mutation
    return mutation.source, changed.encode(), mutation.what


def lookalike(rng: random.Random, deployment: str) -> tuple[str, str]:
    """A source and a deployment name that only looks like the stored one."""
    old, new = rng.choice([edit for edit in LOOKALIKE_EDITS if edit[0] in deployment])
    return rng.choice(BENCHMARK_SOURCES), deployment.replace(old, new, 1)


def conflict(rng: random.Random) -> tuple[str, bytes, str]:
    """A record of the file repeated at its end with one number changed (a repeat of a measurement is kept,
    so a benchmark's is stamped with its run's time: the same run cannot have two speeds)."""
    kind = rng.choice(["checkpoint", "metrics", "timestamped run"])
    lines = (FIXTURES / "native/records.jsonl").read_text().splitlines()
    if kind == "metrics":
        point = '{"kind": "metrics", "run": "r1", "step": 50, "values": {"train/acc_0": %s}}'
        lines += [point % 0.7, point % rng.choice([0.65, 0.71, 0.2])]
    elif kind == "timestamped run":
        # one benchmark's run, stamped, given again at its timestamp with another speed (a repeat without
        # the timestamp would be kept: see ingest/rules/within_file.py)
        at = '"measured_at": "2026-11-02T09:00:00", "decode_tps": '
        index = next(i for i, line in enumerate(lines) if '"kind": "benchmark"' in line)
        lines[index] = lines[index].replace('"decode_tps": ', at, 1)
        speed = rng.choice([0.5, 0.9, 1.5])
        lines.append(
            re.sub(r'"decode_tps": ([0-9.]+)', lambda m: f'"decode_tps": {float(m[1]) * speed}', lines[index])
        )
    else:
        line = next(line for line in lines if '"kind": "checkpoint"' in line)
        lines.append(line.replace("[0.7,", f"[{rng.choice([0.6, 0.75, 0.71])},"))
    return "native/records.jsonl", ("\n".join(lines) + "\n").encode(), kind


def resumed(rng: random.Random) -> tuple[str, bytes, str]:
    """A training log whose run resumed: its first logged steps logged again with other values."""
    source = rng.choice(TRAINING_LOGS)
    lines = (FIXTURES / source).read_text().splitlines()
    steps = [line for line in lines if re.search(r"\bstep \d+: \{", line)]
    again = [re.sub(r"(: )(0\.\d+)", lambda m: f"{m[1]}{float(m[2]) / 2:g}", s, count=1) for s in steps[:2]]
    return source, ("\n".join([*lines, *again]) + "\n").encode(), "resumed at step"


def long_number(rng: random.Random, source: str, data: bytes) -> bytes:
    found = list(re.finditer(rb"(?<![\w.])\d+(?![\w.])", data))
    if not found:
        return data + b"\n" + BIG.encode()
    match = rng.choice(found)
    return data[: match.start()] + BIG.encode() + data[match.end() :]
