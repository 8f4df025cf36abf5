"""`specdash alerts` (list, group) and `specdash alert ID` (show one, change its status): the same alerts,
with the same ids, as the dashboard's Alerts page."""

import getpass
import json

import click

from specdash.cli.common import db_option, open_db, shown, text_table
from specdash.costmodel.diagnoses import ALERT_SEVERITIES
from specdash.costmodel.domain import ACTIVE_STATUSES
from specdash.db.alert_rows import AlertGroup
from specdash.db.engine import reading, transaction
from specdash.db.models import GAP_STATUSES, SETTING_FIELDS
from specdash.labels import gap_text, setting_label

LIST_FIELDS = (
    "alert_id",
    "run",
    "checkpoint",
    "deployment",
    "source",
    *SETTING_FIELDS,
    "measured_tps",
    "predicted_tps",
    "gap",
    "is_alert",
    "severity",
    "code",
    "reason",
    "status",
    "note",
    "muted",
)


def _filters(status, severity, deployment, run, diagnosis, show, muted):
    from specdash.db.alerts import AlertFilters

    statuses = tuple(GAP_STATUSES) if "all" in status else tuple(status)
    raised = {"alerts": True, "quiet": False, "all": None}[show]
    return AlertFilters(
        statuses=statuses,
        severities=tuple(severity),
        deployment=deployment,
        run=run,
        diagnosis=diagnosis,
        raised=raised,
        muted=None if muted else False,
    )


