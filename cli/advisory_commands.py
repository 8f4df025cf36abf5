"""`specdash advisories`: list the depth advisories, or change one's status with a note."""

import json

import click

from specdash.cli.common import db_option, open_db
from specdash.db.engine import reading, transaction
from specdash.db.models import GAP_STATUSES

JSON_FIELDS = (
    "id",
    "run",
    "deployment",
    "concurrency",
    "trained_depth",
    "best_depth",
    "gain",
    "trained_tps",
    "best_tps",
    "suggested_ttt",
    "time_factor",
    "curve_source",
    "message",
    "active",
    "status",
    "note",
)


def _table(rows: list[dict]) -> str:
    if not rows:
        return "no advisories: every run's training configuration suits its deployments"
    lines = [
        f"#{r['id']} [{r['status']}{'' if r['active'] else ', no longer holds'}] {r['run']}: {r['message']}"
        + (f"\n    note: {r['note']}" if r["note"] else "")
        for r in rows
    ]
    return "\n".join(lines)


@click.command()
@click.option(
    "--status",
    type=click.Choice([*GAP_STATUSES, "all"]),
    default="open",
    show_default=True,
    help="Which advisories to list (open lists those that still hold).",
)
@click.option("--run", "run_name", help="Only this run's advisories.")
@click.option(
    "--set",
    "set_status",
    nargs=2,
    type=(int, click.Choice(GAP_STATUSES)),
    metavar="ID STATUS",
    help="Change advisory ID to STATUS (with --who, and --note to say why).",
)
@click.option("--who", help="Who changes the status (recorded in the history).")
@click.option("--note", help="A note recorded with the change.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
@click.pass_context
def advisories(ctx: click.Context, status, run_name, set_status, who, note, fmt) -> None:
    """Depth advisories: runs trained shallower than a deployment they are for wants.

    For each deployment serving a run's target model (or named with --target-deployment at ingest) and
    each load, the cost model's best draft depth for the run's acceptance curve is compared with the
    run's TTT length; a gain of at least 5 % raises an advisory, which resolves itself when the curve
    no longer asks for it.

    \b
    Example:
      specdash advisories
      specdash advisories --set 1 investigating --who ana --note "restarting with TTT 7"
    """
    from specdash.db.advisories import AdvisoryChangeError, advisory_rows, change_advisory_status

    engine = open_db(ctx)
    if set_status:
        advisory_id, new_status = set_status
        try:
            with transaction(engine) as session:
                change_advisory_status(session, advisory_id, new_status, who or "", note)
        except AdvisoryChangeError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(f"advisory {advisory_id} is now {new_status}")
        return
    with reading(engine) as session:
        run_ids = None
        if run_name:
            from sqlalchemy import select

            from specdash.db.models import Run

            run_id = session.scalar(select(Run.id).where(Run.name == run_name))
            if run_id is None:
                raise click.ClickException(f"no run named {run_name!r}")
            run_ids = [run_id]
        statuses = () if status == "all" else (status,)
        rows = advisory_rows(session, run_ids, statuses, active_only=status == "open")
    if fmt == "json":
        click.echo(json.dumps([{k: r[k] for k in JSON_FIELDS} for r in rows], indent=2))
    else:
        click.echo(_table(rows))
