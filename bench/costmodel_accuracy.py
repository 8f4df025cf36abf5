"""How well the cost model holds on published measurements: the checked-in corpus of public results
(tests/fixtures/published/corpus.json) and SpecBundle's data.json (tests/fixtures/real/).

    .venv/bin/python -m bench.costmodel_accuracy [--json]

Reports: uncalibrated (priors only) median |error| on the corpus, all rows and held out (rows the priors
were not read from); the priors' 90 % band and its coverage; calibrated leave-one-dataset-out; SpecBundle
leave-one-out; and a fit at one load predicting another."""

import argparse
import dataclasses
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np

from specdash.costmodel import priors
from specdash.costmodel.calibration import (
    CalibrationObservation,
    FittedParams,
    NotEnoughObservations,
    fit_calibration,
    fit_draft_costs,
    predict_observations,
)
from specdash.costmodel.priors import (
    DEFAULT_FAMILY,
    GROWTH_REFERENCE,
    DeploymentFacts,
    architecture_for,
    drafter_family,
    growth_shape,
    resolve_costs,
)
from specdash.costmodel.throughput import throughput
from specdash.costmodel.uncertainty import PRIOR_ROUND_BAND

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fixtures" / "published" / "corpus.json"
SPECBUNDLE = REPO / "tests" / "fixtures" / "real" / "specbundle-data.json"
# A setting the corpus does not publish: used only where a fit absorbs it (one setting per group)
ASSUMED_SETTING = (3, 1, 4)


def deployment_facts(row: dict) -> DeploymentFacts:
    """What a published row says of its deployment, as the priors read it."""
    return DeploymentFacts(
        row.get("gpu"),
        row.get("tp_size"),
        row.get("interconnect"),
        architecture_for(row.get("target")),
        row.get("engine"),
    )


def uncalibrated_error(row: dict) -> float:
    """predicted / measured speedup - 1 with priors only and the measured accept length."""
    steps, topk, n = row["steps"], row["topk"], row["draft_tokens"]
    # speedups are ratios: any baseline works, 100 tok/s here
    params = resolve_costs({}, deployment_facts(row), 100.0, row["family"], row["concurrency"], n)
    predicted = throughput(params, row["accept_length"], steps, n, topk).speedup
    return predicted / row["speedup"] - 1.0


def error_quantiles(errors) -> dict:
    """Count, median and p90 of the errors' sizes; the count alone (0) when there are none."""
    values = np.abs(np.asarray(errors, dtype=float))
    if not len(values):
        return {"n": 0}
    return {
        "n": int(len(values)),
        "median": float(np.median(values)),
        "p90": float(np.percentile(values, 90)),
    }


# The rows the eager-harness factors are fitted to: Vicuna-7B on one A100 in the EAGLE-2 paper's harness and
# in Spec-Bench's (its rows the other priors come from), each source weighted equally.
EAGER_FIT_SOURCES = ("eagle2-paper", "spec-bench")
EAGER_DRAFT_GRID = [round(0.05 * i, 2) for i in range(2, 21)]  # 0.10 .. 1.00
EAGER_OVERHEAD_GRID = [0.0, 0.25, 0.5, 0.75, 1.0]


def fit_eager_factors(rows: list[dict]) -> dict:
    """The (draft, overhead) factors of priors.harness_factors that fit the eager rows the priors are read
    from best: the lowest mean over EAGER_FIT_SOURCES of each source's median |error|, the smaller factors
    on a tie (a flat optimum: the fit cannot tell them apart)."""
    train = [r for r in rows if r["prior_source"] and r["source"] in EAGER_FIT_SOURCES and r["steps"]]
    best = None
    for draft in EAGER_DRAFT_GRID:
        for overhead in EAGER_OVERHEAD_GRID:
            with (
                mock.patch.object(priors, "EAGER_DRAFT_FACTOR", draft),
                mock.patch.object(priors, "EAGER_OVERHEAD_FACTOR", overhead),
            ):
                errors = defaultdict(list)
                for row in train:
                    errors[row["source"]].append(abs(uncalibrated_error(row)))
            score = statistics.fmean(float(np.median(e)) for e in errors.values())
            if best is None or score < best[0] - 1e-9:
                best = (score, draft, overhead)
    score, draft, overhead = best
    return {"draft": draft, "overhead": overhead, "score": score, "rows": len(train)}


