"""The tolerances of the consistency rules, each above the worst disagreement the engines' own fields show
on the real files in tests/fixtures (tests/ingest/test_rule_tolerances.py measures it again on every run).
"""

# Shared slack for comparisons of one value against another that must hold exactly (a median under its
# p99, survival that never rises): rounding in the file's last printed digit, nothing more.
EXACT = 1e-6
# Per-request decode tok/s against 1000 / median TPOT. Worst on the real files: a factor of 1.09
# (SGLang bench_serving, whose per-request decode is told by its own TPOT-free fields); allowed: 2.
TPOT_FACTOR = 2.0
# Per-request decode tok/s x concurrency against the aggregate output tok/s. The aggregate counts the
# whole wall time (prefill, the time to first token, ramp-up and the last requests' tails) and the
# per-request figure only decode, so the product is above the aggregate. Worst on the real files: a
# factor of 3.3 above and 1.25 below (a client's mean concurrency rounded to a count); allowed: 10 and 2.
AGGREGATE_ABOVE = 10.0
AGGREGATE_BELOW = 2.0
# Stated accept length against the one per-position survival implies (1 + sum of survival, a chain).
# Worst on the real files: 3.4 % (vLLM rounds its per-position rates to three digits and averages them
# over other intervals than its mean); allowed: 15 %.
SURVIVAL_SHARE = 0.15
