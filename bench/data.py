"""Deterministic data for the benchmarks: a SpecForge training log and a large populated database."""

import math
import random
from pathlib import Path

from sqlalchemy import Engine, insert

from specdash.db import run_checkpoints
from specdash.db.engine import transaction
from specdash.db.models import Benchmark, Checkpoint, Deployment, PositionAcceptance, Run

REPO = Path(__file__).resolve().parent.parent
SEED = 20261129
LOG_EVERY = 50
# SpecForge-style keys: 7 TTT positions of acc and ploss, plus loss, lr, grad norm, throughput...
POSITIONS = 7
EXTRA_KEYS = ["train/loss", "train/lr", "train/grad_norm", "train/epoch", "train/tokens_per_s", "train/acc"]
KEYS = (
    [f"train/acc_{i}" for i in range(POSITIONS)] + [f"train/ploss_{i}" for i in range(POSITIONS)] + EXTRA_KEYS
)
SETTINGS = [(3, 1, 4), (5, 1, 6), (7, 1, 8), (5, 3, 6), (7, 4, 8)]


def metric_values(step: int, rng: random.Random) -> dict[str, float]:
    progress = 1 - math.exp(-step / 20_000)
    values = {}
    for i in range(POSITIONS):
        acc = 0.1 + 0.7 * progress * (1 - 0.05 * i) + rng.gauss(0, 0.01)
        values[f"train/acc_{i}"] = acc
        values[f"train/ploss_{i}"] = -math.log(max(acc, 1e-3)) * 1.5
    values["train/loss"] = sum(values[f"train/ploss_{i}"] for i in range(POSITIONS))
    values["train/lr"] = 1e-4 * (1 - step / 3_000_000)
    values["train/grad_norm"] = 0.5 + rng.random()
    values["train/epoch"] = step / 10_000
    values["train/tokens_per_s"] = 25_000 + rng.gauss(0, 500)
    values["train/acc"] = values["train/acc_0"]
    return values


def write_specforge_log(path: Path, steps: int) -> int:
    """`step N: {...}` lines as SpecForge prints them (Python dict repr); returns the number of points."""
    rng = random.Random(SEED)
    with path.open("w") as out:
        for n in range(steps):
            step = n * LOG_EVERY
            out.write(f"step {step}: {metric_values(step, rng)!r}\n")
    return steps * len(KEYS)


def metric_rows(steps: int) -> list[tuple[int, int, int, float]]:
    """The same points as write_specforge_log, as (run_id, key_id, step, value) rows."""
    rng = random.Random(SEED)
    rows = []
    for n in range(steps):
        step = n * LOG_EVERY
        for key_id, (_, value) in enumerate(metric_values(step, rng).items(), start=1):
            rows.append((1, key_id, step, value))
    return rows


DEPLOYMENTS = [
    dict(id=1, name="8x RTX PRO 6000, TP8, PCIe", baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=0.64),
    dict(id=2, name="8x H200, TP8, NVLink", baseline_tps=125.0, comm_fraction=0.12, draft_step_ms=0.45),
    dict(id=3, name="4x L40S, TP4, PCIe", baseline_tps=70.0, comm_fraction=0.35, draft_step_ms=0.9),
    dict(id=4, name="8x B200, TP8, NVLink", baseline_tps=160.0, comm_fraction=0.1, draft_step_ms=0.35),
]
CONCURRENCIES = [1, 8]
CHECKPOINTS_PER_RUN = 20