def corpus_uncalibrated(rows: list[dict]) -> dict:
    known = [r for r in rows if r["steps"] is not None]
    errors = [uncalibrated_error(r) for r in known]
    held = [e for e, r in zip(errors, known, strict=True) if not r["prior_source"]]
    within = np.mean([abs(e) <= PRIOR_ROUND_BAND for e in held])
    rounds = [r["accept_length"] / r["speedup"] for r in known]
    return {
        "all": error_quantiles(errors),
        "held_out": error_quantiles(held),
        "signed_median": float(np.median(errors)),
        "prior_band": PRIOR_ROUND_BAND,
        "held_out_within_band": float(within),
        "measured_round_in_baseline_steps": {
            "median": float(np.median(rounds)),
            "p10": float(np.percentile(rounds, 10)),
            "p90": float(np.percentile(rounds, 90)),
        },
        "sources": len({r["source"] for r in rows}),
        "rows": len(rows),
        "rows_with_setting": len(known),
    }


def _observation(row: dict, facts: DeploymentFacts, baseline_tps: float) -> CalibrationObservation:
    steps, topk, n = (row["steps"], row["topk"], row["draft_tokens"]) if row["steps"] else ASSUMED_SETTING
    return CalibrationObservation(
        steps=steps,
        topk=topk,
        draft_tokens=n,
        measured_tps=row["speedup"] * baseline_tps,
        baseline_tps=baseline_tps,
        measured_accept_length=row["accept_length"],
        label=row["dataset"],
        drafter=row["drafter"],
        growth_shape=growth_shape(facts, row["concurrency"], n),
        dataset=row["dataset"],
    )


def _prior(observations, facts: DeploymentFacts, families: dict[str, str], concurrency: int) -> FittedParams:
    """The priors as the fit's starting point and pull, as the calibration builds them (answers/calibration.py)."""
    base = statistics.median(o.baseline_tps for o in observations)
    per = {d: resolve_costs({}, facts, base, f, concurrency).draft_step_ms for d, f in families.items()}
    reference = resolve_costs({}, facts, base, DEFAULT_FAMILY, *GROWTH_REFERENCE)
    return FittedParams(
        draft_step_ms=statistics.median(per.values()),
        round_overhead_ms=resolve_costs({}, facts, base, DEFAULT_FAMILY, concurrency).round_overhead_ms,
        verify_growth=reference.verify_growth,
        draft_step_ms_by_drafter=tuple(sorted(per.items())),
    )


def leave_one_dataset_out(
    groups: dict[str, list[tuple[CalibrationObservation, str]]], facts_of, families_of, concurrency_of
) -> dict:
    """Each dataset of a deployment predicted by a fit to its other datasets."""
    errors, per_group = [], {}
    for name, items in groups.items():
        datasets = sorted({ds for _, ds in items})
        if len(datasets) < 2:
            continue
        mine = []
        for held in datasets:
            train = [o for o, ds in items if ds != held]
            test = [o for o, ds in items if ds == held]
            prior = _prior(train, facts_of(name), families_of(name), concurrency_of(name))
            try:
                fit = fit_calibration(train, prior)
            except NotEnoughObservations:
                break
            predicted = predict_observations(fit.params, test)
            mine += [p / o.measured_tps - 1 for p, o in zip(predicted, test, strict=True)]
        else:
            per_group[name] = float(np.median(np.abs(mine)))
            errors += mine
    return {**error_quantiles(errors), "groups": per_group} if errors else {"n": 0}


def specbundle_observations():
    data = json.loads(SPECBUNDLE.read_text())
    groups = defaultdict(list)
    for target, benchmarks in data.items():
        facts = DeploymentFacts(architecture=architecture_for(target))
        for dataset, bench in benchmarks.items():
            for result in bench["results"]:
                batch = result["batch_size"]
                rows = {m["Name"]: m for m in result["metrics"]}
                baseline = rows.pop("Wihtout EAGLE3")["output_throughput"] / batch
                for drafter, m in rows.items():
                    n = result["num_draft_tokens"]
                    groups[target].append(
                        (
                            CalibrationObservation(
                                steps=result["steps"],
                                topk=result["topk"],
                                draft_tokens=n,
                                measured_tps=m["output_throughput"] / batch,
                                baseline_tps=baseline,
                                measured_accept_length=m["accept_length"],
                                label=f"{dataset} {drafter}",
                                drafter=drafter,
                                growth_shape=growth_shape(facts, batch, n),
                                dataset=dataset,
                            ),
                            dataset,
                            batch,
                        )
                    )
    return groups


def specbundle_uncalibrated(groups) -> list[float]:
    """Priors-only predicted / measured tok/s - 1 of every SpecBundle benchmark (SGLang, at its batch)."""
    errors = []
    for target, items in groups.items():
        facts = DeploymentFacts(architecture=architecture_for(target), engine="sglang")
        for o, _, batch in items:
            params = resolve_costs({}, facts, o.baseline_tps, "eagle3", batch, o.draft_tokens)
            predicted = throughput(params, o.measured_accept_length, o.steps, o.draft_tokens, o.topk).tps
            errors.append(predicted / o.measured_tps - 1)
    return errors


