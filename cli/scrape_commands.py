"""`specdash scrape`: watch a serving engine's Prometheus `/metrics` until Ctrl-C, each window a `live`
benchmark judged as it lands, an acceptance collapse posted to a webhook once."""

import signal
import threading

import click

from specdash.cli.common import db_option, open_db, shown
from specdash.cli.follow_commands import start_sender, stop_sender, webhook_url
from specdash.db.engine import reading
from specdash.ingest.live.sources import scrape_deadline
from specdash.masking import masked_url

# How long one try to store a window waits for another writer's lock: the scraper answers Ctrl-C between
# tries, and a window not stored is tried again at the next scrape.
STORE_TRY_SECONDS = 0.5
STOP_DRAIN_SECONDS = 0.2  # what a signalled scraper gives the webhook sender to finish


def _options(deployment, run, checkpoint, setting, window_seconds):
    from specdash.ingest.live.windows import WindowOptions
    from specdash.ingest.setting import parse_setting

    try:
        parsed = parse_setting(setting) if setting else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--setting") from None
    return WindowOptions(deployment, run, checkpoint, parsed, window_seconds)


def window_line(engine, window) -> str:
    """One line per closed window: what it measured (or why it was skipped), its verdict, its acceptance."""
    from specdash.db.acceptance_alerts import window_verdict
    from specdash.ingest.problems import format_report

    outcome = window.outcome
    span = f"{outcome.end:%Y-%m-%d %H:%M:%S} window {outcome.seconds:.0f} s"
    if outcome.skipped:
        return f"{span}: skipped ({outcome.skipped}): {outcome.detail}"
    if outcome.problems:
        return f"{span}: not stored:\n{format_report(list(outcome.problems))}"
    if window.result is not None and not window.result.ok:
        return f"{span}: not stored:\n{format_report(window.result.problems)}"
    record = outcome.record
    parts = [f"{record.decode_tps:.1f} tok/s per request"]
    if record.output_throughput is not None:
        parts.append(f"{record.output_throughput:.0f} tok/s aggregate")
    parts.append(f"concurrency {record.concurrency}")
    if record.accept_length is not None:
        parts.insert(0, f"accept length {record.accept_length:.2f}")
    if record.position_survival:
        parts.insert(1, "survival " + "/".join(f"{s:.2f}" for s in record.position_survival))
    benchmark_id = window.benchmark_id
    if benchmark_id is None:
        return f"{span}: {', '.join(parts)}; already stored"
    with reading(engine) as session:
        is_alert, severity, reason = window_verdict(session, benchmark_id)
    line = f"{span}: {', '.join(parts)} -> benchmark #{benchmark_id}"
    collapse = window.acceptance is not None and window.acceptance.check.is_alert
    if reason and not (collapse and reason == window.acceptance.check.text):
        line += f"\n  verdict: {'ALERT ' + (severity or '') if is_alert else 'ok'}: {shown(reason)}"
    if window.acceptance is not None and window.acceptance.check.change != "steady":
        check = window.acceptance.check
        tag = f" (alert #{window.acceptance.alert_id})" if window.acceptance.alert_id else ""
        if check.is_alert and window.acceptance.alert_id is None:
            tag = " (no alert: name the drafter with --run and --checkpoint)"
        line += f"\n  acceptance: {check.text}{tag}"
    return line


def _queue(url):
    if not url:
        return None
    from specdash.notify import queue_notifications

    def in_window(session, quiet) -> None:
        queue_notifications(session, url, quiet)

    return in_window


def _once(engine, options, files, seconds, in_window) -> None:
    from specdash.ingest.live.exposition import ExpositionError
    from specdash.ingest.live.scrape import ScrapeSummary, store_window
    from specdash.ingest.live.sources import window_from_files

    try:
        outcome = window_from_files(files[0], files[1], options, seconds)
    except ExpositionError as exc:
        raise click.ClickException(f"{exc}\n\nnothing stored") from None
    window = store_window(engine, outcome, in_window)
    summary = ScrapeSummary(scrapes=2)
    summary.add(window)
    click.echo(window_line(engine, window))
    click.echo(summary.text(), err=True)
    if window.outcome.problems or (window.result is not None and not window.result.ok):
        raise click.ClickException("the window's benchmark is invalid: nothing stored")


