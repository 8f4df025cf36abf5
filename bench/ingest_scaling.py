"""What an ingest costs against what it touches: a file of N benchmarks into an empty store, then a
3-benchmark file into that full store against the same file into an empty one (the ratio is what the store's
size adds to a small file; 1 would be nothing), and the refresh of one scraped window in that store on a
deployment whose baselines are estimated.

    python -m bench.ingest_scaling [--benchmarks 2000] [--repeat 3]
    python -m bench --cases scaling [--scale 1]     (2,000 benchmarks x scale)

The store: four deployments, 40 runs of 10 checkpoints benchmarked at loads 1-32 over many datasets and
depths, each benchmark unique by deployment, setting, load and dataset. Two deployments have a
no-speculation run at part of their loads and datasets; the other two have none, so their baselines are
estimated from a load model fitted to their speculative benchmarks (DESIGN.md section 3, load).

Each figure is the median of `--repeat` `specdash ingest` processes, each on its own copy of the store."""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench.data import fresh_db
from bench.measure import cpu_model, run_process_cpu

DEPLOYMENTS = ["8x H100, TP8, NVLink", "8x L40S, TP8, PCIe", "1x H100, TP1", "4x A100, TP4, NVLink"]
WITH_BASELINES = {0, 1}  # the others are measured only with speculation: their baselines are estimated
LOADS = 32  # every load from 1 to 32
DEPTHS = (1, 2, 3, 4, 5, 6)
RUNS, CHECKPOINTS = 40, 10
DEFAULT_BENCHMARKS = 2000


def _tps(deployment: int, load: int, steps: int, tau: float, jitter: float) -> float:
    """Per-request decode tok/s of a plausible machine: a step growing with the batch, verify with B x N."""
    step = (8.0 + 3.0 * deployment) * (1.0 + 0.03 * (load - 1))
    if not steps:
        return 1000.0 / step * jitter
    round_ms = step * (1.0 + 0.02 * load * (steps + 1)) + steps * 0.9 * (1.0 + 0.02 * load) + 0.5
    return 1000.0 * tau / round_ms * jitter


def benchmark_lines(count: int, tag: str = "set"):
    """`count` distinct benchmarks over the four deployments (a baseline for every seventh one of the
    deployments that have them, at loads up to 8)."""
    for n in range(count):
        d = n % len(DEPLOYMENTS)
        load = 1 + n // len(DEPLOYMENTS) % LOADS
        steps = DEPTHS[n // 5 % len(DEPTHS)]
        run = n // 3 % RUNS
        checkpoint = n // 11 % CHECKPOINTS
        jitter = 1.0 + ((n * 7919) % 101 - 50) / 1000
        record: dict = {
            "kind": "benchmark",
            "deployment": DEPLOYMENTS[d],
            "concurrency": load,
            "dataset": f"{tag}-{n}",
            "num_prompts": 80,
        }
        if d in WITH_BASELINES and n % 7 == 0 and load <= 8:
            record["decode_tps"] = round(_tps(d, load, 0, 1.0, jitter), 3)
        else:
            tau = round(1.0 + 0.55 * steps * (0.9 + 0.04 * checkpoint) ** 2, 3)
            record.update(
                speculative_algorithm="EAGLE3",
                num_steps=steps,
                topk=1,
                num_draft_tokens=steps + 1,
                accept_length=tau,
                decode_tps=round(_tps(d, load, steps, tau, jitter), 3),
                run=f"drafter-{run}",
                checkpoint=f"epoch_{checkpoint}",
            )
        yield json.dumps(record) + "\n"


def write(path: Path, lines) -> Path:
    with path.open("w") as out:
        out.writelines(lines)
    return path


def ingest_seconds(url: str, path: Path) -> float:
    env = dict(os.environ, SPECDASH_LOCK_TIMEOUT="3600")
    elapsed, _, _ = run_process_cpu(
        [sys.executable, "-m", "specdash", "--db", url, "ingest", "--quiet", str(path)], env=env
    )
    return elapsed


def copy_store(source: Path, target: Path) -> str:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, target)
    return f"sqlite:///{target}"