def prior_band_coverage(rows: list[dict], groups) -> dict:
    """The prior band against every published measurement the priors were not read from: the corpus's
    held-out rows and SpecBundle's benchmarks (whose MoE targets at batch 8 the priors fit worst)."""
    held = [abs(uncalibrated_error(r)) for r in rows if r["steps"] is not None and not r["prior_source"]]
    bundle = [abs(e) for e in specbundle_uncalibrated(groups)]
    pooled = np.asarray(held + bundle)
    return {
        "n": len(pooled),
        "p90": float(np.percentile(pooled, 90)),
        "within_band": float(np.mean(pooled <= PRIOR_ROUND_BAND)),
        "specbundle_uncalibrated": error_quantiles(bundle),
    }


def specbundle(groups) -> dict:
    all_cv, per = [], {}
    for target, items in groups.items():
        observations = [o for o, _, _ in items]
        facts = DeploymentFacts(architecture=architecture_for(target))
        families = {o.drafter: drafter_family(o.drafter, "EAGLE3") for o in observations}
        fit = fit_calibration(observations, _prior(observations, facts, families, items[0][2]))
        per[target] = {
            "loo_median": fit.loo_median_abs_rel_error,
            "loo_p90": fit.loo_p90_abs_rel_error,
            "n": fit.n_observations,
        }
        all_cv += list(fit.cv_errors)
    lodo = leave_one_dataset_out(
        {t: [(o, ds) for o, ds, _ in items] for t, items in groups.items()},
        lambda t: DeploymentFacts(architecture=architecture_for(t)),
        lambda t: {o.drafter: "eagle3" for o, _, _ in groups[t]},
        lambda t: groups[t][0][2],
    )
    return {"leave_one_out": error_quantiles(all_cv), "per_target": per, "leave_one_dataset_out": lodo}


def corpus_calibrated(rows: list[dict]) -> dict:
    groups, facts, families, concurrency = defaultdict(list), {}, defaultdict(dict), {}
    for row in rows:
        if row["concurrency"] != 1:
            continue
        name = row["group"]
        facts[name] = deployment_facts(row)
        families[name][row["drafter"]] = row["family"]
        concurrency[name] = 1
        # the published no-speculation tok/s where the source gives it (a dataset's baseline can differ
        # several-fold, AngelSlim's multimodal sets), as the store uses each dataset's own baseline; else
        # any common value: speedups are ratios
        baseline = row.get("baseline_tps") or 100.0
        groups[name].append((_observation(row, facts[name], baseline), row["dataset"]))
    return leave_one_dataset_out(groups, facts.get, families.get, concurrency.get)


def load_transfer(rows: list[dict], scale_with_load: bool = True) -> dict:
    """Fit each group at concurrency 1, predict its rows at the other loads it publishes (drafting and
    overhead scaled with the step's growth from concurrency 1, or held in ms). A group with too few rows
    at concurrency 1 for the store's fit gets its drafters' draft costs fitted, the rest from the priors."""
    out = {}
    by_group = defaultdict(list)
    for row in rows:
        by_group[row["group"]].append(row)
    for name, items in by_group.items():
        loads = sorted({r["concurrency"] for r in items})
        # the load rule needs each load's own no-speculation tok/s
        if len(loads) < 2 or loads[0] != 1 or not all(r.get("baseline_tps") for r in items):
            continue
        facts = deployment_facts(items[0])
        low = [_observation(r, facts, r["baseline_tps"]) for r in items if r["concurrency"] == 1]
        prior = _prior(low, facts, {r["drafter"]: r["family"] for r in items}, 1)
        try:
            params, label = fit_calibration(low, prior).params, "fit"
        except NotEnoughObservations:  # too few benchmarks at concurrency 1 for every free cost
            if any(r["steps"] is None for r in items):
                continue  # an assumed setting is only absorbed by a fit of every cost
            params, label = fit_draft_costs(low, prior), "draft cost only"
        for load in loads[1:]:
            high_rows = [r for r in items if r["concurrency"] == load]
            # per-request tok/s: the published aggregate over the concurrent requests
            high = [_observation(r, facts, r["baseline_tps"] / load) for r in high_rows]
            if scale_with_load:
                # the same dataset's step at this load over its step at concurrency 1
                low_base = {r["dataset"]: r["baseline_tps"] for r in items if r["concurrency"] == 1}
                high = [
                    dataclasses.replace(o, load_scale=low_base[r["dataset"]] / o.baseline_tps)
                    for o, r in zip(high, high_rows, strict=True)
                ]
            predicted = predict_observations(params, high)
            errors = [p / o.measured_tps - 1 for p, o in zip(predicted, high, strict=True)]
            out[f"{name}: 1 -> {load}"] = {
                **error_quantiles(errors),
                "fitted": label,
                "load": load,
                "errors": errors,
            }
    pooled = [e for q in out.values() for e in q["errors"]]
    at_8 = [e for q in out.values() if q["load"] == 8 for e in q["errors"]]
    return {
        "groups": out,
        "pooled": error_quantiles(pooled) if pooled else {"n": 0},
        "batch_1_to_8": error_quantiles(at_8) if at_8 else {"n": 0},
    }


