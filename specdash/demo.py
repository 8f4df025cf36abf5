"""The demo data set: the PCIe story (docs/cost-model.md) as a native specdash document.

Everything here is labelled demo. The document is deterministic, so loading it twice adds nothing (the
second load is recognised by its sha256), and it goes through the same ingest path as any user file."""

import json
import math
import random
from datetime import datetime, timedelta
from typing import Any

from specdash.costmodel import extend_rates, tau_chain, throughput, verified_tokens
from specdash.costmodel.priors import DeploymentFacts, architecture_for, resolve_costs

DEMO_FILE_NAME = "specdash-demo.json"
TARGET = "Kimi-K2.5 (demo)"
PCIE = "8x RTX PRO 6000, TP8, PCIe"
NVLINK = "8x H200, TP8, NVLink"
RUN_10K = "k25-eagle3-10k"
RUN_TTT5 = "k25-eagle3-100k-ttt5"
RUN_KILLED = "k25-eagle3-ttt3-smoke"

PROFILES: dict[str, dict[str, Any]] = {
    # Baseline 90 tok/s (11.1 ms a step), half of it TP8 all-reduce over PCIe; ~1.93 ms to draft 3 steps.
    # The story's profile states its costs: no round overhead, no verify growth (what the team assumed).
    PCIE: dict(
        baseline_tps=90.0,
        comm_fraction=0.5,
        draft_step_ms=1.93 / 3,
        round_overhead_ms=0.0,
        verify_growth_compute=0.0,
        verify_growth_comm=0.0,
        interconnect="pcie",
        gpu="RTX PRO 6000 Blackwell",
    ),
    NVLINK: dict(
        baseline_tps=125.0, comm_fraction=0.12, draft_step_ms=0.45, interconnect="nvlink", gpu="H200"
    ),
}
ACC_10K = [0.62, 0.53, 0.46]  # chain tau 2.10 at 3 steps
ACC_TTT5_EPOCH1 = [0.742, 0.60, 0.58, 0.56, 0.55]
STEPS_PER_EPOCH = 2000
LOG_EVERY = 50


def ttt5_acceptance(epoch: int) -> list[float]:
    """Per-position training accuracy of the TTT-5 run after `epoch`; improves with diminishing gains."""
    gain = 0.06 * (1 - math.exp(-(epoch - 1) / 2.0))
    return [round(rate + gain * (1 - 0.1 * i), 4) for i, rate in enumerate(ACC_TTT5_EPOCH1)]


def _curves(run: str, final_by_epoch: dict[int, list[float]], seed: int, start: datetime) -> list[dict]:
    """Training loss and acc_i every LOG_EVERY steps, passing through each epoch's final accuracy."""
    rng = random.Random(seed)
    epochs = sorted(final_by_epoch)
    positions = len(final_by_epoch[epochs[0]])
    start_acc = [0.15 * (1 - 0.1 * i) for i in range(positions)]
    points = []
    for step in range(0, epochs[-1] * STEPS_PER_EPOCH + 1, LOG_EVERY):
        progress = step / STEPS_PER_EPOCH
        epoch = min(int(progress) + 1, epochs[-1])
        frac = progress - (epoch - 1)
        before = final_by_epoch.get(epoch - 1, start_acc)
        after = final_by_epoch[epoch]
        # most of an epoch's gain comes early in it
        shape = 1 - math.exp(-4 * frac) if epoch == 1 else frac
        values = {}
        for i in range(positions):
            acc = before[i] + (after[i] - before[i]) * shape + rng.gauss(0, 0.006)
            values[f"train/acc_{i}"] = round(min(max(acc, 0.0), 1.0), 4)
            values[f"train/ploss_{i}"] = round(-math.log(max(acc, 1e-3)) * 1.6 + rng.gauss(0, 0.01), 4)
        values["train/loss"] = round(sum(values[f"train/ploss_{i}"] for i in range(positions)), 4)
        values["train/lr"] = round(
            1e-4 * min(1.0, step / 500) * (1 - step / (len(epochs) * STEPS_PER_EPOCH + 1)), 8
        )
        points.append({"run": run, "step": step, "values": values})
    return points


