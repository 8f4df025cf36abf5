"""`python -m bench [--scale F] [--json]`: every case several times, medians, ratios measured in the same run."""

import argparse
import importlib.util
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import dashboard, data, ingest_scaling, mlflow_cases, reference
from bench.data import REPO, fresh_db
from bench.measure import cpu_model, median_of, run_process, run_process_cpu, timed

SPECBUNDLE = REPO / "tests" / "fixtures" / "real" / "specbundle-data.json"

TARGETS = {
    "ingest_vs_mlflow": (">=", 30),
    "ingest_vs_sqlite": (">=", 0.8),
    "ingest_vs_sqlite_cpu": (">=", 0.8),
    "ingest_peak_rss_mb": ("<=", 300),
    "overlay_query_ms": ("<=", 100),
    "overlay_query_cpu_ms": ("<=", 100),
    "query_vs_mlflow": (">=", 10),
    "gap_refresh_s": ("<=", 2),  # at scale 1; scaled with the store (scale 10: 20 s)
    "refresh_one_ms": ("<=", 50),
    "page_render_s": ("<=", 1),
    "page_render_first_s": ("<=", 2),
    "small_full_vs_empty": ("<=", 1.5),
    "window_refresh_ms": ("<=", 50),
}
SCALED = {"gap_refresh_s"}  # targets that grow with --scale (the others hold at every size)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def specdash(*args: str) -> list[str]:
    return [sys.executable, "-m", "specdash", *args]


def process_start_cpu(tmp: Path, repeat: int) -> float:
    """CPU seconds (median of `repeat`) of `specdash ingest` of a 10-step training log into an empty store:
    what every ingest process costs before its file's size counts."""
    log_path = tmp / "specforge-tiny.log"
    data.write_specforge_log(log_path, 10)
    cpu = []
    for i in range(repeat):
        url = fresh_db(tmp, f"ingest-tiny-{i}.db")
        cpu.append(run_process_cpu(specdash("--db", url, "ingest", "--quiet", str(log_path)))[2])
    log(f"specdash ingest of 10 steps: CPU {statistics.median(cpu):.2f} s of {cpu}")
    return statistics.median(cpu)


