"""A followed TensorBoard event file (`specdash watch`, `specdash ingest --follow`), read as a log is: the
complete event records after the stored offset, at most MAX_RECORDS a transaction, their scalars stored
with the file's new offset in one transaction (ingest/pipeline.py's ingest), so a follower stopped at any
moment resumes after the last record it stored. A record still being written (a torn last record) waits
for the next poll; a damaged one stops the file with its problem, after what came before it is stored. A
file smaller than the offset, or a new file at the path, is read again from its start (metric points are
keyed by run, key and step: nothing is stored twice)."""

import os
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from specdash.ingest.formats.base import Located
from specdash.ingest.formats.common import run_record
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.problems import Problem
from specdash.ingest.read import checked, reader_format
from specdash.ingest.results import IngestResult
from specdash.ingest.sources import Batch
from specdash.ingest.tail import FollowEvent, InTransaction, Tracked, save_tracked
from specdash.ingest.trackers import tensorboard
from specdash.ingest.trackers.batching import metric_batches

MAX_RECORDS = 20_000
FORMAT = reader_format(tensorboard.READER)


def is_event_file(path: str) -> bool:
    return os.path.basename(path).startswith(tensorboard.PREFIX)


class EventTail:
    """Reads followed event files for a Follower: the records each gained, a batch per transaction."""

    def __init__(self, engine: Engine, policy: IngestPolicy, in_transaction: InTransaction | None):
        self.engine = engine
        self.policy = policy
        self.link = policy.link
        self.in_transaction = in_transaction

    def poll(self, tracked: Tracked, stat: os.stat_result, event: FollowEvent) -> None:
        event.unit = "record"
        identity = (stat.st_dev, stat.st_ino)
        if (tracked.identity is not None and identity != tracked.identity) or stat.st_size < tracked.offset:
            tracked.offset = tracked.lines = 0
            event.notes.append("rewritten: reading it again from the start")
        tracked.identity = identity
        if stat.st_size > tracked.offset:
            self.read(tracked, event)

    def read(self, tracked: Tracked, event: FollowEvent) -> None:
        run = (self.link.run or tensorboard.run_name(Path(tracked.path)))[:200]
        with open(tracked.path, "rb") as stream:
            while True:
                stream.seek(tracked.offset)
                problems: list[Problem] = []
                offset, count, found = tracked.offset, 0, []
                for end, scalars in tensorboard.scalar_events(stream, tracked.path, problems):
                    offset, count = end, count + 1
                    found.extend(scalars)
                    if count >= MAX_RECORDS:
                        break
                if problems:
                    tracked.failed = True  # a damaged record: nothing after it can be told apart
                if count or problems:
                    self._commit(tracked, run, offset, count, found, problems, event)
                if count < MAX_RECORDS or problems:
                    return

    def _commit(self, tracked, run, offset, count, found, problems, event: FollowEvent) -> None:
        items = [Located(None, run_record(run))]
        items += checked(metric_batches(tracked.path, run, found), tracked.path, problems)

        def save(session, result: IngestResult) -> None:
            save_tracked(session, tracked, offset, tracked.lines + count, None)
            if self.in_transaction is not None:
                self.in_transaction(session)

        tracked.fmt = FORMAT
        try:
            batch = Batch(tracked.path, FORMAT, items, problems, kept=save)
            result = ingest(self.engine, batch, self.policy)
        except IntegrityError:  # another follower inserted the file's first row at once
            tracked.loaded = False
            event.notes.append("another follower read these records first; resuming after it")
            return
        tracked.offset, tracked.lines = offset, tracked.lines + count
        event.add(result, count, problems)
