"""How well the answers (specdash.answers) predict a prompt length held out of a published sweep, and how
good the depth schedule is at each measured load and context.

    .venv/bin/python -m bench.context_accuracy [--json]

Sweeps: each folder of tests/fixtures/published/context/ (its README says where each comes from): the
engine's result files as published and a deployment record. Each is ingested into a temporary SQLite store
the way `specdash ingest` stores it.

- Held-out context: for each mean decode context (input + output / 2 tokens) the sweep measured, a store
  of the files at the other contexts; every benchmark at the held-out context is predicted through
  point_model(...).predict(steps, topk, concurrency, context_tokens) (without speculation: the answer's
  baseline) and compared with its measured per-request decode tok/s. `round` is the same comparison at
  the measured accept length (the round's error alone, without the acceptance's change with context).
- Schedule: at each measured (load, context), the depth `specdash schedule --context` picks among those
  measured there (its pick, else the best of its `by_depth` that was measured), as a share of the best
  measured depth's tok/s (repeats averaged): from the held-out store, and from the store of every context
  (what a deployment that measured them gets)."""

import json
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from bench.costmodel_accuracy import error_quantiles, report_main
from bench.data import REPO, fresh_db
from specdash.answers.calibrate import calibrate_all
from specdash.answers.estimates import fitted_estimates
from specdash.answers.points import point_model
from specdash.answers.refresh import refresh
from specdash.answers.schedule import checkpoint_schedule
from specdash.costmodel.context import decode_context
from specdash.db.calibration import apply_calibration
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Benchmark, Deployment, IngestedFile
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import PathSource

SWEEPS_DIR = REPO / "tests" / "fixtures" / "published" / "context"
RUN, CHECKPOINT = "published-drafter", "published"
MEDIAN_GOAL = 0.07
SCHEDULE_GOAL = 0.97


@dataclass(frozen=True)
class ContextSweep:
    name: str
    engine: str
    folder: Path

    @property
    def files(self) -> list[Path]:
        """The engine's result files (every file but the deployment record and the notes)."""
        return sorted(
            p
            for p in self.folder.rglob("*")
            if p.is_file() and p.suffix != ".md" and p.name != "deployment.jsonl"
        )


@dataclass(frozen=True)
class Measured:
    """One stored benchmark as the comparison reads it."""

    path: str
    concurrency: float
    context: float
    steps: int  # 0: no speculation
    topk: int
    decode_tps: float
    accept_length: float


def deployment_record(folder: Path) -> dict:
    """The sweep's deployment as its folder's deployment.jsonl states it (name, engine, GPU, target)."""
    return json.loads((folder / "deployment.jsonl").read_text().splitlines()[0])


def sweeps() -> list[ContextSweep]:
    """Every folder of SWEEPS_DIR with a deployment record, under the engine that record names."""
    folders = sorted(p for p in SWEEPS_DIR.iterdir() if (p / "deployment.jsonl").exists())
    return [ContextSweep(f.name, deployment_record(f)["engine"], f) for f in folders]


def deployment_name(sweep: ContextSweep) -> str:
    return str(deployment_record(sweep.folder)["name"])


def build_store(
    folder: Path, sweep: ContextSweep, files: Sequence[Path], name: str, calibrated: bool = False
) -> Engine:
    """A migrated store in `folder` holding the sweep's deployment and `files`, each linked to one drafter;
    `calibrated`: then fitted as `specdash calibrate --apply` fits it."""
    engine = make_engine(fresh_db(folder, name))
    ingest(engine, PathSource(sweep.folder / "deployment.jsonl"))
    link = LinkOptions(run=RUN, checkpoint=CHECKPOINT, deployment=deployment_name(sweep))
    for path in files:
        result = ingest(engine, PathSource(path), IngestPolicy(link=link))
        if result.status != "loaded":
            raise RuntimeError(f"{path}: {result.status}: {[str(p) for p in result.problems]}")
    with reading(engine) as session:  # the readers state each benchmark's lengths
        unstated = session.scalar(select(func.count()).where(Benchmark.input_tokens.is_(None)))
    if unstated:
        raise RuntimeError(f"{sweep.name}: {unstated} benchmark(s) without their lengths")
    if calibrated:
        calibrate_store(engine)
    return engine


