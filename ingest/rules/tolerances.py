"""The slack of each bound of ingest/rules/bounds.py, each derived from what the numbers measure (the
derivations are in docs/formats.md, "The rules every record keeps"); none is fitted to files at hand."""

# Slack for values that must hold exactly (a median under its p99, survival that never rises): the
# rounding of a file's last printed digit, nothing more.
EXACT = 1e-6
# How far the sum of the per-request decode rates of the requests in flight can lie above concurrency x
# the typical per-request rate a file states (1000 / median TPOT). The rates of requests in one batch
# differ by their accept length (a speculative round emits 1 to max-accept tokens) and by the load each
# request lived through; a median, unlike a mean, says nothing of the fast half. A factor of 2 lets the
# fast half run up to three times the median (0.5 x 1 + 0.5 x 3 = 2) before a record is refused.
RATE_SPREAD = 2.0
# Output tokens a request emits when the file does not say: the fewest that have a decode rate at all
# (one token from prefill, one from decode), the worst case of the first-token share below.
FEWEST_OUTPUT_TOKENS = 2.0
# Stated accept length against the one per-position survival implies (1 + sum of survival, a chain),
# both read from one set of counters (vLLM: 1 + accepted / drafts, and accepted at k / drafts): an
# identity up to the rounding of the printed digits (the accept length to two decimals, each rate to
# three: 0.005 + K x 0.0005).
ACCEPT_DIGITS = 0.005
RATE_DIGITS = 0.0005
