"""What a drafter path or a checkpoint folder name says (run, checkpoint, epoch and step), the names a user
gives to link a file's records (LinkOptions), and the error of a record that cannot be linked.

Names in files are data: they only ever become row names, never paths that are opened."""

import re
from dataclasses import dataclass
from pathlib import PurePosixPath


class LinkError(ValueError):
    """A record names something that cannot be linked; reported against its field."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass
class LinkOptions:
    """Names that override or fill in what a file says (CLI `--run/--checkpoint/--deployment`)."""

    run: str | None = None
    checkpoint: str | None = None
    deployment: str | None = None
    target: str | None = None  # the target model of the file's runs (`--target`)
    target_deployments: tuple[str, ...] = ()  # deployments the file's runs are for (`--target-deployment`)
    # a benchmark's new name that looks like a stored one (PCle / PCIe) is created anyway (`--new-names`)
    new_names: bool = False


# Folder names trainers give checkpoints: epoch_2, epoch_2_step_24000, epoch_1_global_step_900,
# step_1500, checkpoint-1500, global_step1500, and "{run}-step1500".
_EPOCH_STEP = re.compile(r"^epoch_(?P<epoch>\d+)(?:_(?:global_)?step_?(?P<step>\d+))?$")
_STEP_ONLY = re.compile(r"^(?:step|checkpoint|global_step|ckpt|iter)[-_]?(?P<step>\d+)$")
_RUN_STEP = re.compile(r"^(?P<run>.+?)-step(?P<step>\d+)$")
# Hugging Face hub ids: "org/name", no leading dot or slash.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\- ]+$")

# Folder names that say "the model of this run" rather than naming a drafter of their own.
GENERIC_NAMES = frozenset(
    {
        "final",
        "latest",
        "last",
        "best",
        "model",
        "checkpoint",
        "hf",
        "export",
        "merged",
        "output",
        "draft",
        "drafter",
    }
)
# Last folders that name a save of a run, not a run: checkpoint_best, best_model, model_final, 4, ...
_SAVE_NAME = re.compile(
    r"^(?:\d+|(?:checkpoint|ckpt|model|weights)[-_]?(?:best|last|latest|final)"
    r"|(?:best|last|latest|final)[-_]?(?:checkpoint|ckpt|model|weights)?)$",
    re.IGNORECASE,
)
# Folders that hold runs rather than naming one: never a run name on their own.
CONTAINER_NAMES = frozenset(
    {
        "checkpoints",
        "checkpoint",
        "ckpt",
        "ckpts",
        "outputs",
        "output",
        "out",
        "models",
        "model",
        "saved",
        "save",
        "saves",
        "runs",
        "run",
        "exp",
        "exps",
        "experiments",
        "results",
        "weights",
        "data",
        "home",
        "mnt",
        "workspace",
        "work",
        "tmp",
        "root",
        "drafters",
        "draft",
        "drafter",
        "hf",
        "export",
        "merged",
        "final",
        "latest",
        "last",
        "best",
        "users",
        "shared",
        "nfs",
        "scratch",
    }
)
MAX_RUN_PARTS = 3
PUBLISHED = "published"  # checkpoint name of a drafter known only by its hub repository
FINAL = "final"  # checkpoint name of a local drafter folder that is not a checkpoint of a run


@dataclass(frozen=True)
class CheckpointName:
    epoch: int | None = None
    step: int | None = None
    run: str | None = None  # named by the folder itself ("run7-step1500")


def parse_checkpoint_name(name: str) -> CheckpointName | None:
    """Epoch and step from a checkpoint folder name, or None when it does not look like one."""
    if match := _EPOCH_STEP.match(name):
        step = match["step"]
        return CheckpointName(int(match["epoch"]), int(step) if step else None)
    if match := _STEP_ONLY.match(name):
        return CheckpointName(step=int(match["step"]))
    if match := _RUN_STEP.match(name):
        return CheckpointName(step=int(match["step"]), run=match["run"])
    return None


def path_parts(drafter_path: str) -> tuple[str, ...]:
    return tuple(
        part for part in PurePosixPath(drafter_path.replace("\\", "/").rstrip("/")).parts if part != "/"
    )


@dataclass(frozen=True)
class DrafterName:
    run: str
    checkpoint: str
    epoch: int | None = None
    step: int | None = None


def _is_save_name(name: str) -> bool:
    return (
        parse_checkpoint_name(name) is not None
        or name.lower() in GENERIC_NAMES
        or bool(_SAVE_NAME.match(name))
    )


def meaningful_folder(name: str) -> bool:
    """A folder that names something (a run, a drafter), not a container, a number or a save."""
    return not (name.lower() in CONTAINER_NAMES or name.isdigit() or _is_save_name(name))


def run_from_parents(parents: tuple[str, ...]) -> str | None:
    """The run a save folder belongs to, as a person would name it: the parent folders from the nearest
    meaningful one down (`qwen3/checkpoints`, not `checkpoints`; `llama-eagle3/4`, not `4`)."""
    if not parents:
        return None
    for index in range(len(parents) - 1, -1, -1):
        if meaningful_folder(parents[index]):
            return "/".join(parents[index:][:MAX_RUN_PARTS])
    return "/".join(parents[-MAX_RUN_PARTS:])


def name_from_path(drafter_path: str) -> DrafterName | None:
    """The run and checkpoint a drafter path names when nothing stored matches it.

    A save folder (epoch_2_step_24000, checkpoint_best, final, 4) belongs to the run named by its parent
    folders (the nearest meaningful one down, see run_from_parents) or by its own prefix (run7-step1500);
    a hub id (org/name) is a published drafter; any other folder is a drafter of its own."""
    parts = path_parts(drafter_path)
    if not parts:
        return None
    last = parts[-1]
    parsed = parse_checkpoint_name(last)
    if parsed is not None or (len(parts) >= 2 and _is_save_name(last)):
        run = (parsed.run if parsed else None) or run_from_parents(parts[:-1])
        if run:
            return DrafterName(run, last, parsed.epoch if parsed else None, parsed.step if parsed else None)
    if _HUB_ID.match(drafter_path.strip()):
        return DrafterName(drafter_path.strip(), PUBLISHED)
    return DrafterName(last, FINAL)