def ingest_cases(tmp: Path, scale: float, repeat: int, mlflow_repeat: int, deferred: list | None) -> dict:
    """specdash and sqlite3 now; MLflow's run is appended to `deferred` (None: no MLflow)."""
    steps = max(10, int(50_000 * scale))
    log_path = tmp / "specforge-train.log"
    points = data.write_specforge_log(log_path, steps)
    log(f"training log: {steps:,} steps, {points:,} points, {log_path.stat().st_size / 1e6:.0f} MB")

    samples, rss, cpu_samples = [], [], []
    for i in range(repeat):
        url = fresh_db(tmp, f"ingest-{i}.db")
        elapsed, peak, cpu = run_process_cpu(specdash("--db", url, "ingest", "--quiet", str(log_path)))
        samples.append(elapsed)
        rss.append(peak)
        cpu_samples.append(cpu)
    specdash_s = sorted(samples)[len(samples) // 2]
    specdash_cpu_s = sorted(cpu_samples)[len(cpu_samples) // 2]
    log(
        f"specdash ingest: {specdash_s:.2f} s median of {samples}, CPU {specdash_cpu_s:.2f} s of {cpu_samples}"
    )
    start_cpu_s = process_start_cpu(tmp, repeat)

    rows = data.metric_rows(steps)

    def sqlite_once() -> float:
        import sqlite3

        path = tmp / "plain.db"
        path.unlink(missing_ok=True)
        connection = sqlite3.connect(path)
        connection.execute(
            "CREATE TABLE metric_point (run_id INTEGER NOT NULL, key_id INTEGER NOT NULL, step INTEGER NOT NULL,"
            " value REAL NOT NULL, PRIMARY KEY (run_id, key_id, step))"
        )
        connection.commit()

        def load():
            connection.executemany("INSERT INTO metric_point VALUES (?, ?, ?, ?)", rows)
            connection.commit()

        cpu = time.process_time()
        elapsed = timed(load)
        sqlite_cpu.append(time.process_time() - cpu)
        connection.close()
        return elapsed

    sqlite_cpu: list[float] = []
    sqlite_s, sqlite_samples = median_of(repeat, sqlite_once)
    sqlite_cpu_s = sorted(sqlite_cpu)[len(sqlite_cpu) // 2]
    log(f"sqlite3 executemany: {sqlite_s:.2f} s median of {sqlite_samples}, CPU {sqlite_cpu_s:.2f} s")
    # on a shared machine the wall clock waits for cores; the CPU seconds of each side do not
    result = {
        "ingest_points": points,
        "ingest_s": specdash_s,
        "ingest_cpu_s": specdash_cpu_s,
        "ingest_points_per_s": points / specdash_s,
        "ingest_peak_rss_mb": max(rss),
        "sqlite_executemany_s": sqlite_s,
        "sqlite_executemany_cpu_s": sqlite_cpu_s,
        "ingest_vs_sqlite": sqlite_s / specdash_s,
        "ingest_vs_sqlite_cpu": sqlite_cpu_s / specdash_cpu_s,
        # the same process ingesting 10 steps: its start (interpreter, imports, store opened, refresh)
        "ingest_start_cpu_s": start_cpu_s,
        # the points' own work, the process's start taken off, against the bare insert
        "ingest_points_vs_sqlite_cpu": sqlite_cpu_s / max(specdash_cpu_s - start_cpu_s, 1e-9),
    }
    if deferred is not None:
        attempt = itertools.count()

        def mlflow_once() -> float:
            return mlflow_cases.ingest_points(tmp / f"mlflow-ingest-{next(attempt)}.db", steps)

        def mlflow_ingest() -> dict:
            mlflow_s, mlflow_samples = median_of(mlflow_repeat, mlflow_once)
            log(f"MLflow log_batch: {mlflow_s:.1f} s median of {mlflow_samples}")
            return {"mlflow_ingest_s": mlflow_s, "ingest_vs_mlflow": mlflow_s / specdash_s}

        deferred.append(mlflow_ingest)
    return result


def query_cases(tmp: Path, scale: float, repeat: int, deferred: list | None) -> dict:
    """specdash's refresh, queries and pages now; MLflow's query is appended to `deferred`."""
    from specdash.answers.refresh import refresh
    from specdash.db.engine import make_engine, transaction

    checkpoints = max(20, int(2_000 * scale))
    benchmarks = max(200, int(40_000 * scale))
    url = fresh_db(tmp, "scale.db")
    engine = make_engine(url)
    sizes = data.populate(engine, checkpoints, benchmarks)
    log(f"database: {sizes}")

    def refresh_once() -> float:
        def work():
            with transaction(engine) as session:
                refresh(session)

        return timed(work)

    first_refresh_s = refresh_once()
    refresh_s, refresh_samples = median_of(repeat, refresh_once)
    log(f"gap refresh: first {first_refresh_s:.2f} s, then {refresh_samples}")
    attempt = itertools.count()
    one_s, one_samples = median_of(max(repeat, 5), lambda: refresh_one(engine, next(attempt)))
    log(
        f"refresh of one new benchmark: {one_s * 1000:.1f} ms median of {[round(s * 1000, 1) for s in one_samples]}"
    )

    run_id = 1
    overlay = overlay_work(engine, run_id)
    overlay()  # warm the connection pool and statement caches
    query_s, query_samples = median_of(max(repeat, 5), lambda: timed(overlay))
    log(
        f"overview + overlay queries: {query_s * 1000:.0f} ms median of {[round(s * 1000) for s in query_samples]}"
    )
    overlay_cpu_s, bare_s = overlay_reference(engine, overlay, max(repeat, 5))
    result = {
        "checkpoints": sizes["checkpoints"],
        "benchmarks": sizes["benchmarks"],
        "gap_refresh_first_s": first_refresh_s,
        "gap_refresh_s": refresh_s,
        # per benchmark, the full refresh's cost times the store, against one new benchmark's refresh
        "refresh_one_ms": one_s * 1000,
        "refresh_one_vs_full": refresh_s / one_s,
        "overlay_query_ms": query_s * 1000,
        "overlay_query_cpu_ms": overlay_cpu_s * 1000,
        # the same statements on a bare sqlite3 connection: the store's share of specdash's time
        "overlay_sqlite_cpu_ms": bare_s * 1000,
        "overlay_vs_sqlite": bare_s / overlay_cpu_s,
    }
    if deferred is not None:
        deferred.append(mlflow_query_case(tmp, engine, repeat, query_s))
    result.update(page_cases(engine, url, scale, repeat))
    engine.dispose()
    return result


def mlflow_query_case(tmp: Path, engine, repeat: int, query_s: float):
    """MLflow's search_runs over the same checkpoints and benchmarks, run later (MLflow is slow to import
    and to fill): a function returning its figures against specdash's `query_s`."""
    from specdash.app.frames import frame as frame_of_rows
    from specdash.db import parity
    from specdash.db.engine import reading

    with reading(engine) as session:
        frame = frame_of_rows(parity.parity_rows(session), parity.ParityPoint)
    frame = frame.merge(benchmark_keys(engine), on="benchmark_id")
    checkpoints_n = frame[["run", "checkpoint"]].drop_duplicates().shape[0]

    def mlflow_query() -> dict:
        mlflow_path = tmp / "mlflow-runs.db"
        experiment = mlflow_cases.populate_runs(mlflow_path, frame)
        mlflow_s, samples = median_of(repeat, lambda: mlflow_cases.query_runs(mlflow_path, experiment))
        log(
            f"MLflow search_runs over {checkpoints_n} runs: "
            f"{mlflow_s * 1000:.0f} ms median of {[round(s * 1000) for s in samples]}"
        )
        return {"mlflow_query_ms": mlflow_s * 1000, "query_vs_mlflow": mlflow_s / query_s}

    return mlflow_query


def page_cases(engine, url: str, scale: float, repeat: int) -> dict:
    """Every page's first and warm render, with run 1's training curves added for the Checkpoints page."""
    points = dashboard.add_training_curves(engine, 1, max(10, int(50_000 * scale)))
    log(f"training curves of run 1 for the Checkpoints page: {points:,} metric points")
    pages = dashboard.page_times(url, repeat)
    slowest = max(pages.values(), key=lambda t: t.first_cpu_s)
    return {
        "page_render_first_s": max(t.first_s for t in pages.values()),
        "page_render_s": max(t.warm_s for t in pages.values()),
        "page_render_first_cpu_s": slowest.first_cpu_s,
        # the slowest first render's SQL on a bare sqlite3 connection, against that render's CPU time
        "page_first_vs_sqlite": slowest.sqlite_cpu_s / slowest.first_cpu_s,
        "page_render_by_page_s": {
            page: {
                "first": t.first_s,
                "first_cpu": t.first_cpu_s,
                "sqlite_cpu": t.sqlite_cpu_s,
                "warm": t.warm_s,
            }
            for page, t in pages.items()
        },
    }


def overlay_reference(engine, overlay, repeat: int) -> tuple[float, float]:
    """The overlay's CPU seconds (median), and those of its SQL replayed on a bare sqlite3 connection."""
    with reference.recording(engine) as statements:
        overlay()
    cpu_s, samples = median_of(repeat, lambda: reference.cpu_seconds(overlay))
    bare_s = reference.replay_seconds(engine.url.database, statements, repeat)
    log(
        f"overview + overlay CPU: {cpu_s * 1000:.0f} ms median of {[round(s * 1000) for s in samples]}; "
        f"its {len(statements)} statements on bare sqlite3: {bare_s * 1000:.0f} ms ({bare_s / cpu_s:.2f})"
    )
    return cpu_s, bare_s


def refresh_one(engine, n: int) -> float:
    """Seconds to refresh what one new benchmark touches (as an ingest of it does), the store as it is:
    the benchmark is added, refreshed and rolled back."""
    from sqlalchemy.orm import Session

    from specdash.answers.refresh import refresh
    from specdash.db.engine import WRITE_OPTION
    from specdash.db.models import Benchmark

    with Session(engine.execution_options(**{WRITE_OPTION: True})) as session:
        bench = Benchmark(
            record_key=f"one-more-{n}",
            checkpoint_id=1 + n % 20,
            deployment_id=1,
            engine="sglang",
            speculative_algorithm="EAGLE3",
            num_steps=3,
            topk=1,
            num_draft_tokens=4,
            concurrency=8,
            dataset="mtbench",
            accept_length=2.2,
            decode_tps=120.0,
            source_format="bench",
        )
        session.add(bench)
        session.flush()
        cpu = time.process_time()
        seconds = timed(lambda: refresh(session, [bench.id]))
        log(
            f"refresh of one new benchmark: {seconds * 1000:.1f} ms, CPU {(time.process_time() - cpu) * 1000:.1f} ms"
        )
        session.rollback()
    return seconds


def benchmark_keys(engine):
    import pandas as pd
    from sqlalchemy import select

    from specdash.db.models import Benchmark

    with engine.connect() as connection:
        rows = connection.execute(select(Benchmark.id.label("benchmark_id"), Benchmark.deployment_id)).all()
    return pd.DataFrame(rows, columns=["benchmark_id", "deployment_id"])


def overlay_work(engine, run_id: int):
    """What the Overview page and one run's Checkpoints page ask of the store (the pages' own queries)."""
    from specdash.app.state import LATEST_RUNS, PARITY_POINTS
    from specdash.db import alerts, checkpoints, parity, queries
    from specdash.db.engine import reading
    from specdash.db.settings import get_gap_threshold

    def work():
        with reading(engine) as session:
            # Overview
            queries.counts(session)
            queries.open_alert_counts(session)
            get_gap_threshold(session)
            queries.prediction_sources(session)
            parity.parity_points(session, "theory", PARITY_POINTS)
            alerts.alert_page(session, alerts.AlertFilters(statuses=("open",)), 0, 5, count=False)
            queries.latest_checkpoints(session, LATEST_RUNS)
            # Checkpoints: the run's checkpoints on its first deployment and most covered setting
            checkpoint_ids = [c.id for c in checkpoints.checkpoint_summaries(session, [run_id])]
            deployment_id = checkpoints.benchmarked_deployments(session, checkpoint_ids)[0].id
            setting = checkpoints.speculation_settings(session, checkpoint_ids, deployment_id)[0]
            checkpoints.checkpoint_comparison(session, checkpoint_ids, deployment_id, setting)
            checkpoints.position_acceptance(session, checkpoint_ids)

    return work


def specbundle_case(tmp: Path, repeat: int) -> dict:
    samples = []
    for i in range(repeat):
        url = fresh_db(tmp, f"specbundle-{i}.db")
        elapsed, _ = run_process(specdash("--db", url, "ingest", "--quiet", str(SPECBUNDLE)))
        samples.append(elapsed)
    value = sorted(samples)[len(samples) // 2]
    log(f"SpecBundle ingest: {value:.2f} s median of {samples}")
    return {"specbundle_ingest_s": value}


def verdicts(result: dict) -> dict:
    out = {}
    for key, (op, target) in TARGETS.items():
        if key in SCALED:
            target = target * max(1.0, result.get("scale", 1.0))
        if key in result:
            value = result[key]
            out[key] = {
                "value": value,
                "target": f"{op} {target}",
                "ok": value >= target if op == ">=" else value <= target,
            }
    return out


def print_table(result: dict) -> None:
    print(
        f"specdash benchmarks, scale {result['scale']}, {result['repeat']} repeats (medians); CPU: {result['cpu']}"
    )
    print(f"{'case':<24} {'value':>14}  target")
    for key, value in result.items():
        if key in ("scale", "repeat", "cpu", "targets", "page_render_by_page_s", "scaling_samples"):
            continue
        target = result["targets"].get(key)
        mark = "" if target is None else f"{target['target']:<8} {'ok' if target['ok'] else 'MISSED'}"
        shown = f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"
        print(f"{key:<24} {shown:>14}  {mark}")
    by_page = result.get("page_render_by_page_s", {})
    if by_page:
        print(f"  {'page':<20} {'first':>7} {'CPU':>6} {'sqlite3':>8} {'ratio':>6} {'warm':>7}")
    for page, t in by_page.items():
        ratio = t["sqlite_cpu"] / t["first_cpu"] if t["first_cpu"] else 0.0
        print(
            f"  {page:<20} {t['first']:6.2f}s {t['first_cpu']:5.2f}s {t['sqlite_cpu']:7.2f}s {ratio:6.2f} "
            f"{t['warm']:6.2f}s"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the full sizes (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case (default 3)")
    parser.add_argument(
        "--mlflow-repeat", type=int, default=None, help="runs of the MLflow cases (default: --repeat)"
    )
    parser.add_argument("--no-mlflow", action="store_true", help="skip the MLflow comparisons")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cases",
        default="ingest,query,specbundle",
        help="comma-separated subset to run (scaling: bench/ingest_scaling.py, not by default)",
    )
    args = parser.parse_args(argv)
    # MLflow runs last, and is not even imported before: its modules would make every later measurement in
    # this process pay for a larger heap (the garbage collector walks it).
    deferred = None if args.no_mlflow else []
    if deferred is not None and importlib.util.find_spec("mlflow") is None:
        parser.error("MLflow is not installed: pip install -e '.[bench]' (or pass --no-mlflow)")
    result = {"scale": args.scale, "repeat": args.repeat, "cpu": cpu_model()}
    with tempfile.TemporaryDirectory(prefix="specdash-bench-") as folder:
        tmp = Path(folder)
        cases = set(args.cases.split(","))
        if "ingest" in cases:
            mlflow_repeat = args.mlflow_repeat or args.repeat
            result.update(ingest_cases(tmp, args.scale, args.repeat, mlflow_repeat, deferred))
        if "query" in cases:
            result.update(query_cases(tmp, args.scale, args.repeat, deferred))
        if "specbundle" in cases:
            result.update(specbundle_case(tmp, args.repeat))
        if "scaling" in cases:  # not by default: minutes of ingests (bench/ingest_scaling.py)
            benchmarks = max(100, int(ingest_scaling.DEFAULT_BENCHMARKS * args.scale))
            result.update(ingest_scaling.cases(tmp, benchmarks, args.repeat))
        for mlflow_case in deferred or ():
            result.update(mlflow_case())
    result["targets"] = verdicts(result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
