"""`specdash predict`, `specdash gaps` and `specdash check`."""

import csv
import io
import json
from typing import TYPE_CHECKING

import click

from specdash.answers.refresh import refresh
from specdash.cli.common import db_option, open_db, shown
from specdash.costmodel.domain import Setting
from specdash.db.engine import reading, transaction
from specdash.db.models import BUILTIN_SOURCES, GAP_STATUSES, SETTING_FIELDS
from specdash.ingest.csvtext import spreadsheet_safe
from specdash.labels import gap_text

if TYPE_CHECKING:
    from specdash.db.queries import GapDetail  # imports pandas: loaded by the commands that query only

JSON_FIELDS = (
    "benchmark_id",
    "gap_id",
    "run",
    "checkpoint",
    "deployment",
    "source",
    *SETTING_FIELDS,
    "measured_tps",
    "predicted_tps",
    "error_band",
    "gap",
    "measured_accept_length",
    "predicted_accept_length",
    "measured_round_ms",
    "predicted_round_ms",
    "acceptance_factor",
    "round_factor",
    "unexplained_ms",
    "severity",
    "status",
    "note",
    "diagnoses",
)
threshold_option = click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="Report gaps at or above this share (default: each deployment's threshold, else the global 0.10).",
)


@click.command()
@db_option
@click.pass_context
def predict(ctx: click.Context) -> None:
    """Compute cost-model predictions for every benchmarked (checkpoint, deployment, setting) and refresh
    the gaps, the verdicts and every Leaderboard entry.

    \b
    Example:
      specdash predict
    """
    engine = open_db(ctx)
    with transaction(engine) as session:
        summary = refresh(session, rank_all=True)
    click.echo(
        f"{summary.predictions} prediction(s) for {summary.benchmarks} benchmark(s); "
        f"{summary.gaps} gap(s) refreshed, {summary.new_alerts} new alert(s)"
        + (f"; {summary.skipped} benchmark(s) could not be predicted" if summary.skipped else "")
        + (f"; load model refitted for {', '.join(summary.refitted)}" if summary.refitted else "")
    )


def _table(rows: list["GapDetail"]) -> str:
    if not rows:
        return "no gaps above the threshold"
    header = (
        "id",
        "run",
        "checkpoint",
        "deployment",
        "setting",
        "source",
        "measured",
        "predicted",
        "gap",
        "status",
        "diagnoses",
    )
    lines: list[tuple[str, ...]] = [header]
    for r in rows:
        setting = Setting.of(r.speculative_algorithm, r.num_steps, r.topk, r.num_draft_tokens).label
        codes = ",".join(d["code"] for d in r.diagnoses) or "-"
        lines.append(
            tuple(
                shown(cell)
                for cell in (
                    str(r.benchmark_id),
                    r.run,
                    r.checkpoint,
                    r.deployment,
                    setting,
                    r.source,
                    f"{r.measured_tps:.1f}",
                    f"{r.predicted_tps:.1f}",
                    gap_text(r.gap),
                    r.status,
                    codes,
                )
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _json_rows(rows: list["GapDetail"]) -> list[dict]:
    return [{key: getattr(row, key) for key in JSON_FIELDS} for row in rows]


def _csv(rows: list["GapDetail"]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=JSON_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in _json_rows(rows):
        row["diagnoses"] = "; ".join(
            f"{d['code']} ({d['severity']}): {d['message']}" for d in row["diagnoses"]
        )
        writer.writerow(
            {
                key: spreadsheet_safe(shown(value)) if isinstance(value, str) else value
                for key, value in row.items()
            }
        )
    return out.getvalue()


def check_source(session, source: str) -> None:
    """A source no prediction has is a usage error naming those that exist (a typo is not "no gaps")."""
    from specdash.db.queries import prediction_sources

    known = list(BUILTIN_SOURCES) + [
        name for name in prediction_sources(session) if name not in BUILTIN_SOURCES
    ]
    if source not in known:
        raise click.BadParameter(
            f"no prediction source {source!r}; valid sources: {', '.join(known)}", param_hint="'--source'"
        )


@click.command()
@threshold_option
@click.option("--status", type=click.Choice([*GAP_STATUSES, "all"]), default="open", show_default=True)
@click.option("--source", help="Only gaps against this prediction source (theory, calibrated, or external).")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True
)
@db_option
@click.pass_context
def gaps(ctx: click.Context, threshold, status, source, fmt) -> None:
    """List gaps between measured and predicted throughput, largest first.

    gap = 1 - measured / predicted (positive: slower than predicted).

    \b
    Example:
      specdash gaps --status open --format json
      specdash gaps --threshold 0 --status all --format csv > gaps.csv
    """
    engine = open_db(ctx)
    with reading(engine) as session:
        from specdash.db.queries import gap_rows  # imports pandas: only the commands that query load it

        if source:
            check_source(session, source)
        rows = gap_rows(session, threshold=threshold, status=status, source=source)
    if fmt == "json":
        click.echo(json.dumps(_json_rows(rows), indent=2))
    elif fmt == "csv":
        click.echo(_csv(rows), nl=False)
    else:
        click.echo(_table(rows))


@click.command()
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="Only alerts whose gap is at least this share (an invalid benchmark always counts).",
)
@db_option
@click.pass_context
def check(ctx: click.Context, threshold) -> None:
    """Exit 1 when any open alert is raised (for CI pipelines), else 0. Muted diagnoses do not count.

    \b
    Example:
      specdash ingest bench.jsonl && specdash check --threshold 0.15
    """
    from specdash.cli.alert_commands import alert_table
    from specdash.costmodel.diagnoses import CONFIGURATION_CODES
    from specdash.db.alerts import AlertFilters, alert_page

    engine = open_db(ctx)
    with reading(engine) as session:
        rows, _ = alert_page(session, AlertFilters(statuses=("open",)), 0, 1_000_000, count=False)
    if threshold is not None:
        rows = [r for r in rows if r["code"] in CONFIGURATION_CODES or abs(r["gap"] or 0) >= threshold]
    if not rows:
        click.echo("ok: no open alerts")
        return
    click.echo(alert_table(rows))
    click.echo(f"\n{len(rows)} open alert(s)", err=True)
    ctx.exit(1)
