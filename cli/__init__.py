"""The `specdash` command line."""
