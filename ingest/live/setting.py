"""`--setting`: a speculation setting written the way every page and command writes one
(`EAGLE3 3/1/4`: algorithm, draft steps / top-k / draft tokens, `-` for unknown; `no speculation`)."""

import re

from pydantic import ValidationError

from specdash.ingest.formats.common import algorithm_name
from specdash.ingest.records import SpeculationSetting

NO_SPECULATION = ("no speculation", "none", "off")
_SETTING = re.compile(r"^(?P<algorithm>[A-Za-z][\w.+-]*)(?:\s+(?P<shape>[\d-]+/[\d-]+/[\d-]+))?$")


def parse_setting(text: str) -> SpeculationSetting:
    """The setting `text` names; ValueError saying the expected form otherwise."""
    cleaned = " ".join(text.split())
    if cleaned.lower() in NO_SPECULATION:
        return SpeculationSetting()
    match = _SETTING.match(cleaned)
    if match is None:
        raise ValueError(
            f"{text!r} is not a speculation setting: write it as 'EAGLE3 3/1/4' (algorithm, draft steps / "
            "top-k / draft tokens, '-' where unknown), 'EAGLE3' alone, or 'no speculation'"
        )
    shape = (match["shape"] or "-/-/-").split("/")
    if any(part != "-" and not part.isdigit() for part in shape):
        raise ValueError(f"{text!r}: each of steps / top-k / draft tokens is a whole number or '-'")
    numbers = [None if part == "-" else int(part) for part in shape]
    try:
        return SpeculationSetting(
            speculative_algorithm=algorithm_name(match["algorithm"]),
            num_steps=numbers[0],
            topk=numbers[1],
            num_draft_tokens=numbers[2],
        )
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'setting'}: {error['msg'].removeprefix('Value error, ')}"
            for error in exc.errors(include_url=False)
        )
        raise ValueError(f"{text!r}: {reasons}") from None