def _follow(engine, options, url, every_seconds, deadline_seconds, in_window, sender) -> None:
    from specdash.ingest.live.scrape import Scraper
    from specdash.ingest.live.sources import fetch_scrape

    scraper = Scraper(engine, options, in_window)
    stop = threading.Event()

    def on_signal(_signum, _frame):
        stop.set()

    def on_window(window) -> None:
        click.echo(window_line(engine, window))
        if sender is not None:
            sender.wake()

    def on_lost(message: str) -> None:
        click.echo(f"scrape lost: {message}", err=True)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    click.echo(
        f"scraping {masked_url(url)} every {every_seconds:g} s (each within {deadline_seconds:g} s), windows of "
        f"{options.window_seconds:g} s; Ctrl-C to stop",
        err=True,
    )
    try:
        scraper.run(
            lambda: fetch_scrape(url, deadline_seconds, stop=stop), every_seconds, stop, on_window, on_lost
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo(f"stopped: {scraper.summary.text()}", err=True)


@click.command()
@click.argument("url", required=False)
@click.option("--deployment", required=True, help="The deployment the engine serves (created if new).")
@click.option("--run", help="The drafter's run.")
@click.option("--checkpoint", help="The drafter's checkpoint (with --run); needed for alerts.")
@click.option(
    "--setting", metavar="SETTING", help="How the server speculates, e.g. EAGLE3/3/1/4 (else its metrics)."
)
@click.option(
    "--every",
    "every_seconds",
    type=click.FloatRange(0.1, 3600),
    default=15.0,
    show_default=True,
    help="Seconds between scrapes.",
)
@click.option(
    "--window",
    "window_seconds",
    type=click.FloatRange(0.1, 86400),
    default=60.0,
    show_default=True,
    help="Seconds of one window (one benchmark).",
)
@click.option(
    "--timeout",
    "timeout_seconds",
    type=click.FloatRange(0.05, 300),
    help="Seconds one scrape may take, connect to last byte (default: 0.8 x --every, at most 30).",
)
@click.option("--notify", metavar="URL", help="Post new alerts to this incoming webhook.")
@click.option(
    "--once",
    "once",
    nargs=2,
    type=click.Path(exists=True, dir_okay=False),
    metavar="A B",
    help="Ingest the window between two saved scrapes instead.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(0, min_open=True),
    help="With --once: seconds from A to B (else the files' modification times).",
)
@db_option
@click.pass_context
def scrape(
    ctx,
    url,
    deployment,
    run,
    checkpoint,
    setting,
    every_seconds,
    window_seconds,
    timeout_seconds,
    notify,
    once,
    seconds,
) -> None:
    """Watch a serving engine's Prometheus /metrics (vLLM, SGLang, llama-server) until Ctrl-C.

    Each window becomes a benchmark (format live), judged like any other; an acceptance collapse is a
    critical alert on its first window, posted to --notify once. A scrape that fails (no answer within
    --timeout, not 200, a redirect, a broken or oversized answer) is counted and scraping goes on; a
    window with a scrape cut short or inconsistent with the one before is skipped, never stored.

    \b
    Example:
      specdash scrape http://gpu-box:8000/metrics --deployment pcie-box --run r7 --checkpoint epoch_2
      specdash scrape --once a.prom b.prom --seconds 30 --deployment pcie-box
    """
    if bool(url) == bool(once):
        raise click.UsageError("give a URL to scrape, or --once A B (two saved scrapes)")
    if checkpoint and not run:
        raise click.BadParameter("needs --run", param_hint="--checkpoint")
    if timeout_seconds is not None and once:
        raise click.BadParameter("only with a URL", param_hint="--timeout")
    if seconds is not None and not once:
        raise click.BadParameter("only with --once", param_hint="--seconds")
    if url and not url.startswith(("http://", "https://")):
        raise click.BadParameter("must start with http:// or https://", param_hint="URL")
    options = _options(deployment, run, checkpoint, setting, window_seconds)
    engine = open_db(ctx)
    hook = webhook_url(engine, notify)
    sender = start_sender(engine, hook)
    try:
        if once:
            _once(engine, options, once, seconds, _queue(hook))
        else:
            deadline = timeout_seconds or scrape_deadline(every_seconds)
            store = open_db(ctx, check=False, lock_timeout=STORE_TRY_SECONDS)
            _follow(store, options, url, every_seconds, deadline, _queue(hook), sender)
    finally:
        if sender is not None:
            sender.wake()
        if once:
            stop_sender(sender)
        else:  # stopped by a signal: out within a second even while the webhook hangs (pending stays so)
            stop_sender(sender, STOP_DRAIN_SECONDS, STOP_DRAIN_SECONDS)
