"""`specdash schedule`: the best draft depth of a checkpoint at each batch size on a deployment, as a
table, JSON, or the engines' own configuration.

The config syntaxes are the engines' own: vLLM's `--speculative-config` key
`num_speculative_tokens_per_batch_size`, a list of `[bs_lo, bs_hi, K]` ranges starting at batch 1
(vllm-project/vllm, vllm/v1/spec_decode/dynamic/utils.py, validate_and_normalize_dynamic_sd_schedule; the
key is declared in vllm/config/speculative.py); TensorRT-LLM's `speculative_config.draft_len_schedule`,
{batch size: draft length from that batch size up} holding {1: max_draft_len}
(NVIDIA/TensorRT-LLM, tensorrt_llm/llmapi/llm_args.py, DecodingBaseConfig). costmodel/schedule.py writes
both."""

import json

import click

from specdash.answers.schedule import CheckpointSchedule, ScheduleError, checkpoint_schedule
from specdash.cli.common import db_option, open_db
from specdash.costmodel.context import parse_contexts
from specdash.costmodel.domain import PredictionSource, TauSource
from specdash.costmodel.schedule import ScheduleEntry, trtllm_config, vllm_context_config
from specdash.db.engine import reading

# vLLM's `method` and TensorRT-LLM's `decoding_type` for a run's speculative algorithm
VLLM_METHODS = {"EAGLE3": "eagle3", "EAGLE": "eagle", "MTP": "mtp", "NEXTN": "mtp", "MEDUSA": "medusa"}
TRTLLM_TYPES = {"EAGLE3": "Eagle3", "EAGLE": "Eagle", "MTP": "MTP", "NEXTN": "MTP", "MEDUSA": "Medusa"}


