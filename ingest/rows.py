"""The rows a file's records name (deployments, runs, checkpoints), looked up by name and created on first
mention, and a benchmark's checkpoint found by its names or its drafter path."""

from collections import Counter
from typing import Any, Literal, overload

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.models import Checkpoint, Deployment, Run
from specdash.ingest.links import (
    LinkError,
    LinkOptions,
    meaningful_folder,
    name_from_path,
    parse_checkpoint_name,
    path_parts,
)


class Rows:
    """Rows by name within one file's transaction. A row created on first mention is a placeholder until
    a record of the file gives its values (claim())."""

    def __init__(self, session: Session, link: LinkOptions, created: Counter):
        self.session = session
        self.link = link
        self.created = created  # the summary's count of rows created, by kind
        self.deployments: dict[str, Deployment] = {}
        self.runs: dict[str, Run] = {}
        self._checkpoints: dict[tuple[int, str], Checkpoint] = {}
        self.new_checkpoints: list[Checkpoint] = []
        self._placeholders: set[int] = set()  # id() of rows created on first mention, no record's values yet

    def claim(self, row: Any) -> bool:
        """Whether `row` was a placeholder, which it is no more: a record now gives its values."""
        placeholder = id(row) in self._placeholders
        self._placeholders.discard(id(row))
        return placeholder

    def known_deployment(self, name: str) -> bool:
        """Whether a deployment of this name was stored before this file, or already seen in it."""
        return name in self.deployments or bool(
            self.session.scalar(select(Deployment.id).where(Deployment.name == name))
        )

    @overload
    def deployment(self, name: str, create: Literal[True] = True) -> Deployment: ...
    @overload
    def deployment(self, name: str, create: bool) -> Deployment | None: ...
    def deployment(self, name: str, create: bool = True) -> Deployment | None:
        if name not in self.deployments:
            row = self.session.scalar(select(Deployment).where(Deployment.name == name))
            if row is None and create:
                row = Deployment(name=name)
                self.session.add(row)
                self._placeholders.add(id(row))
                self.session.flush()
                from specdash.db.parameters import ensure_theory_set  # the cost model loads with a deployment

                ensure_theory_set(self.session, row)
                self.created["deployment"] += 1
            if row is None:
                return None
            self.deployments[name] = row
        return self.deployments[name]

    @overload
    def run(self, name: str, create: Literal[True] = True) -> Run: ...
    @overload
    def run(self, name: str, create: bool) -> Run | None: ...
    def run(self, name: str, create: bool = True) -> Run | None:
        if name not in self.runs:
            row = self.session.scalar(select(Run).where(Run.name == name))
            if row is None and create:
                row = Run(name=name)
                self.session.add(row)
                self._placeholders.add(id(row))
                self.session.flush()
                self.created["run"] += 1
            if row is None:
                return None
            self.runs[name] = row
        return self.runs[name]

    @overload
    def checkpoint(self, run: Run, name: str, create: Literal[True] = True) -> Checkpoint: ...
    @overload
    def checkpoint(self, run: Run, name: str, create: bool) -> Checkpoint | None: ...
    def checkpoint(self, run: Run, name: str, create: bool = True) -> Checkpoint | None:
        key = (run.id, name)
        if key not in self._checkpoints:
            row = self.session.scalar(
                select(Checkpoint).where(Checkpoint.run_id == run.id, Checkpoint.name == name)
            )
            if row is None and create:
                parsed = parse_checkpoint_name(name)
                row = Checkpoint(
                    run_id=run.id,
                    name=name,
                    epoch=parsed.epoch if parsed else None,
                    step=parsed.step if parsed else None,
                )
                self.session.add(row)
                self._placeholders.add(id(row))
                self.session.flush()
                self.created["checkpoint"] += 1
                self.new_checkpoints.append(row)
            if row is None:
                return None
            self._checkpoints[key] = row
        return self._checkpoints[key]

    def checkpoint_of(
        self, run: str | None, checkpoint: str | None, drafter_path: str | None
    ) -> tuple[Checkpoint | None, str]:
        """By names (created when missing), then by drafter path: exact, then its folder names; a path
        nothing matches names a new run and checkpoint. Returns the checkpoint and how it was found."""
        run = self.link.run or run
        checkpoint = self.link.checkpoint or checkpoint
        if run and checkpoint:
            return self.checkpoint(self.run(run), checkpoint), "by name"
        if checkpoint and not run:
            rows = self.session.scalars(select(Checkpoint).where(Checkpoint.name == checkpoint)).all()
            if len(rows) == 1:
                return rows[0], "by name"
            raise LinkError("run", f"checkpoint '{checkpoint}' needs a run to link to")
        if not drafter_path:
            return None, "unlinked"
        found = self._match_path(drafter_path, run)
        if found is not None:
            return found
        derived = name_from_path(drafter_path)
        if derived is None:
            return None, "unlinked"
        owner = self.run(run or derived.run, create=False)
        existing = self.checkpoint(owner, derived.checkpoint, create=False) if owner is not None else None
        if existing is not None:  # e.g. a hub id whose run was stored before
            return existing, "by folder names"
        row = self.checkpoint(self.run(run or derived.run), derived.checkpoint)
        row.path = drafter_path
        return row, "created from path"

    def _match_path(self, drafter_path: str, run_name: str | None) -> tuple[Checkpoint, str] | None:
        query = select(Checkpoint).where(Checkpoint.path == drafter_path)
        if run_name:
            query = query.join(Run).where(Run.name == run_name)
        row = self.session.scalar(query.limit(1))
        if row is not None:
            return row, "by path"
        parts = path_parts(drafter_path)
        if not parts:
            return None
        parsed = parse_checkpoint_name(parts[-1])
        derived = name_from_path(drafter_path)
        if run_name:
            owners: list[str | None] = [run_name]
        else:  # the run the parent folders name, a meaningful parent folder, the run of "{run}-stepN"
            parent = parts[-2] if len(parts) >= 2 and meaningful_folder(parts[-2]) else None
            owners = [derived.run if derived else None, parent, parsed.run if parsed else None]
        found = {}
        for owner in dict.fromkeys(name for name in owners if name):
            owner_run = self.run(owner, create=False)
            if owner_run is not None:
                row = self.checkpoint(owner_run, parts[-1], create=False)
                if row is not None:
                    found[row.id] = row
        if len(found) == 1:  # unambiguous only
            return next(iter(found.values())), "by folder names"
        if found:
            return None
        if not run_name:
            # a checkpoint of that name in a run whose name is a folder further up the path, if only one
            rows = self.session.scalars(
                select(Checkpoint)
                .join(Run)
                .where(
                    Checkpoint.name == parts[-1],
                    Run.name.in_([p for p in parts[:-1] if meaningful_folder(p)]),
                )
            ).all()
            if len(rows) == 1:
                return rows[0], "by folder names"
        return None
