"""Honest held-out figures of the cost model on the published corpus: held out by source.

    .venv/bin/python -m bench.heldout [--json]

A row is held out when no prior was read from its source (PRIOR_SOURCES: every source with a row marked
prior_source in the corpus, and those costmodel/priors.py cites that the corpus does not hold), it has a
published setting, and it is not a repeat of an earlier row under another name (same accept length,
speedup and load: a revision copy or a renamed table cell). Every figure comes per engine and per drafter
family too, with a 95 % bootstrap interval that resamples sources (rows of one source are not
independent); a goal is met when the interval's upper end is under it."""

import json
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from bench.costmodel_accuracy import (
    CORPUS,
    corpus_calibrated,
    report_main,
    specbundle,
    specbundle_observations,
    uncalibrated_error,
)

# Sources priors.py reads from that are not corpus rows: SGLang #4247 (EAGLE-3 draft cost) and SpecBundle
# (MOE_EXPERT_SHARE is the median over its seven MoE targets).
CITED_PRIOR_SOURCES = frozenset({"sglang-4247", "specbundle"})
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20260801
MIN_ENGINE_ROWS = 20


def prior_sources(rows: Sequence[dict]) -> frozenset[str]:
    return frozenset({r["source"] for r in rows if r["prior_source"]}) | CITED_PRIOR_SOURCES


def repeat_key(row: dict) -> tuple:
    return (row["accept_length"], row["speedup"], row["concurrency"])


def held_out_rows(rows: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(held-out rows, repeats removed) by the rules above."""
    excluded = prior_sources(rows)
    seen: set[tuple] = set()
    kept, repeats = [], []
    for row in rows:
        if row["source"] in excluded or row["steps"] is None:
            continue
        key = repeat_key(row)
        if key in seen:
            repeats.append(row)
            continue
        seen.add(key)
        kept.append(row)
    return kept, repeats


def bootstrap_median(
    errors: Sequence[float],
    sources: Sequence[str],
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """95 % interval of the median |error| when whole sources are resampled with replacement."""
    by_source: dict[str, list[float]] = defaultdict(list)
    for e, s in zip(errors, sources, strict=True):
        by_source[s].append(abs(e))
    groups = list(by_source.values())
    rng = np.random.default_rng(seed)
    medians = []
    for _ in range(samples):
        picked = rng.integers(0, len(groups), len(groups))
        medians.append(float(np.median(np.concatenate([groups[i] for i in picked]))))
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(low), float(high)


def figure(errors: Sequence[float], sources: Sequence[str]) -> dict:
    values = np.abs(np.asarray(errors, dtype=float))
    out = {"n": int(len(values)), "sources": len(set(sources))}
    if len(values):
        out["median"] = float(np.median(values))
        out["interval"] = bootstrap_median(errors, sources) if len(set(sources)) > 1 else None
    return out


def breakdown(rows: Sequence[dict], errors: Sequence[float], key: Callable[[dict], str]) -> dict:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        groups[key(row)].append(i)
    return {
        name: figure([errors[i] for i in idx], [rows[i]["source"] for i in idx])
        for name, idx in sorted(groups.items())
    }


def uncalibrated(rows: Sequence[dict]) -> dict:
    errors = [uncalibrated_error(r) for r in rows]
    sources = [r["source"] for r in rows]
    return {
        **figure(errors, sources),
        "per_engine": breakdown(rows, errors, lambda r: r["engine"]),
        "per_family": breakdown(rows, errors, lambda r: r["family"]),
    }


def calibrated(rows: Sequence[dict]) -> dict:
    """Leave-one-dataset-out on the held-out rows (each engine's deployments; no assumed settings)."""
    pooled = corpus_calibrated(list(rows))
    engine_of = {r["group"]: r["engine"] for r in rows}
    per_engine: dict[str, list[float]] = defaultdict(list)
    for group, median in pooled.get("groups", {}).items():
        per_engine[engine_of[group]].append(median)
    return {
        "pooled": {k: v for k, v in pooled.items() if k != "groups"},
        "deployments": pooled.get("groups", {}),
        "engines": sorted(per_engine),
    }


def report() -> dict:
    rows = json.loads(CORPUS.read_text())["rows"]
    kept, repeats = held_out_rows(rows)
    return {
        "prior_sources": sorted(prior_sources(rows)),
        "held_out_rows": len(kept),
        "repeats_removed": [f"{r['source']}: {r['group']} {r['method']} {r['dataset']}" for r in repeats],
        "uncalibrated": uncalibrated(kept),
        "calibrated_leave_one_dataset_out": calibrated(kept),
        "specbundle_leave_one_out": specbundle(specbundle_observations())["leave_one_out"],
    }


def _line(name: str, f: dict) -> str:
    interval = f.get("interval")
    span = f", 95 % by source {interval[0]:.1%}-{interval[1]:.1%}" if interval else ""
    return f"  {name}: median {f.get('median', float('nan')):.1%} (n={f['n']}, {f['sources']} sources{span})"


def show(out: dict) -> None:
    print(f"held out: {out['held_out_rows']} rows; prior sources left out: {', '.join(out['prior_sources'])}")
    print(f"repeats removed: {len(out['repeats_removed'])}")
    u = out["uncalibrated"]
    print(_line("uncalibrated", u))
    for kind in ("per_engine", "per_family"):
        for name, f in u[kind].items():
            print("  " + _line(name, f))
    c = out["calibrated_leave_one_dataset_out"]
    p = c["pooled"]
    if p.get("n"):
        print(
            f"  calibrated leave-one-dataset-out: median {p['median']:.1%} (n={p['n']}, engines {c['engines']})"
        )
    s = out["specbundle_leave_one_out"]
    print(f"  SpecBundle leave-one-out: median {s['median']:.1%} (n={s['n']})")


def main() -> None:
    report_main((__doc__ or "").splitlines()[0], report, show)


if __name__ == "__main__":
    main()
