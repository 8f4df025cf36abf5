"""A seeded generator of corrupted, hostile and implausible inputs, made from the valid fixtures of every
format, and the check each must pass: no traceback, every problem naming its file (and its line when one
exists), and nothing written by a file that fails.

`python -m tests.hostile --count 2000 --seed 7` runs a large batch and prints trials, correct and wrong per
category; the suite runs a small batch (tests/ingest/test_hostile.py) and a large one behind the `hostile`
marker."""

import argparse
import json
import random
import re
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests import hostile_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# A valid file of every format, with the deployment a file that does not name one is given.
SOURCES = [
    "native/records.jsonl",
    "native/bench_doc.json",
    "native/records.csv",
    "native/runs.csv",
    "sglang/bench_serving_0.5.2.jsonl",
    "sglang/bench_serving_0.5.9.jsonl",
    "sglang/bench_serving_0.5.23.jsonl",
    "sglang/bench_one_batch_server.jsonl",
    "sglang/bench_offline_throughput.jsonl",
    "sglang/server_0.5.2.log",
    "sglang/server_0.5.9.log",
    "vllm/bench_serve_0.10.json",
    "vllm/bench_serve_0.6.json",
    "vllm/bench_serve_append.jsonl",
    "vllm/server_v0.log",
    "vllm/server_v1.log",
    "vllm/server_v1_0.8.log",
    "real/vllm_bench_console_dflash_speculators613.txt",
    "specforge/bench_eagle3_results_20250821_120000.jsonl",
    "specforge/benchmark_20250822_091502.json",
    "specforge/history.jsonl",
    "specforge/train_console.log",
    "specforge/train_eagle_repo.log",
    "specforge/wandb_export.csv",
]
DEPLOYMENT = "1x H100, TP1, hostile"
# Problems about the whole file, where no line exists to name.
WHOLE_FILE = re.compile(
    r": (file is empty|binary file, not a text format|format not recognised|no records found|not UTF-8 text|"
    r"document larger than|the file does not say|missing format version|no .* found|no '.+' lines)"
)
HOSTILE_TEXT = [
    "<img src=https://tracker.example/p.gif>",
    "**bold** [x](javascript:alert(1))",
    "$\\frac{1}{0}$ :red[x]",
    "\x1b[2J\x1b[H forged\nline",
    "a\x00b",
    "\u202etxt.exe",
    "x" * 5000,
    "<script>alert(1)</script>",
    "{{7*7}} ${jndi:ldap://x}",
    "'; DROP TABLE run; --",
]
BAD_NUMBERS = [
    "1e308",
    "-1",
    "0",
    "1e-300",
    "true",
    "9223372036854775808",
    "1" + "0" * 400,
    "1.5",
    "NaN",
    "-Infinity",
    "null",
    '"12"',
]
CATEGORIES = (
    "truncated",
    "garbage",
    "deep",
    "numbers",
    "text",
    "lines",
    "encoding",
    "implausible",
    # plausible-looking nonsense (ingest/rules/, tests/hostile_rules.py)
    "rules",
    "names",
    "conflicts",
    "resume",
    "long-numbers",
)
# Values no engine measures, for fields every format maps onto the records: each must be refused.
IMPLAUSIBLE = {
    "accept_length": ["0.5", "99", "1e9"],
    "median_tpot_ms": ["1e-9", "1e300", "-5"],
    "output_throughput": ["1e12", "-1", "0"],
    "decode_tps": ["1e9", "1e-9", "0"],
    "max_concurrency": ["9223372036854775808", "0", "-3"],
    "num_prompts": ["18446744073709551616", "-1", "1.5"],
    "speculative_num_steps": ["1000000", "0"],
}
_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
_STRING = re.compile(rb'"([^"\\\n]{1,60})"')


@dataclass
class Case:
    category: str
    source: str
    name: str
    data: bytes
    must_load: bool = False  # a valid file in another encoding: it must load as the original does
    must_fail: bool = False  # an implausible value in a field the records check
    what: str = ""
    deployment: str = DEPLOYMENT  # the --deployment the file is given
    must_say: str = ""  # a file that must load, and whose summary says this


def _truncated(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(0, max(1, len(data)))]


def _garbage(rng: random.Random, data: bytes) -> bytes:
    start = rng.randrange(0, max(1, len(data)))
    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    return data[:start] + junk + data[start + rng.randrange(0, 40) :]