def populate(engine: Engine, checkpoints: int, benchmarks: int) -> dict[str, int]:
    """Runs of 20 checkpoints each, benchmarks spread over checkpoints, four deployments, baselines."""
    rng = random.Random(SEED)
    runs = max(1, checkpoints // CHECKPOINTS_PER_RUN)
    with transaction(engine) as session:
        session.execute(
            insert(Deployment),
            [
                dict(
                    d, round_overhead_ms=0.0, verify_growth_compute=0.0, verify_growth_comm=0.0, is_demo=False
                )
                for d in DEPLOYMENTS
            ],
        )
        session.execute(insert(Run), [_run_row(r) for r in range(1, runs + 1)])
        ckpts, acceptance = _checkpoint_rows(checkpoints, runs, rng)
        session.execute(insert(Checkpoint), ckpts)
        # inserted as plain rows, not by an ingest: their runs' summary rows written as an ingest would
        run_checkpoints.update(session, range(1, runs + 1))
        session.execute(insert(PositionAcceptance), acceptance)
        rows = _benchmark_rows(checkpoints, benchmarks, rng)
        for start in range(0, len(rows), 10_000):
            session.execute(insert(Benchmark), rows[start : start + 10_000])
    return {"runs": runs, "checkpoints": checkpoints, "benchmarks": benchmarks}


def _run_row(run_id: int) -> dict:
    return dict(
        id=run_id,
        name=f"bench-run-{run_id:04d}",
        framework="specforge",
        speculative_algorithm="EAGLE3",
        ttt_length=7,
        hidden_size=12288,
        status="finished",
        is_demo=False,
    )


def _checkpoint_rows(checkpoints: int, runs: int, rng: random.Random) -> tuple[list[dict], list[dict]]:
    """Each checkpoint's row and its trained per-position acceptance (later checkpoints accept more)."""
    ckpts, acceptance = [], []
    for c in range(1, checkpoints + 1):
        run_id = (c - 1) // CHECKPOINTS_PER_RUN + 1
        index = (c - 1) % CHECKPOINTS_PER_RUN
        ckpts.append(
            dict(
                id=c,
                run_id=min(run_id, runs),
                name=f"epoch_{index // 4 + 1}_step_{(index + 1) * 2000}",
                step=(index + 1) * 2000,
                path=f"/ckpt/bench-run-{run_id:04d}/{index}",
            )
        )
        quality = 0.55 + 0.3 * (index / CHECKPOINTS_PER_RUN) + rng.uniform(-0.05, 0.05)
        for p in range(POSITIONS):
            acceptance.append(
                dict(checkpoint_id=c, position=p, rate=round(quality * (1 - 0.03 * p), 4), source="training")
            )
    return ckpts, acceptance


def _benchmark_rows(checkpoints: int, benchmarks: int, rng: random.Random) -> list[dict]:
    """A baseline per deployment and load, then speculative benchmarks spread over the checkpoints,
    deployments, settings and loads."""
    rows = [
        dict(
            record_key=f"baseline-{d['id']}-{conc}",
            deployment_id=d["id"],
            concurrency=conc,
            decode_tps=d["baseline_tps"] / (1 + 0.1 * (conc - 1)),
            source_format="bench",
        )
        for d in DEPLOYMENTS
        for conc in CONCURRENCIES
    ]
    for b in range(benchmarks - len(rows)):
        d = DEPLOYMENTS[(b // checkpoints) % len(DEPLOYMENTS)]
        steps, topk, tokens = SETTINGS[(b // (checkpoints * len(DEPLOYMENTS))) % len(SETTINGS)]
        tau = 1 + rng.uniform(1.0, 2.5)
        rows.append(
            dict(
                record_key=f"bench-{b}",
                checkpoint_id=b % checkpoints + 1,
                deployment_id=d["id"],
                engine="sglang",
                speculative_algorithm="EAGLE3" if rng.random() > 0.01 else "EAGLE",
                num_steps=steps,
                topk=topk,
                num_draft_tokens=tokens,
                concurrency=CONCURRENCIES[b % 2],
                dataset="mtbench",
                accept_length=round(tau, 3),
                decode_tps=round(d["baseline_tps"] * tau / 1.3 * rng.uniform(0.8, 1.1), 2),
                source_format="bench",
            )
        )
    return rows


def fresh_db(folder: Path, name: str) -> str:
    """A new, migrated SQLite database file in `folder`; returns its URL."""
    from specdash.db.engine import make_engine
    from specdash.db.schema import upgrade

    path = folder / name
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


def live_window_rows(windows: int, deployment_id: int = 1, checkpoint_id: int = 1) -> list[dict]:
    """A drafter scraped once a minute for `windows` minutes on one deployment (as `specdash scrape`
    stores them: a `live` benchmark a window), its accept length collapsing for an hour in the middle."""
    from datetime import datetime, timedelta

    rng = random.Random(SEED + 1)
    start = datetime(2026, 12, 1)
    collapse = range(windows // 2, windows // 2 + 60)
    rows = []
    for w in range(windows):
        accept = max(1.02, (1.15 if w in collapse else 1.9) + rng.gauss(0, 0.04))
        first = min(0.95, (accept - 1) / 2.2)
        rows.append(
            dict(
                record_key=f"live-{deployment_id}-{checkpoint_id}-{w}",
                checkpoint_id=checkpoint_id,
                deployment_id=deployment_id,
                engine="sglang",
                speculative_algorithm="EAGLE3",
                num_steps=3,
                topk=1,
                num_draft_tokens=4,
                concurrency=8,
                dataset=None,
                accept_length=round(accept, 3),
                decode_tps=round(90.0 * accept / 1.6 * rng.uniform(0.95, 1.05), 2),
                output_throughput=round(8 * 90.0 * accept / 1.6, 1),
                position_survival=[round(first**k, 4) for k in range(1, 4)],
                measured_at=start + timedelta(minutes=w),
                source_format="live",
            )
        )
    return rows
