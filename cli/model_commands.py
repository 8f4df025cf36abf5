"""`specdash model` (the cost model as a calculator) and `specdash calibrate` (fit it to benchmarks)."""

import json

import click
from sqlalchemy import select

from specdash.answers.calibrate import calibrate_all
from specdash.answers.estimates import fitted_estimates
from specdash.answers.refresh import refresh
from specdash.cli.common import db_option, open_db
from specdash.costmodel import CostParams
from specdash.costmodel.calculator import DEFAULT_STEPS, Acceptance, calculate
from specdash.db.calibration import apply_calibration
from specdash.db.engine import transaction
from specdash.db.models import Deployment


def _rates(ctx, param, value: str | None) -> list[float] | None:
    if value is None:
        return None
    try:
        rates = [float(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {value!r}") from None
    if not rates or not all(0.0 <= r <= 1.0 for r in rates):
        raise click.BadParameter("expected one or more rates between 0 and 1")
    return rates


non_negative = click.FloatRange(min=0)
positive = click.FloatRange(min=0, min_open=True)


@click.command()
@click.option("--baseline-tps", type=positive, help="No-speculation decode tok/s (per request).")
@click.option("--base-step-ms", type=positive, help="...or the no-speculation step time in ms.")
@click.option(
    "--comm-fraction",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share f of a baseline step spent in TP collectives (paid once per verify).",
)
@click.option(
    "--accept-length", type=click.FloatRange(min=1), help="tau, tokens per round incl. the bonus token."
)
@click.option("--acceptance-rates", callback=_rates, help="Conditional per-position rates p1,p2,... (chain).")
@click.option("--survival-rates", callback=_rates, help="Per-position survival rates s1,s2,... (vLLM's).")
@click.option("--rate", type=click.FloatRange(0, 1), help="One i.i.d. acceptance rate for every position.")
@click.option(
    "--simulated-acc-len", type=non_negative, help="SpecForge's simulated_acc_len (no bonus token)."
)
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    help=f"Draft steps K (default: the number of rates given, else {DEFAULT_STEPS}).",
)
@click.option("--topk", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--draft-tokens", type=click.IntRange(min=2), help="Verified tokens N incl. the root (default K*topk+1)."
)
@click.option("--draft-ms", type=non_negative, help="Drafting time of a whole round, ms.")
@click.option("--draft-step-ms", type=non_negative, help="...or of one draft step, ms.")
@click.option(
    "--draft-branch-ms", type=non_negative, default=0.0, help="Extra ms per step per candidate beyond 1."
)
@click.option("--overhead-ms", type=non_negative, default=0.0, help="Fixed per-round overhead, ms.")
@click.option("--verify-growth-compute", type=non_negative, default=0.0, help="b_c per extra verified token.")
@click.option("--verify-growth-comm", type=non_negative, default=0.0, help="b_m per extra verified token.")
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Deepest setting considered for the optimal depth (needs a rate curve).",
)
@click.option("--measured-tps", type=positive, help="Measured tok/s: back-solve the round and the gap.")
@click.option(
    "--measured-accept-length", type=click.FloatRange(min=1), help="Measured tau (default: --accept-length)."
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def model(
    baseline_tps,
    base_step_ms,
    comm_fraction,
    accept_length,
    acceptance_rates,
    survival_rates,
    rate,
    simulated_acc_len,
    steps,
    topk,
    draft_tokens,
    draft_ms,
    draft_step_ms,
    draft_branch_ms,
    overhead_ms,
    verify_growth_compute,
    verify_growth_comm,
    max_steps,
    measured_tps,
    measured_accept_length,
    fmt,
) -> None:
    """Predict tok/s of one speculation setting, and back-solve a measurement.

    tok/s = 1000 tau / T_round with T_round = verify(N) + K draft steps + overhead.

    \b
    Example:
      specdash model --baseline-tps 90 --comm-fraction 0.5 --accept-length 2.1 \\
          --draft-ms 1.93 --measured-tps 82.3
      specdash model --baseline-tps 90 --comm-fraction 0.5 --draft-step-ms 0.643 \\
          --acceptance-rates 0.742,0.60,0.58,0.56,0.55 --format json
    """
    if (baseline_tps is None) == (base_step_ms is None):
        raise click.UsageError("give one of --baseline-tps or --base-step-ms")
    if draft_ms is not None and draft_step_ms is not None:
        raise click.UsageError("give --draft-ms or --draft-step-ms, not both")
    try:
        acceptance = Acceptance(accept_length, acceptance_rates, survival_rates, rate, simulated_acc_len)
    except ValueError:
        raise click.UsageError(
            "give exactly one of --accept-length, --acceptance-rates, --survival-rates, "
            "--rate, --simulated-acc-len"
        ) from None
    curve = acceptance_rates or survival_rates
    resolved_steps = steps or (len(curve) if curve else DEFAULT_STEPS)
    params = CostParams(
        baseline_tps=baseline_tps or 1000.0 / base_step_ms,
        comm_fraction=comm_fraction,
        draft_step_ms=draft_ms / resolved_steps if draft_ms is not None else (draft_step_ms or 0.0),
        draft_branch_ms=draft_branch_ms,
        round_overhead_ms=overhead_ms,
        verify_growth_compute=verify_growth_compute,
        verify_growth_comm=verify_growth_comm,
    )
    out = calculate(
        params,
        acceptance,
        resolved_steps,
        topk,
        draft_tokens,
        measured_tps,
        measured_accept_length,
        max_steps,
    )
    _show(out, fmt)


def _show(out: dict, fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps(out, indent=2))
        return
    width = max(len(key) for key in out)
    for key, value in out.items():
        if value is not None:
            click.echo(f"{key.ljust(width)}  {_cell(key, value)}")


def _cell(key: str, value) -> str:
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if key == "gap":
        return f"{value:+.1%}"
    if key in ("speedup", "acceptance_factor", "round_factor"):
        return f"{value:.3f}"
    return f"{value:.2f}"


def _free_name(report, name: str) -> str:
    drafter = name.removeprefix("draft_step_ms:")
    return name if drafter == name else f"draft_step_ms[{report.drafter_names.get(drafter, drafter)}]"


def _report_lines(report) -> list[str]:
    p, fit = report.params, report.fit
    excluded = ", ".join(f"{reason}: {n}" for reason, n in sorted(report.exclusions.items()))
    lines = [
        f"{report.deployment_name}: {report.n_benchmarks} benchmark(s) fitted"
        + (f", {report.excluded} excluded ({excluded})" if report.excluded else "")
        + (
            f"; costs in ms at concurrency {report.reference_concurrency}"
            if report.reference_concurrency is not None
            else ""
        ),
        f"  draft_step_ms {p.draft_step_ms:.3f}  draft_branch_ms {p.draft_branch_ms:.3f}  "
        f"round_overhead_ms {p.round_overhead_ms:.3f}  verify_growth {p.verify_growth:.4f}  "
        f"acc_to_acceptance {p.acc_to_acceptance:.3f}",
        *(
            [
                "  draft_step_ms by drafter: "
                + ", ".join(f"{name} {ms:.3f}" for name, ms in sorted(report.draft_step_ms_by_name().items()))
            ]
            if len(p.draft_step_ms_by_drafter) > 1
            else []
        ),
        f"  free: {', '.join(_free_name(report, name) for name in fit.free)}",
        f"  |predicted - measured| / measured tok/s: median {fit.median_abs_rel_error:.1%}, "
        f"p90 {fit.p90_abs_rel_error:.1%}; {fit.cross_validation}: median "
        f"{fit.loo_median_abs_rel_error:.1%}, p90 {fit.loo_p90_abs_rel_error:.1%}; "
        f"error band {report.error_band:.1%}",
    ]
    if report.baseline_estimated:
        lines.append(
            "  baselines estimated from the depth sweep (no benchmark without speculation): speedups are "
            "against an estimate"
        )
    if report.load_params is not None:
        lines.append("  load model: " + load_model_text(report.load_params, report.drafter_names))
    return lines


def load_model_text(params, names: dict[str, str]) -> str:
    """The fitted round of batch and depth in one line: T1, knee, floors, exponent, drafting, overhead."""
    drafters = ", ".join(f"{names.get(d, d)} {ms:.3f}" for d, ms in params.draft_step_ms_by_drafter)
    return (
        f"step_ms {params.step_ms:.3f}  knee_tokens {params.knee_tokens:.0f}  token_floor "
        f"{params.token_floor:.4f}  request_floor {params.request_floor:.4f}  load_exponent "
        f"{params.load_exponent:.2f}  overhead_ms "
        f"{params.overhead_ms:.3f}  draft_step_ms {drafters or f'{params.draft_step_ms:.3f}'}"
    )


# What `calibrate --format json` shows of a fit, as the calibrated set records it
FIT_COUNTS = ("n_benchmarks", "excluded", "exclusions")
FIT_QUALITY = (
    "error_band",
    "reference_concurrency",
    "free",
    "median_abs_rel_error",
    "p90_abs_rel_error",
    "loo_median_abs_rel_error",
    "loo_p90_abs_rel_error",
    "cross_validation",
)


def _report_json(report) -> dict:
    fit = report.calibrated_set().to_json()
    return {
        "deployment_id": report.deployment_id,
        "deployment": report.deployment_name,
        **{key: fit[key] for key in FIT_COUNTS},
        "params": {**vars(report.params), "draft_step_ms_by_drafter": report.draft_step_ms_by_name()},
        **{key: fit[key] for key in FIT_QUALITY},
        "baseline_estimated": report.baseline_estimated,
        "load_model": fit["load_model"],
    }


@click.command()
@click.option("--deployment", "deployment_name", help="Only this deployment (default: every one).")
@click.option(
    "--apply",
    "apply_fit",
    is_flag=True,
    help="Save each fit as a new calibrated parameter set and refresh predictions and gaps.",
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
@click.pass_context
def calibrate(ctx: click.Context, deployment_name, apply_fit, fmt) -> None:
    """Fit each deployment's draft step, branch, overhead, verify growth and acc-to-acceptance factor to
    its trusted benchmarks (robust least squares; critical diagnoses excluded) and show the fit.

    \b
    Example:
      specdash calibrate
      specdash calibrate --deployment "8x RTX PRO 6000, TP8, PCIe" --apply
    """
    engine = open_db(ctx)
    with transaction(engine) as session:
        deployment_id = None
        if deployment_name is not None:
            deployment_id = session.scalar(select(Deployment.id).where(Deployment.name == deployment_name))
            if deployment_id is None:
                known = (
                    ", ".join(session.scalars(select(Deployment.name).order_by(Deployment.name))) or "none"
                )
                raise click.ClickException(f"no deployment named {deployment_name!r}; known: {known}")
        # the load models behind estimated baselines first, fitted again only where their data changed
        # materially (and stored), so that the calibration below reads them as a refresh does
        fitted = fitted_estimates(session, None if deployment_id is None else [deployment_id], keep=True)
        names = {i: name for i, name in session.execute(select(Deployment.id, Deployment.name))}
        refitted = [names[d] for d in fitted.refitted]
        reports, skipped = calibrate_all(session, deployment_id)
        saved = {r.deployment_id: apply_calibration(session, r) for r in reports} if apply_fit else {}
        summary = refresh(session) if saved else None
    if fmt == "json":
        rows = [
            _report_json(r) | ({"parameter_set_version": saved[r.deployment_id].version} if saved else {})
            for r in reports
        ]
        skipped_rows = [
            {"deployment": s.deployment_name, "reason": s.reason, "exclusions": s.exclusions} for s in skipped
        ]
        out = {"calibrated": rows, "skipped": skipped_rows, "load_model_refitted": refitted}
        click.echo(json.dumps(out, indent=2))
        return
    for name in refitted:
        click.echo(f"{name}: load model refitted (baselines estimated from its speculative benchmarks)")
    for report in reports:
        click.echo("\n".join(_report_lines(report)))
        if report.deployment_id in saved:
            click.echo(
                f"  saved as parameter set v{saved[report.deployment_id].version} (calibrated, active)"
            )
    for s in skipped:
        click.echo(f"{s.deployment_name}: skipped: {s.reason}")
    if summary is not None:
        click.echo(
            f"{summary.predictions} prediction(s) refreshed, {summary.gaps} gap(s), "
            f"{summary.new_alerts} new alert(s)"
        )
    elif reports and not apply_fit:
        click.echo("(not saved: pass --apply to store these as calibrated parameter sets)")