def calibrate_store(engine: Engine) -> None:
    """`specdash calibrate --apply`: the load models first, then each deployment's fit saved and refreshed."""
    with transaction(engine) as session:
        fitted_estimates(session, None, keep=True)
        reports, _ = calibrate_all(session, None)
        for r in reports:
            apply_calibration(session, r)
        if reports:
            refresh(session)


def measured(engine: Engine) -> list[Measured]:
    with reading(engine) as session:
        rows = session.execute(
            select(Benchmark, IngestedFile.path)
            .join(IngestedFile, Benchmark.ingested_file_id == IngestedFile.id)
            .where(Benchmark.superseded_by_id.is_(None))
        ).all()
    out = []
    for b, path in rows:
        context = decode_context(b.input_tokens, b.output_tokens)
        if context is None:
            continue
        speculative = b.speculative_algorithm is not None
        out.append(
            Measured(
                path,
                float(b.concurrency),
                round(context, 1),
                b.num_steps or 0 if speculative else 0,
                b.topk or 1,
                b.decode_tps,
                (b.accept_length or 1.0) if speculative else 1.0,
            )
        )
    return out


def _ids(engine: Engine, sweep: ContextSweep) -> tuple[int, int]:
    from specdash.db.models import Checkpoint, Run

    with reading(engine) as session:
        deployment = session.scalars(
            select(Deployment).where(Deployment.name == deployment_name(sweep))
        ).one()
        checkpoint = session.scalars(
            select(Checkpoint).join(Run).where(Run.name == RUN, Checkpoint.name == CHECKPOINT)
        ).one()
        return checkpoint.id, deployment.id


def predict_held_out(engine: Engine, sweep: ContextSweep, points: Sequence[Measured]) -> list[dict]:
    """Each point predicted by the store of the other contexts."""
    checkpoint_id, deployment_id = _ids(engine, sweep)
    out = []
    with reading(engine) as session:
        model = point_model(session, checkpoint_id, deployment_id)
        assert model is not None, f"{sweep.name}: no model to predict with"
        for p in points:
            answer = model.predict(max(p.steps, 1), p.topk, p.concurrency, p.context)
            if answer is None:
                continue
            tps = answer.tps if p.steps else answer.baseline_tps
            tau = answer.accept_length if p.steps else 1.0
            out.append(
                {
                    "point": p,
                    "error": tps / p.decode_tps - 1.0,
                    "round": (tps / tau) / (p.decode_tps / p.accept_length) - 1.0,
                    "extrapolated": answer.extrapolated_context,
                }
            )
    return out