def _deep(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([100, 1_000, 5_000, 50_000])
    nest = rng.choice([b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth])
    found = list(_NUMBER.finditer(data))
    if not found:
        return nest + b"\n" + data
    match = rng.choice(found)
    return data[: match.start()] + nest + data[match.end() :]


def _numbers(rng: random.Random, data: bytes) -> bytes:
    found = list(_NUMBER.finditer(data))
    for match in rng.sample(found, min(len(found), rng.randrange(1, 4))):
        value = rng.choice(BAD_NUMBERS).encode()
        data = data[: match.start()] + value + data[match.end() :]
        break  # positions after the first replacement moved: one change per case keeps it exact
    return data


def _text(rng: random.Random, data: bytes) -> bytes:
    found = list(_STRING.finditer(data))
    if not found:
        return data + rng.choice(HOSTILE_TEXT).encode()
    match = rng.choice(found)
    value = json.dumps(rng.choice(HOSTILE_TEXT)).encode()
    return data[: match.start()] + value + data[match.end() :]


def _lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    action = rng.choice(["duplicate", "shuffle", "drop", "blank"])
    if action == "duplicate":
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif action == "shuffle":
        rng.shuffle(lines)
    elif action == "drop" and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    else:
        lines.insert(rng.randrange(len(lines) + 1), b"   ")
    return b"\n".join(lines)


MUTATIONS = {
    "truncated": _truncated,
    "garbage": _garbage,
    "deep": _deep,
    "numbers": _numbers,
    "text": _text,
    "lines": _lines,
}


def _implausible(rng: random.Random, n: int) -> Case:
    """One field of a file that carries it, given a value outside the bounds (its first occurrence)."""
    choices = []
    for source in SOURCES:
        data = (FIXTURES / source).read_bytes()
        for field in IMPLAUSIBLE:
            if field == "num_prompts" and b'"completed"' in data:
                continue  # the format counts completed requests; num_prompts is not read
            if (match := re.search(rf'"{field}": (-?[0-9][0-9.eE+-]*)'.encode(), data)) is not None:
                choices.append((source, field, data, match))
    source, field, data, match = rng.choice(choices)
    value = rng.choice(IMPLAUSIBLE[field]).encode()
    mutated = data[: match.start(1)] + value + data[match.end(1) :]
    return Case(
        "implausible",
        source,
        f"case{n:05d}/{Path(source).name}",
        mutated,
        must_fail=True,
        what=f"{field} = {value.decode()}",
    )


def _rules(rng: random.Random, n: int, source: str, data: bytes) -> Case:
    source, mutated, what = hostile_rules.rule_break(rng)
    return Case("rules", source, f"case{n:05d}/{Path(source).name}", mutated, must_fail=True, what=what)


def _names(rng: random.Random, n: int, source: str, data: bytes) -> Case:
    source, name = hostile_rules.lookalike(rng, DEPLOYMENT)
    # trailing blank lines make each case's bytes its own: a file already ingested would be skipped unread
    data = (FIXTURES / source).read_bytes() + b"\n" * (n + 1)
    return Case(
        "names", source, f"case{n:05d}/{Path(source).name}", data, must_fail=True, what=name, deployment=name
    )


def _conflicts(rng: random.Random, n: int, source: str, data: bytes) -> Case:
    source, mutated, what = hostile_rules.conflict(rng)
    return Case("conflicts", source, f"case{n:05d}/{Path(source).name}", mutated, must_fail=True, what=what)


def _resume(rng: random.Random, n: int, source: str, data: bytes) -> Case:
    source, mutated, say = hostile_rules.resumed(rng)
    mutated += b"\n" * (n + 1)  # each case's bytes its own (a file already ingested is skipped)
    return Case("resume", source, f"case{n:05d}/{Path(source).name}", mutated, must_say=say)


def _long_numbers(rng: random.Random, n: int, source: str, data: bytes) -> Case:
    mutated = hostile_rules.long_number(rng, source, data)
    return Case("long-numbers", source, f"case{n:05d}/{Path(source).name}", mutated)


NONSENSE = {
    "rules": _rules,
    "names": _names,
    "conflicts": _conflicts,
    "resume": _resume,
    "long-numbers": _long_numbers,
}


def generate(count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for n in range(count):
        source = SOURCES[n % len(SOURCES)]
        data = (FIXTURES / source).read_bytes()
        category = CATEGORIES[n % len(CATEGORIES)]  # 13 categories, 24 sources: every pair in 312 cases
        name = f"case{n:05d}/{Path(source).name}"  # the file's own name: some formats are told by it
        if category == "implausible":
            cases.append(_implausible(rng, n))
            continue
        if category in NONSENSE:
            cases.append(NONSENSE[category](rng, n, source, data))
            continue
        if category == "encoding":
            bom = b"\xef\xbb\xbf" if rng.random() < 0.7 else b""
            crlf = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") if rng.random() < 0.7 else data
            cases.append(Case(category, source, name, bom + crlf, must_load=True))
        else:
            cases.append(Case(category, source, name, MUTATIONS[category](rng, data)))
    return cases


@dataclass
class Outcome:
    case: Case
    correct: bool
    why: str = ""


def check(engine, case: Case, content) -> Outcome:
    """Ingest one case into a database already holding data; judge what happened."""
    from specdash.ingest.describe import describe
    from specdash.ingest.links import LinkOptions
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.policy import IngestPolicy
    from specdash.ingest.sources import UploadSource

    if case.category == "names":  # the stored name the case's look-alike resembles
        ingest(
            engine,
            UploadSource(
                "stored-deployment.jsonl", f'{{"kind": "deployment", "name": "{DEPLOYMENT}"}}\n'.encode()
            ),
        )
    before = content(engine)
    try:
        result = ingest(
            engine,
            UploadSource(case.name, case.data),
            IngestPolicy(link=LinkOptions(deployment=case.deployment)),
        )
    except Exception:  # noqa: BLE001 - a traceback is exactly what this check looks for
        return Outcome(case, False, "traceback: " + traceback.format_exc(limit=3).splitlines()[-1])
    lines = case.data.count(b"\n") + 1
    for problem in result.problems:
        text = str(problem)
        if not text.startswith(case.name + ":"):
            return Outcome(case, False, f"problem names no file: {text[:200]}")
        if problem.line is None and not WHOLE_FILE.search(text):
            return Outcome(case, False, f"problem names no line: {text[:200]}")
        if problem.line is not None and not 1 <= problem.line <= lines:
            return Outcome(case, False, f"line {problem.line} outside 1..{lines}: {text[:200]}")
    if result.status == "failed" and content(engine) != before:
        return Outcome(case, False, "a failed file wrote something")
    # an earlier case may have stored other values under the same names: a conflict, not an encoding fault
    conflicted = bool(result.problems) and all("pass --update to apply" in str(p) for p in result.problems)
    if case.must_load and result.status != "loaded" and not (result.status == "skipped") and not conflicted:
        return Outcome(
            case,
            False,
            "a valid file in another encoding was refused: " + "; ".join(str(p) for p in result.problems[:2]),
        )
    if case.category == "names" and result.status != "failed" and _deployment_stored(engine, case.deployment):
        return Outcome(case, False, f"a look-alike of a stored name was created: {case.deployment!r}")
    if case.must_fail and result.status != "failed" and case.category != "names":
        return Outcome(case, False, f"an implausible value was accepted: {case.what}")
    if case.must_say and (result.status != "loaded" or case.must_say not in describe(result)):
        why = "; ".join(str(p) for p in result.problems[:2]) or (
            describe(result) if result.store else result.status
        )
        return Outcome(case, False, f"expected '{case.must_say}' in the summary: {why[:300]}")
    if result.status == "loaded":
        again = ingest(
            engine,
            UploadSource(case.name, case.data),
            IngestPolicy(link=LinkOptions(deployment=case.deployment)),
        )
        if again.status != "skipped":
            return Outcome(case, False, "re-ingest was not skipped")
    return Outcome(case, True)


def _deployment_stored(engine, name: str) -> bool:
    """Whether a deployment of this name exists (a file whose benchmarks are all duplicates creates none)."""
    from sqlalchemy import select

    from specdash.db.engine import transaction
    from specdash.db.models import Deployment

    with transaction(engine, write=False) as session:
        return session.scalar(select(Deployment.id).where(Deployment.name == name)) is not None


def summarise(outcomes: list[Outcome]) -> str:
    trials, correct = Counter(), Counter()
    for o in outcomes:
        trials[o.case.category] += 1
        correct[o.case.category] += o.correct
    rows = [f"{'category':<12} {'trials':>6} {'correct':>7} {'wrong':>5}"]
    for category in CATEGORIES:
        rows.append(
            f"{category:<12} {trials[category]:>6} {correct[category]:>7} "
            f"{trials[category] - correct[category]:>5}"
        )
    rows.append(
        f"{'all':<12} {sum(trials.values()):>6} {sum(correct.values()):>7} "
        f"{sum(trials.values()) - sum(correct.values()):>5}"
    )
    return "\n".join(rows)


def main() -> None:
    from specdash.db.engine import make_engine
    from specdash.db.schema import upgrade
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.sources import PathSource
    from tests.ingest_support import content

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=700)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{folder}/hostile.db")
        upgrade(engine)
        ingest(engine, PathSource(FIXTURES / "sglang" / "bench_serving_0.5.23.jsonl"))
        outcomes = [check(engine, case, content) for case in generate(args.count, args.seed)]
    print(summarise(outcomes))
    for o in outcomes:
        if not o.correct:
            print(f"WRONG {o.case.category} {o.case.name}: {o.why}")


if __name__ == "__main__":
    main()