def _measured(prediction_tps: float, tau: float, tps_factor: float, tau_factor: float) -> tuple[float, float]:
    return round(prediction_tps * tps_factor, 1), round(tau * tau_factor, 2)


def build_document() -> dict:
    start = datetime(2026, 10, 1, 9, 0)
    deployments = [
        dict(
            name=name,
            num_gpus=8,
            tp_size=8,
            engine="sglang",
            target_model=TARGET,
            target_hidden_size=7168,
            is_demo=True,
            notes="Demo deployment profile.",
            **profile,
        )
        for name, profile in PROFILES.items()
    ]
    runs = [
        dict(
            name=RUN_10K,
            framework="specforge",
            target_model=TARGET,
            speculative_algorithm="EAGLE3",
            ttt_length=3,
            hidden_size=21504,
            data_size=10_000,
            status="finished",
            is_demo=True,
            started_at=start.isoformat(),
            ended_at=(start + timedelta(hours=5)).isoformat(),
            notes="Demo: first drafter, 10k samples, TTT 3.",
        ),
        dict(
            name=RUN_TTT5,
            framework="specforge",
            target_model=TARGET,
            speculative_algorithm="EAGLE3",
            ttt_length=5,
            hidden_size=21504,
            data_size=100_000,
            status="finished",
            is_demo=True,
            started_at=(start + timedelta(days=3)).isoformat(),
            ended_at=(start + timedelta(days=5)).isoformat(),
            notes="Demo: deeper training (TTT 5) on 100k samples, for deep speculation on PCIe.",
        ),
        dict(
            name=RUN_KILLED,
            framework="specforge",
            target_model=TARGET,
            speculative_algorithm="EAGLE3",
            ttt_length=3,
            hidden_size=21504,
            data_size=100_000,
            status="killed",
            is_demo=True,
            started_at=(start + timedelta(days=2)).isoformat(),
            ended_at=(start + timedelta(days=2, minutes=4)).isoformat(),
            notes="Demo: smoke run killed after four minutes.",
        ),
    ]
    ttt5 = {epoch: ttt5_acceptance(epoch) for epoch in range(1, 6)}
    checkpoints = [
        dict(
            run=RUN_10K,
            name="epoch_3",
            epoch=3,
            step=3 * STEPS_PER_EPOCH,
            path=f"/ckpt/{RUN_10K}/epoch_3",
            acceptance=ACC_10K,
        )
    ] + [
        dict(
            run=RUN_TTT5,
            name=f"epoch_{e}",
            epoch=e,
            step=e * STEPS_PER_EPOCH,
            path=f"/ckpt/{RUN_TTT5}/epoch_{e}",
            acceptance=ttt5[e],
        )
        for e in range(1, 6)
    ]
    metrics = (
        _curves(RUN_10K, {1: [0.5, 0.4, 0.33], 2: [0.58, 0.49, 0.42], 3: ACC_10K}, 10, start)
        + _curves(RUN_TTT5, ttt5, 5, start)
        + [p for p in _curves(RUN_KILLED, {1: [0.4, 0.3, 0.25]}, 3, start) if p["step"] <= 200]
    )

    benchmarks = []

    def bench(deployment, **fields):
        record = dict(
            deployment=deployment, engine="sglang", concurrency=1, dataset="mtbench", num_prompts=80, **fields
        )
        record.setdefault("output_throughput", record["decode_tps"])
        if record.get("decode_tps"):
            record["median_tpot_ms"] = round(1000 / record["decode_tps"], 2)
        benchmarks.append(record)

    for name, profile in PROFILES.items():
        bench(name, decode_tps=profile["baseline_tps"], label="demo: no speculation")

    # The story: the server was started with EAGLE instead of EAGLE3.
    bench(
        PCIE,
        run=RUN_10K,
        checkpoint="epoch_3",
        drafter_path=f"/ckpt/{RUN_10K}/epoch_3",
        speculative_algorithm="EAGLE",
        num_steps=3,
        topk=1,
        num_draft_tokens=4,
        accept_length=2.1,
        decode_tps=82.3,
        draft_hidden_size=7168,
        label="demo: served with --speculative-algorithm EAGLE (one layer's hidden states)",
    )
    # ... and its rerun with the right flag.
    bench(
        PCIE,
        run=RUN_10K,
        checkpoint="epoch_3",
        drafter_path=f"/ckpt/{RUN_10K}/epoch_3",
        speculative_algorithm="EAGLE3",
        num_steps=3,
        topk=1,
        num_draft_tokens=4,
        accept_length=2.08,
        decode_tps=157.2,
        draft_hidden_size=21504,
        label="demo: rerun with --speculative-algorithm EAGLE3",
    )

    # The TTT-5 run: roughly what the cost model says, except beyond the trained depth.
    rng = random.Random(2026)
    settings = {PCIE: [(3, 4), (5, 6), (7, 8), (15, 16)], NVLINK: [(3, 4), (5, 6), (7, 8)]}
    for deployment, depths in settings.items():
        profile = PROFILES[deployment]
        facts = DeploymentFacts(profile["gpu"], 8, profile["interconnect"], architecture_for(TARGET))
        for epoch in range(1, 6):
            for steps, draft_tokens in depths:
                if epoch < 5 and (deployment != PCIE or steps != 5):
                    continue  # every epoch at the default depth; the last one at every depth
                rates, _ = extend_rates(ttt5[epoch], steps)
                tau = tau_chain(rates)
                # what the cost model predicts from the profile (priors for the costs it leaves unstated)
                params = resolve_costs(profile, facts, profile["baseline_tps"], "eagle3", 1, draft_tokens)
                predicted = throughput(params, tau, steps, draft_tokens)
                if steps > 5:
                    # positions past the trained depth accept far less than the extrapolation assumes
                    tau_factor = (0.93 if steps <= 7 else 0.78) + rng.uniform(-0.01, 0.01)
                else:
                    tau_factor = 1 + rng.uniform(-0.03, 0.02)
                tps_factor = tau_factor * (1 + rng.uniform(-0.03, 0.03))
                decode_tps, accept_length = _measured(predicted.tps, tau, tps_factor, tau_factor)
                bench(
                    deployment,
                    run=RUN_TTT5,
                    checkpoint=f"epoch_{epoch}",
                    drafter_path=f"/ckpt/{RUN_TTT5}/epoch_{epoch}",
                    speculative_algorithm="EAGLE3",
                    num_steps=steps,
                    topk=1,
                    num_draft_tokens=draft_tokens,
                    accept_length=accept_length,
                    decode_tps=decode_tps,
                    draft_hidden_size=21504,
                    label=f"demo: EAGLE3 {steps} steps / {draft_tokens} draft tokens",
                )

    predictions = [
        dict(
            source="roofline-sim",
            run=RUN_TTT5,
            checkpoint="epoch_5",
            deployment=PCIE,
            speculative_algorithm="EAGLE3",
            num_steps=steps,
            topk=1,
            num_draft_tokens=verified_tokens(steps),
            dataset="mtbench",
            predicted_tps=tps,
            accept_length=tau,
        )
        for steps, tps, tau in [(3, 196.0, 2.58), (5, 209.0, 2.95), (7, 197.0, 3.02)]
    ]
    return {
        "specdash": 1,
        "deployments": deployments,
        "runs": runs,
        "checkpoints": checkpoints,
        "metrics": metrics,
        "benchmarks": benchmarks,
        "predictions": predictions,
    }


def demo_bytes() -> bytes:
    return json.dumps(build_document(), indent=1, sort_keys=False).encode()
