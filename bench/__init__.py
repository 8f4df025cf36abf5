"""specdash's benchmark suite: ingest and query speed against MLflow and plain sqlite3, measured in one run."""
