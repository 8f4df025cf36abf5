"""Big files: a native JSONL of N benchmarks ingested on SQLite (and on PostgreSQL with --pg URL), and a
native JSONL of a given size; wall time and peak memory of the `specdash ingest` process for each.

    python -m bench.bigfiles --benchmarks 300000 --pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres
    python -m bench.bigfiles --benchmarks 0 --jsonl-mb 1000

Every benchmark is distinct (its own concurrency, dataset and throughput), so every one is stored: the
file exercises batching under each backend's parameter limit, not the duplicate check.

The reference, measured in the same run on the same backend: the file's lines decoded with `json.loads`
and inserted into one plain table with the driver's `executemany` in one transaction, nothing validated,
linked or predicted (`vs_bare`: its CPU seconds over specdash's, 1 would be no overhead at all)."""

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, func, make_url, select, text

from bench.measure import run_process_cpu
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, MetricPoint
from specdash.db.schema import upgrade

DEPLOYMENTS = ["8x H100, TP8, NVLink", "8x L40S, TP8, PCIe", "1x H100, TP1"]


def benchmark_lines(count: int):
    """`count` distinct benchmarks: baselines and EAGLE3 3/1/4 runs of six checkpoints on three deployments."""
    for n in range(count):
        deployment = DEPLOYMENTS[n % len(DEPLOYMENTS)]
        record = {
            "kind": "benchmark",
            "deployment": deployment,
            "concurrency": 1 + n % 64,
            "dataset": f"set-{n // 64 % 5000}",
            "num_prompts": 80,
            "decode_tps": 50.0 + (n % 997) / 10,
        }
        if n % 4:
            record.update(
                speculative_algorithm="EAGLE3",
                num_steps=3,
                topk=1,
                num_draft_tokens=4,
                accept_length=1.5 + (n % 7) / 10,
                run="big-run",
                checkpoint=f"epoch_{n % 6}",
            )
        yield json.dumps(record) + "\n"


def metric_lines(target_bytes: int):
    """Training metrics records (a run's logged steps, 24 keys each) up to about target_bytes."""
    keys = (
        [f"train/acc_{i}" for i in range(8)]
        + [f"train/ploss_{i}" for i in range(8)]
        + [
            "train/loss",
            "train/lr",
            "train/grad_norm",
            "train/epoch",
            "eval/loss",
            "eval/acc",
            "train/tps",
            "x/y",
        ]
    )
    written, step = 0, 0
    while written < target_bytes:
        run = f"big-{step // 2_000_000}"
        values = {key: round((step % 1000) / 1000 + i / 100, 6) for i, key in enumerate(keys)}
        line = json.dumps({"kind": "metrics", "run": run, "step": step, "values": values}) + "\n"
        written += len(line)
        step += 1
        yield line


def write(path: Path, lines) -> int:
    with path.open("w") as out:
        for line in lines:
            out.write(line)
    return path.stat().st_size


def ingest(url: str, path: Path) -> tuple[float, float, float]:
    env = dict(os.environ, SPECDASH_LOCK_TIMEOUT="3600")
    return run_process_cpu(
        [sys.executable, "-m", "specdash", "--db", url, "ingest", "--quiet", str(path)], env=env
    )


def pg_database(admin_url: str) -> str:
    name = f"specdash_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(admin_url: str, url: str) -> None:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


def stored(url: str, model) -> int:
    engine = make_engine(url)
    with reading(engine) as session:
        count = session.scalar(select(func.count()).select_from(model))
    engine.dispose()
    return count


REFERENCE_COLUMNS = (
    "deployment",
    "concurrency",
    "dataset",
    "num_prompts",
    "decode_tps",
    "speculative_algorithm",
    "num_steps",
    "topk",
    "num_draft_tokens",
    "accept_length",
    "run",
    "checkpoint",
)


def bare_insert(url: str, path: Path) -> tuple[float, float]:
    """Wall and CPU seconds (this process) to decode the file's lines and executemany them into a plain
    table of the benchmark's columns on the same backend, in one transaction."""
    engine = create_engine(url)
    names = ", ".join(REFERENCE_COLUMNS)
    key = "INTEGER PRIMARY KEY" if engine.dialect.name == "sqlite" else "SERIAL PRIMARY KEY"
    with engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE IF EXISTS bare_benchmark")
        connection.exec_driver_sql(
            f"CREATE TABLE bare_benchmark (id {key}, {names.replace(',', ' TEXT,')} TEXT)"
        )
    mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
    sql = f"INSERT INTO bare_benchmark ({names}) VALUES ({', '.join([mark] * len(REFERENCE_COLUMNS))})"
    wall, cpu = time.perf_counter(), time.process_time()
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        with path.open() as lines:
            batch = []
            for line in lines:
                record = json.loads(line)
                batch.append(tuple(record.get(name) for name in REFERENCE_COLUMNS))
                if len(batch) >= 10_000:
                    cursor.executemany(sql, batch)
                    batch = []
            cursor.executemany(sql, batch)
        raw.commit()
    finally:
        raw.close()
    result = time.perf_counter() - wall, time.process_time() - cpu
    engine.dispose()
    return result


def case(label: str, url: str, path: Path, model, expected: int) -> dict:
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    seconds, peak_mb, cpu_seconds = ingest(url, path)
    rows = stored(url, model)
    bare_s, bare_cpu_s = bare_insert(url, path) if model is Benchmark else (None, None)
    result = {
        "case": label,
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu_seconds, 1),
        "peak_mb": round(peak_mb),
        "rows": rows,
        "expected_rows": expected,
    }
    if bare_cpu_s is not None:
        result.update(
            bare_seconds=round(bare_s, 1),
            bare_cpu_seconds=round(bare_cpu_s, 1),
            vs_bare=round(bare_cpu_s / cpu_seconds, 3),
        )
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=300_000)
    parser.add_argument("--jsonl-mb", type=float, default=0, help="also a native metrics JSONL of this size")
    parser.add_argument(
        "--pg", metavar="ADMIN_URL", help="PostgreSQL server to run the benchmark file on too"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if args.benchmarks:
            path = tmp / "benchmarks.jsonl"
            write(path, benchmark_lines(args.benchmarks))
            case(
                f"{args.benchmarks} benchmarks, SQLite",
                f"sqlite:///{tmp / 'b.db'}",
                path,
                Benchmark,
                args.benchmarks,
            )
            if args.pg:
                url = pg_database(args.pg)
                try:
                    case(f"{args.benchmarks} benchmarks, PostgreSQL", url, path, Benchmark, args.benchmarks)
                finally:
                    drop_pg_database(args.pg, url)
        if args.jsonl_mb:
            path = tmp / "metrics.jsonl"
            write(path, metric_lines(int(args.jsonl_mb * 1e6)))
            lines = sum(1 for _ in path.open())
            case(
                f"{args.jsonl_mb:g} MB native JSONL, SQLite",
                f"sqlite:///{tmp / 'm.db'}",
                path,
                MetricPoint,
                lines * 24,
            )


if __name__ == "__main__":
    main()