def _concurrencies(_ctx, _param, value: str | None) -> list[float] | None:
    if not value:
        return None
    try:
        loads = [float(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: give batch sizes separated by commas, e.g. 1,8,32") from None
    if not loads or any(load < 1 for load in loads):
        raise click.BadParameter(f"{value!r}: every batch size must be >= 1")
    return loads


def _contexts(_ctx, _param, value: str | None) -> list[float] | None:
    if not value:
        return None
    try:
        contexts = parse_contexts(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    if not contexts:
        raise click.BadParameter(
            f"{value!r}: give context lengths in tokens separated by commas, e.g. 1000,8k,32k"
        )
    return list(contexts)


def _number(value: float) -> str:
    return f"{value:g}"


def extrapolation_line(schedule: CheckpointSchedule) -> str | None:
    """Which batch sizes of the schedule lie outside the loads the deployment was measured at, in a line."""
    outside = schedule.extrapolated_loads
    if not outside:
        return None
    measured = ", ".join(_number(load) for load in schedule.measured_loads) or "no load"
    return (
        f"extrapolated: batch size {', '.join(_number(load) for load in outside)} (measured at {measured}): "
        "nothing measured says how the round grows there; no depth is predicted to gain more than at the "
        "nearest measured load"
    )


def _where(entry: ScheduleEntry) -> str:
    at = f"batch {_number(entry.concurrency)}"
    return at if entry.context_tokens is None else f"{at}, context {entry.context_tokens:,.0f}"


def context_line(schedule: CheckpointSchedule) -> str | None:
    """Which contexts of the schedule lie outside those the deployment's benchmarks ran at, in a line."""
    outside, lengths = schedule.extrapolated_contexts, schedule.lengths
    if not outside or lengths is None:
        return None
    measured = (
        "mean decode context " + ", ".join(f"{c:,.0f}" for c in lengths.measured)
        if lengths.measured
        else f"no stated context (taken as {lengths.reference_tokens:,.0f} tokens)"
    )
    how = "fitted to them" if lengths.fitted else "the prior from the target's KV geometry"
    return (
        f"extrapolated: context {', '.join(f'{c:,.0f}' for c in outside)} tokens (measured at {measured}): "
        f"the KV read per request ({lengths.kv_share:.4f} of a step per 1,000 tokens) is {how}"
    )


def schedule_table(schedule: CheckpointSchedule) -> str:
    """The schedule as the terminal shows it, with what it rests on."""
    source = (
        f"calibrated parameter set v{schedule.version}"
        if schedule.source == PredictionSource.CALIBRATED
        else "the priors (uncalibrated: run `specdash calibrate --apply` to fit this deployment)"
    )
    tau = "its training rates" if schedule.tau_source == TauSource.TRAINING else "its measured accept lengths"
    lines = [
        f"{schedule.run}/{schedule.checkpoint} on {schedule.deployment}: best depth per batch size, "
        f"from {source}; tau from {tau}",
    ]
    if schedule.baseline_estimated:
        lines.append(
            "no benchmark without speculation: the baseline is estimated from the depth sweep, speedups are "
            "against that estimate (estimated)"
        )
    lines += filter(None, [extrapolation_line(schedule), context_line(schedule)])
    lines += [f"{_where(e)}: K={e.num_steps}: {e.evidence}" for e in schedule.entries if e.evidence]
    with_context = any(e.context_tokens is not None for e in schedule.entries)
    header: tuple[str, ...] = (
        "context",
        "concurrency",
        "num_steps",
        "tau",
        "tok/s",
        "aggregate tok/s",
        "speedup",
    )
    rows: list[tuple[str, ...]] = [
        (
            f"{e.context_tokens:,.0f}" if e.context_tokens is not None else "",
            _number(e.concurrency),
            str(e.num_steps),
            f"{e.accept_length:.2f}",
            f"{e.tok_s:.1f}",
            f"{e.aggregate_tok_s:.1f}",
            f"{e.speedup:.2f}x"
            + (" (estimated)" if e.baseline_estimated else "")
            + (" (extrapolated)" if e.extrapolated else ""),
        )
        for e in schedule.entries
    ]
    if not with_context:
        header, rows = header[1:], [r[1:] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


@click.command()
@click.option("--deployment", required=True, help="The deployment's name.")
@click.option("--run", "run_name", required=True, help="The drafter's run.")
@click.option("--checkpoint", required=True, help="The run's checkpoint.")
@click.option(
    "--concurrency",
    callback=_concurrencies,
    metavar="B1,B2,...",
    help="Batch sizes (concurrent requests) to schedule at; any number >= 1, not only measured loads "
    "(default: the loads the deployment was benchmarked at).",
)
@click.option(
    "--context",
    "contexts",
    callback=_contexts,
    metavar="L1,L2,...",
    help="Mean decode contexts in tokens (prompt + half the output; 8k = 8000) to schedule at, each with "
    "every batch size (default: the context the deployment's benchmarks ran at).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(1, 64),
    help="Deepest draft to consider (default: the run's TTT depth, or its deepest measured one; at least 8).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "vllm", "trtllm"]),
    default="table",
    show_default=True,
    help="json: a list of objects; vllm / trtllm: the schedule in the engine's own config syntax.",
)
@db_option
@click.pass_context
def schedule(ctx, deployment, run_name, checkpoint, concurrency, contexts, max_steps, fmt) -> None:
    """The best draft depth K at each batch size for one checkpoint on one deployment, with its predicted
    per-request tok/s, aggregate tok/s and speedup (against an estimated baseline when the deployment ran
    only with speculation, marked so). Depth 0 means: do not speculate at that batch size. A batch size
    outside the loads the deployment was measured at is marked extrapolated, and so is a context outside
    those its benchmarks stated. With --context the schedule covers batch x context: JSON rows carry
    `context_tokens` and `by_depth` (every depth considered), --format vllm the 5-item
    `[bs_lo, bs_hi, ctx_lo, ctx_hi, K]` ranges of vLLM PR #48944 (proposed).

    \b
    Example:
      specdash schedule --deployment "Llama-3.1-8B-Instruct, vllm" --run llama31-eagle3 \\
          --checkpoint epoch_3 --concurrency 1,8,32,128 --format vllm
      specdash schedule --deployment "Llama-3.1-8B-Instruct, vllm" --run llama31-eagle3 \\
          --checkpoint epoch_3 --concurrency 1,16,64 --context 1k,8k,32k --format json
    """
    engine = open_db(ctx)
    with reading(engine) as session:
        try:
            made = checkpoint_schedule(
                session, deployment, run_name, checkpoint, concurrency, max_steps, contexts
            )
        except ScheduleError as exc:
            raise click.ClickException(str(exc)) from None
    algorithm = (made.algorithm or "EAGLE3").upper()
    if fmt == "json":
        click.echo(json.dumps([e.as_json() for e in made.entries], indent=2))
    elif fmt == "vllm":
        method = VLLM_METHODS.get(algorithm, algorithm.lower())
        click.echo(vllm_context_config(made.entries, method, made.checkpoint_path))
    elif fmt == "trtllm":
        if contexts and len(set(contexts)) > 1:
            raise click.ClickException(
                "TensorRT-LLM's draft_len_schedule has no context axis: give one --context for --format trtllm"
            )
        click.echo(trtllm_config(made.entries, TRTLLM_TYPES.get(algorithm, "Eagle3")))
    else:
        click.echo(schedule_table(made))
