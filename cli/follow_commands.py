"""`specdash ingest --follow` and `specdash watch`: keep ingesting growing files until Ctrl-C, with new
alerts and advisories delivered to a webhook."""

import signal
import threading
from pathlib import Path

import click

from specdash.cli.common import db_option, open_db
from specdash.db.engine import reading, transaction
from specdash.ingest.links import LinkOptions
from specdash.ingest.policy import COMMIT, IngestPolicy
from specdash.ingest.problems import format_report


def webhook_url(engine, notify: str | None) -> str | None:
    """--notify, else the URL saved in Settings."""
    from specdash.db.settings import get_setting

    if notify:
        return notify
    with reading(engine) as session:  # the setting read directly: no HTTP machinery loaded unless needed
        return get_setting(session, "webhook_url") or None


def start_sender(engine, url: str | None):
    """Mark what is open now as not to be sent, and start the background sender."""
    if not url:
        return None
    from specdash.notify import WebhookSender, prime

    if not url.startswith(("http://", "https://")):
        raise click.BadParameter("must start with http:// or https://", param_hint="--notify")
    with transaction(engine) as session:
        prime(session, url)
    sender = WebhookSender(engine, url)
    sender.start()
    return sender


def stop_sender(sender, drain_seconds: float = 5.0, wait_seconds: float | None = None) -> None:
    if sender is None:
        return
    sender.stop(drain_seconds=drain_seconds, wait_seconds=wait_seconds)
    stats = sender.stats
    if stats.sent or stats.failed or stats.retries:
        click.echo(
            f"webhook: {stats.sent} sent, {stats.failed} failed after retries, {stats.retries} retried",
            err=True,
        )


def follow(engine, paths=(), discover=None, policy=COMMIT, notify=None, poll_seconds=0.5) -> None:
    """Poll until Ctrl-C (or SIGTERM): the chunk being written commits or rolls back whole first."""
    from specdash.ingest.follow import Follower
    from specdash.notify import queue_notifications

    url = webhook_url(engine, notify)
    sender = start_sender(engine, url)
    stop = threading.Event()

    def on_signal(_signum, _frame):
        stop.set()

    def queue(session) -> None:  # the follower's hook returns nothing; queue_notifications counts
        assert url is not None  # handed to the follower only with a webhook URL
        queue_notifications(session, url)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    follower = Follower(
        engine,
        paths,
        discover=discover,
        policy=policy,
        in_transaction=queue if url else None,
    )
    click.echo(
        f"following {len(follower.tracked)} file(s)"
        + (" and new ones" if discover else "")
        + "; Ctrl-C to stop",
        err=True,
    )
    try:
        while not stop.is_set():
            for event in follower.poll():
                if event.problems:
                    click.echo(format_report(event.problems), err=True)
                click.echo(event.describe())
            if sender is not None:
                sender.wake()
            stop.wait(poll_seconds)
    finally:
        follower.close()
        stop_sender(sender)  # a second Ctrl-C meanwhile is still just a request to stop
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("stopped; every line read so far is stored, and the next start resumes after it", err=True)


@click.command()
@click.argument("directory", metavar="PATH", type=click.Path(exists=True))
@click.option("--format", "fmt_name", metavar="NAME", help="Force a format (see 'specdash formats').")
@click.option("--run", help="Name the run of the training logs.")
@click.option("--deployment", help="Attach server-log benchmarks to this deployment.")
@click.option("--target", help="Target model of the runs (else the training log's args block says).")
@click.option(
    "--target-deployment",
    "target_deployments",
    multiple=True,
    metavar="NAME",
    help="A deployment the runs are for (repeatable); default: those serving the target model.",
)
@click.option("--notify", metavar="URL", help="Post new alerts and advisories to this incoming webhook.")
@click.option(
    "--poll",
    "poll_seconds",
    type=click.FloatRange(0.05, 60),
    default=0.5,
    show_default=True,
    help="Seconds between looks at the files.",
)
@db_option
@click.pass_context
def watch(
    ctx, directory, fmt_name, run, deployment, target, target_deployments, notify, poll_seconds
) -> None:
    """Follow every log and result file in PATH (and files that appear in it) until Ctrl-C.

    Files ending in .log, .txt, .out, .jsonl or .json are followed as with 'specdash ingest --follow',
    and TensorBoard event files (events.out.tfevents.*, in PATH or its subfolders, such as a SpecForge
    output folder's runs/) a record at a time as the trainer writes them. PATH may be one such file.

    \b
    Example:
      specdash watch /runs/k25-eagle3-ttt5/logs --notify https://hooks.slack.com/services/...
      specdash watch outputs/qwen3-8b-eagle3/runs/events.out.tfevents.1764650000.node0.4242.0
    """
    from specdash.ingest.follow import watched_files

    engine = open_db(ctx)
    root = Path(directory)

    def discover():
        return watched_files(root)

    link = LinkOptions(
        run=run, deployment=deployment, target=target, target_deployments=tuple(target_deployments)
    )
    policy = IngestPolicy(link=link, format_name=fmt_name)
    follow(engine, discover=discover, policy=policy, notify=notify, poll_seconds=poll_seconds)
