"""Storage: models, engine, schema migrations and the queries the CLI and pages use."""
