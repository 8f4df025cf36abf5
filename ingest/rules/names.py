"""Names a record uses that must resolve: a prediction's run, checkpoint and deployment must exist (in the
file or the store), and a benchmark's new name that differs from a stored one only by case, spacing or
look-alike characters (PCle for PCIe, 0 for O, l or 1 for I) is refused with "did you mean ...?" unless
the user asks for it as new (LinkOptions.new_names, `--new-names`)."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.models import Checkpoint, Deployment, Run
from specdash.ingest.links import LinkError, LinkOptions
from specdash.ingest.records import BenchmarkRecord, PredictionRecord
from specdash.ingest.rows import Rows

# After casefolding: characters a reader cannot tell apart in most fonts, mapped to one of them.
LOOKALIKES = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l"})
MAX_NEW_NAMES_SHOWN = 10


def name_key(name: str) -> str:
    """What a name looks like to a reader: case, spacing and look-alike characters folded away."""
    return "".join(name.casefold().split()).translate(LOOKALIKES)


class NameGuard:
    """The names a file's benchmarks and predictions use, checked against the store's before rows are made."""

    def __init__(self, session: Session, rows: Rows, link: LinkOptions):
        self.session, self.rows, self.link = session, rows, link
        self._stored: dict[str, dict[str, str]] = {}  # kind -> name key -> a stored name with that key
        self.new: list[str] = []  # names created as new, unlike any stored one: "deployment 'x'"

    def _twins(self, kind: str) -> dict[str, str]:
        if kind not in self._stored:
            column = {"deployment": Deployment.name, "run": Run.name, "checkpoint": Checkpoint.name}[kind]
            self._stored[kind] = {name_key(n): n for n in self.session.scalars(select(column).distinct())}
        return self._stored[kind]

    def _check(self, kind: str, name: str, exists: bool) -> None:
        if exists:
            return
        twins = self._twins(kind)
        twin = twins.get(name_key(name))
        if twin is not None and twin != name and not self.link.new_names:
            raise LinkError(
                kind,
                f"{kind} '{name}' is stored nowhere; did you mean '{twin}'? (it differs only by case, spacing "
                "or look-alike characters; pass --new-names to create it as a new one)",
            )
        twins.setdefault(name_key(name), name)
        entry = f"{kind} '{name}'"  # each name once: every run's 'published' checkpoint is one name to check
        if entry not in self.new and len(self.new) < MAX_NEW_NAMES_SHOWN:
            self.new.append(entry)

    def benchmark(self, record: BenchmarkRecord, deployment: str) -> None:
        """A benchmark's deployment, run and checkpoint names, when the store holds none of them."""
        self._check("deployment", deployment, self.rows.known_deployment(deployment))
        run = self.link.run or record.run
        if run is not None:
            stored = self.rows.run(run, create=False)
            self._check("run", run, stored is not None)
            checkpoint = self.link.checkpoint or record.checkpoint
            if checkpoint is not None:
                held = (
                    stored is not None and self.rows.checkpoint(stored, checkpoint, create=False) is not None
                )
                self._check("checkpoint", checkpoint, held)

    def prediction(self, record: PredictionRecord) -> None:
        """A prediction names what it predicts: a run, checkpoint and deployment the file or store holds."""
        run = self.rows.run(record.run, create=False)
        checkpoint = self.rows.checkpoint(run, record.checkpoint, create=False) if run is not None else None
        missing = [
            f"{kind} '{name}'"
            for kind, name, found in (
                ("deployment", record.deployment, self.rows.known_deployment(record.deployment)),
                ("run", record.run, run is not None),
                ("checkpoint", f"{record.run}/{record.checkpoint}", checkpoint is not None),
            )
            if not found
        ]
        if missing:
            raise LinkError(
                missing[0].split(" ", 1)[0],
                f"prediction '{record.source}' names {', '.join(missing)}, which neither this file nor the "
                "store holds (ingest the run, checkpoint and deployment first, or name stored ones)",
            )
