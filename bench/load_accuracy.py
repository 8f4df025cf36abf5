"""How well the load model (costmodel/loadmodel.py) predicts held-out depths and loads of published sweeps,
against the linear round model fitted on the same split in the same run, and how good its depth schedule is.

    .venv/bin/python -m bench.load_accuracy [--json]

Splits (bench/load_sweeps.py builds the sweeps):
- cell: each (load, setting) of a sweep predicted by a fit to the rest of it (its load's no-speculation run
  stays in: it is another measurement);
- load: each load of a multi-load sweep predicted by a fit to the other loads (its no-speculation run out);
- cross-load: fit at the lowest load, predict every other load (with and without the other loads'
  no-speculation runs), the published pairs of bench/costmodel_accuracy.py load_transfer.
Schedule: at each load with two or more candidates (its settings and no speculation), the candidate with
the most tok/s predicted by the cell split, against the best measured."""

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from bench.costmodel_accuracy import error_quantiles, report_main
from bench.load_sweeps import LinearRoundModel, Sweep, corpus_sweeps, load_corpus_rows, specbundle_sweeps
from specdash.costmodel.loadfit import fit_load_model, predict_load_observations
from specdash.costmodel.loadmodel import LoadObservation

SCHEDULE_GOAL = 0.97


def _cell(o: LoadObservation) -> Hashable:
    return (o.concurrency, o.steps, o.topk, o.draft_tokens)


def split_errors(
    sweep: Sweep,
    group: Callable[[LoadObservation], Hashable],
    train_filter: Callable[[LoadObservation, Hashable], bool] | None = None,
) -> list[dict]:
    """Each group of the sweep's observations predicted by both models fitted to the others."""
    obs = list(sweep.observations)
    prior = sweep.prior()
    out = []
    for key in dict.fromkeys(group(o) for o in obs):
        test = [o for o in obs if group(o) == key]
        train = [o for o in obs if group(o) != key and (train_filter is None or train_filter(o, key))]
        if not train or not any(o.speculative for o in train + test):
            continue
        params = fit_load_model(train, prior).params
        linear = LinearRoundModel(train)
        for o, predicted in zip(test, predict_load_observations(params, test), strict=True):
            out.append(
                {
                    "observation": o,
                    "load_model": predicted / o.measured_tps - 1.0,
                    "linear": linear.tps(o) / o.measured_tps - 1.0,
                    "predicted_tps": predicted,
                }
            )
    return out


def _summary(sweeps: Sequence[Sweep], results: dict[str, list[dict]]) -> dict:
    pooled = [r for rs in results.values() for r in rs if r["observation"].speculative]
    by_engine: dict[str, list[dict]] = defaultdict(list)
    engine = {s.name: s.engine for s in sweeps}
    for name, rs in results.items():
        by_engine[engine[name]] += [r for r in rs if r["observation"].speculative]
    return {
        "load_model": error_quantiles([r["load_model"] for r in pooled]),
        "linear": error_quantiles([r["linear"] for r in pooled]),
        "sweeps": sum(1 for rs in results.values() if rs),
        "per_engine": {
            e: {
                "load_model": error_quantiles([r["load_model"] for r in rs]),
                "linear": error_quantiles([r["linear"] for r in rs]),
            }
            for e, rs in sorted(by_engine.items())
        },
    }


def cell_split(sweeps: Sequence[Sweep]) -> tuple[dict, dict[str, list[dict]]]:
    results = {s.name: split_errors(s, _cell) for s in sweeps}
    return _summary(sweeps, results), results


def load_split(sweeps: Sequence[Sweep]) -> dict:
    multi = [s for s in sweeps if len(s.loads) > 1]
    results = {s.name: split_errors(s, lambda o: o.concurrency) for s in multi}
    return _summary(multi, results)


def cross_load(sweeps: Sequence[Sweep], with_other_baselines: bool) -> dict:
    """Fit at the lowest load (and, if asked, every load's no-speculation run), predict the other loads."""
    multi = [s for s in sweeps if len(s.loads) > 1]
    errors, linear, pairs = [], [], {}
    for s in multi:
        low = min(s.loads)
        train = [
            o for o in s.observations if o.concurrency == low or (with_other_baselines and not o.speculative)
        ]
        test = [o for o in s.observations if o.concurrency != low and o.speculative]
        params = fit_load_model(train, s.prior()).params
        mine = [
            p / o.measured_tps - 1.0
            for p, o in zip(predict_load_observations(params, test), test, strict=True)
        ]
        errors += mine
        pairs[s.name] = float(np.median(np.abs(mine)))
        if with_other_baselines:
            model = LinearRoundModel(train)
            linear += [model.tps(o) / o.measured_tps - 1.0 for o in test]
    return {"load_model": error_quantiles(errors), "linear": error_quantiles(linear), "per_sweep": pairs}