def schedule_shares(engine: Engine, sweep: ContextSweep, points: Sequence[Measured]) -> dict[str, dict]:
    """At each (load, context) of `points` with two or more measured depths: the schedule's pick among
    them and its measured tok/s over the best measured depth's."""
    cells: dict[tuple[float, float], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        cells[(p.concurrency, p.context)][p.steps].append(p.decode_tps)
    out = {}
    with reading(engine) as session:
        for (load, context), depths in sorted(cells.items()):
            if len(depths) < 2:
                continue
            tps = {k: statistics.fmean(v) for k, v in depths.items()}
            made = checkpoint_schedule(
                session, deployment_name(sweep), RUN, CHECKPOINT, [load], max(tps), [context]
            )
            entry = made.entries[0]
            picked = entry.num_steps
            if picked not in tps:
                picked = max((d for d in entry.by_depth if d[0] in tps), key=lambda d: d[1])[0]
            best = max(tps, key=lambda k: tps[k])
            out[f"B={load:g} ctx={context:,.0f}"] = {
                "picked": picked,
                "best": best,
                "share": tps[picked] / tps[best],
            }
    return out


SETS = ("uncalibrated", "calibrated")  # the priors' parameter set, then `specdash calibrate --apply`'s


def sweep_report(sweep: ContextSweep, files: Sequence[Path] | None = None) -> dict:
    """The held-out-context errors and the schedule's shares of one sweep (of `files` when given), under
    the priors and calibrated to the same store."""
    files = list(files) if files is not None else sweep.files
    results: dict[str, list[dict]] = {key: [] for key in SETS}
    held: dict[str, dict] = {key: {} for key in SETS}
    in_sample: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        full = build_store(Path(tmp), sweep, files, "all.db")
        points = measured(full)
        for key in SETS:
            if key == "calibrated":
                calibrate_store(full)
            in_sample[key] = schedule_shares(full, sweep, points)
        full.dispose()
        contexts = sorted({p.context for p in points})
        for i, context in enumerate(contexts):
            test = [p for p in points if p.context == context]
            train_paths = {p.path for p in points if p.context != context}
            store = build_store(Path(tmp), sweep, [f for f in files if str(f) in train_paths], f"held-{i}.db")
            for key in SETS:
                if key == "calibrated":
                    calibrate_store(store)
                results[key] += predict_held_out(store, sweep, test)
                held[key].update(schedule_shares(store, sweep, test))
            store.dispose()
    return {
        "sweep": sweep.name,
        "engine": sweep.engine,
        "contexts": list(contexts),
        "loads": sorted({p.concurrency for p in points}),
        **{key: summarize(contexts, results[key], held[key], in_sample[key]) for key in SETS},
    }


def summarize(contexts: Sequence[float], results: list[dict], held: dict, in_sample: dict) -> dict:
    speculative = [r for r in results if r["point"].steps]
    plain = [r for r in results if not r["point"].steps]
    return {
        "all": error_quantiles([r["error"] for r in results]),
        "speculative": error_quantiles([r["error"] for r in speculative]),
        "plain": error_quantiles([r["error"] for r in plain]),
        "round": error_quantiles([r["round"] for r in speculative]),
        "per_context": {
            f"{c:,.0f}": error_quantiles([r["error"] for r in results if r["point"].context == c])
            for c in contexts
        },
        "signed_median": statistics.median(r["error"] for r in results) if results else None,
        "schedule_held_out": held,
        "schedule_all_contexts": in_sample,
        "errors": [r["error"] for r in results],
    }


def report(selected: Sequence[ContextSweep] | None = None) -> dict:
    per_sweep = [sweep_report(s) for s in (selected if selected is not None else sweeps())]
    engines: dict[str, dict[str, list[float]]] = defaultdict(lambda: {key: [] for key in SETS})
    for s in per_sweep:
        for key in SETS:
            engines[s["engine"]][key] += s[key].pop("errors")
    return {
        "sweeps": per_sweep,
        "per_engine": {
            e: {key: error_quantiles(v) for key, v in errors.items()} for e, errors in sorted(engines.items())
        },
        "goals": {"median": MEDIAN_GOAL, "schedule": SCHEDULE_GOAL},
    }


def _pct(q: dict) -> str:
    return f"{q['median']:.1%} (p90 {q['p90']:.1%}, n={q['n']})" if q.get("n") else "-"


def show_set(s: dict) -> None:
    print(f"    held-out context, median |error|: every point {_pct(s['all'])}")
    print(f"      speculative {_pct(s['speculative'])}, no speculation {_pct(s['plain'])}")
    print(f"      round at the measured accept length {_pct(s['round'])}; signed {s['signed_median']:+.1%}")
    for c, q in s["per_context"].items():
        print(f"      context {c} held out: {_pct(q)}")
    for label, key in (("held out", "schedule_held_out"), ("every context in", "schedule_all_contexts")):
        shares = s[key]
        if not shares:
            continue
        worst = min(v["share"] for v in shares.values())
        print(f"    schedule ({label}): min {worst:.1%} of the best measured depth's tok/s")
        for cell, v in shares.items():
            mark = "" if v["share"] >= SCHEDULE_GOAL else "  < goal"
            print(f"      {cell}: K={v['picked']} (best K={v['best']}) {v['share']:.1%}{mark}")


def show(out: dict) -> None:
    for s in out["sweeps"]:
        contexts = ", ".join(f"{c:,.0f}" for c in s["contexts"])
        loads = ", ".join(f"{b:g}" for b in s["loads"])
        print(f"{s['sweep']} ({s['engine']}; mean decode contexts {contexts}; batch {loads})")
        for key in SETS:
            print(f"  {key}:")
            show_set(s[key])
    for engine, sets in out["per_engine"].items():
        figures = ", ".join(f"{key} {_pct(q)}" for key, q in sets.items())
        print(f"engine {engine}: held-out context median |error|: {figures} (goal <= {MEDIAN_GOAL:.0%})")


def main() -> None:
    report_main((__doc__ or "").splitlines()[0], report, show)


if __name__ == "__main__":
    main()
