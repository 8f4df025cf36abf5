"""`specdash ingest` and `specdash formats`."""

import sys
from pathlib import Path

import click

from specdash.cli.common import db_option, open_db, shown
from specdash.ingest import pipeline
from specdash.ingest.describe import describe, describe_new_names, describe_totals
from specdash.ingest.formats import FORMATS
from specdash.ingest.links import LinkOptions
from specdash.ingest.policy import IngestPolicy, OnInvalid, command_policy
from specdash.ingest.problems import format_report
from specdash.ingest.results import IngestResult
from specdash.ingest.sources import PathSource
from specdash.ingest.trackers import readers


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--format",
    "fmt_name",
    type=click.Choice([f.name for f in FORMATS] + [r.name for r in readers()]),
    metavar="NAME",
    help="Read the files as this format (see 'specdash formats'); refused for a file it does not fit.",
)
@click.option("--skip-invalid", is_flag=True, help="Load the valid records of a file and report the rest.")
@click.option("--run", help="Link benchmarks to this run; name the run of a training log.")
@click.option("--checkpoint", help="Link benchmarks to this checkpoint (with --run).")
@click.option("--deployment", help="Attach benchmarks to this deployment (needed when a file does not say).")
@click.option(
    "--target", help="Target model of the file's runs (else the training log or trainer config says)."
)
@click.option(
    "--target-deployment",
    "target_deployments",
    multiple=True,
    metavar="NAME",
    help="A deployment the runs are for (repeatable); default: those serving the target model.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Keep reading the files (of a folder: its logs and event files) as they grow, until Ctrl-C.",
)
@click.option(
    "--notify",
    metavar="URL",
    help="Post new alerts and advisories to this incoming webhook (default: the URL saved in Settings).",
)
@click.option(
    "--poll",
    "poll_seconds",
    type=click.FloatRange(0.05, 60),
    default=0.5,
    show_default=True,
    help="With --follow: seconds between looks at the files.",
)
@click.option(
    "--update",
    is_flag=True,
    help="Apply the file's values where they contradict stored ones "
    "(a run's framework, a deployment's profile, an external prediction); without it each is a conflict.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Remove what an earlier ingest of this same file stored, then store "
    "it again (to correct a wrong --deployment, --run or --checkpoint).",
)
@click.option(
    "--new-names",
    is_flag=True,
    help="Create a benchmark's deployment, run or checkpoint as new even where its name differs from a "
    "stored one only by case, spacing or look-alike characters (refused with 'did you mean ...?' otherwise).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@db_option
@click.pass_context
def ingest(
    ctx,
    paths,
    fmt_name,
    skip_invalid,
    run,
    checkpoint,
    deployment,
    target,
    target_deployments,
    follow,
    notify,
    poll_seconds,
    update,
    replace,
    new_names,
    quiet,
) -> None:
    """Load files into the database, one transaction per file (or tracker store).

    PATH is a file, or what an experiment tracker or SpecForge wrote: TensorBoard event files (or their
    folder), an MLflow mlflow.db or mlruns/ folder, a W&B offline run folder, a Trackio store, a SpecForge
    config, or a SpecForge output folder (its config, tracker store and checkpoint folders, as one run).

    A file with any invalid record writes nothing (unless --skip-invalid); a file already loaded
    (same sha256) is skipped. Predictions and gap alerts are refreshed for what changed.

    The format is detected (see 'specdash formats'); benchmarks link to checkpoints by drafter path,
    by --run/--checkpoint, or by names in the file, and the summary says what was matched or created.

    With --follow, growing training logs are read as lines arrive (resuming where the last run
    stopped), and server logs and result files each time they stop changing; invalid lines are
    reported and skipped. New alerts and advisories go to the --notify webhook.

    \b
    Example:
      specdash ingest results.json
      specdash ingest --deployment "8x H100, TP8, NVLink" sglang_bench.jsonl server.log
      specdash ingest --run k25-eagle3-100k-ttt5 --checkpoint epoch_5 bench.jsonl
      specdash ingest outputs/qwen3-8b-eagle3     # config, runs/ event files, checkpoints
      specdash ingest --replace --deployment "8x L40S, TP8, PCIe" bench.jsonl   # it went to the wrong one
      specdash ingest --follow --notify https://hooks.slack.com/services/... train.log
    """
    engine = open_db(ctx)
    link = LinkOptions(
        run=run,
        checkpoint=checkpoint,
        deployment=deployment,
        target=target,
        target_deployments=tuple(target_deployments),
        new_names=new_names,
    )
    if target_deployments:
        _check_deployments(engine, target_deployments)
    policy = command_policy(
        update=update, replace=replace, skip_invalid=skip_invalid, link=link, format_name=fmt_name
    )
    if follow:
        from specdash.cli.follow_commands import follow as follow_files

        files = [name for name in paths if not Path(name).is_dir()]
        found = _followed(paths) if len(files) < len(paths) else None  # a folder: what appears in it too
        follow_files(
            engine,
            files,
            discover=found,
            policy=IngestPolicy(link=link, format_name=fmt_name),  # --update, --replace: one-off files only
            notify=notify,
            poll_seconds=poll_seconds,
        )
        return
    failed, results = _ingest_notifying(engine, paths, policy, quiet, notify)
    if len(results) > 1:
        click.echo(shown(describe_totals(results)))
    if failed:
        raise click.ClickException(_not_loaded(failed, policy))


def _not_loaded(failed: list[IngestResult], policy: IngestPolicy) -> str:
    # --skip-invalid loads a file's valid records: it helps only where records failed validation.
    helps = policy.on_invalid is OnInvalid.REFUSE and any(
        p.kind != "parse" for result in failed for p in result.problems
    )
    hint = "\n\nFix the records or pass --skip-invalid" if helps else ""
    return f"{len(failed)} file(s) not loaded{hint}"


def _followed(paths):
    """What --follow reads: each file, and a folder's logs and event files (as `specdash watch` finds them)."""
    from specdash.ingest.follow import watched_files

    return lambda: [found for name in paths for found in watched_files(Path(name))]


def _ingest_notifying(engine, paths, policy: IngestPolicy, quiet, notify):
    """Ingest the files one by one while new alerts and advisories go to the webhook (if any)."""
    from specdash.cli.follow_commands import start_sender, stop_sender, webhook_url

    url = webhook_url(engine, notify)
    sender = start_sender(engine, url)
    try:
        return _ingest_all(engine, paths, policy, quiet, url)
    finally:
        stop_sender(sender)


def _check_deployments(engine, names) -> None:
    from sqlalchemy import select

    from specdash.db.engine import reading
    from specdash.db.models import Deployment

    with reading(engine) as session:
        known = set(session.scalars(select(Deployment.name).where(Deployment.name.in_(names))))
    missing = [name for name in names if name not in known]
    if missing:
        raise click.BadParameter(f"no deployment named {missing[0]!r}", param_hint="--target-deployment")


def _ingest_all(engine, paths, policy: IngestPolicy, quiet, url):
    show_progress = not quiet and sys.stderr.isatty()
    failed, results = [], []
    for name in paths:
        path = Path(name)
        if show_progress and path.is_file():
            with click.progressbar(
                length=path.stat().st_size, label=path.name, file=sys.stderr, show_pos=True
            ) as bar:
                result = pipeline.ingest(engine, PathSource(path, progress=bar.update), policy)
        else:
            result = pipeline.ingest(engine, PathSource(path), policy)
        if result.problems:
            click.echo(format_report(result.problems), err=True)  # each problem is one line of text
        if not result.ok:
            failed.append(result)
        results.append(result)
        click.echo(shown(describe(result)))
        if (named := describe_new_names(result)) is not None:
            click.echo(shown(named))
        if url and result.status == "loaded":
            from specdash.db.engine import transaction
            from specdash.notify import queue_notifications

            with transaction(engine) as session:
                queue_notifications(session, url)
    return failed, results


@click.command()
def formats() -> None:
    """List the input formats specdash reads (auto-detected; force one with --format NAME).

    \b
    Example:
      specdash formats
    """
    found = [(f.name, f.help) for f in FORMATS] + [(r.name, r.help) for r in readers()]
    width = max(len(name) for name, _help in found)
    for name, text in found:
        click.echo(f"{name:<{width}}  {text}")