def alert_table(rows: list[dict]) -> str:
    """Alerts as the terminal shows them: one aligned line each (also `specdash check`)."""
    header = (
        "id",
        "severity",
        "gap",
        "run",
        "checkpoint",
        "deployment",
        "setting",
        "against",
        "status",
        "diagnosis",
    )
    lines: list[tuple[str, ...]] = [header]
    for r in rows:
        lines.append(
            tuple(
                shown(cell)
                for cell in (  # names as text: no escape sequence reaches the terminal
                    str(r["alert_id"]),
                    (r["severity"] or "none") if r["is_alert"] else "-",
                    gap_text(r["gap"]),
                    r["run"],
                    r["checkpoint"],
                    r["deployment"],
                    setting_label(r),
                    r["source"] or "-",
                    r["status"] + (" (muted)" if r["muted"] else ""),
                    r["code"] or "-",
                )
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


@click.command()
@click.option(
    "--status",
    multiple=True,
    type=click.Choice([*GAP_STATUSES, "all"]),
    default=ACTIVE_STATUSES,
    show_default=True,
    help="Repeat for several.",
)
@click.option("--severity", multiple=True, type=click.Choice(ALERT_SEVERITIES))
@click.option("--deployment", help="Only this deployment.")
@click.option("--run", help="Only this run.")
@click.option("--diagnosis", help="Only alerts led by this diagnosis code (e.g. algorithm_mismatch).")
@click.option(
    "--show",
    type=click.Choice(["alerts", "quiet", "all"]),
    default="alerts",
    show_default=True,
    help="alerts; quiet: benchmarks that are not alerts (with why); all: both.",
)
@click.option("--muted", is_flag=True, help="Include alerts whose diagnosis is muted on their deployment.")
@click.option(
    "--group-by",
    type=click.Choice(["deployment", "run", "diagnosis"]),
    help="Count the alerts per group instead of listing them.",
)
@click.option("--limit", type=click.IntRange(min=1), default=200, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
@click.pass_context
def alerts(ctx, status, severity, deployment, run, diagnosis, show, muted, group_by, limit, fmt) -> None:
    """List alerts: one per benchmark (its id is the benchmark's), judged against the best prediction that
    covers it, the most severe first.

    \b
    Example:
      specdash alerts
      specdash alerts --group-by diagnosis
      specdash alerts --status all --show quiet --format json
    """
    from specdash.db import alerts as queries

    filters = _filters(status, severity, deployment, run, diagnosis, show, muted)
    with reading(open_db(ctx)) as session:
        if group_by:
            groups = queries.alert_groups(session, filters, group_by)
        else:
            rows, total = queries.alert_page(session, filters, 0, limit)
    if group_by:
        if fmt == "json":
            # laid out as this command has always written it ("key":value)
            click.echo(json.dumps([group._asdict() for group in groups], indent=2, separators=(",", ":")))
        else:
            click.echo(text_table(AlertGroup._fields, [tuple(g) for g in groups]) if groups else "no alerts")
        return
    if fmt == "json":
        click.echo(json.dumps([{k: r[k] for k in LIST_FIELDS} for r in rows], indent=2, default=str))
        return
    if not rows:
        click.echo("no alerts match")
        return
    click.echo(alert_table(rows))
    if total is not None and total > len(rows):
        click.echo(f"\n{len(rows)} of {total} shown (--limit)", err=True)


@click.command()
@click.argument("alert_id", type=int)
@click.option("--status", type=click.Choice(GAP_STATUSES), help="The alert's new status.")
@click.option("--note", help="What you found or did (recorded in the history).")
@click.option("--who", help="Who you are, for the history (default: your login name).")
@click.option(
    "--mute",
    "mute_reason",
    metavar="REASON",
    help="Mute the alert's leading diagnosis on its deployment, for this reason.",
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
@click.pass_context
def alert(ctx, alert_id, status, note, who, mute_reason, fmt) -> None:
    """Show one alert (the id the dashboard shows: the benchmark's), or change its status and note.

    \b
    Example:
      specdash alert 3
      specdash alert 3 --status explained --note "served with EAGLE, not EAGLE3"
      specdash alert 12 --mute "TTT-5 drafter on purpose; a deeper run is training"
    """
    from specdash.db import alerts as queries

    engine = open_db(ctx)
    who = who or getpass.getuser()
    if status or note or mute_reason:
        try:
            with transaction(engine) as session:
                detail = queries.alert_detail(session, alert_id)
                if detail is None:
                    raise queries.AlertChangeError(f"no alert with id {alert_id}")
                if status or note:
                    queries.change_status(session, alert_id, status or detail["status"], who, note)
                if mute_reason:
                    if not detail["code"]:
                        raise queries.AlertChangeError(f"alert #{alert_id} has no diagnosis to mute")
                    queries.mute_diagnosis(session, detail["deployment"], detail["code"], mute_reason, who)
        except queries.AlertChangeError as exc:
            raise click.ClickException(str(exc)) from None
    with reading(engine) as session:
        detail = queries.alert_detail(session, alert_id)
        history = queries.alert_history(session, alert_id) if detail else None
    if detail is None or history is None:
        raise click.ClickException(f"no alert with id {alert_id}")
    if fmt == "json":
        out = {k: detail[k] for k in LIST_FIELDS} | {
            "diagnoses": detail["diagnoses"],
            "history": [event._asdict() for event in history],
            "sources": [gap._asdict() for gap in detail["analysis"]],
        }
        click.echo(json.dumps(out, indent=2, default=str))
        return
    verdict = f"{detail['severity'] or 'none'} alert" if detail["is_alert"] else "not an alert"
    click.echo(
        shown(
            f"alert #{alert_id}: {detail['run']} / {detail['checkpoint']} on {detail['deployment']}, "
            f"{setting_label(detail)}, concurrency {detail['concurrency']}"
        )
    )
    click.echo(shown(f"  {verdict}, status {detail['status']}" + (" (muted)" if detail["muted"] else "")))
    click.echo(shown(f"  why: {detail['reason']}"))
    for d in detail["diagnoses"]:
        click.echo(shown(f"  {d['severity']:<8} {d['code']}: {d['message']}"))
    if detail["note"]:
        click.echo(shown(f"  note: {detail['note']}"))
    for event in history:
        click.echo(
            shown(
                f"  {event.at:%Y-%m-%d %H:%M} {event.who}: {event.from_status} -> "
                f"{event.to_status}" + (f" ({event.note})" if event.note else "")
            )
        )
