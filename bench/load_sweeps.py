"""The public load and depth sweeps the load model is measured on, as load observations per deployment, and
the linear round model it is compared with (round = a + b K + B (c + d K), fitted by least squares).

Sweeps: every deployment of the published corpus (tests/fixtures/published/corpus.json) with a published
setting at two or more cells (load x setting), each dataset its own sweep (datasets differ in their
baseline), and SpecBundle's (tests/fixtures/real/specbundle-data.json) per target and dataset. Each row
becomes a speculative observation (per-request tok/s = speedup x the no-speculation tok/s at its load)
and each published no-speculation tok/s an observation of depth 0. Rows without a no-speculation tok/s
come from one-load sources and speak in speedups: a baseline of 100 tok/s stands for it."""

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.costmodel_accuracy import CORPUS, SPECBUNDLE, deployment_facts
from specdash.costmodel.loadmodel import LoadObservation, LoadParams, prior_load_params
from specdash.costmodel.priors import DeploymentFacts, architecture_for

UNSTATED_BASELINE_TPS = 100.0


@dataclass(frozen=True)
class Sweep:
    name: str
    source: str
    engine: str
    family: str
    facts: DeploymentFacts
    observations: tuple[LoadObservation, ...]

    def prior(self) -> LoadParams:
        """The priors at the T1 of the lowest load's no-speculation run (fit_load_model rescales it)."""
        families = {o.drafter: self.family for o in self.observations if o.speculative}
        return prior_load_params(self.facts, 10.0, families)

    @property
    def loads(self) -> list[float]:
        return sorted({o.concurrency for o in self.observations if o.speculative})

    @property
    def settings(self) -> list[tuple[int, int, int | None]]:
        return sorted({(o.steps, o.topk, o.draft_tokens or 0) for o in self.observations if o.speculative})


def corpus_sweeps(rows: Sequence[dict], exclude_sources: frozenset[str] = frozenset()) -> list[Sweep]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        if row["steps"] is not None and row["source"] not in exclude_sources:
            groups[(row["group"], row["dataset"])].append(row)
    sweeps = []
    for (group, dataset), items in groups.items():
        cells = {(r["concurrency"], r["steps"], r["topk"], r["draft_tokens"]) for r in items}
        if len(cells) < 2:
            continue
        loads = {r["concurrency"] for r in items}
        if len(loads) > 1 and not all(r.get("baseline_tps") for r in items):
            continue  # per-request tok/s at several loads needs each load's own baseline
        observations, baselines = [], {}
        for r in items:
            load = r["concurrency"]
            base = (r.get("baseline_tps") or UNSTATED_BASELINE_TPS * load) / load  # aggregate -> per request
            baselines[load] = base
            observations.append(
                LoadObservation(
                    load,
                    r["steps"],
                    r["speedup"] * base,
                    r["accept_length"],
                    r["topk"],
                    r["draft_tokens"],
                    r["drafter"],
                    r["method"],
                )
            )
        observations += [
            LoadObservation(load, 0, base, label="no speculation") for load, base in baselines.items()
        ]
        first = items[0]
        sweeps.append(
            Sweep(
                f"{group} / {dataset}",
                first["source"],
                first["engine"],
                first["family"],
                deployment_facts(first),
                tuple(observations),
            )
        )
    return sweeps


def specbundle_sweeps(path: Path = SPECBUNDLE) -> list[Sweep]:
    data = json.loads(path.read_text())
    sweeps = []
    for target, benchmarks in data.items():
        facts = DeploymentFacts(architecture=architecture_for(target), engine="sglang")
        for dataset, bench in benchmarks.items():
            observations = []
            for result in bench["results"]:
                batch = float(result["batch_size"])
                rows = {m["Name"]: m for m in result["metrics"]}
                base = rows.pop("Wihtout EAGLE3")["output_throughput"] / batch
                observations.append(LoadObservation(batch, 0, base, label="no speculation"))
                for drafter, m in rows.items():
                    observations.append(
                        LoadObservation(
                            batch,
                            result["steps"],
                            m["output_throughput"] / batch,
                            m["accept_length"],
                            result["topk"],
                            result["num_draft_tokens"],
                            drafter,
                            f"{result['steps']}/{result['topk']}/{result['num_draft_tokens']}",
                        )
                    )
            sweeps.append(
                Sweep(
                    f"specbundle {target} / {dataset}",
                    "specbundle",
                    "sglang",
                    "eagle3",
                    facts,
                    tuple(observations),
                )
            )
    return sweeps


def load_corpus_rows() -> list[dict]:
    rows: list[dict] = json.loads(CORPUS.read_text())["rows"]
    return rows


class LinearRoundModel:
    """round_ms = a + b K + B (c + d K) (K = 0 without speculation), least squares on relative round-time
    errors: the four-parameter model the speculators team fitted to their GuideLLM sweeps."""

    def __init__(self, observations: Sequence[LoadObservation]):
        design = np.array([self.row(o) for o in observations], dtype=float)
        target = np.array([o.measured_round_ms for o in observations], dtype=float)
        # relative errors: each row divided by its measured round
        self.coef = np.linalg.lstsq(design / target[:, None], np.ones(len(target)), rcond=None)[0]

    @staticmethod
    def row(o: LoadObservation) -> list[float]:
        return [1.0, float(o.steps), o.concurrency, o.concurrency * o.steps]

    def round_ms(self, o: LoadObservation) -> float:
        return float(np.dot(self.coef, self.row(o)))

    def tps(self, o: LoadObservation) -> float:
        round_ms = self.round_ms(o)
        tau = o.accept_length if o.speculative else 1.0
        return 1000.0 * tau / round_ms if round_ms > 0 else float("inf")
