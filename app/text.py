"""How values read on the pages: names from files made inert (text, never markup), settings and numbers
in the domain's words."""

import html
import math
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
    """A value from a file as literal text in a Plotly label or hover (Plotly reads a subset of HTML)."""
    return html.escape(str(value), quote=False)


def _int(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return str(int(value))


def setting_label(row) -> str:
    """`EAGLE3 3/1/4`: algorithm, draft steps / top-k / draft tokens; `no speculation` for a baseline."""
    algorithm = row["speculative_algorithm"]
    if algorithm is None or (isinstance(algorithm, float) and math.isnan(algorithm)):
        return "no speculation"
    return f"{algorithm} {_int(row['num_steps'])}/{_int(row['topk'])}/{_int(row['num_draft_tokens'])}"


def gap_text(gap: float | None) -> str:
    """`+48.9%` (slower than predicted) or `-3.0%` (faster)."""
    return "-" if gap is None or (isinstance(gap, float) and math.isnan(gap)) else f"{gap:+.1%}"


SEVERITY_ICONS = {
    "critical": ":material/error:",
    "warning": ":material/warning:",
    "info": ":material/info:",
    "none": ":material/help:",
}
