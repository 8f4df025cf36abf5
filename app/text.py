"""How values read on the pages: names from files made inert (text, never markup), settings and numbers
in the domain's words."""

import html
import math
import re
import string

# Every ASCII punctuation character can be backslash-escaped in Markdown; escaping them all makes a name
# like "[x](javascript:...)", "**run**" or ":red[run]" read literally.
_MARKDOWN_ESCAPES = {ord(c): "\\" + c for c in string.punctuation}


def md(value) -> str:
    """A value from a file (run, checkpoint, deployment, drafter path) as literal text inside Markdown."""
    return str(value).translate(_MARKDOWN_ESCAPES)


def unmd(markdown: str) -> str:
    """Undo md(): the text a reader sees (for tests and plain-text exports)."""
    out, escaped = [], False
    for char in markdown:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out)


def plotly_text(value) -> str:
    """A value from a file as literal text in a Plotly label or hover (Plotly reads a subset of HTML, and
    `%{...}` in a hover template as a reference: both written as entities)."""
    return html.escape(str(value), quote=False).replace("%", "&#37;")


SEVERITY_ICONS = {
    "critical": ":material/error:",
    "warning": ":material/warning:",
    "info": ":material/info:",
    "none": ":material/help:",
}


# Axis labels longer than this are abbreviated; hover and tables keep the full name.
LABEL_WIDTH = 30


def _common_prefix(names: list[str]) -> str:
    """The longest prefix all names share, cut back to a separator so no word is split."""
    if len(names) < 2:
        return ""
    # case-insensitive: `lmsys/SGLang-EAGLE3-` and `lmsys/sglang-EAGLE3-` are one prefix
    first, last = min(names, key=str.lower), max(names, key=str.lower)
    size = 0
    while size < min(len(first), len(last)) and first[size].lower() == last[size].lower():
        size += 1
    prefix = first[:size]
    cut = max(prefix.rfind(sep) for sep in "/-_ ")
    return prefix[: cut + 1] if cut >= 0 else ""


_WORD_SEPARATORS = re.compile(r"([-_:,/ ]+)")


def _frequent_words(names: list[str]) -> set[str]:
    """Words found in at least half of several names (`SGLang`, `EAGLE3`, `Instruct`, `SpecBundle`); short
    words and numbers are kept (`bs 8`, `TP8`)."""
    if len(names) < 2:
        return set()
    counts: dict[str, int] = {}
    for name in names:
        for word in set(_WORD_SEPARATORS.split(name.lower())[::2]):
            counts[word] = counts.get(word, 0) + 1
    return {w for w, n in counts.items() if len(w) >= 3 and not w.isdigit() and n >= max(2, len(names) / 2)}


def _without(name: str, words: set[str]) -> str:
    """The name without those words: `Kimi-K2-Instruct, bs 8` -> `Kimi-K2, bs 8` (a dropped word's separator
    replaces the one before it)."""
    parts = _WORD_SEPARATORS.split(name)
    out: list[str] = []
    for i in range(0, len(parts), 2):
        word, sep = parts[i], parts[i + 1] if i + 1 < len(parts) else ""
        if word.lower() not in words:
            out += [word, sep]
        elif out:
            out[-1] = sep
    return "".join(out).strip("-_:,/ ") or name


def _stub(label: str) -> bool:
    """A label left starting with a fragment of a name (`4-SpecForge` from `Llama-4-Scout-...-SpecForge`):
    dropping words has cut it mid-name."""
    first = _WORD_SEPARATORS.split(label)[0]
    return len(first) <= 2 and label != first


def _kept_apart(
    trial: dict[str, str], short: dict[str, str], long: list[str], words: set[str]
) -> dict[str, str]:
    """Labels that read alike once the frequent words are dropped (`LLaMA3.1-8B`, `Llama-3.1-8B`: two
    drafters) keep the dropped words that tell their names apart (`Llama-3.1-8B-SpecForge`)."""
    groups: dict[str, list[str]] = {}
    for name in long:
        groups.setdefault(re.sub(r"[^a-z0-9]", "", trial[name].lower()), []).append(name)
    for alike in (names for names in groups.values() if len(names) > 1):
        dropped = [set(_WORD_SEPARATORS.split(short[n].lower())[::2]) & words for n in alike]
        telling = set.union(*dropped) - set.intersection(*dropped)
        trial.update({n: _without(short[n], words - telling) for n in alike})
    return trial


def abbreviate(names, width: int = LABEL_WIDTH) -> dict[str, str]:
    """Short, distinct labels for names on an axis or legend; full names belong in the hover. In order,
    while the labels stay distinct: a prefix every name shares is dropped; a hub organisation (`lmsys/`); words
    most of the names repeat (`SGLang`, `EAGLE3`, `Instruct`); then a name still longer than `width` keeps
    its start and end around an ellipsis."""
    unique = list(dict.fromkeys(str(n) for n in names))
    # a name that fits stays as it is (`epoch_3`, `8x H200, TP8, NVLink`); only long ones are shortened
    long = [n for n in unique if len(n) > width]
    short = {name: name for name in unique}
    if long:
        prefix = _common_prefix(long) if len(long) == len(unique) else ""
        trial = {n: (n[len(prefix) :] or n) if n in long else n for n in unique}
        if len(set(trial.values())) == len(trial):
            short = trial
    for step in ("organisation", "words"):
        if not long:
            break
        if step == "organisation":
            trial = {
                n: (v.split("/", 1)[1] if n in long and v.count("/") == 1 and not v.endswith("/") else v)
                for n, v in short.items()
            }
        else:
            words = _frequent_words([short[n] for n in long])
            trial = {n: _without(v, words) if n in long else v for n, v in short.items()}
            trial = _kept_apart(trial, short, long, words)
        if len(set(trial.values())) == len(trial) and not any(
            _stub(v) for n, v in trial.items() if v != short[n]
        ):
            short = trial
    labels: dict[str, str] = {}
    used: set[str] = set()
    for name in unique:
        rest = short[name]
        if len(rest) > width:
            head = (width - 1) * 3 // 5
            rest = rest[:head] + "…" + rest[-(width - 1 - head) :]
        label, n = rest, 2
        while label in used:  # two names that abbreviate alike stay apart
            label, n = f"{rest} ({n})", n + 1
        used.add(label)
        labels[name] = label
    return labels


def number_text(value, digits: int = 1, suffix: str = "") -> str:
    """A number rounded for reading, `-` for none: never `None`, `nan` or 68.70452726148955."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    try:
        import pandas as pd

        if pd.isna(value):
            return "-"
    except (TypeError, ValueError):
        pass
    return f"{value:,.{digits}f}{suffix}"


def significant(value: float, digits: int = 3) -> int:
    """`value` rounded to `digits` significant digits, for an estimate: 400,124 -> 400,000."""
    if value <= 0:
        return 0
    scale = 10 ** max(int(math.floor(math.log10(value))) - digits + 1, 0)
    return int(round(value / scale) * scale)
