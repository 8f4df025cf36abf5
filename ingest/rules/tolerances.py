"""The tolerances of the consistency rules, each above the worst disagreement the engines' own fields show
on the real files in tests/fixtures (real/, sglang/, vllm/, guidellm/, specforge/): the test
tests/ingest/test_rule_tolerances.py measures it again on every run and fails if a tolerance falls under it."""

# Slack for values that must hold exactly (a median under its p99, survival that never rises): the
# rounding of a file's last printed digit, nothing more.
EXACT = 1e-6
# Per-request decode tok/s against 1000 / median TPOT. The engine formats derive per-request decode from
# the TPOT they print (worst on the real files: a factor of 1.00); a native file states both, and a
# factor of 2 leaves room for a mean decode over a median TPOT.
TPOT_FACTOR = 2.0
# Per-request decode tok/s x concurrency against the aggregate output tok/s. The aggregate counts the
# whole wall time (prefill, time to first token, ramp-up, the last requests' tails), per-request decode
# only decoding, so the product is above the aggregate. Worst on the real files: 4.35 above
# (vllm/bench_serve_request_rates.jsonl:3, requests at a rate that seldom fills the concurrency) and
# 1.02 below (vllm/bench_serve_sweep.jsonl:3); allowed: 10 above, 2 below.
AGGREGATE_ABOVE = 10.0
AGGREGATE_BELOW = 2.0
# Stated accept length against the one per-position survival implies (1 + sum of survival, a chain).
# Worst on the real files: 7.3 % (vllm/pipeline_six_servers.log:94: vLLM's rates are averaged over other
# intervals than its mean and rounded to three digits); allowed: 15 %.
SURVIVAL_SHARE = 0.15