def window_refresh_ms(url: str, repeat: int) -> list[float]:
    """Milliseconds of refresh for one scraped window on a deployment that has no run without speculation
    (its baselines estimated by its stored load model): a benchmark at a stored one's drafter, setting and
    load, with no dataset as a live window has none, added, refreshed as its ingest would and rolled
    back, `repeat` times (and once before, unmeasured, to warm the store's pages)."""
    import time

    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from specdash.answers.refresh import refresh
    from specdash.db.engine import WRITE_OPTION, make_engine
    from specdash.db.models import Benchmark, Deployment

    engine = make_engine(url)
    estimated = DEPLOYMENTS[max(set(range(len(DEPLOYMENTS))) - WITH_BASELINES)]
    copied = ["checkpoint_id", "deployment_id", "speculative_algorithm", "num_steps", "topk"]
    copied += ["num_draft_tokens", "concurrency", "accept_length", "decode_tps"]
    with Session(engine) as session:
        there = session.scalars(
            select(Benchmark.id)
            .join(Deployment, Benchmark.deployment_id == Deployment.id)
            .where(Deployment.name == estimated, Benchmark.speculative_algorithm.is_not(None))
            .order_by(Benchmark.id)
        ).all()
    samples = []
    for n in range(repeat + 1):
        with Session(engine.execution_options(**{WRITE_OPTION: True})) as session:
            stored = session.get_one(Benchmark, there[n * len(there) // (repeat + 1)])
            window = Benchmark(
                record_key=f"window-{n}",
                source_format="scrape",
                interval_count=1,
                **{name: getattr(stored, name) for name in copied},
            )
            session.add(window)
            session.flush()
            start = time.perf_counter()
            summary = refresh(session, [window.id], appended=True)  # as its ingest refreshes it
            samples.append((time.perf_counter() - start) * 1000)
            # the stored load model serves the window: a refit would be the cost the goal rules out
            assert not summary.refitted, f"a window refitted the load model of {summary.refitted}"
            session.rollback()
    engine.dispose()
    return samples[1:]


def cases(tmp: Path, benchmarks: int, repeat: int) -> dict:
    """The figures: `benchmarks` into an empty store, then 3 into that store and into an empty one."""
    big = write(tmp / "scaling-big.jsonl", benchmark_lines(benchmarks))
    small = write(tmp / "scaling-small.jsonl", benchmark_lines(3, tag="new"))
    full_samples = []
    for i in range(repeat):
        url = fresh_db(tmp, f"scaling-full-{i}.db")
        full_samples.append(ingest_seconds(url, big))
    full_store = tmp / "scaling-full-0.db"
    empty_store = tmp / "scaling-empty.db"
    fresh_db(tmp, empty_store.name)
    into_full, into_empty = [], []
    for _ in range(repeat):
        into_full.append(ingest_seconds(copy_store(full_store, tmp / "scaling-work.db"), small))
        into_empty.append(ingest_seconds(copy_store(empty_store, tmp / "scaling-work.db"), small))
    windows = window_refresh_ms(copy_store(full_store, tmp / "scaling-work.db"), max(repeat, 5))
    full_s = statistics.median(full_samples)
    small_full_s = statistics.median(into_full)
    small_empty_s = statistics.median(into_empty)
    return {
        "scaling_benchmarks": benchmarks,
        "scaling_ingest_s": round(full_s, 2),
        "scaling_ingest_per_s": round(benchmarks / full_s),
        "small_into_full_s": round(small_full_s, 2),
        "small_into_empty_s": round(small_empty_s, 2),
        "small_full_vs_empty": round(small_full_s / small_empty_s, 2),
        "window_refresh_ms": round(statistics.median(windows), 1),
        "scaling_samples": {
            "window_refresh_ms": [round(v, 1) for v in windows],
            "ingest": [round(v, 2) for v in full_samples],
            "small_into_full": [round(v, 2) for v in into_full],
            "small_into_empty": [round(v, 2) for v in into_empty],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=DEFAULT_BENCHMARKS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object on stdout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = {"cpu": cpu_model(), **cases(Path(folder), args.benchmarks, args.repeat)}
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{figures['cpu']}, medians of {args.repeat}")
    print(
        f"{args.benchmarks:,} benchmarks into an empty store: {figures['scaling_ingest_s']:.2f} s"
        f" ({figures['scaling_ingest_per_s']} a second)"
    )
    print(
        f"3 benchmarks into that store: {figures['small_into_full_s']:.2f} s,"
        f" into an empty one: {figures['small_into_empty_s']:.2f} s"
        f" ({figures['small_full_vs_empty']}x; target <= 1.5x)"
    )
    print(
        f"one scraped window's refresh on a deployment with estimated baselines, in that store:"
        f" {figures['window_refresh_ms']:.1f} ms (target <= 50 ms)"
    )


if __name__ == "__main__":
    main()