def miss_cause(here: dict[Hashable, tuple[float, float, float]], picked: Hashable, best: Hashable) -> str:
    """Why a load's pick falls short, from its candidates {cell: (predicted, measured tok/s, tau)}:
    `implausible` when a speculative cell ran faster than tau x the load's no-speculation tok/s (a round
    shorter than a plain step: that baseline cannot be right), `no_speculation` when the pick or the best
    is no speculation (whose tok/s the cell split predicts from the speculative runs alone, an estimated
    baseline), else `depths` (two speculative settings ranked the wrong way)."""
    base = [v[1] for cell, v in here.items() if _is_plain(cell)]
    if base and any(v[1] > v[2] * base[0] for cell, v in here.items() if not _is_plain(cell)):
        return "implausible"
    if _is_plain(picked) or _is_plain(best):
        return "no_speculation"
    return "depths"


def _is_plain(cell: Hashable) -> bool:
    return isinstance(cell, tuple) and cell[1] == 0


def schedule_picks(sweeps: Sequence[Sweep], results: dict[str, list[dict]]) -> dict:
    """At every load with two or more candidates: measured tok/s of the predicted-best candidate over the
    best measured one (candidates: each setting, mean over its drafters, and no speculation), and for
    each load under the goal why (miss_cause)."""
    ratios, causes = {}, {}
    for s in sweeps:
        cells: dict[tuple[float, Hashable], list[tuple[float, float, float]]] = defaultdict(list)
        for r in results.get(s.name, []):
            o = r["observation"]
            tau = o.accept_length if o.speculative else 1.0
            cells[(o.concurrency, _cell(o))].append((r["predicted_tps"], o.measured_tps, tau))
        for load in sorted({load for load, _ in cells}):
            here = {cell: tuple(np.mean(v, axis=0)) for (lv, cell), v in cells.items() if lv == load}
            if len(here) < 2:
                continue
            picked = max(here, key=lambda c: here[c][0])
            best = max(here, key=lambda c: here[c][1])
            name = f"{s.name} @ {load:g}"
            ratios[name] = float(here[picked][1] / here[best][1])
            if ratios[name] < SCHEDULE_GOAL:
                causes[name] = miss_cause(here, picked, best)
    values = list(ratios.values())
    return {
        "loads": len(values),
        "meeting_goal": sum(v >= SCHEDULE_GOAL for v in values),
        "min": min(values) if values else None,
        "median": float(np.median(values)) if values else None,
        "below_goal": {k: v for k, v in ratios.items() if v < SCHEDULE_GOAL},
        "below_goal_cause": causes,
        "misses_by_cause": {c: sum(v == c for v in causes.values()) for c in sorted(set(causes.values()))},
    }


def all_sweeps() -> list[Sweep]:
    """Every published sweep: the corpus's and SpecBundle's."""
    return corpus_sweeps(load_corpus_rows()) + specbundle_sweeps()


def report(sweeps: Sequence[Sweep] | None = None) -> dict:
    """The figures over `sweeps` (every published sweep unless given: the tests take a fixed sample)."""
    sweeps = all_sweeps() if sweeps is None else sweeps
    cells, results = cell_split(sweeps)
    return {
        "sweeps": len(sweeps),
        "observations": sum(len(s.observations) for s in sweeps),
        "cell_split": cells,
        "load_split": load_split(sweeps),
        "cross_load": cross_load(sweeps, with_other_baselines=True),
        "cross_load_no_other_baselines": cross_load(sweeps, with_other_baselines=False),
        "schedule": schedule_picks(sweeps, results),
    }


def show(out: dict) -> None:
    print(f"{out['sweeps']} sweeps, {out['observations']} observations")
    for key in ("cell_split", "load_split", "cross_load", "cross_load_no_other_baselines"):
        q = out[key]
        lm, lin = q["load_model"], q["linear"]
        line = f"  {key}: load model median {lm.get('median', float('nan')):.1%} (n={lm['n']})"
        if lin.get("n"):
            line += f", linear round model {lin['median']:.1%}"
        print(line)
        for engine, e in q.get("per_engine", {}).items():
            print(
                f"    {engine}: {e['load_model'].get('median', float('nan')):.1%} vs linear {e['linear'].get('median', float('nan')):.1%} (n={e['load_model']['n']})"
            )
    sched = out["schedule"]
    print(
        f"  schedule: {sched['meeting_goal']}/{sched['loads']} loads at >= {SCHEDULE_GOAL:.0%} of the best measured "
        f"(min {sched['min']:.1%}, median {sched['median']:.1%})"
    )
    print("  misses by cause: " + ", ".join(f"{c} {n}" for c, n in sched["misses_by_cause"].items()))
    for name, ratio in sched["below_goal"].items():
        print(f"    {name}: {ratio:.1%} ({sched['below_goal_cause'][name]})")


def main() -> None:
    report_main((__doc__ or "").splitlines()[0], report, show)


if __name__ == "__main__":
    main()
