"""Follow growing files (`specdash ingest --follow`, `specdash watch`): new lines ingested as they arrive.

A training log (SpecForge console output) is read as it grows, a chunk of complete lines per transaction
(ingest/tail.py), and a TensorBoard event file a batch of complete records per transaction
(ingest/tail_events.py). Other formats (a server log summarised into one benchmark, a result file) are ingested
whole once they stop changing for a moment, as `specdash ingest` loads a file (ingest/pipeline.py): a new
version supersedes the benchmark the previous version gave."""

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from sqlalchemy import Engine

from specdash.db.engine import file_transaction
from specdash.ingest.formats import BY_NAME, detect_format
from specdash.ingest.formats.specforge_log import NAME as TRAINING_LOG
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import COMMIT, IngestPolicy, OnInvalid
from specdash.ingest.problems import Problem
from specdash.ingest.read import HEAD_BYTES
from specdash.ingest.sources import PathSource
from specdash.ingest.tail import FollowEvent, InTransaction, LogTail, Tracked, load_tracked, save_tracked
from specdash.ingest.tail_events import EventTail, is_event_file

WATCHED_SUFFIXES = (".log", ".txt", ".out", ".jsonl", ".json")
MAX_CHUNK_BYTES = 4 * 1024 * 1024
SETTLE_SECONDS = 2.0
INCREMENTAL = {TRAINING_LOG}


