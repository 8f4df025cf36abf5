"""How values read on the pages: names from files made inert (text, never markup), settings and numbers
in the domain's words."""

import html
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


SEVERITY_ICONS = {
    "critical": ":material/error:",
    "warning": ":material/warning:",
    "info": ":material/info:",
    "none": ":material/help:",
}