def report_main(description: str, report: Callable[[], dict], show: Callable[[dict], None]) -> None:
    """A figures script's command line: its report as JSON with --json, else the lines `show` prints."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = report()
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        show(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = json.loads(CORPUS.read_text())["rows"]
    bundle = specbundle_observations()
    report = {
        "corpus_uncalibrated": corpus_uncalibrated(rows),
        "corpus_calibrated_leave_one_dataset_out": corpus_calibrated(rows),
        "corpus_load_transfer": load_transfer(rows),
        "specbundle": specbundle(bundle),
        "prior_band": prior_band_coverage(rows, bundle),
        "eager_harness_fit": fit_eager_factors(rows),
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    u = report["corpus_uncalibrated"]
    print(
        f"corpus: {u['rows']} rows from {u['sources']} sources, {u['rows_with_setting']} with a published setting"
    )
    print(
        f"  measured round: median {u['measured_round_in_baseline_steps']['median']:.2f} baseline steps "
        f"(p10 {u['measured_round_in_baseline_steps']['p10']:.2f}, p90 {u['measured_round_in_baseline_steps']['p90']:.2f})"
    )
    print(
        f"  uncalibrated median |error|: all {u['all']['median']:.1%} (n={u['all']['n']}, p90 {u['all']['p90']:.1%}); "
        f"held out {u['held_out']['median']:.1%} (n={u['held_out']['n']}, p90 {u['held_out']['p90']:.1%}); "
        f"signed median {u['signed_median']:+.1%}"
    )
    b = report["prior_band"]
    print(
        f"  prior band {u['prior_band']:.0%}: covers {u['held_out_within_band']:.0%} of held-out rows; "
        f"{b['within_band']:.0%} of those and SpecBundle's together (n={b['n']}, p90 {b['p90']:.1%}; "
        f"SpecBundle uncalibrated median {b['specbundle_uncalibrated']['median']:.1%}, "
        f"p90 {b['specbundle_uncalibrated']['p90']:.1%})"
    )
    c = report["corpus_calibrated_leave_one_dataset_out"]
    if c.get("n"):
        print(
            f"  calibrated leave-one-dataset-out: median {c['median']:.1%}, p90 {c['p90']:.1%} (n={c['n']}, "
            f"{len(c['groups'])} deployments)"
        )
    transfer = report["corpus_load_transfer"]
    if transfer["pooled"]["n"]:
        print(
            f"  fit at concurrency 1, predict the higher loads published: median "
            f"{transfer['pooled']['median']:.1%}, p90 {transfer['pooled']['p90']:.1%} "
            f"(n={transfer['pooled']['n']}, {len(transfer['groups'])} load pairs); 1 -> 8 only: median "
            f"{transfer['batch_1_to_8']['median']:.1%} (n={transfer['batch_1_to_8']['n']})"
        )
    for name, q in transfer["groups"].items():
        print(f"    {name}: median {q['median']:.1%}, p90 {q['p90']:.1%} (n={q['n']}; {q['fitted']})")
    s = report["specbundle"]
    print(
        f"specbundle: leave-one-out median {s['leave_one_out']['median']:.1%}, p90 {s['leave_one_out']['p90']:.1%} "
        f"(n={s['leave_one_out']['n']}); leave-one-dataset-out median {s['leave_one_dataset_out']['median']:.1%}, "
        f"p90 {s['leave_one_dataset_out']['p90']:.1%}"
    )
    for target, q in s["per_target"].items():
        print(f"  {target:40} n={q['n']:3}  LOO median {q['loo_median']:.1%}  p90 {q['loo_p90']:.1%}")
    eager = report["eager_harness_fit"]
    print(
        f"eager-harness factors refitted: draft x{eager['draft']}, overhead x{eager['overhead']} "
        f"(n={eager['rows']}; shipped x{priors.EAGER_DRAFT_FACTOR}, x{priors.EAGER_OVERHEAD_FACTOR})"
    )


if __name__ == "__main__":
    main()