class Follower:
    """Polls a set of paths (fixed, or found anew each poll by `discover`) and ingests what is new."""

    def __init__(
        self,
        engine: Engine,
        paths: Iterable[str] = (),
        *,
        discover: Callable[[], Iterable[str]] | None = None,
        policy: IngestPolicy = COMMIT,
        settle_seconds: float = SETTLE_SECONDS,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
        in_transaction: InTransaction | None = None,
    ):
        self.engine = engine
        self.discover = discover
        # a followed source's problems never stop it: a whole file's valid records are stored (SKIP), a
        # log's chunk or an event file's records keep what is valid and move on (KEEP)
        self.fmt_name = policy.format_name
        self.whole = replace(policy, on_invalid=OnInvalid.SKIP)
        self.settle_seconds = settle_seconds
        self.in_transaction = in_transaction
        self.tail = LogTail(
            engine, replace(policy, on_invalid=OnInvalid.KEEP), max_chunk_bytes, in_transaction
        )
        self.events = EventTail(engine, replace(policy, on_invalid=OnInvalid.KEEP), in_transaction)
        self.tracked: dict[str, Tracked] = {}
        for path in paths:
            self._track(path)

    def _track(self, path: str) -> Tracked:
        key = str(Path(path).absolute())
        if key not in self.tracked:
            self.tracked[key] = Tracked(key)
        return self.tracked[key]

    def close(self) -> None:
        for tracked in self.tracked.values():
            tracked.close()

    def __enter__(self) -> "Follower":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the loop --------------------------------------------------------------------------------------
    def poll(self) -> list[FollowEvent]:
        if self.discover is not None:
            for path in self.discover():
                self._track(path)
        events = []
        for tracked in list(self.tracked.values()):
            if tracked.failed:
                continue
            event = FollowEvent(tracked.path)
            try:
                self._poll_file(tracked, event)
            except OSError as exc:  # vanished between stat and open, permissions, ...
                tracked.close()
                event.notes.append(f"cannot read: {exc.strerror or exc}")
            if event.changed:
                events.append(event)
        return events

    def run(
        self,
        poll_seconds: float = 0.5,
        on_event: Callable[[FollowEvent], None] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Poll until should_stop() says so (or Ctrl-C, which the caller catches)."""
        try:
            while not should_stop():
                for event in self.poll():
                    if on_event is not None:
                        on_event(event)
                if should_stop():
                    break
                time.sleep(poll_seconds)
        finally:
            self.close()

    # --- one file ----------------------------------------------------------------------------------------
    def _detect(self, tracked: Tracked, head: bytes, event: FollowEvent) -> bool:
        if self.fmt_name:
            tracked.fmt = BY_NAME.get(self.fmt_name)
            if tracked.fmt is None:
                event.problems.append(
                    Problem(tracked.path, None, None, f"unknown format {self.fmt_name!r}", "parse")
                )
                tracked.failed = True
            return tracked.fmt is not None
        if not head.strip():
            return False
        tracked.fmt = detect_format(head.decode("utf-8", errors="replace"), tracked.path)
        if tracked.fmt is None and len(head) >= HEAD_BYTES:
            event.problems.append(
                Problem(
                    tracked.path,
                    None,
                    None,
                    "format not recognised; pass --format (see 'specdash formats')",
                    "parse",
                )
            )
            tracked.failed = True
        return tracked.fmt is not None

    def _poll_file(self, tracked: Tracked, event: FollowEvent) -> None:
        if not tracked.loaded:
            load_tracked(self.engine, tracked)
        try:
            stat = os.stat(tracked.path)
        except FileNotFoundError:
            if tracked.handle is not None:  # rotated away and not recreated yet: finish the old file
                self.tail.read(tracked, event, final=True)
            return
        if is_event_file(tracked.path) and not self.fmt_name:
            self.events.poll(tracked, stat, event)
            return
        if tracked.fmt is None:
            with open(tracked.path, "rb") as stream:
                if not self._detect(tracked, stream.read(HEAD_BYTES), event):
                    return
        assert tracked.fmt is not None  # detected above, or stored with the file
        if tracked.fmt.name in INCREMENTAL:
            self.tail.poll(tracked, stat, event)
        else:
            self._poll_whole(tracked, stat, event)

    # --- whole files ---------------------------------------------------------------------------------------
    def _poll_whole(self, tracked: Tracked, stat: os.stat_result, event: FollowEvent) -> None:
        seen = (stat.st_size, stat.st_mtime_ns)
        now = time.monotonic()
        if seen != tracked.seen:
            tracked.seen, tracked.stable_since = seen, now
            return
        if now - tracked.stable_since < self.settle_seconds or tracked.state.get("ingested") == list(seen):
            return
        assert tracked.fmt is not None  # polled once its format was known
        policy = replace(self.whole, format_name=tracked.fmt.name)
        result = ingest(self.engine, PathSource(tracked.path), policy)
        with file_transaction(self.engine) as session:
            if result.status == "loaded" and result.store and result.store.benchmark_ids:
                self._supersede(session, tracked.state.get("benchmark_ids") or [], result.store.benchmark_ids)
                tracked.state["benchmark_ids"] = list(result.store.benchmark_ids)
            tracked.state["ingested"] = list(seen)
            tracked.identity = (stat.st_dev, stat.st_ino)
            save_tracked(session, tracked, stat.st_size, tracked.lines, None)
            if self.in_transaction is not None:
                self.in_transaction(session)
        if result.status != "skipped":
            event.result = result
            event.problems += result.problems

    def _supersede(self, session, old_ids: list[int], new_ids: list[int]) -> None:
        """A server log summarised again: its new benchmark replaces the one its earlier version gave."""
        from specdash.answers.edits import supersede
        from specdash.db.alerts import AlertChangeError

        if len(old_ids) != 1 or len(new_ids) != 1 or old_ids == new_ids:
            return
        try:
            supersede(
                session,
                old_ids[0],
                new_ids[0],
                who="specdash",
                note="the followed log grew; summarised again",
            )
        except AlertChangeError:
            pass  # another checkpoint, or already superseded: both benchmarks stand


def watched_files(root: Path) -> list[str]:
    """What `specdash watch` follows at `root`: the file itself, or the folder's logs and result files and
    the TensorBoard event files anywhere under it."""
    from specdash.ingest.trackers.tensorboard import event_files

    if root.is_file():
        return [str(root)]
    found = [p for p in root.iterdir() if p.is_file() and p.suffix in WATCHED_SUFFIXES]
    return sorted({str(p) for p in [*found, *event_files(str(root))]})
