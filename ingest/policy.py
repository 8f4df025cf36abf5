"""How an ingest treats what it reads: one frozen IngestPolicy of enums (a file met before, invalid records,
commit or preview) with the typed options every source shares (the links, a forced format)."""

from dataclasses import dataclass, field
from enum import Enum

from specdash.ingest.links import LinkOptions


class OnConflict(Enum):
    """What a source met before, or a stored value it contradicts, does."""

    SKIP = "skip"  # a file ingested before is skipped; a contradicted stored value is a problem (the default)
    UPDATE = "update"  # `--update`: the file's values win where they contradict stored ones
    REPLACE = "replace"  # `--replace`: what the same file stored before is removed, then it is stored again

    @property
    def applies_values(self) -> bool:
        """Whether the source's values are written over contradicted stored ones (else each is a conflict)."""
        return self is not OnConflict.SKIP

    @property
    def action(self) -> str:
        """The change history's name for a value this policy writes over a stored one."""
        return "ingest --replace" if self is OnConflict.REPLACE else "ingest --update"


class OnInvalid(Enum):
    """What a batch's problems do."""

    REFUSE = "refuse"  # nothing of it is written (the default)
    SKIP = "skip"  # `--skip-invalid`: its valid records are written; a batch with none is refused
    KEEP = "keep"  # a followed log or event file: what is valid is written and the source moves on, always


class Mode(Enum):
    COMMIT = "commit"
    PREVIEW = "preview"  # the same pipeline, rolled back before it commits: what committing would do


@dataclass(frozen=True)
class IngestPolicy:
    on_conflict: OnConflict = OnConflict.SKIP
    on_invalid: OnInvalid = OnInvalid.REFUSE
    mode: Mode = Mode.COMMIT
    link: LinkOptions = field(default_factory=LinkOptions)  # `--run/--checkpoint/--deployment/...`
    format_name: str | None = (
        None  # `--format`: read as this format (or tracker), refused where it does not fit
    )


# the default: committed, a source with any problem refused, one ingested before skipped
COMMIT = IngestPolicy()


def command_policy(
    *,
    update: bool = False,
    replace: bool = False,
    skip_invalid: bool = False,
    link: LinkOptions | None = None,
    format_name: str | None = None,
) -> IngestPolicy:
    """The policy `specdash ingest`'s flags ask for (`--replace` applies the file's values as `--update` does)."""
    on_conflict = OnConflict.REPLACE if replace else OnConflict.UPDATE if update else OnConflict.SKIP
    return IngestPolicy(
        on_conflict=on_conflict,
        on_invalid=OnInvalid.SKIP if skip_invalid else OnInvalid.REFUSE,
        link=link or LinkOptions(),
        format_name=format_name,
    )
