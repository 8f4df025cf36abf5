"""Webhook delivery of new alerts and advisories (Slack-compatible incoming-webhook JSON).

What is to be sent is a `notification` row, queued in the transaction that raised the alert or advisory;
a background thread posts pending rows with retries and exponential back-off, so ingest never waits on
the network. One row per (alert or advisory, webhook): nothing is offered twice, and a row is marked
sent once the webhook answers 2xx."""

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from specdash.costmodel.collapse import COLLAPSE_CODE
from specdash.db.changes import record_change
from specdash.db.engine import transaction
from specdash.db.live_models import Notification
from specdash.db.models import utcnow
from specdash.db.settings import get_setting, set_setting
from specdash.masking import masked_webhook

WEBHOOK_SETTING = "webhook_url"  # read by name in cli/follow_commands.py too
TIMEOUT_SECONDS = 5.0
MAX_ATTEMPTS = 8
BASE_DELAY_SECONDS = 1.0
MAX_DELAY_SECONDS = 60.0


def webhook_target(url: str) -> str:
    """How a webhook is named in the store: its URL carries a secret, so only a digest is kept."""
    return hashlib.sha256(url.encode()).hexdigest()


def get_webhook_url(session: Session) -> str | None:
    return get_setting(session, WEBHOOK_SETTING) or None


def set_webhook_url(session: Session, url: str | None) -> None:
    """Save (or, with nothing, remove) the webhook; the change history gets the URLs masked."""
    url = (url or "").strip()
    if url and not url.startswith(("http://", "https://")):
        raise ValueError("webhook URL must start with http:// or https://")
    before = get_setting(session, WEBHOOK_SETTING) or ""
    set_setting(session, WEBHOOK_SETTING, url)
    if before != url:
        shown = [masked_webhook(u) if u else None for u in (before, url)]
        if shown[0] == shown[1]:  # another token behind the same host: say it changed without showing it
            shown[1] = f"{shown[1]} (another URL)"
        record_change(session, "webhook", "setting", "global", WEBHOOK_SETTING, *shown)


def alert_text(row: dict) -> str:
    if row.get("code") == COLLAPSE_CODE:  # judged on its accept length, whatever its gap
        return (
            f"specdash alert #{row['alert_id']} ({row['severity']}): {row['run']}/{row['checkpoint']} on "
            f"{row['deployment']}: {row['reason']}"
        )
    codes = ", ".join(d["code"] for d in row.get("diagnoses") or []) or "no diagnosis"
    return (
        f"specdash alert #{row['alert_id']} ({row['severity'] or 'none'}): {row['run']}/{row['checkpoint']} on "
        f"{row['deployment']} measured {row['measured_tps']:.1f} tok/s against {row['predicted_tps']:.1f} "
        f"predicted ({row['source']}), gap {row['gap']:+.0%}; {codes}"
    )


def advisory_text(row: dict) -> str:
    return f"specdash advisory for run {row['run']}: {row['message']}"


def slack_payload(text: str) -> dict:
    """An incoming-webhook message: `text` for any Slack-compatible receiver, the same as one block."""
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


def _candidates(session: Session) -> list[tuple[str, int, str]]:
    """Open alerts and advisories that hold now: (kind, id, text)."""
    from specdash.db.advisories import advisory_rows
    from specdash.db.alerts import AlertFilters, alert_page

    # raised, unmuted, open verdicts: one per benchmark, with the dashboard's alert id
    rows, _ = alert_page(session, AlertFilters(statuses=("open",)), 0, 1_000_000, count=False)
    out = [("alert", row["alert_id"], alert_text(row)) for row in rows]
    out += [
        ("advisory", row["id"], advisory_text(row))
        for row in advisory_rows(session, statuses=("open",), active_only=True)
    ]
    return out


def _record(session: Session, url: str, status: str, quiet: frozenset[int] = frozenset()) -> int:
    target = webhook_target(url)
    known = set(
        session.execute(
            select(Notification.kind, Notification.ref_id).where(Notification.target == target)
        ).all()
    )
    added = 0
    for kind, ref_id, text in _candidates(session):
        if (kind, ref_id) not in known:
            session.add(
                Notification(
                    kind=kind,
                    ref_id=ref_id,
                    target=target,
                    status="skipped" if kind == "alert" and ref_id in quiet else status,
                    payload=slack_payload(text),
                    created_at=utcnow(),
                )
            )
            added += 1
    session.flush()
    return added


def prime(session: Session, url: str) -> int:
    """Mark what is open before a command starts as not to be sent: a webhook hears of what is new."""
    return _record(session, url, "skipped")


