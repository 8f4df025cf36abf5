"""`specdash scrape` as a real process against a local engine endpoint: the endpoint switches to a
collapse of acceptance, a local webhook hears of it exactly once, and the time from the switch (the first
collapsed scrape served) to the post is measured against one window plus one scrape."""

import signal
import subprocess
import sys
import threading
import time

import pytest
from sqlalchemy import func, select

from specdash.costmodel.collapse import COLLAPSE_CODE
from specdash.db.engine import make_engine, reading
from specdash.db.models import Alert, AlertEvent, Benchmark
from tests.live_support import wait_for
from tests.scrape_support import MetricsServer, endless_headers, trickled_body
from tests.webhook_support import Receiver

pytestmark = pytest.mark.slow

# A window closes at the first scrape at least 0.95 x WINDOW after its start: with WINDOW half the scrape
# interval each scrape closes one (a scrape answered late does not merge two), so the collapse scenario's
# windows are its scrape pairs.
EVERY, WINDOW = 0.5, 0.25
# The shared test machine (2 cores, many processes) may delay a store or a post; the target stays printed.
ALLOWANCE_SECONDS = 1.5
COLLAPSED_SCRAPE = "vllm_collapse.prom#2"  # t=30: acceptance falls to 1 + 240 / 4800
RECOVERED_SCRAPE = "vllm_collapse.prom#4"


class Timed(list):
    """A list that remembers when each item arrived."""

    def __init__(self):
        super().__init__()
        self.times: list[float] = []

    def append(self, item) -> None:
        self.times.append(time.monotonic())
        super().append(item)


def count_benchmarks(engine) -> int:
    with reading(engine) as session:
        return session.scalar(select(func.count()).select_from(Benchmark)) or 0


def test_a_collapse_reaches_the_webhook_once_within_a_window_and_a_scrape(db_url):
    engine = make_engine(db_url)
    with MetricsServer("vllm_steady.prom") as server, Receiver() as hook:
        served: dict[str, float] = {}
        answer = server.next_answer

        def timed_answer():
            status, body = answer()
            served.setdefault(server.served[-1], time.monotonic())
            return status, body

        server.next_answer = timed_answer
        hook.bodies = Timed()
        command = [
            sys.executable, "-m", "specdash", "--db", db_url, "scrape", server.url,
            "--deployment", "pcie-box", "--run", "r7", "--checkpoint", "epoch_2",
            "--every", str(EVERY), "--window", str(WINDOW), "--notify", hook.url,
        ]  # fmt: skip
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if not wait_for(lambda: count_benchmarks(engine) >= 2):
                process.send_signal(signal.SIGINT)
                raise AssertionError(f"no two steady windows stored: {process.communicate(timeout=30)}")
            server.switch("vllm_collapse.prom")
            assert wait_for(lambda: len(hook.bodies) >= 1, 30), "the collapse posted"
            assert wait_for(lambda: RECOVERED_SCRAPE in served, 30)
            time.sleep(4 * EVERY)  # the recovery's window and a few idle ones after it
        finally:
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    latency = hook.bodies.times[0] - served[COLLAPSED_SCRAPE]
    print(f"collapse to webhook: {latency:.3f} s (target {WINDOW + EVERY:.1f} s: one window plus one scrape)")
    assert 0 < latency <= WINDOW + EVERY + ALLOWANCE_SECONDS
    (post,) = hook.delivered
    assert "(critical): r7/epoch_2 on pcie-box: Acceptance collapsed: accept length 1.05" in post["text"]
    assert "stopped: " in err and "1 collapse(s), 1 recovery(ies)" in err
    with reading(engine) as session:
        (alert,) = session.scalars(select(Alert).where(Alert.code == COLLAPSE_CODE))
        events = session.scalars(
            select(AlertEvent).where(AlertEvent.benchmark_id == alert.benchmark_id)
        ).all()
    assert alert.status == "resolved"
    assert [e.note.split(":")[0] for e in events] == ["Acceptance recovered"]
    assert threading.active_count() >= 1  # the servers' threads were joined by their context managers


STOP_TARGET_SECONDS = 1.0


def stop_time(command: list[str], sig: signal.Signals, started: threading.Event, wait_s: float):
    """Start `command`, wait until `started` is set and `wait_s` more, send `sig`: the process, the seconds
    from the signal to its exit, and what it wrote to stderr."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert started.wait(30), "the process never reached the state under test"
        time.sleep(wait_s)
        sent = time.monotonic()
        process.send_signal(sig)
        process.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
        _, err = process.communicate(timeout=30)
    return process, took, err


@pytest.mark.parametrize("trick", [trickled_body, endless_headers], ids=["trickled body", "endless headers"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_scraper_within_a_second_while_an_answer_hangs(db_url, trick, sig):
    """The endpoint answers the first GET a byte at a time (or with header bytes that never end); the
    scraper's deadline is 24 s (0.8 x --every 30), so only the signal can end that scrape."""
    with MetricsServer("vllm_steady.prom") as server:
        server.misbehave(0, trick)
        command = [
            sys.executable, "-m", "specdash", "--db", db_url, "scrape", server.url,
            "--deployment", "pcie-box", "--every", "30",
        ]  # fmt: skip
        process, took, err = stop_time(command, sig, server.tricked, 1.0)  # 1 s: well into the trickle
    print(f"{sig.name} during a {trick.__name__.replace('_', ' ')}: stopped in {took:.3f} s")
    assert process.returncode == 0, err
    assert "stopped: 0 scrape(s); 0 window(s) stored" in err
    assert took <= STOP_TARGET_SECONDS + ALLOWANCE_SECONDS


def test_a_signal_stops_the_scraper_within_a_second_while_the_webhook_hangs(db_url):
    """A notification is pending and the webhook takes the POST without answering: the scraper leaves it
    pending for its next start rather than wait out the post's timeout (5 s) and the drain (5 s)."""
    from specdash.db.engine import transaction
    from specdash.db.live_models import Notification
    from specdash.db.models import utcnow
    from specdash.notify import slack_payload, webhook_target

    engine = make_engine(db_url)
    with MetricsServer("vllm_steady.prom") as server, Receiver() as hook:
        hook.hold.clear()
        with transaction(engine) as session:
            session.add(
                Notification(
                    kind="alert", ref_id=999, target=webhook_target(hook.url), status="pending",
                    payload=slack_payload("an alert"), created_at=utcnow(),
                )
            )  # fmt: skip
        command = [
            sys.executable, "-m", "specdash", "--db", db_url, "scrape", server.url,
            "--deployment", "pcie-box", "--every", "30", "--notify", hook.url,
        ]  # fmt: skip
        process, took, err = stop_time(command, signal.SIGINT, hook.entered, 0.5)
    print(f"SIGINT while the webhook hangs: stopped in {took:.3f} s")
    assert process.returncode == 0, err
    assert took <= STOP_TARGET_SECONDS + ALLOWANCE_SECONDS
    with reading(engine) as session:
        assert session.scalar(select(Notification.status)) == "pending"
