"""Webhook notifications: Slack-compatible JSON, each alert and advisory offered once, retries with back-off,
what is open when a command starts left out, and ingest never waiting on the webhook."""

import json
import time

from sqlalchemy import func, select

from specdash.db.engine import reading, transaction
from specdash.db.live_models import Notification
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from specdash.notify import WebhookSender, prime, queue_notifications, webhook_target
from tests.live_support import DEPLOYMENT
from tests.webhook_support import Receiver


def wait_for(condition, timeout: float = 20.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def _run(engine, name: str) -> None:
    doc = {
        "specdash": 1,
        "deployments": [DEPLOYMENT],
        "runs": [{"name": name, "target_model": "Kimi-K2.5", "ttt_length": 3}],
    }
    assert ingest(engine, UploadSource(f"{name}.json", json.dumps(doc).encode())).ok


def statuses(engine) -> list[tuple[str, str, int]]:
    with reading(engine) as session:
        return session.execute(
            select(Notification.kind, Notification.status, Notification.attempts).order_by(Notification.id)
        ).all()


def test_an_advisory_is_posted_once_after_a_failed_try(engine):
    with Receiver(statuses=(500,)) as hook:
        with transaction(engine) as session:
            assert prime(session, hook.url) == 0
        _run(engine, "r1")
        with transaction(engine) as session:
            assert queue_notifications(session, hook.url) == 1
            assert queue_notifications(session, hook.url) == 0  # queued already: not again
        sender = WebhookSender(engine, hook.url, poll_seconds=0.05, base_delay=0.05)
        sender.start()
        try:
            assert wait_for(lambda: len(hook.delivered) == 1)
        finally:
            sender.stop(drain_seconds=1)
        assert [b["status"] for b in hook.bodies] == [500, 200]
        assert statuses(engine) == [("advisory", "sent", 2)]
        body = hook.delivered[0]
        assert body["text"].startswith(
            "specdash advisory for run r1: trained 3 deep; on 8x RTX PRO 6000, TP8, PCIe"
        )
        assert body["blocks"] == [{"type": "section", "text": {"type": "mrkdwn", "text": body["text"]}}]


def test_what_is_open_at_start_is_not_sent(engine, demo_url):
    from specdash.db.engine import make_engine

    demo = make_engine(demo_url)
    with transaction(demo) as session:
        skipped = prime(session, "http://127.0.0.1:9/hook")
        assert queue_notifications(session, "http://127.0.0.1:9/hook") == 0
    # the demo's 4 open alerts (one per benchmark: the EAGLE-flag one and three beyond their trained depth)
    # and its advisory (on PCIe: the NVLink profile's prior verify growth for a MoE target makes deeper
    # drafts not pay there)
    with reading(demo) as session:
        kinds = session.execute(select(Notification.kind, func.count()).group_by(Notification.kind)).all()
    assert skipped == 5 and dict(kinds) == {"alert": 4, "advisory": 1}


def test_failed_after_the_last_attempt_and_the_url_is_not_stored(engine):
    with Receiver(statuses=(500, 503)) as hook:
        _run(engine, "r1")
        with transaction(engine) as session:
            queue_notifications(session, hook.url)
        sender = WebhookSender(engine, hook.url, poll_seconds=0.05, base_delay=0.01, max_attempts=2)
        sender.start()
        try:
            assert wait_for(lambda: statuses(engine)[0][1] == "failed")
        finally:
            sender.stop(drain_seconds=1)
        assert len(hook.bodies) == 2 and hook.delivered == []
        with reading(engine) as session:
            row = session.scalar(select(Notification))
        assert row.target == webhook_target(hook.url) and hook.url not in json.dumps(row.payload)
        assert "503" in row.last_error


def test_ingest_goes_on_while_the_webhook_hangs(engine):
    with Receiver() as hook:
        hook.hold.clear()  # the webhook takes the request and does not answer
        _run(engine, "r1")
        with transaction(engine) as session:
            queue_notifications(session, hook.url)
        sender = WebhookSender(engine, hook.url, poll_seconds=0.05, timeout=30)
        sender.start()
        try:
            assert hook.entered.wait(20)
            _run(engine, "r2")  # completes while the sender is stuck in its request
            with transaction(engine) as session:
                assert queue_notifications(session, hook.url) == 1
            assert hook.delivered == []
            hook.hold.set()
            assert wait_for(lambda: len(hook.delivered) == 2)
        finally:
            hook.hold.set()
            sender.stop(drain_seconds=2)
        assert [s for _, s, _ in statuses(engine)] == ["sent", "sent"]


def test_a_new_alert_is_queued_with_its_numbers(demo_url):
    from specdash.db.engine import make_engine
    from tests.conftest import FIXTURES

    demo = make_engine(demo_url)
    url = "http://127.0.0.1:9/hook"
    with transaction(demo) as session:
        prime(session, url)
    rerun = FIXTURES / "dashboard" / "deep_rerun.json"
    assert ingest(
        demo, UploadSource(rerun.name, rerun.read_bytes())
    ).ok  # 11 steps on a TTT-5 drafter: 118.4 tok/s
    with transaction(demo) as session:
        assert queue_notifications(session, url) >= 1
        rows = session.execute(
            select(Notification.kind, Notification.payload).where(Notification.status == "pending")
        ).all()
    assert {kind for kind, _ in rows} == {"alert"}
    texts = [payload["text"] for _, payload in rows]
    assert all(
        t.startswith(
            "specdash alert #16 (warning): k25-eagle3-100k-ttt5/epoch_5 on 8x RTX PRO 6000, TP8, PCIe measured "
            "118.4 tok/s against "
        )
        for t in texts
    )
    assert any("beyond_trained_depth" in t for t in texts)
    demo.dispose()


def test_a_redirect_is_not_followed_and_the_notification_stays_pending(engine):
    """urllib turns a POST answered 302 into a bodiless GET of the new location, and a 2xx to that GET
    marked the alert sent though nothing was posted: a 3xx is now a failed try with its reason."""
    with Receiver() as elsewhere, Receiver(statuses=(302, 302), location=elsewhere.url) as hook:
        _run(engine, "r1")
        with transaction(engine) as session:
            queue_notifications(session, hook.url)
        sender = WebhookSender(engine, hook.url, poll_seconds=0.05, base_delay=10)
        assert sender.send_due()  # still pending after the first try
        assert [b["status"] for b in hook.bodies] == [302]
        assert elsewhere.gets == [] and elsewhere.bodies == []
        with reading(engine) as session:
            row = session.scalar(select(Notification))
        assert (row.status, row.attempts) == ("pending", 1)
        assert (
            row.last_error
            == "HTTP 302 redirect to http://127.0.0.1:"
            + elsewhere.url.split(":")[2].split("/")[0]
            + "/***: not followed"
        )
