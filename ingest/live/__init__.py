"""Live serving metrics: an engine's Prometheus `/metrics` text, scraped over time and cut into windows,
each window a benchmark record (exposition -> engines -> windows)."""
