"""Live training on a real PostgreSQL server: the demo's advisories, a followed log resumed by a second
follower, and notifications queued once. Runs when SPECDASH_TEST_PG_URL names a server (`.ci/run`)."""

import json

from sqlalchemy import func, select

from specdash.db.advisories import advisory_rows
from specdash.db.engine import reading, transaction
from specdash.db.live_models import FollowedFile, Notification
from specdash.db.models import MetricPoint
from specdash.demo import DEMO_FILE_NAME, PCIE, RUN_KILLED, demo_bytes
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from specdash.notify import prime, queue_notifications
from tests.conftest import needs_postgres
from tests.live_support import ARGS, DEPLOYMENT, KEYS, poll_once, step_line

pytestmark = needs_postgres


def test_demo_advisories_on_postgres(pg_engine):  # noqa: F811
    assert ingest(pg_engine, UploadSource(DEMO_FILE_NAME, demo_bytes())).ok
    with reading(pg_engine) as session:
        rows = advisory_rows(session, statuses=("open",), active_only=True)
    assert {r["run"] for r in rows} == {RUN_KILLED} and [r["deployment"] for r in rows] == [PCIE]


def test_follow_and_notify_on_postgres(pg_engine, tmp_path):  # noqa: F811
    assert ingest(
        pg_engine, UploadSource("d.json", json.dumps({"specdash": 1, "deployments": [DEPLOYMENT]}).encode())
    ).ok
    url = "http://127.0.0.1:9/hook"
    with transaction(pg_engine) as session:
        prime(session, url)
    log = tmp_path / "train.log"
    log.write_text(ARGS + step_line(10) + step_line(20))

    def queue(session):
        queue_notifications(session, url)

    poll_once(pg_engine, [str(log)], in_transaction=queue)
    with log.open("a") as out:
        out.write(step_line(30))
    poll_once(pg_engine, [str(log)], in_transaction=queue)  # a restarted follower
    with reading(pg_engine) as session:
        assert session.scalar(select(func.count()).select_from(MetricPoint)) == 3 * KEYS
        assert session.scalar(select(FollowedFile.offset_bytes)) == log.stat().st_size
        assert [r["best_depth"] for r in advisory_rows(session)] == [7]
        assert session.execute(select(Notification.kind, Notification.status)).all() == [
            ("advisory", "pending")
        ]
