"""The input formats specdash reads. Each module gives NAME, HELP, detect() and parse().

detect(head, filename) looks at the first bytes (decoded text) and the file name; parse(stream, path,
link) reads a text stream and yields Located records or Problems. `link` carries the names the user gave
(`--run/--checkpoint/--deployment`), which engine formats need when the file does not say."""

from specdash.ingest.formats.base import Format, Located

__all__ = ["BY_NAME", "FORMATS", "Format", "Located", "detect_format"]


def _registry() -> list[Format]:
    from specdash.ingest.formats import (
        guidellm,
        guidellm_console,
        native,
        serving_console,
        sglang_batch,
        sglang_log,
        sglang_serving,
        specbundle,
        specforge_bench,
        specforge_log,
        specforge_tracker,
        speculators_log,
        vllm_log,
        vllm_serve,
    )

    formats = [native.FORMAT, native.CSV_FORMAT]
    # More specific detectors first: a vLLM result also has SGLang-like keys, a SpecBundle file is JSON.
    for module in (specbundle, specforge_bench, guidellm, vllm_serve, sglang_serving, sglang_batch):
        formats.extend(module.FORMATS)
    # The printed result block before the logs: a console capture may hold the server's lines around it.
    for module in (serving_console, specforge_tracker, speculators_log, specforge_log, vllm_log, sglang_log):
        formats.extend(module.FORMATS)
    # GuideLLM's printed tables after the server logs: a capture holding an engine's own log lines (which
    # state its speculation) is read as that log, the tables' figures staying in the one format detected.
    formats.extend(guidellm_console.FORMATS)
    return formats


FORMATS: list[Format] = _registry()
BY_NAME = {f.name: f for f in FORMATS}
# A GuideLLM report is one JSON line whose backend has a "kind" key, which native JSONL's detector takes
# for its own: GuideLLM's stricter detector runs first.
DETECT_ORDER = [BY_NAME["guidellm"], *(f for f in FORMATS if f.name != "guidellm")]


def detect_format(head: str, filename: str) -> Format | None:
    for fmt in DETECT_ORDER:
        if fmt.detect(head, filename):
            return fmt
    return None