def queue_notifications(session: Session, url: str, quiet: frozenset[int] = frozenset()) -> int:
    """Queue every open alert and advisory the webhook has not been offered yet; in the caller's
    transaction, so what is queued commits with what raised it. Alerts in `quiet` (the windows of a
    collapse already posted) are marked as offered without being sent."""
    return _record(session, url, "pending", quiet)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook's 3xx is not followed: urllib would turn the POST into a bodiless GET elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post_json(url: str, payload: dict, timeout: float = TIMEOUT_SECONDS) -> None:
    """POST the payload; raises OSError (urllib's errors) unless the answer is 2xx. A redirect is not
    followed: an error naming where it pointed (masked), so the notification stays pending."""
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            if not 200 <= response.status < 300:
                raise urllib.error.HTTPError(url, response.status, "not a 2xx answer", response.headers, None)
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = masked_webhook(exc.headers.get("Location", "")) if exc.headers else "nowhere"
            raise OSError(f"HTTP {exc.code} redirect to {where}: not followed") from None
        raise


@dataclass
class SenderStats:
    sent: int = 0
    failed: int = 0
    retries: int = 0


class WebhookSender(threading.Thread):
    """Posts pending notifications for one webhook in the background until stopped."""

    def __init__(
        self,
        engine: Engine,
        url: str,
        poll_seconds: float = 0.5,
        base_delay: float = BASE_DELAY_SECONDS,
        max_attempts: int = MAX_ATTEMPTS,
        timeout: float = TIMEOUT_SECONDS,
    ):
        super().__init__(name="specdash-webhook", daemon=True)
        self.engine, self.url, self.target = engine, url, webhook_target(url)
        self.poll_seconds, self.base_delay, self.max_attempts, self.timeout = (
            poll_seconds,
            base_delay,
            max_attempts,
            timeout,
        )
        self.stats = SenderStats()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._not_before: dict[int, float] = {}  # back-off: notification id -> monotonic time of next try
        self._drain_until = 0.0
        self.last_error: str | None = None

    def wake(self) -> None:
        """Something was queued: look now rather than at the next poll."""
        self._wake.set()

    def stop(self, drain_seconds: float = 5.0, wait_seconds: float | None = None) -> None:
        """Stop after at most `drain_seconds` more of sending what is pending; wait for the thread at most
        `wait_seconds` (default: the drain and one post's timeout). A post still in flight then is left to
        the daemon thread: its row stays pending, for the next start to send."""
        self._drain_until = time.monotonic() + drain_seconds
        self._stopping.set()
        self._wake.set()
        self.join(drain_seconds + self.timeout + 1 if wait_seconds is None else wait_seconds)

    def run(self) -> None:
        while True:
            try:
                pending = self.send_due()
            except Exception as exc:  # the store is busy or gone: try again later, never kill the thread
                pending = True
                self.last_error = str(exc)
            if self._stopping.is_set() and (not pending or time.monotonic() >= self._drain_until):
                return
            self._wake.wait(self.poll_seconds)
            self._wake.clear()

    def send_due(self) -> bool:
        """Send every pending notification whose back-off has passed; True while some remain pending."""
        with transaction(self.engine, write=False) as session:
            rows = session.execute(
                select(Notification.id, Notification.payload, Notification.attempts)
                .where(Notification.target == self.target, Notification.status == "pending")
                .order_by(Notification.id)
            ).all()
        now = time.monotonic()
        for notification_id, payload, attempts in rows:
            if self._not_before.get(notification_id, 0.0) > now:
                continue
            try:
                post_json(self.url, payload, self.timeout)
                error = None
            except (OSError, ValueError) as exc:
                error = str(exc)[:500]
            attempts += 1
            if error is None:
                values = dict(status="sent", sent_at=utcnow(), attempts=attempts, last_error=None)
                self.stats.sent += 1
            elif attempts >= self.max_attempts:
                values = dict(status="failed", attempts=attempts, last_error=error)
                self.stats.failed += 1
            else:
                values = dict(attempts=attempts, last_error=error)
                delay = min(MAX_DELAY_SECONDS, self.base_delay * 2 ** (attempts - 1))
                self._not_before[notification_id] = time.monotonic() + delay
                self.stats.retries += 1
            with transaction(self.engine) as session:
                session.execute(
                    update(Notification).where(Notification.id == notification_id).values(**values)
                )
        with transaction(self.engine, write=False) as session:
            return (
                session.scalar(
                    select(Notification.id)
                    .where(Notification.target == self.target, Notification.status == "pending")
                    .limit(1)
                )
                is not None
            )


def notification_rows(session: Session) -> list[dict]:
    """Every notification offered, newest first (the Settings page lists them)."""
    query = select(
        Notification.id,
        Notification.kind,
        Notification.ref_id,
        Notification.status,
        Notification.attempts,
        Notification.last_error,
        Notification.created_at,
        Notification.sent_at,
    ).order_by(Notification.id.desc())
    return [dict(row) for row in session.execute(query).mappings()]
